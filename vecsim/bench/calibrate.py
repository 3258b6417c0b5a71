"""Measure on this machine the batch size from which each game's parallel kernels win.

``parallel="auto"`` picks a game's serial or parallel kernels by batch size. The sizes vecsim
ships (``vecsim/engine/tuning.json``) were measured on a 2-core machine; on another machine,
and above all at another thread count, the cost of starting the threads and the work that pays
for it differ. ``calibrate`` (also ``vecsim.calibrate`` and ``vecsim calibrate``) times
``Engine.step`` (NEXT_STEP autoreset, random legal actions) with the serial and the parallel
kernels at batch sizes 16, 32, ... 16384 on the Numba threads this process runs, and saves
for each game and precision the smallest size from which the parallel kernels win at every
larger size measured (``None``: they never do). ``vecsim.engine.engine.parallel_min_envs`` then
prefers the saved value for this machine, thread count and threading layer over the game's.

The table (``vecsim.engine.tuning``) is ``calibration.json`` in vecsim's cache folder (``vecsim.engine.codegen.cache_dir``):
``{"version": 1, "machines": {key: {"layers": {layer: {"games": {module: {precision: size
or null}}, ...}}}}}`` where the key names the CPU, its core count and the thread count, and
``layer`` is Numba's threading layer (``omp``, ``tbb``, ``workqueue``).
``VECSIM_PARALLEL_THRESHOLD`` still overrides everything; ``VECSIM_CALIBRATION=0`` makes vecsim
ignore the file (the test suite runs so, to test the games' own sizes).
"""

from __future__ import annotations

import json
import os
import time

from vecsim.engine import tuning

#: Batch sizes timed by default: 16 .. 16384, doubling.
SIZES = tuple(16 << k for k in range(11))
#: The parallel kernels must be this much faster to count as winning (ties keep serial).
MARGIN = 1.05
PRECISIONS = ("float64", "float32")


def threshold(rows, margin: float = MARGIN) -> int | None:
    """The smallest size from which the parallel kernels win at every larger size of ``rows``
    (``(size, serial steps/s, parallel steps/s)``, any order): parallel at least ``margin``
    times as fast. ``None`` when they do not win at the largest size.

    Each size's speed-up is first replaced by the median of it and its two neighbours' (the
    largest size: of the three largest), so that one noisy timing neither moves the size nor,
    at the largest size, turns it into ``None``. The smallest size keeps its own: there the
    parallel kernels usually lose, and its neighbours would speak for it."""
    rows = sorted(rows)
    ratios = [parallel / serial for _, serial, parallel in rows]
    if len(ratios) >= 3:
        ratios = ratios[:1] + [sorted(ratios[k - 1:k + 2])[1] for k in range(1, len(ratios) - 1)] + \
            [sorted(ratios[-3:])[1]]
    best = None
    for (size, _, _), ratio in zip(reversed(rows), reversed(ratios)):
        if ratio < margin:
            break
        best = size
    return best


def _runner(game_id: str, num_envs: int, precision: str, parallel: bool, seed: int = 0):
    import vecsim
    from vecsim.bench import measure as bench

    engine = vecsim.make(game_id, num_envs, precision=precision, parallel=parallel)
    engine.reset(seed=seed)
    choose = bench.engine_actions(engine, seed)
    return engine, lambda: engine.step(choose())


def measure(game_id: str, precision: str = "float64", sizes=SIZES, seconds: float = 0.2,
            repeats: int = 3) -> list[tuple[int, float, float]]:
    """``(size, serial steps/s, parallel steps/s)`` of ``Engine.step`` for each of ``sizes``,
    the serial and the parallel engine timed in turn, twice each (best of both)."""
    from vecsim.bench import measure as bench

    rows = []
    for size in sizes:
        engines = {flag: _runner(game_id, size, precision, flag) for flag in (False, True)}
        rates = {False: 0.0, True: 0.0}
        try:
            for _ in range(2):
                for flag, (_, step) in engines.items():
                    rates[flag] = max(rates[flag], bench.steps_per_second(step, size, seconds / 2, repeats))
        finally:
            for engine, _ in engines.values():
                engine.close()
        rows.append((size, rates[False], rates[True]))
    return rows


def _check_args(games, precisions, sizes, seconds, repeats):
    import vecsim

    from vecsim.bench import measure as bench

    if games is None:
        games = vecsim.game_ids()
    elif isinstance(games, str):
        games = [games]
    games = [bench.full_id(g) for g in games]
    for g in games:
        vecsim.resolve(g)  # raises for an unknown id
    precisions = (precisions,) if isinstance(precisions, str) else tuple(precisions)
    for p in precisions:
        if p not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, but got {p!r}")
    sizes = tuple(sizes) if isinstance(sizes, (list, tuple, range)) else sizes
    if not isinstance(sizes, tuple) or not sizes or any(isinstance(s, bool) or not isinstance(s, int) or s < 1
                                                        for s in sizes):
        raise ValueError(f"sizes must be a non-empty sequence of ints >= 1, but got {sizes!r}")
    sizes = tuple(sorted(set(sizes)))
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        raise ValueError(f"seconds must be > 0, but got seconds={seconds!r}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an int >= 1, but got repeats={repeats!r}")
    return games, precisions, sizes


def calibrate(games=None, precisions=PRECISIONS, sizes=SIZES, seconds: float = 0.2, repeats: int = 3,
              save: bool = True, progress=None) -> dict:
    """Time every game in ``games`` (default: all) and precision at ``sizes``, at this
    process's Numba thread count and threading layer, and return ``{game_id: {precision: {"threshold": size or
    None, "rows": measure(...)}}}``; with ``save``, merge the thresholds into the calibration
    file under this machine's key (``parallel="auto"`` uses them from the next engine on).
    ``progress(text)`` is called before each game and precision."""
    games, precisions, sizes = _check_args(games, precisions, sizes, seconds, repeats)
    import vecsim

    results: dict = {}
    for game_id in games:
        for precision in precisions:
            if progress is not None:
                progress(f"{game_id.split('/', 1)[-1]} {precision}")
            rows = measure(game_id, precision, sizes, seconds, repeats)
            results.setdefault(game_id, {})[precision] = {"threshold": threshold(rows), "rows": rows}
    if save:
        from vecsim.engine.threads import threading_layer

        key, layer = tuning.machine_key(), threading_layer()
        path = tuning.calibration_path()
        with tuning._LOCK:
            try:
                data = json.loads(path.read_text())
                if not (isinstance(data, dict) and data.get("version") == tuning.VERSION
                        and isinstance(data.get("machines"), dict)):
                    raise ValueError
            except (OSError, ValueError):
                data = {"version": tuning.VERSION, "machines": {}}
            machine = data["machines"].setdefault(key, {"layers": {}})
            if not isinstance(machine.get("layers"), dict):
                machine["layers"] = {}
            record = machine["layers"].setdefault(layer, {"games": {}})
            if not isinstance(record.get("games"), dict):
                record["games"] = {}
            for game_id, by_precision in results.items():
                module = vecsim.resolve(game_id).module.__name__
                entry = record["games"].setdefault(module, {})
                for precision, result in by_precision.items():
                    entry[precision] = result["threshold"]
            record["measured"] = time.strftime("%Y-%m-%d %H:%M:%S")
            record["sizes"] = list(sizes)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
            os.replace(tmp, path)
    return results


def forget() -> bool:
    """Delete the calibration file (every machine's); whether there was one."""
    path = tuning.calibration_path()
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True
