"""``vecsim warmup``: compile games' kernels into the on-disk cache ahead of time, several games at
once."""

from __future__ import annotations

import os
import time

from vecsim.bench import measure as bench
from vecsim.cli.common import Progress, compile_weight, game_list, game_params, map_in_processes, positive_int, short


def add_parser(subparsers) -> None:
    """The ``warmup`` subcommand and its options."""
    w = subparsers.add_parser("warmup", help="compile every game's kernels into the on-disk cache (a later process "
                                             "loads them in well under a second)")
    w.add_argument("--games", nargs="+", help="game ids (default: every game)")
    w.add_argument("--precision", nargs="+", choices=("float64", "float32"), default=["float64"],
                   help="precisions to compile (default: %(default)s)")
    w.add_argument("--collector", action="store_true",
                   help="also the EpisodeCollector kernels for random and Python policies")
    w.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="a game parameter the kernels depend on, for every game listed; repeatable (kernels "
                        "that depend on one, e.g. --param action_mode=reach, compile only for the values named)")
    w.add_argument("--jobs", type=positive_int, default=os.cpu_count() or 1,
                   help="processes compiling at once (default: the CPU count)")
    w.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    w.set_defaults(func=run)


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


def run(args) -> int:
    from vecsim.engine.codegen import cache_dir

    games = game_list(args.games)
    params = game_params(args.param, games)
    items = [(game_id, precision, args.collector, params) for game_id in games for precision in args.precision]
    progress = Progress(len(items), enabled=not args.no_progress)
    start = time.perf_counter()
    seconds = map_in_processes(_warm_kernel_set, items, args.jobs, progress, "kernel sets:",
                               weight=lambda item: compile_weight(item[0]))
    wall = time.perf_counter() - start
    progress.finish()
    rows = [[short(game_id), precision, f"{secs:.1f}"] for (game_id, precision, _, _), secs in zip(items, seconds)]
    print(bench.format_table(["game", "precision", "seconds"], rows))
    what = "engine and collector kernels" if args.collector else "engine kernels"
    print(f"\n{what}, serial and parallel, compiled or loaded in {wall:.1f} s "
          f"({min(args.jobs, len(items))} process{'es' if min(args.jobs, len(items)) > 1 else ''}); "
          f"cached in {cache_dir()} (set VECSIM_CACHE_DIR to move it).")
    return 0
