"""Bitboard rows written as one byte per cell, with whole 64-bit stores (and read several
rows at once, ``load_word``).

A grid game keeps its board as bit rows and presents it as a byte per cell (observations,
action masks). Written one byte at a time from a table, that unpacking is most of the cost
of an observation; ``put_cells`` writes eight cells per unaligned 64-bit store instead (the
eight bytes of a row's byte come from ``SPREAD``), with no branch per cell. It needs the
output to be a C-contiguous 2-D array of one-byte items (uint8, int8 or bool), which is what
the engine hands a game's ``write_obs`` and ``write_mask`` unless the caller supplied a
column-major observation buffer; any other array gets a plain loop with the same result.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic, overload

#: ``SPREAD[b]``: the eight bits of ``b`` as eight bytes of 0 or 1, bit ``c`` in byte ``c``
#: of the little-endian word.
SPREAD = np.array([int.from_bytes(bytes((b >> c) & 1 for c in range(8)), "little") for b in range(256)],
                  dtype=np.uint64)


def _word_storable(out) -> bool:
    """Whether Numba type ``out`` is a C-contiguous 2-D array of one-byte items."""
    if not (isinstance(out, types.Array) and out.ndim == 2 and out.layout == "C"):
        return False
    return isinstance(out.dtype, types.Boolean) or (isinstance(out.dtype, types.Integer) and out.dtype.bitwidth == 8)


@intrinsic
def _store_word(typingctx, out, i, j, word):
    """Store the uint64 ``word`` at ``&out[i, j]``, unaligned (its bytes in ``out[i, j:j + 8]``)."""
    if not (_word_storable(out) and isinstance(i, types.Integer) and isinstance(j, types.Integer)
            and isinstance(word, types.Integer)):
        return None
    sig = types.void(out, i, j, word)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        index = [context.cast(builder, v, t, types.intp) for v, t in zip(args[1:3], signature.args[1:3])]
        ptr = cgutils.get_item_pointer2(context, builder, ary.data, cgutils.unpack_tuple(builder, ary.shape, 2),
                                        cgutils.unpack_tuple(builder, ary.strides, 2), "C", index)
        value = context.cast(builder, args[3], signature.args[3], types.uint64)
        builder.store(value, builder.bitcast(ptr, ir.IntType(64).as_pointer()), align=1)
        return context.get_dummy_value()

    return sig, codegen


def put_cells(out, i, start, bits, n):
    """``out[i, start + c] = (bits >> c) & 1`` for ``c < n`` (``n <= 63``).

    ``out``: (rows, cols) array of uint8, int8 or bool; ``bits``: int64 row. Compiled inline
    in Numba (whole-word stores where ``out`` is C-contiguous); from Python, a plain loop.
    """
    for c in range(n):
        out[i, start + c] = (bits >> c) & 1


@overload(put_cells)
def _put_cells(out, i, start, bits, n):
    if _word_storable(out):
        def put_words(out, i, start, bits, n):
            c = 0
            while c + 8 <= n:
                _store_word(out, i, start + c, SPREAD[(bits >> c) & 255])
                c += 8
            if c < n:
                if n >= 8:  # one more word ending at the last cell: it rewrites cells already written, unchanged
                    _store_word(out, i, start + n - 8, SPREAD[(bits >> (n - 8)) & 255])
                else:
                    for k in range(n):
                        out[i, start + k] = ((bits >> k) & 1) != 0

        return put_words

    def put_bytes(out, i, start, bits, n):
        for k in range(n):
            out[i, start + k] = ((bits >> k) & 1) != 0

    return put_bytes


def put_words(out, i, start, words, j, n):
    """``out[i, start + 8 * w + b]`` = byte ``b`` (little-endian) of ``words[j, w]`` for ``w < n``:
    a row of bytes kept as 64-bit words copied into an observation row.

    ``out``: (rows, cols) array of uint8 or int8; ``words``: (rows2, W) uint64 (a byte array's
    ``view(np.uint64)``). Compiled inline in Numba (whole-word stores where ``out`` is
    C-contiguous); from Python, a slice copy.
    """
    out[i, start:start + 8 * n] = words[j, :n].astype("<u8").view(np.uint8).view(out.dtype)


@overload(put_words)
def _put_words(out, i, start, words, j, n):
    if _word_storable(out) and isinstance(out.dtype, types.Integer):
        def store_words(out, i, start, words, j, n):
            for w in range(n):
                _store_word(out, i, start + 8 * w, words[j, w])

        return store_words

    def store_bytes(out, i, start, words, j, n):
        for w in range(n):
            v = words[j, w]
            for b in range(8):
                out[i, start + 8 * w + b] = (v >> np.uint64(8 * b)) & np.uint64(255)

    return store_bytes


def _word_loadable(rows) -> bool:
    """Whether Numba type ``rows`` is a C-contiguous 2-D array of integers of 8 to 32 bits."""
    return (isinstance(rows, types.Array) and rows.ndim == 2 and rows.layout == "C"
            and isinstance(rows.dtype, types.Integer) and rows.dtype.bitwidth <= 32)


@intrinsic
def _load_word(typingctx, rows, i, j):
    """The 8 bytes at ``&rows[i, j]`` as an int64, unaligned (little-endian: item ``j + k`` in
    bits ``k * itemsize * 8`` and up)."""
    if not (_word_loadable(rows) and isinstance(i, types.Integer) and isinstance(j, types.Integer)):
        return None
    sig = types.int64(rows, i, j)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        index = [context.cast(builder, v, t, types.intp) for v, t in zip(args[1:3], signature.args[1:3])]
        ptr = cgutils.get_item_pointer2(context, builder, ary.data, cgutils.unpack_tuple(builder, ary.shape, 2),
                                        cgutils.unpack_tuple(builder, ary.strides, 2), "C", index)
        return builder.load(builder.bitcast(ptr, ir.IntType(64).as_pointer()), align=1)

    return sig, codegen


def load_word(rows, i, j):
    """Items ``rows[i, j:j + k]`` (``k = 8 // itemsize``) packed into one int64, item ``j + m``
    in bits ``m * 8 * itemsize`` and up: several bit rows read at once.

    ``rows``: (n, cols) array of unsigned integers of 8, 16 or 32 bits with ``j + k <= cols``.
    Compiled inline in Numba (one unaligned 64-bit load where ``rows`` is C-contiguous); from
    Python, a plain loop.
    """
    bits = rows.dtype.itemsize * 8
    word = 0
    for m in range(64 // bits):
        word |= int(rows[i, j + m]) << (bits * m)
    return np.int64(word - (1 << 64) if word >= 1 << 63 else word)


@overload(load_word)
def _load_word_overload(rows, i, j):
    if _word_loadable(rows):
        def load_one(rows, i, j):
            return _load_word(rows, i, j)

        return load_one
    if not (isinstance(rows, types.Array) and isinstance(rows.dtype, types.Integer)):
        return None
    bits = rows.dtype.bitwidth

    def load_items(rows, i, j):
        word = np.int64(0)
        for m in range(64 // bits):
            word |= np.int64(rows[i, j + m]) << (bits * m)
        return word

    return load_items


@intrinsic
def _prefetch_write(typingctx, ary, i, j):
    """LLVM's write prefetch (high locality) of the cache line holding ``ary[i, j, 0, ...]``."""
    if not (isinstance(ary, types.Array) and ary.layout == "C" and ary.ndim >= 2):
        return None
    sig = types.void(ary, i, j)

    def codegen(context, builder, signature, args):
        arr = context.make_array(signature.args[0])(context, builder, args[0])
        nd = signature.args[0].ndim
        index = [context.cast(builder, v, t, types.intp) for v, t in zip(args[1:3], signature.args[1:3])]
        index += [context.get_constant(types.intp, 0)] * (nd - 2)
        ptr = cgutils.get_item_pointer2(context, builder, arr.data, cgutils.unpack_tuple(builder, arr.shape, nd),
                                        cgutils.unpack_tuple(builder, arr.strides, nd), "C", index)
        i8p = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [i8p, ir.IntType(32), ir.IntType(32), ir.IntType(32)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(ir.IntType(32), 1), ir.Constant(ir.IntType(32), 3),
                          ir.Constant(ir.IntType(32), 1)])
        return context.get_dummy_value()

    return sig, codegen


def prefetch_write(ary, i, j):
    """Ask the CPU to bring the cache line of ``ary[i, j]`` (its first item where ``ary`` has
    more dimensions) in for writing: a hint that changes no value. A kernel that writes rows of
    a large batch only now and then (a lock's cells) issues it a few envs ahead, so that the
    store does not wait on memory. ``ary``: C-contiguous array of 2 dimensions or more, with
    ``i``, ``j`` within its first two. Compiled inline in Numba; from Python, nothing."""


@overload(prefetch_write)
def _prefetch_write_overload(ary, i, j):
    if isinstance(ary, types.Array) and ary.layout == "C" and ary.ndim >= 2:
        def prefetch(ary, i, j):
            _prefetch_write(ary, i, j)

        return prefetch

    def nothing(ary, i, j):  # another layout: no hint
        pass

    return nothing
