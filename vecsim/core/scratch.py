"""Scratch that belongs to the thread running a kernel, not to an env.

A game whose step needs large working space (a planner's search tree) declares those
``State`` fields in ``SCRATCH_STATE`` (``vecsim.engine.game``): their leading axis is
``thread_rows()``, not ``num_envs``, and a per-env function reads its thread's row
``thread_row()``. Each thread runs one env's step at a time to its end, so a row is never
shared while in use; what the next step needs must be kept in the env's own rows. The engine
leaves these fields out of every per-env view (memory per env, ``env_values``, the checkers'
snapshots): they are allocated once per batch and carry nothing from one step to the next.

``thread_row`` calls a symbol that only the start of Numba's thread pool registers, and cached
machine code that calls it kills the process unless the pool runs first. So the pool's start
lives here too (``start_thread_pool``), and the code of ``thread_row`` carries it: the library
of any function that reads a thread's row, and of every caller that links it, starts the pool
before Numba loads it from the cache (its ``reload_init``, as Numba does for parallel kernels).
A process that never reads a thread's row leaves the pool unstarted.
"""

import ctypes
import os

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.core.extending import intrinsic

from vecsim.core import buffers as placed
from vecsim.core.jit import exact


def thread_rows() -> int:
    """Rows a scratch field needs: one per thread of Numba's pool, as ``thread_row`` is
    below ``NUMBA_NUM_THREADS`` in serial and parallel kernels alike."""
    return int(numba.config.NUMBA_NUM_THREADS)


@intrinsic
def _thread_id(typingctx):
    """``numba.get_thread_id()`` whose library starts the thread pool before it loads from
    the cache (module docstring)."""
    start_thread_pool()  # registers the symbol for this process's own compile

    def codegen(context, builder, signature, args):
        context.active_code_library._reload_init.add(start_thread_pool)
        get_id = cgutils.get_or_insert_function(builder.module, ir.FunctionType(cgutils.intp_t, []), "get_thread_id")
        return builder.call(get_id, [])

    return types.intp(), codegen


@exact(inline="always")
def thread_row():
    """The row of a scratch field that belongs to the thread running this call."""
    return _thread_id()


def zeros(row_shape, dtype) -> np.ndarray:
    """A zeroed scratch field: ``(thread_rows(),) + row_shape`` of ``dtype``, placed as
    ``vecsim.core.buffers.zeros`` places it (untouched pages stay unmapped)."""
    return placed.zeros((thread_rows(),) + tuple(row_shape), dtype)


def numba_threads() -> int:
    """The number of threads Numba's parallel kernels would use on the calling thread (``int``).

    Unlike ``numba.get_num_threads()``, it does not start Numba's thread pool when no parallel
    kernel has run yet (starting it on the omp layer sets the OpenMP thread count of a libgomp
    that torch may share): until then nothing can have changed the count, which is
    ``NUMBA_NUM_THREADS``."""
    from numba.np.ufunc import parallel

    if not getattr(parallel, "_is_initialized", True):
        return int(numba.config.NUMBA_NUM_THREADS)
    return numba.get_num_threads()


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
