"""The ``vecsim`` command: ``demo``, ``bench``, ``warmup``, ``kernels``, ``calibrate`` and ``train``.

``vecsim demo`` runs every game with random actions through ``gymnasium.make_vec``, prints
its throughput and writes a PNG of rendered frames. ``vecsim bench`` measures steps per
second against Gymnasium (and EnvPool when installed) with the functions of
``vecsim.bench``, which the asv suite in ``asv_bench/`` uses too; a game that declares
``BENCH_VARIANTS`` gets a table of its own, a column per variant, beside the peers
``vecsim.bench.peers`` lists for it when they are installed.
``vecsim warmup`` compiles kernels into the on-disk cache ahead of time (an image build, a CI
cache), several games at once; ``vecsim kernels`` prints a game's generated kernel module, or
with ``--compile-times`` how long each kernel takes to compile cold (``vecsim.bench.compile_times``). ``vecsim calibrate`` times each game's serial and parallel
kernels on this machine and saves the batch size from which ``parallel="auto"`` picks the
parallel ones (``vecsim.bench.calibrate``). ``vecsim train`` trains a Stable-Baselines3 agent on
a game (``vecsim.trainers.train``, which imports SB3 and torch only then).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import sys
import time

import numpy as np

import vecsim
from vecsim.bench import measure as bench
from vecsim.bench.load import BUSY_NICE


class Progress:
    """A one-line progress display on stderr, rewritten in place with ``\\r``."""

    def __init__(self, total: int, enabled: bool = True, stream=None):
        self.total = total
        self.done = 0
        self.enabled = enabled
        self.stream = sys.stderr if stream is None else stream
        self._width = 0
        self._start = time.perf_counter()

    def show(self, label: str) -> None:
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self._start
        text = f"[{self.done}/{self.total} {elapsed:5.1f}s] {label}"
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()
        self._width = max(self._width, len(text))

    def advance(self) -> None:
        self.done += 1

    def finish(self) -> None:
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()


def _game_list(names) -> list[str]:
    import vecsim

    if not names:
        return vecsim.game_ids()
    return [bench.full_id(name) for name in names]


def _short(game_id: str) -> str:
    return game_id.split("/", 1)[-1]


def _warmup_timed(game_id: str, precision: str = "float64") -> float:
    """Seconds taken by ``vecsim.warmup`` of one game (compile, or load from the cache)."""
    import vecsim

    start = time.perf_counter()
    vecsim.warmup(game_id, precision)
    return time.perf_counter() - start


def _compile_weight(game_id: str) -> int:
    """A guess at how long a game's kernels take to compile: the size of its own source (a
    game package's every file), which puts a game package far ahead of a one-module game."""
    import pathlib

    import vecsim

    module = vecsim.resolve(game_id).module
    roots = [pathlib.Path(p) for p in getattr(module, "__path__", [])]
    files = [f for root in roots for f in root.rglob("*.py")] if roots else [pathlib.Path(module.__file__)]
    return sum(f.stat().st_size for f in files)


def _map_in_processes(fn, items: list, jobs: int, progress: Progress | None = None,
                      label: str = "compiling", weight=None) -> list:
    """``[fn(item) for item in items]``, in ``jobs`` new processes at once when ``jobs > 1``.

    Numba compiles on one core, so compiling several games' kernels in processes of their own
    fills the on-disk cache that much sooner. ``fn`` must be a module-level function (the
    processes are spawned: a forked process could inherit Numba's threads mid-launch). The
    items start in decreasing ``weight(item)`` (default: in order): the longest compile first,
    so that it does not begin last and leave the other processes idle while it runs.
    """
    import concurrent.futures
    import multiprocessing

    jobs = min(jobs, len(items))
    where = f"{label} {len(items)} in {jobs} process{'es' if jobs > 1 else ''}"
    if progress is not None:
        progress.show(where)
    if jobs <= 1:
        results = []
        for item in items:
            results.append(fn(item))
            if progress is not None:
                progress.advance()
                progress.show(where)
        return results
    order = sorted(range(len(items)), key=lambda k: -weight(items[k])) if weight is not None else range(len(items))
    pool = concurrent.futures.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"))
    try:
        futures = {pool.submit(fn, items[k]): k for k in order}  # the pool runs them in this order
        results = [None] * len(items)
        for future in concurrent.futures.as_completed(futures):
            results[futures[future]] = future.result()
            if progress is not None:
                progress.advance()
                progress.show(where)
        return results
    finally:
        pool.shutdown(cancel_futures=True)


def _warmup_all(games: list[str], jobs: int, progress: Progress) -> dict[str, float]:
    """Warm every game up; with ``jobs > 1`` compile in that many processes at once.

    Worker processes fill the on-disk cache in parallel, then this process loads the machine
    code from it, which takes a fraction of a second.
    """
    seconds = {}
    pooled = min(jobs, len(games)) > 1
    if pooled:  # the progress advances here, once a game
        seconds = dict(zip(games, _map_in_processes(_warmup_timed, games, jobs, progress, "compiling games:",
                                                        weight=_compile_weight)))
    for game_id in games:
        progress.show(f"warming up {_short(game_id)}")
        secs = _warmup_timed(game_id)
        seconds[game_id] = max(seconds.get(game_id, 0.0), secs)
        if not pooled:
            progress.advance()
    return seconds


# -- warmup ---------------------------------------------------------------------------------
def _warm_kernel_set(item: tuple[str, str, bool, dict]) -> float:
    """Seconds to compile (or load) one game's kernels in one precision with game parameters
    ``params``: the engine's, and with ``collector`` those of ``EpisodeCollector`` for
    policies outside the kernel."""
    game_id, precision, collector, params = item
    import vecsim
    from vecsim.collect.collector import EpisodeCollector

    start = time.perf_counter()
    vecsim.warmup(game_id, precision, **params)
    if collector:
        # Random actions use the same per-step kernels as a Python policy; both variants.
        for parallel in (False, True):
            with EpisodeCollector(game_id, 2, 2, "random", seed=0, precision=precision, parallel=parallel,
                                  **params) as c:
                c.request_episodes(2)
    return time.perf_counter() - start


class UsageError(ValueError):
    """A bad command-line value found after parsing: reported as argparse reports its own (exit 2)."""


