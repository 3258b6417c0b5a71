"""``ResetMask``: a packed uint64 bitmask of env indices with O(set bits) iteration."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vecsim import ResetMask


def test_new_mask_is_empty():
    mask = ResetMask(130)
    assert mask.num_envs == 130
    assert mask.words.shape == (3,) and mask.words.dtype == np.uint64
    assert not mask.any() and mask.count() == 0 and len(mask) == 0
    assert list(mask.iter_set()) == []


def test_set_clear_is_set_and_contains():
    mask = ResetMask(100)
    mask.set(0)
    mask.set(63)
    mask.set(64)
    mask.set(99)
    assert [mask.is_set(i) for i in (0, 1, 63, 64, 65, 99)] == [True, False, True, True, False, True]
    assert 64 in mask and 65 not in mask
    mask.clear(63)
    mask.clear(63)  # clearing twice is harmless
    assert not mask.is_set(63) and mask.count() == 3
    mask.set(0)  # setting twice is harmless
    assert mask.count() == 3


def test_bit_layout_is_env_i_at_bit_i_mod_64_of_word_i_div_64():
    mask = ResetMask(128)
    mask.set(3)
    mask.set(64 + 5)
    assert int(mask.words[0]) == 1 << 3
    assert int(mask.words[1]) == 1 << 5


def test_iter_set_visits_set_bits_in_increasing_order():
    mask = ResetMask(300)
    for i in (299, 5, 128, 64, 63, 0, 200):
        mask.set(i)
    assert list(mask.iter_set()) == [0, 5, 63, 64, 128, 200, 299]
    assert list(mask) == list(mask.iter_set())


def _lines_run_by_iter_set(mask) -> int:
    """Python lines executed inside ``iter_set`` while iterating it completely."""
    count = 0
    code = ResetMask.iter_set.__code__

    def tracer(frame, event, arg):
        nonlocal count
        if frame.f_code is code:
            if event == "line":
                count += 1
            return tracer
        return None

    sys.settrace(tracer)
    try:
        found = list(mask.iter_set())
    finally:
        sys.settrace(None)
    return found, count


def test_iter_set_work_grows_with_set_bits_not_with_num_envs():
    """A 100k-env mask with 3 set bits runs as many Python lines as a 200-env mask with 3."""
    big = ResetMask(100_000)
    small = ResetMask(200)
    for i in (1, 70, 150):
        big.set(i)
        small.set(i)
    big.set(99_999)
    big.clear(99_999)
    found_big, lines_big = _lines_run_by_iter_set(big)
    found_small, lines_small = _lines_run_by_iter_set(small)
    assert found_big == found_small == [1, 70, 150]
    assert lines_big == lines_small
    assert lines_big < 40

    spread = ResetMask(100_000)
    for i in (0, 50_000, 99_999):
        spread.set(i)
    found, lines = _lines_run_by_iter_set(spread)
    assert found == [0, 50_000, 99_999] and lines < 40


def test_from_bools_and_to_bools_round_trip():
    flags = np.zeros(70, dtype=bool)
    flags[[0, 9, 64, 69]] = True
    mask = ResetMask.from_bools(flags)
    assert list(mask) == [0, 9, 64, 69]
    out = mask.to_bools()
    assert out.dtype == np.bool_ and np.array_equal(out, flags)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=300))
def test_bools_round_trip_for_any_pattern(bits):
    flags = np.array(bits, dtype=bool)
    mask = ResetMask.from_bools(flags)
    assert np.array_equal(mask.to_bools(), flags)
    assert list(mask.iter_set()) == list(np.flatnonzero(flags))
    assert mask.count() == int(flags.sum()) and mask.any() == bool(flags.any())
    assert ResetMask(len(bits), mask.words) == mask


def test_from_done_flags_is_the_union():
    terms = np.array([True, False, False, False])
    truncs = np.array([False, False, True, False])
    assert list(ResetMask.from_done_flags(terms, truncs)) == [0, 2]
    assert list(ResetMask.from_done_flags(terms)) == [0]


def test_all_sets_exactly_num_envs_bits():
    mask = ResetMask.all(70)
    assert mask.count() == 70 and list(mask) == list(range(70))
    assert int(mask.words[1]) == (1 << 6) - 1  # no bits past env 69


def test_words_are_copied_and_validated():
    words = np.array([5], dtype=np.uint64)
    mask = ResetMask(10, words)
    words[0] = 0
    assert list(mask) == [0, 2]
    with pytest.raises(ValueError, match="past num_envs=10"):
        ResetMask(10, np.array([1 << 10], dtype=np.uint64))
    with pytest.raises(ValueError, match=r"uint64 of shape \(1,\)"):
        ResetMask(10, np.array([1, 2], dtype=np.uint64))
    with pytest.raises(ValueError, match="int64"):
        ResetMask(10, np.array([1], dtype=np.int64))


def test_equality_and_repr():
    a = ResetMask.from_bools(np.array([True, False, True]))
    b = ResetMask(3)
    b.set(0)
    b.set(2)
    assert a == b and a != ResetMask(4) and a != "mask"
    assert repr(a) == "ResetMask(num_envs=3, set=[0, 2])"
    assert repr(ResetMask.all(40)).endswith(", ...])")


@pytest.mark.parametrize("num_envs", [0, -3, 2.0, True, "4", None])
def test_bad_num_envs_is_rejected(num_envs):
    with pytest.raises(ValueError, match="num_envs"):
        ResetMask(num_envs)


@pytest.mark.parametrize("method", ["set", "clear", "is_set"])
def test_bad_indices_are_rejected(method):
    mask = ResetMask(10)
    with pytest.raises(IndexError, match="index 10 is out of range for num_envs=10"):
        getattr(mask, method)(10)
    with pytest.raises(IndexError, match="-1"):
        getattr(mask, method)(-1)
    with pytest.raises(TypeError, match="2.5"):
        getattr(mask, method)(2.5)
    with pytest.raises(TypeError, match="True"):
        getattr(mask, method)(True)
    assert not mask.any()


def test_from_bools_rejects_non_bool_or_2d_input():
    with pytest.raises(TypeError, match="int64"):
        ResetMask.from_bools(np.array([1, 0]))
    with pytest.raises(TypeError, match=r"\(2, 2\)"):
        ResetMask.from_bools(np.ones((2, 2), dtype=bool))


def test_from_done_flags_rejects_mismatched_inputs():
    with pytest.raises(ValueError, match=r"\(2,\).*\(3,\)"):
        ResetMask.from_done_flags(np.zeros(2, bool), np.zeros(3, bool))
    with pytest.raises(ValueError, match=r"\(2,\).*\(3,\)"):
        ResetMask.from_done_flags(np.zeros(2, np.uint8), np.zeros(3, np.uint8))


def _operant_flags() -> tuple[np.ndarray, np.ndarray]:
    """Done flags as operant's ``write_terminals``/``write_truncations`` leave them: uint8 0/1."""
    terms = np.zeros(70, dtype=np.uint8)
    truncs = np.zeros(70, dtype=np.uint8)
    terms[[0, 9, 64]] = 1
    truncs[[9, 69]] = 1
    return terms, truncs


