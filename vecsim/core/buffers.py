"""Per-env arrays that start at different offsets within a 4 KiB page.

A step loop walks a dozen or more ``(num_envs, ...)`` arrays in lockstep: element ``i`` of
each. Arrays of a few KiB and more come from the allocator at nearly the same offset within
a page (heap chunks of equal size one after another, or fresh pages), so element ``i`` of every
array falls into the same few sets of the L1 cache (64 sets of 64 bytes, 8 ways on common
x86-64 cores) and shares the low 12 address bits that the CPU uses to match loads with
earlier stores ("4K aliasing"). With more arrays than ways the loop evicts its own lines
every step, and the same code runs fast or slow depending on where the allocator happened
to put the arrays.

``zeros``, ``ones`` and ``full`` place array ``k`` of the process (counted across calls) at
offset ``(k * 17 * 64) mod 4096`` from a page boundary: successive arrays are 1088 bytes apart
within a page, and 64 arrays in a row start on 64 different cache lines of it. Arrays smaller
than a page are allocated as NumPy would (they cannot collide with themselves, and a batch that
small fits in the L1 cache).
"""

from __future__ import annotations

import itertools
import operator

import numpy as np

__all__ = ["PAGE", "zeros", "ones", "full"]

#: Bytes of a page; also the smallest array that is placed.
PAGE = 4096
_LINE = 64
#: Offset step between successive arrays: an odd number of cache lines, so that the offsets
#: cycle through all 64 lines of a page.
_STEP = 17 * _LINE
_slots = itertools.count()


def _placed(shape, dtype, order: str) -> np.ndarray | None:
    """A zeroed array of ``shape`` at the next slot's offset in a page, or None if under a page."""
    if order not in ("C", "F"):
        raise ValueError(f"order must be 'C' or 'F', but got order={order!r}")
    dtype = np.dtype(dtype)
    shape = tuple(operator.index(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if nbytes < PAGE:
        return None
    offset = next(_slots) * _STEP % PAGE
    raw = np.zeros(nbytes + 2 * PAGE, dtype=np.uint8)  # calloc: untouched pages stay unmapped
    start = -raw.ctypes.data % PAGE + offset
    flat = raw[start:start + nbytes].view(dtype)
    return flat.reshape(shape, order=order)


def zeros(shape, dtype, order: str = "C") -> np.ndarray:
    """``np.zeros(shape, dtype, order)``, placed apart from the arrays allocated before it.

    Parameters
    ----------
    shape : int or sequence of int
    dtype : data-type
    order : {"C", "F"}

    Returns
    -------
    ndarray
        Contiguous in ``order``, writeable; a view of a private buffer that no other array
        shares, so the engine's overlap checks see it as apart from every other array.
    """
    arr = _placed(shape, dtype, order)
    return np.zeros(shape, dtype=dtype, order=order) if arr is None else arr


def full(shape, fill_value, dtype, order: str = "C") -> np.ndarray:
    """``np.full(shape, fill_value, dtype, order)``, placed as ``zeros`` places it."""
    arr = zeros(shape, dtype, order)
    arr.fill(fill_value)
    return arr


def ones(shape, dtype, order: str = "C") -> np.ndarray:
    """``np.ones(shape, dtype, order)``, placed as ``zeros`` places it."""
    return full(shape, 1, dtype, order)


def available_memory() -> int | None:
    """Bytes of memory the system can give a process now (Linux's ``MemAvailable``), or
    ``None`` where it is not known."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def state_bytes_per_env(state, shared=()) -> int:
    """Bytes a structure-of-arrays state (a ``NamedTuple``) holds per env (its arrays' leading
    axis), the fields named in ``shared`` (a batch's, not an env's) left out."""
    return sum(arr.nbytes // max(arr.shape[0], 1) for name, arr in zip(state._fields, state) if name not in shared)


def state_bytes_shared(state, shared) -> int:
    """Bytes of the fields named in ``shared`` (held once per batch, whatever its size)."""
    return sum(arr.nbytes for name, arr in zip(state._fields, state) if name in shared)


def envs_that_fit(one_env_state, shared, budget: int) -> int:
    """How many envs of the state that ``one_env_state`` (a 1-env state) shows fit in ``budget``
    bytes, the fields named in ``shared`` held once whatever the number of envs."""
    per_env = state_bytes_per_env(one_env_state, shared)
    return max(budget - state_bytes_shared(one_env_state, shared), 0) // max(per_env, 1)
