"""``vecsim kernels``: the kernel module vecsim generates for a game, or with ``--compile-times`` how
long each kernel takes to compile cold (``vecsim.bench.compile_times``)."""

from __future__ import annotations

from vecsim.bench import measure as bench
from vecsim.cli.common import (Progress, UsageError, compile_weight, game_list, game_params, machine_line,
                               map_in_processes, positive_int)


def add_parser(subparsers) -> None:
    """The ``kernels`` subcommand and its options."""
    k = subparsers.add_parser("kernels", help="print the kernel module generated for a game (the Python source "
                                              "Numba compiles), or with --compile-times how long each kernel takes "
                                              "to compile cold")
    k.add_argument("games", nargs="*", metavar="game", help="a game id (with --compile-times: any number, default every game)")
    k.add_argument("--precision", choices=("float64", "float32"), default="float64",
                   help="precision of the kernels (default: %(default)s)")
    k.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="a game parameter the kernels depend on (e.g. --param action_mode=reach); repeatable")
    k.add_argument("--compile-times", action="store_true",
                   help="compile each game in each of its modes at each batch size in a new process with an empty "
                        "cache, and print the time to the first step and each kernel's compile time")
    k.add_argument("--num-envs", type=positive_int, nargs="+", help="with --compile-times: batch sizes (default: 16 4096)")
    k.add_argument("--jobs", type=positive_int, default=1,
                   help="with --compile-times: cases at once (default: 1, so that each has a core to itself)")
    k.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    k.set_defaults(func=run)


def run(args) -> int:
    """Print the kernel module vecsim generates for one game (without compiling it), or with
    ``--compile-times`` the cold compile times of the games named (every game by default)."""
    import vecsim

    if args.compile_times:
        return _compile_times(args)
    if len(args.games) != 1:
        raise UsageError(f"kernels prints one game's kernel module: name one game id, or add --compile-times "
                         f"(got {len(args.games)} game ids)")
    try:
        game_id = game_list(args.games)[0]
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    params = game_params(args.param, [game_id])
    engine = vecsim.make(game_id, 2, precision=args.precision, parallel=False, **params)
    print(engine.kernel_source(), end="")
    return 0


def _compile_times(args) -> int:
    from vecsim.bench import compile_times

    try:
        games = game_list(args.games)
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    items = compile_times.cases(games, args.num_envs or compile_times.SIZES)
    progress = Progress(len(items), enabled=not args.no_progress)
    results = map_in_processes(compile_times.run_item, items, args.jobs, progress, "cold cases:",
                               weight=lambda item: compile_weight(item[0]) * item[1])
    progress.finish()
    print(bench.format_table(compile_times.HEADER, compile_times.table_rows(items, results)))
    print(f"\neach case in a new process with an empty kernel cache, {min(args.jobs, len(items))} at a time; "
          f"first step: import, make, reset and one step; {machine_line()}")
    return 0
