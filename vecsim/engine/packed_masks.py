"""Packed legal-action masks: one bit an action instead of one byte, for trainers that take them.

Layout: a batch's ``(num_envs, n_actions)`` bool masks become ``(num_envs, ceil(n_actions /
8))`` uint8, action ``a`` of env ``i`` at bit ``a % 8`` (least significant first) of byte
``a // 8`` of row ``i``, the unused high bits of a row's last byte zero: exactly
``numpy.packbits(masks, axis=1, bitorder="little")``, and
``numpy.unpackbits(packed, axis=1, count=n_actions, bitorder="little")`` gives the bool masks
back. A row padded to a multiple of 8 bytes read as little-endian uint64 has action ``a`` at
bit ``a % 64`` of word ``a // 64``.

For games of many actions, what a trainer copies, keeps per step in its rollout storage or
sends to an accelerator shrinks eightfold.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload

from vecsim.core.jit import exact

#: What an engine's ``masks`` hold (``Engine``'s and ``VecsimVectorEnv``'s ``mask_format``).
MASK_FORMATS = ("bool", "packed")

_GATHER_BITS = np.uint64(0x0102040810204080)  # byte j's bit 0 -> bit 56 + j
_S56 = np.uint64(56)


def packed_width(n_actions: int) -> int:
    """Bytes of one env's packed mask: ``ceil(n_actions / 8)``."""
    return (int(n_actions) + 7) // 8


@exact
def pack_mask_rows(masks, out):
    """Pack ``masks`` (``(N, A)`` bool, C-contiguous) into ``out`` (``(N, ceil(A / 8))`` uint8),
    eight bools read as one word and their low bits gathered by one multiply."""
    n_actions = masks.shape[1]
    whole = n_actions // 8
    for i in range(masks.shape[0]):
        row = masks[i]
        words = row[:whole * 8].view(np.uint64)
        dest = out[i]
        for w in range(whole):
            dest[w] = np.uint8((words[w] * _GATHER_BITS) >> _S56)
        if whole < dest.shape[0]:
            last = 0
            for a in range(whole * 8, n_actions):
                last |= np.int64(row[a]) << (a - whole * 8)
            dest[whole] = np.uint8(last)


def mask_allows(masks, i, a):
    """Whether action ``a`` is legal in row ``i`` of ``masks``: ``(N, A)`` bool, or packed
    ``(N, ceil(A / 8))`` uint8. In ``@njit`` code (the kernels' mask checks) the test is chosen
    by the array's dtype when it is compiled."""
    if masks.dtype == np.uint8:
        return bool((masks[i, a >> 3] >> (a & 7)) & 1)
    return bool(masks[i, a])


@overload(mask_allows, inline="always")
def _mask_allows_jit(masks, i, a):
    if isinstance(masks, types.Array) and masks.dtype == types.uint8:
        def packed_bit(masks, i, a):
            return (masks[i, a >> 3] >> (a & 7)) & 1 != 0
        return packed_bit

    def bool_entry(masks, i, a):
        return masks[i, a]
    return bool_entry


def check_packed_out(out, num_envs: int, n_actions: int, what: str = "out") -> np.ndarray:
    """``out`` if it can hold ``num_envs`` packed masks of ``n_actions`` actions, else a
    ``TypeError``/``ValueError`` naming it."""
    shape = (num_envs, packed_width(n_actions))
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{what} must be a numpy array, but got {type(out).__name__}")
    if out.dtype != np.uint8 or out.shape != shape:
        raise ValueError(f"{what} must be a uint8 array of shape {shape}, but got {out.dtype} {out.shape}")
    if not (out.flags.c_contiguous and out.flags.writeable):
        raise ValueError(f"{what} must be C-contiguous and writeable")
    return out
