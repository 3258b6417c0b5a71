"""What the ``vecsim`` commands share: the progress line, game ids and ``--param`` values, compiling
in processes of their own, the machine description and the option types."""

from __future__ import annotations

import argparse
import logging
import os
import platform
import sys
import time

import numpy as np

from vecsim.bench import measure as bench


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


def game_list(names) -> list[str]:
    import vecsim

    if not names:
        return vecsim.game_ids()
    return [bench.full_id(name) for name in names]


def short(game_id: str) -> str:
    return game_id.split("/", 1)[-1]


def warmup_timed(game_id: str, precision: str = "float64") -> float:
    """Seconds taken by ``vecsim.warmup`` of one game (compile, or load from the cache)."""
    import vecsim

    start = time.perf_counter()
    vecsim.warmup(game_id, precision)
    return time.perf_counter() - start


def compile_weight(game_id: str) -> int:
    """A guess at how long a game's kernels take to compile: the size of the source they can
    reach beyond vecsim's core and engine (the game's module and every file it imports, its
    planner's too; ``kernel_cache.reachable_sources``), which puts a game with a planner far
    ahead of a classic game, and leaves out a game package's files its kernels never import."""
    import pathlib

    import vecsim
    from vecsim.core.kernel_cache import reachable_sources

    module = vecsim.resolve(game_id).module
    path = pathlib.Path(module.__file__).resolve()
    package = module.__name__ if hasattr(module, "__path__") else module.__name__.rpartition(".")[0]
    shared = tuple(str(pathlib.Path(vecsim.__file__).resolve().parent / name) for name in ("core", "engine"))
    files = {path, *reachable_sources(path.read_text(), package)}
    return sum(f.stat().st_size for f in files if not str(f).startswith(shared))


def map_in_processes(fn, items: list, jobs: int, progress: Progress | None = None,
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
    shown = progress is not None and progress.enabled
    if progress is not None:
        progress.show(where)
    if jobs <= 1:
        results = []
        before = logging.getLogger("vecsim.compile").level
        if shown:
            quiet_compile_notices()
        try:
            for item in items:
                results.append(fn(item))
                if progress is not None:
                    progress.advance()
                    progress.show(where)
        finally:
            logging.getLogger("vecsim.compile").setLevel(before)
        return results
    order = sorted(range(len(items)), key=lambda k: -weight(items[k])) if weight is not None else range(len(items))
    pool = concurrent.futures.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"),
                                                  initializer=quiet_compile_notices if shown else None)
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


def quiet_compile_notices() -> None:
    """Silence the one-line notice of a long compile (``vecsim.engine.compile_watch``) in this
    process: a command whose progress line already says it is compiling shows that instead of
    lines written over it."""
    logging.getLogger("vecsim.compile").setLevel(logging.ERROR)


class UsageError(ValueError):
    """A bad command-line value found after parsing: reported as argparse reports its own (exit 2)."""


def game_params(pairs, games: list[str]) -> dict:
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


def machine() -> dict:
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


def machine_line() -> str:
    m = machine()
    layer = f" ({m['threading_layer']} layer)" if m["threading_layer"] else ""
    return (f"machine: {m['cpus']} CPUs, {m['numba_threads']} Numba threads{layer}, Python {m['python']}, "
            f"numba {m['numba']}, numpy {m['numpy']}, gymnasium {m['gymnasium']}")


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value