def _game_params(pairs, games: list[str]) -> dict:
    """``--param NAME=VALUE`` pairs as keyword arguments (numbers where they parse as one),
    checked as parameters of every game in ``games``."""
    import numpy as np

    import vecsim
    from vecsim.engine.engine import build_params

    params = {}
    for pair in pairs or ():
        name, sep, text = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"--param must be NAME=VALUE, but got --param {pair!r}")
        try:
            value = float(text)
            params[name] = int(value) if value.is_integer() and "." not in text else value
        except ValueError:
            params[name] = text
    for game_id in games:  # checked here as vecsim.make checks them, not in a worker process
        try:
            build_params(vecsim.resolve(game_id), 1, np.float64, params)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"--param: {exc}") from None
    return params


def cmd_kernels(args) -> int:
    """Print the kernel module vecsim generates for one game (without compiling it), or with
    ``--compile-times`` the cold compile times of the games named (every game by default)."""
    import vecsim

    if args.compile_times:
        return _compile_times(args)
    if len(args.games) != 1:
        raise UsageError(f"kernels prints one game's kernel module: name one game id, or add --compile-times "
                         f"(got {len(args.games)} game ids)")
    try:
        game_id = _game_list(args.games)[0]
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    params = _game_params(args.param, [game_id])
    engine = vecsim.make(game_id, 2, precision=args.precision, parallel=False, **params)
    print(engine.kernel_source(), end="")
    return 0


def _compile_times(args) -> int:
    from vecsim.bench import compile_times

    try:
        games = _game_list(args.games)
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    items = compile_times.cases(games, args.num_envs or compile_times.SIZES)
    progress = Progress(len(items), enabled=not args.no_progress)
    results = _map_in_processes(compile_times.run_item, items, args.jobs, progress, "cold cases:",
                                weight=lambda item: _compile_weight(item[0]) * item[1])
    progress.finish()
    print(bench.format_table(compile_times.HEADER, compile_times.table_rows(items, results)))
    print(f"\neach case in a new process with an empty kernel cache, {min(args.jobs, len(items))} at a time; "
          f"first step: import, make, reset and one step; {_machine_line()}")
    return 0


def cmd_warmup(args) -> int:
    from vecsim.engine.codegen import cache_dir

    games = _game_list(args.games)
    params = _game_params(args.param, games)
    items = [(game_id, precision, args.collector, params) for game_id in games for precision in args.precision]
    progress = Progress(len(items), enabled=not args.no_progress)
    start = time.perf_counter()
    seconds = _map_in_processes(_warm_kernel_set, items, args.jobs, progress, "kernel sets:",
                                weight=lambda item: _compile_weight(item[0]))
    wall = time.perf_counter() - start
    progress.finish()
    rows = [[_short(game_id), precision, f"{secs:.1f}"] for (game_id, precision, _, _), secs in zip(items, seconds)]
    print(bench.format_table(["game", "precision", "seconds"], rows))
    what = "engine and collector kernels" if args.collector else "engine kernels"
    print(f"\n{what}, serial and parallel, compiled or loaded in {wall:.1f} s "
          f"({min(args.jobs, len(items))} process{'es' if min(args.jobs, len(items)) > 1 else ''}); "
          f"cached in {cache_dir()} (set VECSIM_CACHE_DIR to move it).")
    return 0


# -- calibrate ------------------------------------------------------------------------------
def cmd_calibrate(args) -> int:
    import numba

    from vecsim.bench import calibrate as calibration
    from vecsim.engine import tuning

    if args.forget:
        path = tuning.calibration_path()
        print(f"removed {path}" if calibration.forget() else f"no calibration file at {path}")
        return 0
    if args.threads is not None:
        if args.threads > numba.config.NUMBA_NUM_THREADS:
            raise UsageError(f"--threads must be at most NUMBA_NUM_THREADS ({numba.config.NUMBA_NUM_THREADS}), "
                             f"but got --threads {args.threads}")
        numba.set_num_threads(args.threads)
    games = _game_list(args.games)
    progress = Progress(len(games) * len(args.precision), enabled=not args.no_progress)

    def show(label):
        progress.show(f"timing serial and parallel kernels: {label}")
        progress.advance()

    import vecsim

    # The games' own sizes, read before this run's results are saved.
    declared = {(g, p): _declared_size(vecsim.resolve(g), p) for g in games for p in args.precision}
    try:
        sizes = tuple(args.sizes) if args.sizes else calibration.SIZES
        results = calibration.calibrate(games, args.precision, sizes, args.seconds, save=not args.dry_run,
                                        progress=show)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    progress.finish()
    rows = []
    for game_id, by_precision in results.items():
        for precision, result in by_precision.items():
            ratios = "  ".join(f"{size}:{par / ser:.2f}" for size, ser, par in result["rows"])
            rows.append([_short(game_id), precision, _size_text(declared[game_id, precision]),
                         _size_text(result["threshold"]), ratios])
    print(bench.format_table(["game", "precision", "declared", "measured", "parallel/serial speed by num_envs"], rows))
    from vecsim.engine.threads import threading_layer

    key = f"{tuning.machine_key()} | {threading_layer()}"
    where = "not saved (--dry-run)" if args.dry_run else f"saved in {tuning.calibration_path()}"
    print(f"\n{key}: {where}. parallel=\"auto\" picks the parallel kernels from the measured size on "
          f"(\"never\": serial always) at this thread count; `vecsim calibrate --forget` removes the file.")
    return 0


def _declared_size(game, precision: str):
    """The game's own size at this thread count, calibration aside."""
    import numba

    from vecsim.engine.engine import parallel_min_envs

    return parallel_min_envs(game, None, precision, numba.get_num_threads(), calibrated=False)


def _size_text(size) -> str:
    return "never" if size is None else str(size)


