"""Competing load for benchmarks: busy processes and busy threads that keep the cores occupied.

A trainer never steps its envs on an idle machine: its learner, a data loader or another
trainer runs beside them. ``BusyProcesses`` starts plain Python busy loops at the lowest
priority, each in a session of its own (``setsid``), as a job started from another terminal
is: Linux's autogroup scheduling shares the CPU between sessions first, so busy loops started
in the benchmark's own session would hardly compete with it (their nice 19 would count within
the session). ``BusyThreads`` runs a learner-like NumPy matrix product loop in threads of
this process, which release the GIL while they multiply.

``vecsim bench --load N --load-threads M`` measures under both; ``asv_bench`` uses them too.
Both are context managers; the processes are killed when the block ends, on an exception
or a ``KeyboardInterrupt`` too, and each of them also stops by itself once the process that
started it is gone (it checks its parent a few times a second).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import numpy as np

#: The niceness of the busy processes: the lowest priority.
BUSY_NICE = 19
#: The most busy processes or threads ``BusyProcesses``/``BusyThreads`` start.
MAX_LOAD = 256

# The child's loop: a pure-Python spin that looks up its parent now and then, so that it
# stops if the benchmark dies without killing it (SIGKILL, a crash).
_BUSY_CODE = (
    "import os, sys\n"
    "parent = int(sys.argv[1])\n"
    "os.nice({nice})\n"
    "sys.stdout.write('ready\\n'); sys.stdout.flush()\n"
    "while os.getppid() == parent:\n"
    "    for _ in range(200000):\n"
    "        pass\n"
)


def check_count(value, name: str = "count") -> int:
    """``value`` as an int in ``[0, MAX_LOAD]``; ``TypeError``/``ValueError`` naming it otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, but got {name}={value!r}")
    if not 0 <= value <= MAX_LOAD:
        raise ValueError(f"{name} must be in [0, {MAX_LOAD}], but got {name}={value}")
    return int(value)


class BusyProcesses:
    """``count`` busy-loop processes at nice 19, each in a new session, for a ``with`` block.

    Parameters
    ----------
    count : int
        How many processes (0: none; at most ``MAX_LOAD``).
    nice : int
        Their niceness (default ``BUSY_NICE``, the lowest priority).

    Attributes
    ----------
    pids : list of int
        The processes' ids while they run (each also its session's and process group's id).

    Examples
    --------
    >>> with BusyProcesses(2):
    ...     pass  # measure here
    """

    def __init__(self, count: int, nice: int = BUSY_NICE):
        self.count = check_count(count, "count")
        if isinstance(nice, bool) or not isinstance(nice, (int, np.integer)) or not 0 <= nice <= 19:
            raise ValueError(f"nice must be an int in [0, 19], but got nice={nice!r}")
        self.nice = int(nice)
        self._procs: list[subprocess.Popen] = []

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._procs]

    def start(self) -> BusyProcesses:
        """Start the processes and wait until each runs its loop (idempotent)."""
        if self._procs:
            return self
        code = _BUSY_CODE.format(nice=self.nice)
        try:
            for _ in range(self.count):
                # start_new_session: setsid() in the child, so it is scheduled as a session
                # (autogroup) of its own, and a Ctrl-C in the benchmark's terminal misses it.
                self._procs.append(subprocess.Popen([sys.executable, "-c", code, str(os.getpid())],
                                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                                    start_new_session=True))
            for proc in self._procs:
                if proc.stdout.readline().strip() != b"ready":
                    raise RuntimeError(f"busy process {proc.pid} exited before it started its loop")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Kill the processes and reap them (idempotent)."""
        procs, self._procs = self._procs, []
        for proc in procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)  # its own group: nothing else is in it
                except ProcessLookupError:
                    pass
        for proc in procs:
            proc.wait()
            proc.stdout.close()

    def __enter__(self) -> BusyProcesses:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __del__(self):
        if getattr(self, "_procs", None):
            self.stop()


class BusyThreads:
    """``count`` threads of this process multiplying matrices in a loop, for a ``with`` block:
    a learner's work beside the envs. NumPy releases the GIL while it multiplies, so they load
    the cores without holding up the caller's Python.

    Parameters
    ----------
    count : int
        How many threads (0: none; at most ``MAX_LOAD``).
    size : int
        The side of the float32 square matrices (>= 1): the work between two GIL acquisitions.
    """

    def __init__(self, count: int, size: int = 256):
        self.count = check_count(count, "count")
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise ValueError(f"size must be an int >= 1, but got size={size!r}")
        self.size = int(size)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        #: Matrix products done so far, by all threads (a check that they ran).
        self.products = 0

    def _loop(self, seed: int) -> None:
        rng = np.random.default_rng(seed)
        a = rng.random((self.size, self.size), dtype=np.float32)
        b = rng.random((self.size, self.size), dtype=np.float32)
        out = np.empty_like(a)
        done = 0
        while not self._stop.is_set():
            np.matmul(a, b, out=out)
            done += 1
        self.products += done

    def start(self) -> BusyThreads:
        """Start the threads (idempotent)."""
        if self._threads:
            return self
        self._stop.clear()
        for k in range(self.count):
            thread = threading.Thread(target=self._loop, args=(k,), name=f"vecsim-busy-{k}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        """Stop the threads and wait for them (idempotent)."""
        self._stop.set()
        threads, self._threads = self._threads, []
        for thread in threads:
            thread.join()

    def __enter__(self) -> BusyThreads:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

