"""Bit counting for the bitboard kernels: ``popcount`` and ``ctz`` as single instructions.

Numba has no population count or trailing-zero count of its own (see
docs/numba-workarounds.md); these call LLVM's ``llvm.ctpop.i64`` and ``llvm.cttz.i64``
intrinsics, which compile to ``popcnt`` and ``tzcnt``/``bsf`` on x86-64 (and a short
bit-twiddling sequence where the CPU lacks them).
They take and return int64, never allocate, and are cached with the kernels that call them.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from vecsim.core.jit import exact


@intrinsic
def _ctpop(typingctx, x):
    if not isinstance(x, types.Integer):
        return None
    sig = types.int64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return sig, codegen


@intrinsic
def _cttz(typingctx, x):
    if not isinstance(x, types.Integer):
        return None
    sig = types.int64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 0))

    return sig, codegen


@exact
def popcount(x):
    """Number of set bits of the int64 ``x`` (its two's complement bits if negative)."""
    return _ctpop(x)


@exact
def ctz(x):
    """Index of the lowest set bit of the int64 ``x``; 64 for 0."""
    return _cttz(x)
