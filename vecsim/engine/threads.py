"""Numba's thread pool as the engine sees it: which threading layer runs the parallel kernels."""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from vecsim.core.jit import kernel_options

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
        from vecsim.engine.codegen import _load_without_refresh  # imports this module

        _load_without_refresh(_first_launch)  # a warm start loads it as it loads the kernels
        _first_launch(np.zeros(2))
        return numba.threading_layer()