def test_from_done_flags_gives_a_uint8_buffer_the_mask_of_the_bool_one():
    terms, truncs = _operant_flags()
    from_bytes = ResetMask.from_done_flags(terms, truncs)
    assert from_bytes == ResetMask.from_done_flags(terms.astype(bool), truncs.astype(bool))
    assert list(from_bytes) == [0, 9, 64, 69]
    assert ResetMask.from_done_flags(terms) == ResetMask.from_bools(terms.astype(bool))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint16, np.uint32, np.uint64])
def test_from_done_flags_accepts_zeros_and_ones_of_any_integer_dtype(dtype):
    terms, truncs = _operant_flags()
    assert list(ResetMask.from_done_flags(terms.astype(dtype), truncs.astype(dtype))) == [0, 9, 64, 69]


def test_from_done_flags_mixes_bool_and_integer_flags():
    terms, truncs = _operant_flags()
    assert list(ResetMask.from_done_flags(terms.astype(bool), truncs)) == [0, 9, 64, 69]


def test_from_done_flags_accepts_python_lists_of_bools_or_ints():
    assert list(ResetMask.from_done_flags([0, 1, 0], [False, False, True])) == [1, 2]


@pytest.mark.parametrize("bad", [2, 255])
def test_from_done_flags_names_a_terminal_other_than_0_or_1_and_its_index(bad):
    terms, truncs = _operant_flags()
    terms[37] = bad
    with pytest.raises(ValueError, match=rf"terminals\[37\] = {bad}\b"):
        ResetMask.from_done_flags(terms, truncs)


def test_from_done_flags_names_a_truncation_other_than_0_or_1_and_its_index():
    terms, truncs = _operant_flags()
    truncs = truncs.astype(np.int8)
    truncs[5] = -1
    with pytest.raises(ValueError, match=r"truncations\[5\] = -1\b"):
        ResetMask.from_done_flags(terms, truncs)


def test_from_done_flags_names_the_first_bad_index_when_there_are_several():
    terms = np.array([0, 1, 3, 1, 2], dtype=np.uint8)
    with pytest.raises(ValueError, match=r"terminals\[2\] = 3\b"):
        ResetMask.from_done_flags(terms)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, object])
def test_from_done_flags_refuses_non_integer_dtypes_by_name(dtype):
    flags = np.array([0, 1, 0], dtype=dtype)
    name = np.dtype(dtype).name
    with pytest.raises(TypeError, match=rf"terminals .*dtype {name}"):
        ResetMask.from_done_flags(flags)
    with pytest.raises(TypeError, match=rf"truncations .*dtype {name}"):
        ResetMask.from_done_flags(np.zeros(3, bool), flags)


def test_from_done_flags_refuses_2d_flags():
    with pytest.raises(TypeError, match=r"terminals must be 1-D.*\(2, 2\)"):
        ResetMask.from_done_flags(np.zeros((2, 2), np.uint8))
