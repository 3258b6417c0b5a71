"""vecsim.core.buffers: per-env arrays placed at different offsets within a page."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import vecsim
from vecsim.core import buffers


def page_offset(arr: np.ndarray) -> int:
    return arr.ctypes.data % buffers.PAGE


def line_apart(offsets) -> bool:
    """Whether every two offsets (within a page) start on different 64-byte cache lines."""
    lines = [o // 64 for o in offsets]
    return len(set(lines)) == len(lines)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int16, np.uint8, np.bool_])
def test_placed_arrays_equal_numpys(dtype, order):
    shape = (4096, 3)
    for make, expect in ((buffers.zeros, np.zeros(shape, dtype)), (buffers.ones, np.ones(shape, dtype))):
        arr = make(shape, dtype, order)
        assert arr.shape == shape and arr.dtype == np.dtype(dtype)
        assert arr.flags[f"{order}_CONTIGUOUS"] and arr.flags.writeable
        np.testing.assert_array_equal(arr, expect)
    arr = buffers.full(shape, 7, dtype, order)
    np.testing.assert_array_equal(arr, np.full(shape, 7, dtype))


def test_successive_arrays_start_on_different_cache_lines_of_a_page():
    # Without placement, equal-sized arrays made one after another from the heap sit within a
    # few dozen bytes of each other modulo a page: what made CartPole's step loop thrash its cache.
    arrays = [buffers.zeros(16384, np.float32) for _ in range(20)]
    assert line_apart([page_offset(a) for a in arrays])
    assert all(page_offset(a) % 64 == 0 for a in arrays)


def test_placed_arrays_share_no_memory():
    arrays = [buffers.zeros((1024, 4), np.float64) for _ in range(8)]
    for a, b in itertools.combinations(arrays, 2):
        assert not np.shares_memory(a, b)
    arrays[0][:] = 1.0
    assert all((a == 0).all() for a in arrays[1:])


def test_arrays_under_a_page_are_plain_numpy_arrays():
    arr = buffers.zeros(100, np.float64)
    assert arr.flags.owndata and arr.nbytes < buffers.PAGE
    assert (buffers.full((3, 5), -1, np.int16) == -1).all()


def test_bad_shapes_are_refused_by_name():
    with pytest.raises(ValueError, match="negative"):
        buffers.zeros((-5, 2), np.float64)
    with pytest.raises(TypeError):
        buffers.zeros(4096, "not a dtype")
    with pytest.raises(TypeError, match="integer"):
        buffers.zeros((4096.5, 2), np.float64)
    for shape in (8, 4096):  # under a page and placed: the same refusal
        with pytest.raises(ValueError, match="order='K'"):
            buffers.zeros(shape, np.float64, order="K")


def test_shapes_may_be_lists_as_in_numpy():
    assert buffers.zeros([1024, 4], np.float32).shape == (1024, 4)


def test_an_engines_step_arrays_are_placed_apart():
    engine = vecsim.make("CartPole-v1", 4096)
    try:
        arrays = [engine.obs, engine.rewards, engine.elapsed, engine._acts32, *engine.state]
        assert line_apart([page_offset(a) for a in arrays])
    finally:
        engine.close()
