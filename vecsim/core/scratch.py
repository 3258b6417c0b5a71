"""Scratch that belongs to the thread running a kernel, not to an env.

A game whose step needs large working space (a planner's search tree) declares those
``State`` fields in ``SCRATCH_STATE`` (``vecsim.engine.game``): their leading axis is
``thread_rows()``, not ``num_envs``, and a per-env function reads its thread's row
``thread_row()``. Each thread runs one env's step at a time to its end, so a row is never
shared while in use; what the next step needs must be kept in the env's own rows. The engine
leaves these fields out of every per-env view (memory per env, ``env_values``, the checkers'
snapshots): they are allocated once per batch and carry nothing from one step to the next.
"""

import numba
import numpy as np

from vecsim.core import buffers as placed
from vecsim.core.jit import exact


def thread_rows() -> int:
    """Rows a scratch field needs: one per thread of Numba's pool, as ``thread_row`` is
    below ``NUMBA_NUM_THREADS`` in serial and parallel kernels alike."""
    return int(numba.config.NUMBA_NUM_THREADS)


@exact(inline="always")
def thread_row():
    """The row of a scratch field that belongs to the thread running this call."""
    return numba.get_thread_id()


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
