"""The idle/loaded table: steps/s of the default kernel choice against one thread and against
the batch size alone, on an idle machine and beside busy processes.

Run ``python -m vecsim.bench.loadtable`` (``--help`` for the options). Each configuration needs a
process of its own (Numba reads its threading settings once), so every round starts one child
process per configuration, in an order that rotates from round to round; a child measures
every cell at every load (``vecsim.bench.load.BusyProcesses``, each busy process in a session of its
own at nice 19) with fresh engines under that load, each stepped for ``SETTLE_S`` before it is
timed (a fresh batch starts on the kernels its size picks). The table shows, per cell, the median and
the range over the rounds, and the ratios of the medians that the requirement is about.

Configurations:

- ``size-only``: Numba's omp layer, the batch size alone picks the kernels (``VECSIM_ADAPT=0``:
  vecsim's default before the online choice);
- ``one-thread``: ``NUMBA_NUM_THREADS=1`` (serial kernels only);
- ``default``: what a user gets (no setting);
- ``workqueue``, ``workqueue-size-only``, ``tbb``, ``tbb-size-only``: other threading layers
  with and without the online choice (``tbb`` needs ``pip install tbb``; its library is put on
  ``LD_LIBRARY_PATH``, where Numba looks for it).

A load is ``N`` busy processes or ``Nt``: N threads of the measuring process multiplying
matrices with NumPy (``vecsim.bench.load.BusyThreads``, a learner beside the envs).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CONFIGS = {
    "size-only": {"NUMBA_THREADING_LAYER": "omp", "VECSIM_ADAPT": "0"},
    "one-thread": {"NUMBA_NUM_THREADS": "1"},
    "default": {},
    "workqueue": {"NUMBA_THREADING_LAYER": "workqueue"},
    "workqueue-size-only": {"NUMBA_THREADING_LAYER": "workqueue", "VECSIM_ADAPT": "0"},
    "tbb": {"NUMBA_THREADING_LAYER": "tbb"},
    "tbb-size-only": {"NUMBA_THREADING_LAYER": "tbb", "VECSIM_ADAPT": "0"},
}
DEFAULT_CONFIGS = ("size-only", "one-thread", "default")
#: What ``default_cells`` takes: the first variants of each game benchmarked per variant, at
#: these sizes; the first game benchmarked per precision, in both precisions, at these sizes.
DEFAULT_VARIANTS, DEFAULT_VARIANT_SIZES = 2, (4096,)
DEFAULT_PRECISION_SIZES = (4096, 65536)
# Settings of the parent that would change a child's configuration.
_CLEARED = ("NUMBA_THREADING_LAYER", "NUMBA_NUM_THREADS", "VECSIM_ADAPT", "VECSIM_PARALLEL_THRESHOLD")


def default_cells() -> list[str]:
    """The cells measured when none are given: ``"GAME KIND NUM_ENVS"`` for the first
    ``DEFAULT_VARIANTS`` variants of every registered game that declares ``BENCH_VARIANTS`` (at
    ``DEFAULT_VARIANT_SIZES``), then for the first registered game benchmarked per precision
    (float64 and float32 at ``DEFAULT_PRECISION_SIZES``)."""
    import vecsim
    from vecsim.bench import measure as bench

    cells = []
    per_precision = []
    for game_id in vecsim.game_ids():
        short = game_id.split("/", 1)[-1]
        variants = list(bench.bench_variants(game_id))[:DEFAULT_VARIANTS]
        if variants:
            cells += [f"{short} {v} {n}" for n in DEFAULT_VARIANT_SIZES for v in variants]
        elif not per_precision:
            per_precision = [f"{short} {p} {n}" for n in DEFAULT_PRECISION_SIZES for p in ("float64", "float32")]
    return cells + per_precision


def _parse_cell(text: str) -> tuple[str, str, int]:
    """``"GAME KIND NUM_ENVS"`` as ``(game, kind, num_envs)``; the kind is one of the game's
    ``BENCH_VARIANTS`` where it declares them, else a precision."""
    from vecsim.bench import measure as bench

    if not isinstance(text, str):
        raise TypeError(f"a cell must be a str 'GAME KIND NUM_ENVS', but got {text!r}")
    parts = text.split()
    if len(parts) != 3 or not parts[2].isdigit() or int(parts[2]) < 1:
        raise ValueError(f"a cell must be 'GAME KIND NUM_ENVS', but got {text!r}")
    game, kind, n = parts[0], parts[1], int(parts[2])
    variants = bench.bench_variants(game)
    if variants:
        if kind not in variants:
            raise ValueError(f"a {game} cell's kind must be one of its variants {tuple(variants)}, but got {text!r}")
    elif kind not in ("float64", "float32"):
        raise ValueError(f"a cell's kind must be float64 or float32 (a variant for a game with BENCH_VARIANTS), "
                         f"but got {text!r}")
    return game, kind, n


def _runner(game: str, kind: str, n: int):
    """``Engine.step`` of a variant where the game declares them, else ``Engine.step_no_reset``
    and ``reset_envs`` in the precision ``kind``."""
    from vecsim.bench import measure as bench

    if bench.bench_variants(game):
        return bench.variant_runner(game, kind, n)
    return bench.vecsim_no_reset_runner(game, n, kind)


def _load_parts(text: str) -> tuple[int, int]:
    """A load as ``(busy processes, busy threads)``: ``"2"`` is 2 processes, ``"1t"`` one thread."""
    return (0, int(text[:-1])) if text.endswith("t") else (int(text), 0)


#: Seconds a new batch steps before it is timed, whatever the configuration: the kernel choice
#: settles (a batch starts on the kernels the batch size picks) and the thread pool starts.
SETTLE_S = 0.3


def _settle(step, seconds: float = SETTLE_S, calls: int = 3) -> None:
    start = time.perf_counter()
    done = 0
    while done < calls or time.perf_counter() - start < seconds:
        step()
        done += 1


def measure_child(cells, loads, seconds: float, repeats: int) -> dict:
    """Steps/s of every cell at every load in this process.

    Parameters
    ----------
    cells : list of str
        ``"GAME KIND NUM_ENVS"`` each.
    loads : list of str
        ``"N"`` busy processes or ``"Nt"`` busy threads each.
    seconds : float
        Timing per cell (``vecsim.bench.steps_per_second``).
    repeats : int
        Repeats per cell, the best counts.

    Returns
    -------
    dict
        ``{"layer": Numba's threading layer or None, "threads": NUMBA_NUM_THREADS, "results":
        {cell: {load: steps/s}}}``.
    """
    import numba

    from vecsim.bench import load, measure as bench

    results: dict = {cell: {} for cell in cells}
    for count in loads:
        procs, threads = _load_parts(str(count))
        with load.BusyProcesses(procs), load.BusyThreads(threads):
            for cell in cells:
                with _runner(*_parse_cell(cell)) as runner:
                    _settle(runner.step)
                    results[cell][str(count)] = bench.steps_per_second(runner.step, runner.num_envs, seconds,
                                                                       repeats)
    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel kernel ran
        layer = None
    return {"layer": layer, "threads": numba.config.NUMBA_NUM_THREADS, "results": results}


def _child_env(config: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED}
    env.update(CONFIGS[config])
    if config.startswith("tbb"):
        lib = os.path.join(sys.prefix, "lib")  # where the tbb wheel puts libtbb.so.12
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (lib, env.get("LD_LIBRARY_PATH")) if p)
    return env


def run(configs, cells, loads, rounds: int, seconds: float, repeats: int, progress=None) -> dict:
    """Measure in ``rounds`` rounds of one child process per configuration.

    Parameters
    ----------
    configs : list of str
        Names in ``CONFIGS``.
    cells, loads, seconds, repeats
        As for ``measure_child``.
    rounds : int
        Child processes per configuration, interleaved with the other configurations'.
    progress : callable or None
        Called with a line of text before each child process.

    Returns
    -------
    dict
        ``{"rates": {config: {cell: {load: [steps/s per round]}}}, "layers": {config: layer},
        "errors": {config: the last line a failed child wrote}}``.
    """
    rates = {c: {cell: {str(n): [] for n in loads} for cell in cells} for c in configs}
    layers, errors = {}, {}
    spec = json.dumps({"cells": list(cells), "loads": list(loads), "seconds": seconds, "repeats": repeats})
    for r in range(rounds):
        order = list(configs[r % len(configs):]) + list(configs[:r % len(configs)])
        for config in order:
            if config in errors:
                continue
            if progress is not None:
                progress(f"round {r + 1}/{rounds}: {config}")
            proc = subprocess.run([sys.executable, "-m", "vecsim.bench.loadtable", "--child", spec],
                                  env=_child_env(config), capture_output=True, text=True)
            if proc.returncode != 0:
                errors[config] = (proc.stderr.strip().splitlines() or ["exited with no message"])[-1]
                continue
            answer = json.loads(proc.stdout.strip().splitlines()[-1])
            layers[config] = answer["layer"] if answer["threads"] > 1 else f"{answer['layer']}, 1 thread"
            for cell, by_load in answer["results"].items():
                for count, rate in by_load.items():
                    rates[config][cell][count].append(rate)
    return {"rates": rates, "layers": layers, "errors": errors}


def _fmt(values) -> str:
    from vecsim.bench.measure import format_rate

    if not values:
        return "-"
    if len(values) == 1:
        return format_rate(values[0])
    return f"{format_rate(statistics.median(values))} ({format_rate(min(values))}-{format_rate(max(values))})"


def format_report(measured: dict, configs, cells, loads) -> str:
    """The table: per cell and configuration, the median steps/s and its range, per load; then the
    ratios of the default's medians to one thread's and to the size-only choice's."""
    from vecsim.bench.measure import format_table

    rates = measured["rates"]
    header = ["cell"] + [f"{c} load={n}" for n in loads for c in configs]
    rows = [[cell] + [_fmt(rates[c][cell][str(n)]) for n in loads for c in configs] for cell in cells]
    lines = [format_table(header, rows)]
    pairs = [(a, b) for a, b in (("default", "one-thread"), ("default", "size-only")) if a in configs and b in configs]
    if pairs:
        header = ["cell"] + [f"{a}/{b} load={n}" for n in loads for a, b in pairs]
        rows = []
        for cell in cells:
            row = [cell]
            for n in loads:
                for a, b in pairs:
                    x, y = rates[a][cell][str(n)], rates[b][cell][str(n)]
                    row.append(f"{statistics.median(x) / statistics.median(y):.2f}" if x and y else "-")
            rows.append(row)
        lines += ["", format_table(header, rows)]
    layers = ", ".join(f"{c}: {layer}" for c, layer in measured["layers"].items())
    lines.append(f"\nmedian steps/s (range) over the rounds; a step of N envs counts N; load=N: N busy processes, "
                 f"each in a session of its own at nice 19; load=Nt: N threads of the measuring process multiplying "
                 f"matrices with NumPy. Threading layers: {layers}.")
    for config, error in measured["errors"].items():
        lines.append(f"{config}: not measured ({error})")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    from vecsim.bench.load import MAX_LOAD
    from vecsim.cli.common import positive_float, positive_int

    def load_count(text):
        try:
            value = int(text[:-1] if text.endswith("t") else text)
        except ValueError:
            value = -1
        if not 0 <= value <= MAX_LOAD:
            raise argparse.ArgumentTypeError(f"must be N or Nt with N in [0, {MAX_LOAD}], got {text!r}")
        return f"{value}t" if text.endswith("t") else str(value)

    parser = argparse.ArgumentParser(prog="python -m vecsim.bench.loadtable", description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", nargs="+", choices=tuple(CONFIGS), default=list(DEFAULT_CONFIGS),
                        help="configurations (default: %(default)s)")
    parser.add_argument("--cells", nargs="+", metavar="'GAME KIND N'",
                        help="cells, each one quoted argument; KIND is a variant for a game with BENCH_VARIANTS, "
                             "else float64 or float32 (default: the first two variants of each game with "
                             "BENCH_VARIANTS at 4096 envs, and the first other game in both precisions at 4096 "
                             "and 65536 envs)")
    parser.add_argument("--loads", nargs="+", type=load_count, default=["0", "2"],
                        help="loads: N busy processes, or Nt for N busy NumPy threads in the measuring process "
                             "(default: 0 2)")
    parser.add_argument("--rounds", type=positive_int, default=3, help="rounds (default: %(default)s)")
    parser.add_argument("--seconds", type=positive_float, default=1.0, help="time per cell (default: %(default)s)")
    parser.add_argument("--repeats", type=positive_int, default=3, help="repeats per cell, the best counts "
                                                                         "(default: %(default)s)")
    parser.add_argument("--json", help="also write the rates to this JSON file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    return parser


def main(argv=None) -> int:
    """Print the idle/loaded table (``argv`` defaults to ``sys.argv[1:]``)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.child:
        spec = json.loads(args.child)
        print(json.dumps(measure_child(spec["cells"], spec["loads"], spec["seconds"], spec["repeats"])))
        return 0
    try:
        cells = [" ".join(map(str, _parse_cell(c))) for c in args.cells or default_cells()]
    except ValueError as exc:
        parser.error(f"--cells: {exc}")
    configs, loads = list(dict.fromkeys(args.configs)), list(dict.fromkeys(args.loads))
    import vecsim
    from vecsim.bench import measure as bench

    for game, kind, _ in dict.fromkeys(_parse_cell(c) for c in cells):  # compiled (or loaded) before any timing
        variants = bench.bench_variants(game)
        if variants:
            vecsim.warmup(bench.full_id(game), **variants[kind])
        else:
            vecsim.warmup(bench.full_id(game), kind)
    start = time.perf_counter()
    measured = run(configs, cells, loads, args.rounds, args.seconds, args.repeats,
                   progress=lambda text: print(text, file=sys.stderr, flush=True))
    print(format_report(measured, configs, cells, loads))
    print(f"{args.rounds} rounds in {time.perf_counter() - start:.0f} s; command: python -m vecsim.bench.loadtable "
          + " ".join(sys.argv[1:] if argv is None else argv))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(measured, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
