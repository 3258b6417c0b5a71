"""``put_cells`` and ``put_words``: a bit row written as one byte per cell, and a row of words
as its bytes, with whole-word stores where the output allows them, the same bytes as a loop
over the cells in every case; ``load_word``, several items read as one word, against their bytes;
``prefetch_write``, a hint that changes nothing."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from vecsim.core.cells import SPREAD, load_word, prefetch_write, put_cells, put_words


@numba.njit
def put_rows(out, rows, starts, n):
    for i in range(rows.shape[0]):
        put_cells(out, i, starts[i], rows[i], n)


def naive(shape, dtype, order, rows, starts, n, fill):
    out = np.full(shape, fill, dtype=dtype, order=order)
    for i, (bits, start) in enumerate(zip(rows, starts)):
        for c in range(n):
            out[i, start + c] = (int(bits) >> c) & 1
    return out


def test_spread_puts_bit_c_in_byte_c():
    for b in (0, 1, 0x80, 0xA5, 0xFF):
        assert list(SPREAD[b].tobytes()) == [(b >> c) & 1 for c in range(8)]


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.bool_])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("n", [1, 7, 8, 10, 16, 17, 40, 63])
def test_put_cells_writes_the_cells_and_nothing_else(dtype, order, n):
    rng = np.random.default_rng(n)
    rows = rng.integers(0, 1 << 62, 9, dtype=np.int64) | (rng.integers(0, 2, 9, dtype=np.int64) << 62)
    starts = rng.integers(0, 11, 9)  # unaligned offsets into each row
    shape = (9, 80)
    fill = True if dtype is np.bool_ else 7  # bytes outside the cells must keep it
    out = np.full(shape, fill, dtype=dtype, order=order)
    put_rows(out, rows, starts, n)
    assert np.array_equal(out, naive(shape, dtype, order, rows, starts, n, fill))


def test_put_cells_from_python_is_the_same_loop():
    out = np.zeros((2, 12), np.uint8)
    put_cells(out, 1, 2, 0b1000000101, 10)
    assert out[1].tolist() == [0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1]
    assert not out[0].any()


@numba.njit
def put_word_rows(out, words, starts, n):
    for i in range(words.shape[0]):
        put_words(out, i, starts[i], words, words.shape[0] - 1 - i, n)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("n", [1, 3, 16])
def test_put_words_copies_the_bytes_and_nothing_else(dtype, order, n):
    rng = np.random.default_rng(n)
    src = rng.integers(0, 256, (5, 8 * n), dtype=np.uint8)
    words = src.view(np.uint64)
    starts = rng.integers(0, 9, 5)  # unaligned offsets into each row
    out = np.full((5, 8 * n + 9), 7, dtype=dtype, order=order)
    put_word_rows(out, words, starts, n)
    want = np.full(out.shape, 7, dtype=dtype)
    for i in range(5):
        want[i, starts[i]:starts[i] + 8 * n] = src[4 - i].view(dtype)
    assert np.array_equal(out, want)
    py = np.full(out.shape, 7, dtype=dtype, order=order)
    for i in range(5):
        put_words(py, i, starts[i], words, 4 - i, n)
    assert np.array_equal(py, want)


@numba.njit(cache=False)
def _load_words(rows, i, starts, out):
    for k in range(starts.shape[0]):
        out[k] = load_word(rows, i, starts[k])


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32])
@pytest.mark.parametrize("order", ["C", "F"])
def test_load_word_packs_the_items_little_endian(dtype, order):
    rng = np.random.default_rng(3)
    rows = np.asarray(rng.integers(0, np.iinfo(dtype).max, size=(3, 24), endpoint=True).astype(dtype), order=order)
    per_word = 8 // np.dtype(dtype).itemsize
    starts = np.arange(0, 24 - per_word + 1)
    out = np.zeros(len(starts), np.int64)
    _load_words(rows, 1, starts, out)
    expected = [np.int64(np.frombuffer(np.ascontiguousarray(rows[1, j:j + per_word]).astype(dtype).tobytes(), "<i8")[0])
                for j in starts]
    assert out.tolist() == [int(e) for e in expected]
    assert [int(load_word(rows, 1, int(j))) for j in starts] == out.tolist()  # from Python, the same


@numba.njit
def prefetch_every_row(ary):
    for i in range(ary.shape[0]):
        for j in range(ary.shape[1]):
            prefetch_write(ary, i, j)


@pytest.mark.parametrize("shape, order", [((5, 24, 10), "C"), ((7, 3), "C"), ((7, 3), "F")])
def test_prefetch_write_compiles_and_changes_nothing(shape, order):
    ary = np.asarray(np.arange(np.prod(shape)).reshape(shape) % 251, dtype=np.uint8, order=order)
    before = ary.copy()
    prefetch_every_row(ary)  # C-contiguous: the LLVM prefetch; F: no hint
    assert prefetch_write(ary, 0, 0) is None  # from Python: nothing
    np.testing.assert_array_equal(ary, before)
