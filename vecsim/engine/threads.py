"""Numba's thread pool as the engine sees it: starting it without touching the caller's
OpenMP threads, and which threading layer runs the parallel kernels."""

from __future__ import annotations

import ctypes
import os

import numba
import numpy as np
from llvmlite import ir
from numba import njit, prange
from numba.core import cgutils, types
from numba.core.typing import signature
from numba.extending import intrinsic

from vecsim.core.jit import kernel_options
from vecsim.core.kernel_cache import guard_cache

@njit(**kernel_options("float64", True))
def _first_launch(out):
    for i in prange(out.shape[0]):
        out[i] = i


def _loaded_openmp():
    """The OpenMP runtime (GNU libgomp) already loaded in this process, or ``None``. Numba's omp
    layer links the same ``libgomp.so.1`` that torch's and NumPy's libraries load."""
    try:
        return ctypes.CDLL("libgomp.so.1", mode=os.RTLD_NOLOAD)
    except (OSError, AttributeError):
        return None


def start_thread_pool() -> None:
    """Start Numba's thread pool if it is not running, leaving the calling thread's OpenMP
    thread count as it was.

    On the omp layer, starting the pool sets OpenMP's thread count (``omp_set_num_threads``) to
    ``NUMBA_NUM_THREADS``; torch shares that libgomp, so ``torch.set_num_threads(1)`` would
    silently become two threads or more. Every parallel kernel of vecsim runs after this.
    Numba passes its own thread count to each parallel region, so restoring the caller's
    count changes nothing for vecsim."""
    from numba.np.ufunc import parallel

    if getattr(parallel, "_is_initialized", False):
        return
    openmp = _loaded_openmp()
    before = openmp.omp_get_max_threads() if openmp is not None else None
    parallel._launch_threads()
    if before is not None and openmp.omp_get_max_threads() != before:
        openmp.omp_set_num_threads(before)


def threading_layer() -> str:
    """The threading layer of Numba's parallel kernels in this process (``"omp"``, ``"tbb"``
    or ``"workqueue"``), known only once a parallel kernel has run: this runs a trivial one
    (cached) when none has (see docs/numba-workarounds.md)."""
    try:
        return numba.threading_layer()
    except ValueError:  # no parallel kernel has run yet
        start_thread_pool()
        guard_cache(_first_launch)  # a warm start loads it as it loads the kernels
        _first_launch(np.zeros(2))
        return numba.threading_layer()


@intrinsic
def _parallel_threads(typingctx):
    def codegen(context, builder, signature, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(32), []), "get_num_threads")
        return builder.sext(builder.call(fn, []), context.get_value_type(types.intp))
    return signature(types.intp), codegen


@njit(inline="always")
def parallel_threads():
    """The threads the calling thread's next parallel region runs on (``numba.get_num_threads``
    in compiled code), for parallel kernels only: called by its linked name, where Numba's own
    overload holds a function pointer that keeps a kernel out of Numba's cache. The thread pool
    must be started (``start_thread_pool``), which registers the name (see
    docs/numba-workarounds.md)."""
    return _parallel_threads()
