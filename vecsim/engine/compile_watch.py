"""What Numba compiles for vecsim, and for how long: a notice on long compiles, and a record of each.

Numba announces every compilation with its ``numba:compile`` event (a loaded cache entry is
no compilation). Each one that starts outside another is a *kernel compile*: a batched kernel
of a generated module (``vecsim.engine.codegen``), or any other jitted function called from
Python. The functions it calls compile inside it, each in a nested event.

- **Notice.** A kernel compile of a module that codegen named (``name_module``) that runs
  for longer than ``NOTICE_AFTER`` seconds logs one line on the ``vecsim`` logger (warning
  level, so it shows on stderr without any logging set up): which game and kernel, and that
  the result is cached. ``logging.getLogger("vecsim").setLevel(logging.ERROR)`` silences it
  (its logger is ``vecsim.compile``: a command that shows its own progress silences that one).
- **Record.** ``compile_records()`` lists every kernel compile of the process with its
  seconds and the function inside it that took longest on its own (its nested compiles
  taken out): what ``vecsim kernels --compile-times`` prints.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from numba.core import event

#: Seconds a kernel compile runs before its notice is logged.
NOTICE_AFTER = 2.0

log = logging.getLogger("vecsim.compile")


@dataclass(frozen=True)
class CompileRecord:
    """One kernel compile.

    Attributes
    ----------
    module : str
        The Python module of the compiled function (a generated kernel module's name).
    label : str
        Whose kernels the module holds (``"vecsim/CartPole-v1 (float64)"``), or ``module``.
    function : str
        The compiled function's qualified name (``step_parallel``).
    seconds : float
        Wall-clock time of the compile, nested compiles included.
    top_function : str
        The function whose own compile (nested ones taken out) was longest: the kernel itself
        (its typing, lowering and LLVM's optimisation of everything inlined into it) or a callee.
    top_seconds : float
        That function's own seconds.
    """

    module: str
    label: str
    function: str
    seconds: float
    top_function: str
    top_seconds: float


_LABELS: dict[str, tuple[str, str]] = {}
_RECORDS: list[CompileRecord] = []
_LOCK = threading.Lock()


def name_module(module_name: str, label: str, cache_folder: str) -> None:
    """Say whose kernels the generated module ``module_name`` holds (``label``, e.g.
    ``"vecsim/Tetris-v0 (float64)"``) and where their machine code is cached, for the notice
    of a long compile."""
    with _LOCK:
        _LABELS[module_name] = (label, cache_folder)


def compile_records() -> list[CompileRecord]:
    """Every kernel compile of this process so far, in order (a list of ``CompileRecord``)."""
    with _LOCK:
        return list(_RECORDS)


def _function_of(ev) -> tuple[str, str]:
    dispatcher = ev.data.get("dispatcher")
    py_func = getattr(dispatcher, "py_func", None)
    return getattr(py_func, "__module__", "?") or "?", getattr(py_func, "__qualname__", "?")


class _Frame:
    __slots__ = ("module", "function", "start", "nested", "own", "timer", "noticed")

    def __init__(self, module: str, function: str):
        self.module, self.function = module, function
        self.start = time.perf_counter()
        self.nested = 0.0  # seconds of the compiles nested in this one
        self.own: dict[str, float] = {}  # function -> own seconds, over the whole kernel compile
        self.timer = None
        self.noticed = False

    def notice(self) -> None:
        """Log the notice of this compile, once (from the timer's thread, or at the end of a
        compile that outran ``NOTICE_AFTER`` before its timer ran)."""
        with _LOCK:
            if self.noticed:
                return
            self.noticed = True
        _notice(self.module, self.function)


def _notice(module: str, function: str) -> None:
    label, folder = _LABELS.get(module, (module, ""))
    log.warning("vecsim: compiling %s of %s, once: it is cached%s, and later runs load it in under a second",
                function, label, f" in {folder}" if folder else "")


class _Watch(event.Listener):
    """Keeps a stack of the compiles under way on each thread (Numba compiles under a global
    lock, so at most one thread compiles at a time)."""

    def __init__(self):
        self._local = threading.local()

    def _stack(self) -> list:
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def on_start(self, ev) -> None:
        stack = self._stack()
        frame = _Frame(*_function_of(ev))
        if not stack and frame.module in _LABELS:
            frame.timer = threading.Timer(NOTICE_AFTER, frame.notice)
            frame.timer.daemon = True
            frame.timer.start()
        stack.append(frame)

    def on_end(self, ev) -> None:
        stack = self._stack()
        if not stack:
            return
        frame = stack.pop()
        seconds = time.perf_counter() - frame.start
        kernel = stack[0] if stack else frame
        own = kernel.own
        own[frame.function] = own.get(frame.function, 0.0) + seconds - frame.nested
        if stack:
            stack[-1].nested += seconds
            return
        if frame.timer is not None:
            frame.timer.cancel()
            if seconds >= NOTICE_AFTER:
                frame.notice()
        top = max(own, key=own.get)
        with _LOCK:
            label = _LABELS.get(frame.module, (frame.module, ""))[0]
            _RECORDS.append(CompileRecord(frame.module, label, frame.function, seconds, top, own[top]))


_WATCH = _Watch()
event.register("numba:compile", _WATCH)
