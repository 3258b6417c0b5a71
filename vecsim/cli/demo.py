"""``vecsim demo``: every game with random actions through ``gymnasium.make_vec`` (and each demo
agent a game declares), its throughput, and a PNG of rendered frames."""

from __future__ import annotations

import itertools
import os
import time

import numpy as np

import vecsim
from vecsim.bench import measure as bench
from vecsim.cli.common import (Progress, compile_weight, game_list, map_in_processes, positive_float, positive_int,
                               short, warmup_timed)


def add_parser(subparsers) -> None:
    """The ``demo`` subcommand and its options."""
    demo = subparsers.add_parser("demo", help="play every game with random actions; print throughput, save frames")
    demo.add_argument("--out", default="vecsim_demo.png", help="PNG file of rendered frames (default: %(default)s)")
    demo.add_argument("--num-envs", type=positive_int, default=4096, help="envs per game (default: %(default)s)")
    demo.add_argument("--seconds", type=positive_float, default=1.0, help="play time per game (default: %(default)s)")
    demo.add_argument("--games", nargs="+", help="game ids (default: every game)")
    demo.add_argument("--frames", type=positive_int, default=4, help="frames per game (default: %(default)s)")
    demo.add_argument("--jobs", type=positive_int, default=os.cpu_count() or 1,
                      help="processes compiling games at once (default: the CPU count)")
    demo.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    demo.set_defaults(func=run)


def _warmup_all(games: list[str], jobs: int, progress: Progress) -> dict[str, float]:
    """Warm every game up; with ``jobs > 1`` compile in that many processes at once.

    Worker processes fill the on-disk cache in parallel, then this process loads the machine
    code from it, which takes a fraction of a second.
    """
    seconds = {}
    pooled = min(jobs, len(games)) > 1
    if pooled:  # the progress advances here, once a game
        seconds = dict(zip(games, map_in_processes(warmup_timed, games, jobs, progress, "compiling games:",
                                                       weight=compile_weight)))
    for game_id in games:
        progress.show(f"warming up {short(game_id)}")
        secs = warmup_timed(game_id)
        seconds[game_id] = max(seconds.get(game_id, 0.0), secs)
        if not pooled:
            progress.advance()
    return seconds


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
        _, info = env.reset(seed=0)
        engine = env.unwrapped.engine
        if engine.n_mask:  # a masked game: legal actions only
            env_step = bench.masked_stepper(env, info, bench.LegalActions(engine.masks))
        else:
            batches = itertools.cycle(bench.action_batches(env.single_action_space, num_envs))

            def env_step():
                return env.step(next(batches))

        def step():
            _, rewards, terminations, truncations, _ = env_step()
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
                ax.set_title(f"{short(game_id)}  env {i}", fontsize=8)
    fig.savefig(path, dpi=80)


def run(args) -> int:
    games = game_list(args.games)
    progress = Progress(2 * len(games), enabled=not args.no_progress)
    total_start = time.perf_counter()
    compile_s = _warmup_all(games, args.jobs, progress)
    compile_wall = time.perf_counter() - total_start
    rows, frames_by_game = [], {}
    for game_id in games:
        num_envs = _envs_that_fit(game_id, args.num_envs)
        progress.show(f"playing {short(game_id)} with {num_envs} envs")
        rate, episodes, frames = _run_game(game_id, num_envs, args.seconds, args.frames)
        frames_by_game[game_id] = frames
        rows.append([short(game_id), num_envs, bench.format_rate(rate), episodes, f"{compile_s[game_id]:.1f}"])
        progress.advance()
    agent_lines = []
    for game_id in games:
        if vecsim.resolve(game_id).demo_agent is None:
            continue
        progress.show(f"{short(game_id)}: its demo agent playing")
        name, rate, episodes, reward, steps, frames = _run_agent(game_id, args.num_envs, args.seconds, args.frames)
        label = f"{short(game_id)}:{name}"
        frames_by_game[label] = frames
        rows.append([label, args.num_envs, bench.format_rate(rate), episodes, "-"])
        agent_lines.append(f"{label}: {short(game_id)} played by its {name} agent, total reward {reward:g} over "
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
