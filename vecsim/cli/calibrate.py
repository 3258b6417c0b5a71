"""``vecsim calibrate``: time each game's serial and parallel kernels on this machine and save the
batch size from which ``parallel="auto"`` picks the parallel ones (``vecsim.bench.calibrate``)."""

from __future__ import annotations

from vecsim.bench import measure as bench
from vecsim.cli.common import Progress, UsageError, game_list, positive_float, positive_int, short


def add_parser(subparsers) -> None:
    """The ``calibrate`` subcommand and its options."""
    c = subparsers.add_parser("calibrate", help="time each game's serial and parallel kernels on this machine and "
                                                "save the batch size from which parallel=\"auto\" picks the "
                                                "parallel ones")
    c.add_argument("--games", nargs="+", help="game ids (default: every game)")
    c.add_argument("--precision", nargs="+", choices=("float64", "float32"), default=["float64", "float32"],
                   help="precisions to time (default: %(default)s)")
    c.add_argument("--sizes", type=positive_int, nargs="+",
                   help="batch sizes to time (default: 16, 32, ... 16384)")
    c.add_argument("--seconds", type=positive_float, default=0.2,
                   help="timing per kernel and size (default: %(default)s)")
    c.add_argument("--threads", type=positive_int,
                   help="Numba threads to calibrate for (default: NUMBA_NUM_THREADS); each count has its own sizes")
    c.add_argument("--dry-run", action="store_true", help="print the sizes without saving them")
    c.add_argument("--forget", action="store_true", help="remove the calibration file and exit")
    c.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    c.set_defaults(func=run)


def run(args) -> int:
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
    games = game_list(args.games)
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
            rows.append([short(game_id), precision, _size_text(declared[game_id, precision]),
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