# -- demo -----------------------------------------------------------------------------------
def _envs_that_fit(game_id: str, num_envs: int) -> int:
    """``num_envs``, or fewer where the game's state for so many would take more than a
    quarter of the memory available, its thread scratch (``SCRATCH_STATE``) counted once."""
    from vecsim.core import buffers
    from vecsim.engine.engine import build_params

    available = buffers.available_memory()
    if available is None:
        return num_envs
    game = vecsim.resolve(game_id)
    _, _, scalar = build_params(game, 1, np.float64, {})
    state = game.allocate_state(1, np.float64, scalar)
    return int(max(1, min(num_envs, buffers.envs_that_fit(state, game.scratch_state, available // 4))))


def _run_game(game_id: str, num_envs: int, seconds: float, n_frames: int):
    """Random play of one game for ``seconds``: (steps/s, episodes finished, frames)."""
    import gymnasium

    env = gymnasium.make_vec(game_id, num_envs, vectorization_mode="vector_entry_point")
    try:
        env.reset(seed=0)
        engine = env.unwrapped.engine
        if engine.n_mask:  # a masked game: legal actions only
            choose = bench.LegalActions(engine.masks)
        else:
            batches = bench.action_batches(env.single_action_space, num_envs)
            choose = itertools.cycle(batches).__next__
        def step():
            _, rewards, terminations, truncations, _ = env.step(choose())
            return rewards, terminations | truncations

        frames = _frames_after(step, engine, num_envs, n_frames)
        steps, episodes, _, elapsed = _timed_play(step, seconds)
    finally:
        env.close()
    return steps * num_envs / elapsed, episodes, frames


def _timed_play(step, seconds: float):
    """Call ``step() -> (rewards, done flags)`` for ``seconds``: (steps, episodes, reward, seconds)."""
    steps = episodes = 0
    reward = 0.0
    start = time.perf_counter()
    while True:
        rewards, done = step()
        reward += float(rewards.sum())
        episodes += int(np.count_nonzero(done))
        steps += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return steps, episodes, reward, elapsed


#: Steps from ``reset(seed=0)`` after which the demo draws its frames, untimed: every game
#: mid-play, the same picture on every machine (a timed second's steps vary with speed).
DEMO_FRAME_STEPS = 24


def _frames_after(step, engine, num_envs: int, n_frames: int) -> list:
    """``(env, rgb image)`` of up to ``n_frames`` envs spread over the batch, after
    ``DEMO_FRAME_STEPS`` calls of ``step``."""
    for _ in range(DEMO_FRAME_STEPS):
        step()
    picks = np.unique(np.linspace(0, num_envs - 1, min(n_frames, num_envs)).astype(int))
    return [(int(i), engine.render_rgb(int(i))) for i in picks]


def _run_agent(game_id: str, num_envs: int, seconds: float, n_frames: int):
    """The game's own demo agent (its ``DEMO_AGENT``) playing for ``seconds``:
    (label, steps/s, episodes finished, total reward, steps, frames)."""
    import importlib

    name, target, kwargs = vecsim.resolve(game_id).demo_agent
    module_name, attr = target.split(":")
    choose = getattr(importlib.import_module(module_name), attr)
    engine = vecsim.make(game_id, num_envs, **kwargs)
    try:
        engine.reset(seed=0)
        actions = engine.zero_actions()
        choose(engine, out=actions)  # compile (or load) before timing
        def step():
            choose(engine, out=actions)
            _, rewards, terminals, truncations = engine.step(actions)
            return rewards, terminals | truncations

        frames = _frames_after(step, engine, num_envs, n_frames)
        steps, episodes, reward, elapsed = _timed_play(step, seconds)
    finally:
        engine.close()
    return name, steps * num_envs / elapsed, episodes, reward, steps * num_envs, frames


def _save_frames(path: str, frames_by_game: dict) -> None:
    try:
        from matplotlib.figure import Figure  # no pyplot: the Agg canvas, no display needed
    except ImportError:
        raise SystemExit('vecsim demo writes its PNG with matplotlib: pip install "vecsim[demo]"') from None

    rows = len(frames_by_game)
    cols = max(len(f) for f in frames_by_game.values())
    fig = Figure(figsize=(2.6 * cols, 2.0 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    for r, (game_id, frames) in enumerate(frames_by_game.items()):
        for c in range(cols):
            ax = axes[r][c]
            ax.set_axis_off()
            if c < len(frames):
                i, img = frames[c]
                ax.imshow(img)
                ax.set_title(f"{_short(game_id)}  env {i}", fontsize=8)
    fig.savefig(path, dpi=80)


def cmd_demo(args) -> int:
    games = _game_list(args.games)
    progress = Progress(2 * len(games), enabled=not args.no_progress)
    total_start = time.perf_counter()
    compile_s = _warmup_all(games, args.jobs, progress)
    compile_wall = time.perf_counter() - total_start
    rows, frames_by_game = [], {}
    for game_id in games:
        num_envs = _envs_that_fit(game_id, args.num_envs)
        progress.show(f"playing {_short(game_id)} with {num_envs} envs")
        rate, episodes, frames = _run_game(game_id, num_envs, args.seconds, args.frames)
        frames_by_game[game_id] = frames
        rows.append([_short(game_id), num_envs, bench.format_rate(rate), episodes, f"{compile_s[game_id]:.1f}"])
        progress.advance()
    agent_lines = []
    for game_id in games:
        if vecsim.resolve(game_id).demo_agent is None:
            continue
        progress.show(f"{_short(game_id)}: its demo agent playing")
        name, rate, episodes, reward, steps, frames = _run_agent(game_id, args.num_envs, args.seconds, args.frames)
        label = f"{_short(game_id)}:{name}"
        frames_by_game[label] = frames
        rows.append([label, args.num_envs, bench.format_rate(rate), episodes, "-"])
        agent_lines.append(f"{label}: {_short(game_id)} played by its {name} agent, total reward {reward:g} over "
                           f"{steps} env steps ({reward / max(steps, 1):.3f} per step)")
    progress.show(f"writing {args.out}")
    _save_frames(args.out, frames_by_game)
    progress.finish()
    print(bench.format_table(["game", "num_envs", "steps/s", "episodes finished", "compile s"], rows))
    for line in agent_lines:
        print(line)
    jobs = min(args.jobs, len(games))
    print(f"\nrandom actions for {args.seconds:g} s per game through gymnasium.make_vec(..., "
          f'vectorization_mode="vector_entry_point").\n'
          f"compile s = vecsim.warmup of the game (compile, or load from the cache); all games: "
          f"{compile_wall:.1f} s wall time in {jobs} process{'es' if jobs > 1 else ''}.")
    print(f"frames written to {args.out}; total {time.perf_counter() - total_start:.1f} s")
    return 0


# -- bench ----------------------------------------------------------------------------------
def _ratio(ours, theirs) -> str:
    if ours is None or not theirs:
        return "-"
    return f"{ours / max(theirs):.1f}x"


def _variant_key(game_id: str, n: int, impl: str):
    """The results key of one cell of a game's variant table (a peer's precision is ``None``)."""
    for variant in bench.bench_variants(game_id):
        if impl == bench.variant_impl(variant):
            return game_id, n, impl, bench.variant_precision(game_id, variant)
    return game_id, n, impl, None


def _print_variant_table(game_id: str, args, results: dict) -> None:
    """The table of a game that declares ``BENCH_VARIANTS``: steps/s per variant, then its peers."""
    variants = bench.bench_variants(game_id)
    peers = bench.variant_peers(game_id)
    installed = {peer.name: peer.available() for peer in peers}
    header = (["game", "num_envs"] + [f"{v} steps/s" for v in variants] + [f"{p.name} steps/s" for p in peers]
              + [f"x {p.compare_with} vs {p.short}" for p in peers])
    rows = []
    for n in args.num_envs:
        ours = {v: results[_variant_key(game_id, n, bench.variant_impl(v))] for v in variants}
        theirs = {p.name: results[_variant_key(game_id, n, p.name)] if installed[p.name] else None for p in peers}
        rows.append([_short(game_id), n] + [bench.format_rate(v) for v in ours.values()]
                    + [bench.format_rate(theirs[p.name]) if installed[p.name] else "not installed" for p in peers]
                    + [_ratio(ours.get(p.compare_with), [theirs[p.name]] if theirs[p.name] else []) for p in peers])
    print(bench.format_table(header, rows))
    made = "; ".join(f"{v} = {', '.join(f'{k}={x!r}' for k, x in kw.items()) or 'the defaults'}"
                     for v, kw in variants.items())
    print(f"\n{_short(game_id)}: vecsim Engine.step (NEXT_STEP autoreset), one column per variant of its "
          f"BENCH_VARIANTS ({made}; float64 unless a variant sets precision: --precision applies to the games "
          f"timed per precision); best of {args.repeats} repeats in about {args.seconds:g} s per cell; a step of N "
          f"envs counts N (one action per env, a whole decision where the variant's action is one).\n"
          f"random actions drawn ahead of time, or where the variant refuses actions outside its mask a random legal "
          f"action (argmax of random keys x action mask, chosen inside the timed step).")
    for peer in peers:
        print(peer.description)
        print(f"x {peer.compare_with} vs {peer.short} = vecsim {peer.compare_with} / {peer.name} at the same "
              f"num_envs.")
    for peer in peers:
        if not installed[peer.name]:
            print(peer.missing)


def _command_peers(args, games: list[str]) -> list:
    """The ``--peer-command`` peers, checked: ``SystemExit`` naming a bad spec, a second game or a
    bad ``--peer-vs``."""
    from vecsim.bench import command_peer

    if not args.peer_command:
        if args.peer_vs is not None:
            raise SystemExit("vecsim bench: --peer-vs needs --peer-command")
        return []
    try:
        peers = command_peer.parse_peer_commands(args.peer_command)
    except ValueError as exc:
        raise SystemExit(f"vecsim bench: --peer-command: {exc}") from None
    if len(games) != 1:
        raise SystemExit(f"vecsim bench: --peer-command times a peer beside one game; give exactly one in --games "
                         f"(got {len(games)}: {', '.join(_short(g) for g in games)})")
    choices = _peer_vs_choices(games[0])
    if args.peer_vs is None:
        args.peer_vs = choices[0]
    elif args.peer_vs not in choices:
        raise SystemExit(f"vecsim bench: --peer-vs must be one of {', '.join(choices)} for {_short(games[0])}, "
                         f"but got --peer-vs {args.peer_vs}")
    return peers


def _peer_vs_choices(game_id: str) -> list[str]:
    """The columns of a game's table that a command peer may be set against: its variants, or
    vecsim's two step paths."""
    return list(bench.bench_variants(game_id)) or ["step", "step_no_reset"]


def _peer_vs_key(game_id: str, n: int, vs: str, precision: str):
    """The results key of the vecsim cell that ``--peer-vs vs`` names."""
    if bench.bench_variants(game_id):
        return _variant_key(game_id, n, bench.variant_impl(vs))
    return game_id, n, bench.VECSIM_STEP if vs == "step" else bench.VECSIM_NO_RESET, precision


def _measure_rounds(game_id: str, cells: list, command_peers: list, n: int, args, progress: Progress,
                    results: dict) -> None:
    """Measure ``cells`` (``(results key, runner opener)`` at ``num_envs=n``) and the command
    peers interleaved: ``args.repeats`` rounds, each timing every cell for ``seconds / repeats``
    and running every peer once for as long; the best round counts. Machine load that drifts
    during the run then weighs on vecsim and the peers alike."""
    import numba

    share = args.seconds / args.repeats
    threads = numba.config.NUMBA_NUM_THREADS
    runners = {}
    try:
        for key, opener in cells:
            runners[key] = opener()
            results[key] = None
        for peer in command_peers:
            results[_command_key(game_id, n, peer)] = None
        for r in range(args.repeats):
            for key, runner in runners.items():
                if runner is None:
                    continue
                progress.show(f"{_short(game_id)} num_envs={n} {key[2]} (round {r + 1}/{args.repeats})")
                rate = bench.steps_per_second(runner.step, n, share, repeats=1)
                results[key] = max(results[key] or 0.0, rate)
            for peer in command_peers:
                progress.show(f"{_short(game_id)} num_envs={n} {peer.name} (round {r + 1}/{args.repeats})")
                try:
                    rate = peer.measure(n, threads, share)
                except RuntimeError as exc:
                    raise SystemExit(f"vecsim bench: {exc}") from None
                k = _command_key(game_id, n, peer)
                results[k] = max(results[k] or 0.0, rate)
        for _ in cells:
            progress.advance()
    finally:
        for runner in runners.values():
            if runner is not None:
                runner.close()


def _command_key(game_id: str, n: int, peer):
    """The results key of a command peer's cell."""
    return game_id, n, peer.name, None


def _print_command_peers(game_id: str, command_peers: list, args, results: dict, precision: str) -> None:
    import numba

    vs = args.peer_vs
    header = ["game", "num_envs", f"vecsim {vs} steps/s"] + [f"{p.name} steps/s" for p in command_peers]
    header += [f"x {vs} vs {p.name}" for p in command_peers]
    rows = []
    for n in args.num_envs:
        ours = results.get(_peer_vs_key(game_id, n, vs, precision))
        theirs = [results.get(_command_key(game_id, n, p)) for p in command_peers]
        rows.append([_short(game_id), n, bench.format_rate(ours)] + [bench.format_rate(t) for t in theirs]
                    + [f"{ours / t:.2f}x" if ours and t else "-" for t in theirs])
    print(bench.format_table(header, rows))
    on = "" if bench.bench_variants(game_id) else f" ({precision})"
    print(f"\npeers run as commands, in {args.repeats} rounds interleaved with vecsim's cells at each num_envs "
          f"(each round: every cell for {args.seconds / args.repeats:g} s, then every peer once for as long; the best "
          f"round counts); {{threads}} = {numba.config.NUMBA_NUM_THREADS} (NUMBA_NUM_THREADS).")
    for peer in command_peers:
        print(f"{peer.name} = {peer.command}")
    print(f"x {vs} vs NAME = vecsim {vs}{on} / NAME at the same num_envs.")


def _operant_peer(python):
    """``peers.open_operant(python)``, its error as the command's."""
    from vecsim.bench import peers

    try:
        return peers.open_operant(python)
    except RuntimeError as exc:
        raise SystemExit(f"vecsim bench: {exc}") from None


def _competing_load(args, progress: Progress):
    """A context that keeps ``args.load`` busy processes (each in a session of its own, at nice
    19) and ``args.load_threads`` busy NumPy threads running while the cells are measured, and
    stops them however the block ends (an error, Ctrl-C)."""
    import contextlib

    from vecsim.bench import load

    stack = contextlib.ExitStack()
    if args.load or args.load_threads:
        progress.show(f"starting {args.load} busy processes and {args.load_threads} busy threads")
        with contextlib.ExitStack() as starting:  # a failed start stops what had started
            starting.enter_context(load.BusyProcesses(args.load))
            starting.enter_context(load.BusyThreads(args.load_threads))
            stack = starting.pop_all()
    return stack


def _load_line(args) -> str:
    if not (args.load or args.load_threads):
        return "load: none (other programs on this machine aside)."
    procs = f"{args.load} busy Python process{'es' if args.load != 1 else ''}"
    threads = f"{args.load_threads} thread{'s' if args.load_threads != 1 else ''}"
    return (f"load: {procs} at nice {BUSY_NICE}, each in a session of its own, and {threads} of this process "
            f"multiplying 256x256 float32 matrices (NumPy), running while every cell was measured.")


def cmd_bench_sb3(args) -> int:
    """``vecsim bench --sb3``: the SB3 adapter's stepping cost and PPO training speed on CartPole."""
    try:
        from vecsim.bench import trainers
        from vecsim.trainers.train import algorithm_class
        algorithm_class("ppo")
    except ImportError as exc:
        raise SystemExit(f'vecsim bench --sb3 needs Stable-Baselines3 and torch ({exc.name} is missing): '
                         f'pip install "vecsim[train]"') from None
    except RuntimeError as exc:
        raise SystemExit(f"vecsim bench --sb3: {exc}") from None
    sizes = args.num_envs or [trainers.NUM_ENVS]
    progress = Progress(len(sizes) * len(trainers.ADAPTER_IMPLS) + 2, enabled=not args.no_progress)
    rows, record = [], {"machine": _machine(), "seconds": args.seconds, "repeats": args.repeats, "stepping": [],
                        "training": {}}
    for n in sizes:
        rates = {}
        for impl in trainers.ADAPTER_IMPLS:
            progress.show(f"CartPole num_envs={n} {impl}")
            with trainers.adapter_runner(impl, trainers.GAME, n) as runner:
                rates[impl] = bench.steps_per_second(runner.step, n, args.seconds, args.repeats)
            progress.advance()
        record["stepping"] += [{"num_envs": n, "impl": impl, "steps_per_s": v} for impl, v in rates.items()]
        sb3 = rates[trainers.SB3_STEP]
        rows.append([n] + [bench.format_rate(v) for v in rates.values()]
                    + [f"{sb3 / rates[bench.VECSIM_STEP]:.2f}", f"{sb3 / rates[trainers.SAME_STEP]:.2f}",
                       f"{sb3 / rates[trainers.DUMMY]:.1f}x"])
    train_rates = {}
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    for impl, make in trainers.training_envs(8, seed=0).items():
        progress.show(f"PPO on CartPole, 8 envs, {args.train_steps} steps: {impl}")
        train_rates[impl] = trainers.training_steps_per_second(make, args.train_steps)
        progress.advance()
    record["training"] = {"steps": args.train_steps, "num_envs": 8, "steps_per_s": train_rates,
                          "torch_threads": trainers.torch_threads()}
    progress.finish()
    print(bench.format_table(["num_envs", "vecsim step", "SAME_STEP", "SB3VecEnv", "DummyVecEnv (gym)",
                              "SB3VecEnv / step", "SB3VecEnv / SAME_STEP", "x SB3VecEnv vs DummyVecEnv"], rows))
    print(f"\nCartPole-v1 env steps per second (a step of N envs counts N), best of {args.repeats} repeats in about "
          f"{args.seconds:g} s per cell; random actions drawn ahead of time.\n"
          f"vecsim step = VecsimVectorEnv.step (NEXT_STEP autoreset, copy=True); SAME_STEP = the same in "
          f"AutoresetMode.SAME_STEP; SB3VecEnv = vecsim.trainers.sb3.SB3VecEnv.step (same-step resets, info dicts, "
          f"terminal observations, Monitor statistics); DummyVecEnv (gym) = SB3's make_vec_env('CartPole-v1') "
          f"(Gymnasium's env in Monitor, in DummyVecEnv).\n")
    ours, theirs = train_rates[trainers.SB3_STEP], train_rates[trainers.DUMMY]
    print(bench.format_table(["PPO training, 8 envs", "steps/s"],
                             [[impl, bench.format_rate(v)] for impl, v in train_rates.items()]
                             + [["x SB3VecEnv vs DummyVecEnv", f"{ours / theirs:.2f}x"]]))
    print(f"\nSB3 PPO with RL Zoo's CartPole-v1 hyperparameters (n_steps 32, batch 256, 20 epochs), "
          f"{args.train_steps} steps of model.learn timed after a first warm-up rollout; torch threads: "
          f"{trainers.torch_threads()}{'' if args.torch_threads else ' (left as they are)'}.")
    print(_machine_line())
    if args.json:
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1)
        print(f"results written to {args.json}")
    return 0


def cmd_bench_pipeline(args) -> int:
    """``vecsim bench --pipeline``: the actor-learner loop, pipelined against synchronous."""
    from vecsim.bench import pipeline

    sizes = args.num_envs or list(pipeline.NUM_ENVS)
    cells = len(pipeline.configurations(sizes, pipeline.ACTORS, ["numpy"], pipeline.LEARNERS))
    progress = Progress(2 * cells * args.repeats, enabled=not args.no_progress)

    def advance(line: str) -> None:
        progress.show(line)
        progress.advance()

    results = pipeline.measure(sizes, rounds=args.repeats, learners=pipeline.LEARNERS, progress=advance)
    progress.finish()
    print(pipeline.table(results))
    print(f"\n{pipeline.describe(20, args.repeats, None, None)}\n"
          f"More settings (torch inference, BLAS threads, cycles): python -m vecsim.bench.pipeline --help")
    print(_machine_line())
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": _machine(), "results": results}, f, indent=1)
        print(f"results written to {args.json}")
    return 0


def cmd_bench(args) -> int:
    from vecsim.bench import peers

    if args.sb3:
        return cmd_bench_sb3(args)
    if args.pipeline:
        return cmd_bench_pipeline(args)
    args.num_envs = args.num_envs or list(bench.NUM_ENVS)
    games = _game_list(args.games)
    # A game that declares BENCH_VARIANTS has its own table: steps/s per variant, beside its peers.
    by_variant = [g for g in games if bench.bench_variants(g)]
    games = [g for g in games if g not in by_variant]
    precisions = list(dict.fromkeys(args.precision))
    command_peers = _command_peers(args, games + by_variant)
    with_envpool = peers.envpool_available()
    operant = _operant_peer(args.operant_python) if games else None
    baselines = ([bench.GYM_VECTOR, bench.GYM_SYNC] + ([bench.ENVPOOL] if with_envpool else [])
                 + ([bench.OPERANT] if operant else []))
    tasks = []
    for game_id in games:
        for n in args.num_envs:
            for precision in precisions:
                tasks += [(game_id, n, bench.VECSIM_STEP, precision), (game_id, n, bench.VECSIM_NO_RESET, precision)]
            tasks += [(game_id, n, impl, None) for impl in baselines]
    variant_tasks = [(game_id, n, impl) for game_id in by_variant for n in args.num_envs
                     for impl in bench.variant_implementations(game_id)]
    warm_variants = [(game_id, variant) for game_id in by_variant for variant in bench.bench_variants(game_id)]
    progress = Progress(len(games) * len(precisions) + len(tasks) + len(warm_variants) + len(variant_tasks),
                        enabled=not args.no_progress)
    for game_id in games:
        for precision in precisions:
            progress.show(f"warming up {_short(game_id)} {precision}")
            _warmup_timed(game_id, precision)
            progress.advance()
    for game_id, variant in warm_variants:
        progress.show(f"warming up {_short(game_id)} {variant}")
        vecsim.warmup(game_id, **bench.bench_variants(game_id)[variant])
        progress.advance()
    results = {}
    with _competing_load(args, progress):
        if command_peers:  # one game: its cells at each num_envs in rounds with the peers
            for n in args.num_envs:
                cells = [((g, m, impl, p), (lambda impl=impl, g=g, m=m, p=p: bench.make_runner(impl, g, m, p)))
                         for g, m, impl, p in tasks if m == n and impl != bench.OPERANT]
                cells += [(_variant_key(g, m, impl), (lambda impl=impl, g=g, m=m: bench.make_variant_runner(impl, g, m)))
                          for g, m, impl in variant_tasks if m == n]
                _measure_rounds((games + by_variant)[0], cells, command_peers, n, args, progress, results)
            done = set(results)
            tasks = [t for t in tasks if t not in done]
            variant_tasks = [t for t in variant_tasks if _variant_key(*t) not in done]
        try:
            for game_id, n, impl, precision in tasks:
                progress.show(f"{_short(game_id)} num_envs={n} {impl}" + (f" {precision}" if precision else ""))
                if impl == bench.OPERANT:
                    ref = bench.reference_id(game_id)
                    rate = None if ref is None else operant.measure(ref, n, args.seconds, args.repeats)
                else:
                    rate = bench.measure(impl, game_id, n, precision or "float64", args.seconds, args.repeats)
                results[game_id, n, impl, precision] = rate
                progress.advance()
        finally:
            if operant:
                operant.close()
        for game_id, n, impl in variant_tasks:
            progress.show(f"{_short(game_id)} num_envs={n} {impl}")
            results[_variant_key(game_id, n, impl)] = bench.measure_variant(impl, game_id, n, args.seconds,
                                                                            args.repeats)
            progress.advance()
    progress.finish()

    if games:
        header = ["game", "num_envs", "precision", "vecsim step", "step_no_reset", "gym vector", "gym sync"]
        header += ["envpool"] if with_envpool else []
        header += ["operant"] if operant else []
        header += ["x vs gymnasium"] + (["x no_reset vs operant"] if operant else [])
        rows = []
        for game_id in games:
            for n in args.num_envs:
                base = [results[game_id, n, impl, None] for impl in baselines]
                gym = [v for v in base[:2] if v is not None]
                theirs = results[game_id, n, bench.OPERANT, None] if operant else None
                for precision in precisions:
                    ours = results[game_id, n, bench.VECSIM_STEP, precision]
                    no_reset = results[game_id, n, bench.VECSIM_NO_RESET, precision]
                    rows.append([_short(game_id), n, precision, bench.format_rate(ours), bench.format_rate(no_reset)]
                                + [bench.format_rate(v) for v in base] + [_ratio(ours, gym)]
                                + ([_ratio(no_reset, [theirs] if theirs and precision == "float32" else [])]
                                   if operant else []))
        print(bench.format_table(header, rows))
        print(f"\nenv steps per second (a step of N envs counts N), best of {args.repeats} repeats in about "
              f"{args.seconds:g} s per cell; random actions.\n"
              f"vecsim step = VecsimVectorEnv.step (copy=True); step_no_reset = Engine.step_no_reset + reset_envs; "
              f"gym vector = Gymnasium's vector_entry_point env; "
              f"gym sync = SyncVectorEnv (num_envs <= {bench.SYNC_MAX_ENVS}).\n"
              f"x vs gymnasium = vecsim step / the fastest Gymnasium implementation at the same num_envs.\n"
              f"- = does not apply, or the batch's state would not fit in the memory available.")
        if not with_envpool:
            print("EnvPool: not installed, left out.")
        if operant:
            where = (f"in Python {operant.versions['python']} ({operant.python}), numpy {operant.versions['numpy']}"
                     if operant.python else "in this Python")
            print(f"operant = operant {operant.versions['operant']}'s vector env .step (float32 SIMD, one "
                  f"worker thread, its own autoreset), {where}; for {', '.join(peers.OPERANT_ENVS)} only.\n"
                  f"x no_reset vs operant = vecsim float32 step_no_reset / operant at the same num_envs (operant "
                  f"computes in float32 only; vecsim's float64 kernels are bit-exact with Gymnasium).")
        else:
            print("operant: not installed, left out (on Linux, --operant-python with a CPython 3.8 that has it: "
                  "see docs/performance.md#operant).")
    for k, game_id in enumerate(by_variant):
        if games or k:
            print()
        _print_variant_table(game_id, args, results)
    if command_peers:
        print()
        _print_command_peers((games + by_variant)[0], command_peers, args, results, precisions[0])
    print(_load_line(args))
    print(_machine_line())
    if args.json:
        record = {"machine": _machine(), "seconds": args.seconds, "repeats": args.repeats,
                  "load": args.load, "load_threads": args.load_threads,
                  "results": [{"game": g, "num_envs": n, "impl": impl, "precision": p, "steps_per_s": v}
                              for (g, n, impl, p), v in results.items()]}
        for peer in (p for game_id in by_variant for p in bench.variant_peers(game_id)):
            record[peer.record_key] = peer.versions()
        if operant:
            record["operant"] = dict(operant.versions, python_path=operant.python)
        if command_peers:
            import numba

            record["peer_commands"] = {p.name: p.command for p in command_peers}
            record["peer_threads"] = numba.config.NUMBA_NUM_THREADS
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1)
        print(f"results written to {args.json}")
    return 0


def _machine() -> dict:
    import gymnasium
    import numba

    import vecsim

    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel kernel has run in this process
        layer = None
    return {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
            "numba_threads": numba.config.NUMBA_NUM_THREADS, "threading_layer": layer, "numba": numba.__version__,
            "numpy": np.__version__, "gymnasium": gymnasium.__version__, "vecsim": vecsim.__version__}


def _machine_line() -> str:
    m = _machine()
    layer = f" ({m['threading_layer']} layer)" if m["threading_layer"] else ""
    return (f"machine: {m['cpus']} CPUs, {m['numba_threads']} Numba threads{layer}, Python {m['python']}, "
            f"numba {m['numba']}, numpy {m['numpy']}, gymnasium {m['gymnasium']}")


# -- train ----------------------------------------------------------------------------------
def cmd_train(args) -> int:
    import pathlib

    try:
        game_id = _game_list([args.env])[0]
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--env: {exc}") from None
    params = _game_params(args.param, [game_id])
    from vecsim.trainers import train as trainer

    out = pathlib.Path(args.out) if args.out else None
    try:
        result = trainer.train(game_id, args.algo, steps=args.steps, num_envs=args.num_envs, seed=args.seed, out=out,
                               eval_episodes=args.eval_episodes, checkpoint_every=args.checkpoint_every,
                               smoke=args.smoke, progress=not args.no_progress, torch_threads=args.torch_threads,
                               step_bonus=args.step_bonus, verbose=args.verbose, **params)
    except trainer.TrainerMissing as exc:
        raise SystemExit(f"vecsim train: {exc}") from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    print(trainer.report(result, out))
    return 0


def _nonnegative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


# -- entry point ----------------------------------------------------------------------------
def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


def _load_count(text: str) -> int:
    from vecsim.bench.load import MAX_LOAD

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an int in [0, {MAX_LOAD}], got {text!r}") from None
    if not 0 <= value <= MAX_LOAD:
        raise argparse.ArgumentTypeError(f"must be an int in [0, {MAX_LOAD}], got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vecsim", description=__doc__.split("\n\n")[0].replace("``", ""))
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="play every game with random actions; print throughput, save frames")
    demo.add_argument("--out", default="vecsim_demo.png", help="PNG file of rendered frames (default: %(default)s)")
    demo.add_argument("--num-envs", type=_positive_int, default=4096, help="envs per game (default: %(default)s)")
    demo.add_argument("--seconds", type=_positive_float, default=1.0, help="play time per game (default: %(default)s)")
    demo.add_argument("--games", nargs="+", help="game ids (default: every game)")
    demo.add_argument("--frames", type=_positive_int, default=4, help="frames per game (default: %(default)s)")
    demo.add_argument("--jobs", type=_positive_int, default=os.cpu_count() or 1,
                      help="processes compiling games at once (default: the CPU count)")
    demo.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    demo.set_defaults(func=cmd_demo)

    w = sub.add_parser("warmup", help="compile every game's kernels into the on-disk cache (a later process "
                                      "loads them in well under a second)")
    w.add_argument("--games", nargs="+", help="game ids (default: every game)")
    w.add_argument("--precision", nargs="+", choices=("float64", "float32"), default=["float64"],
                   help="precisions to compile (default: %(default)s)")
    w.add_argument("--collector", action="store_true",
                   help="also the EpisodeCollector kernels for random and Python policies")
    w.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="a game parameter the kernels depend on, for every game listed; repeatable (kernels "
                        "that depend on one, e.g. --param action_mode=reach, compile only for the values named)")
    w.add_argument("--jobs", type=_positive_int, default=os.cpu_count() or 1,
                   help="processes compiling at once (default: the CPU count)")
    w.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    w.set_defaults(func=cmd_warmup)

    k = sub.add_parser("kernels", help="print the kernel module generated for a game (the Python source Numba "
                                       "compiles), or with --compile-times how long each kernel takes to compile cold")
    k.add_argument("games", nargs="*", metavar="game", help="a game id (with --compile-times: any number, default every game)")
    k.add_argument("--precision", choices=("float64", "float32"), default="float64",
                   help="precision of the kernels (default: %(default)s)")
    k.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="a game parameter the kernels depend on (e.g. --param action_mode=reach); repeatable")
    k.add_argument("--compile-times", action="store_true",
                   help="compile each game in each of its modes at each batch size in a new process with an empty "
                        "cache, and print the time to the first step and each kernel's compile time")
    k.add_argument("--num-envs", type=_positive_int, nargs="+", help="with --compile-times: batch sizes (default: 16 4096)")
    k.add_argument("--jobs", type=_positive_int, default=1,
                   help="with --compile-times: cases at once (default: 1, so that each has a core to itself)")
    k.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    k.set_defaults(func=cmd_kernels)

    c = sub.add_parser("calibrate", help="time each game's serial and parallel kernels on this machine and save "
                                         "the batch size from which parallel=\"auto\" picks the parallel ones")
    c.add_argument("--games", nargs="+", help="game ids (default: every game)")
    c.add_argument("--precision", nargs="+", choices=("float64", "float32"), default=["float64", "float32"],
                   help="precisions to time (default: %(default)s)")
    c.add_argument("--sizes", type=_positive_int, nargs="+",
                   help="batch sizes to time (default: 16, 32, ... 16384)")
    c.add_argument("--seconds", type=_positive_float, default=0.2,
                   help="timing per kernel and size (default: %(default)s)")
    c.add_argument("--threads", type=_positive_int,
                   help="Numba threads to calibrate for (default: NUMBA_NUM_THREADS); each count has its own sizes")
    c.add_argument("--dry-run", action="store_true", help="print the sizes without saving them")
    c.add_argument("--forget", action="store_true", help="remove the calibration file and exit")
    c.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    c.set_defaults(func=cmd_calibrate)

    b = sub.add_parser("bench", help="steps/s of vecsim against Gymnasium (and EnvPool and operant when installed); "
                                     "a game with BENCH_VARIANTS per variant, beside its peers")
    b.add_argument("--games", nargs="+", help="game ids (default: every game)")
    b.add_argument("--num-envs", type=_positive_int, nargs="+",
                   help=f"batch sizes (default: {list(bench.NUM_ENVS)}; with --sb3: 64; with --pipeline: 16 256)")
    b.add_argument("--seconds", type=_positive_float, default=1.0,
                   help="measuring time per cell (default: %(default)s)")
    b.add_argument("--repeats", type=_positive_int, default=3, help="repeats, the best counts (default: %(default)s)")
    b.add_argument("--precision", nargs="+", choices=("float64", "float32"), default=["float64", "float32"])
    b.add_argument("--json", help="also write the results to this JSON file")
    b.add_argument("--operant-python", metavar="PYTHON",
                   help="measure operant in this Python (one with numpy and operant installed; on Linux operant's "
                        "only wheel is for CPython 3.8), side by side with vecsim; default: $VECSIM_OPERANT_PYTHON, "
                        "else operant in this Python if it imports")
    b.add_argument("--load", type=_load_count, default=0, metavar="N",
                   help="measure with N busy-loop processes running, each in a session of its own (as a job "
                        "started from another terminal) at the lowest priority, stopped when the bench ends "
                        "(default: %(default)s)")
    b.add_argument("--load-threads", type=_load_count, default=0, metavar="M",
                   help="measure with M threads of this process multiplying matrices with NumPy (a learner beside "
                        "the envs) (default: %(default)s)")
    b.add_argument("--sb3", action="store_true",
                   help="instead, what the Stable-Baselines3 adapter costs on CartPole: steps/s of VecsimVectorEnv "
                        "(NEXT_STEP, SAME_STEP), SB3VecEnv and SB3's DummyVecEnv over Gymnasium's env, and SB3 PPO "
                        "training steps/s on SB3VecEnv and on that DummyVecEnv (needs vecsim[train])")
    b.add_argument("--pipeline", action="store_true",
                   help="instead, the actor-learner loop's env steps/s (vecsim.pipeline on CartPole, a 5x200 MLP "
                        "policy), pipelined against synchronous, with a learner and acting alone; --num-envs and "
                        "--repeats (rounds) apply (default sizes: 16 256)")
    b.add_argument("--train-steps", type=_positive_int, default=20_000,
                   help="with --sb3: PPO training steps timed per env (default: %(default)s)")
    b.add_argument("--torch-threads", type=_positive_int,
                   help="with --sb3: torch.set_num_threads for the PPO runs (default: leave torch's setting alone)")
    b.add_argument("--peer-command", action="append", metavar="NAME=COMMAND",
                   help="also time another program beside one game's cells, in rounds interleaved with them, and "
                        "print vecsim / NAME; COMMAND (split as a shell would, run without one) steps {num_envs} "
                        "envs for about {seconds} s on at most {threads} threads and prints its steps/s as the first "
                        "word of its last output line (see vecsim.bench.command_peer); repeatable")
    b.add_argument("--peer-vs", metavar="COLUMN",
                   help="the vecsim column the peers are set against: one of the game's BENCH_VARIANTS, or step / "
                        "step_no_reset for a game timed per precision (default: the first)")
    b.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    b.set_defaults(func=cmd_bench)

    from vecsim.trainers.train import ALGOS  # the trainers' module imports no trainer at import

    t = sub.add_parser("train", help="train a Stable-Baselines3 agent (PPO, MaskablePPO, DQN, SAC, A2C) on a game; "
                                     "logs per-env episode statistics, checkpoints, evaluates at the end "
                                     '(needs pip install "vecsim[train]")')
    t.add_argument("--env", required=True, help="a game id, e.g. vecsim/CartPole-v1")
    t.add_argument("--algo", choices=ALGOS, default="ppo", help="the algorithm (default: %(default)s)")
    t.add_argument("--num-envs", type=_positive_int,
                   help="envs stepped together (default: the preset's, e.g. 8 for CartPole PPO)")
    t.add_argument("--steps", type=_positive_int, help="env steps to train (default: the preset's)")
    t.add_argument("--seed", type=int, default=0, help="seeds the model and the envs (env i: seed + i) "
                                                      "(default: %(default)s)")
    t.add_argument("--out", metavar="DIR", help="folder for model.zip, checkpoints/, episodes.csv, evaluation.csv "
                                                "and summary.json (default: write nothing)")
    t.add_argument("--checkpoint-every", type=_nonnegative_int, metavar="N",
                   help="save a checkpoint every N steps (default: a quarter of --steps; 0: never)")
    t.add_argument("--eval-episodes", type=_nonnegative_int, default=10,
                   help="deterministic evaluation episodes at the end, and as many of random play "
                        "(default: %(default)s)")
    t.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="a game parameter, e.g. --param action_mode=drop --param preset=classic; repeatable")
    t.add_argument("--step-bonus", type=float, metavar="R",
                   help="a reward added to every training step, shaping for a sparse game; the logs and the "
                        "evaluation keep the game's reward (default: the preset's, else 0)")
    t.add_argument("--smoke", action="store_true", help="a run of seconds: a few hundred steps, 2 evaluation "
                                                        "episodes (checks the setup)")
    t.add_argument("--torch-threads", type=_positive_int,
                   help="torch.set_num_threads for the run (default: leave torch's setting alone)")
    t.add_argument("--verbose", action="store_true", help="also SB3's own log tables")
    t.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    t.set_defaults(func=cmd_train)
    return parser


def main(argv=None) -> int:
    """Run the ``vecsim`` command line (``argv`` defaults to ``sys.argv[1:]``)."""
    args = build_parser().parse_args(argv)
    if getattr(args, "games", None):
        try:
            args.games = _game_list(args.games)
        except (TypeError, ValueError) as exc:
            build_parser().error(str(exc))
    try:
        return args.func(args)
    except UsageError as exc:
        build_parser().error(str(exc))
    except BrokenPipeError:  # the reader went away (``vecsim bench | head``): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
