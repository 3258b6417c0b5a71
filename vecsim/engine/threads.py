"""Numba's thread pool as the engine sees it: which threading layer runs the parallel kernels,
and how many threads a parallel region gets (``vecsim.core.scratch.start_thread_pool`` starts it)."""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import njit, prange
from numba.core import cgutils, types
from numba.core.typing import signature
from numba.extending import intrinsic

from vecsim.core.jit import kernel_options
from vecsim.core.kernel_cache import guard_cache
from vecsim.core.scratch import start_thread_pool


@njit(**kernel_options("float64", True))
def _first_launch(out):
    for i in prange(out.shape[0]):
        out[i] = i


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
