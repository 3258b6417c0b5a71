"""The Blokus bench's choosers (a uniform legal action per mask row, from the bool or the
packed mask alike) and its paired windows against a peer."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from vecsim.core.rng import seed_env
from vecsim.engine.packed_masks import pack_mask_rows, packed_width
from vecsim.bench.blokus import choose_legal, choose_legal_packed


def _streams(n, seed=0):
    rng = np.zeros((n, 2), np.uint64)
    for i in range(n):
        seed_env(rng, i, seed + i)
    return rng


def _masks(n, n_actions, density, seed=0):
    return np.random.default_rng(seed).random((n, n_actions)) < density


def test_choosers_pick_a_legal_action_and_agree_on_the_packed_mask():
    masks = _masks(6, 1003, 0.01)  # a length that is no multiple of 8 or 64
    masks[0] = False
    masks[0, 1002] = True  # the only legal action is the row's last
    masks[1] = False
    masks[1, 0] = True
    packed = np.zeros((6, packed_width(1003)), np.uint8)
    pack_mask_rows(masks, packed)
    rng_bool, rng_packed = _streams(6), _streams(6)
    for _ in range(50):
        a = choose_legal(masks, rng_bool, np.zeros(6, np.int64))
        b = choose_legal_packed(packed, rng_packed, np.zeros(6, np.int64))
        np.testing.assert_array_equal(a, b)
        assert masks[np.arange(6), a].all()
        assert a[0] == 1002 and a[1] == 0


def test_choose_legal_is_uniform_over_the_legal_actions():
    mask = np.zeros((1, 200), np.bool_)
    legal = np.array([3, 64, 65, 127, 199])
    mask[0, legal] = True
    rng, actions = _streams(1, seed=7), np.zeros(1, np.int64)
    counts = dict.fromkeys(legal.tolist(), 0)
    for _ in range(5000):
        counts[int(choose_legal(mask, rng, actions)[0])] += 1
    assert sum(counts.values()) == 5000
    assert all(abs(c - 1000) < 150 for c in counts.values()), counts  # each 1000 +- 4.3 sigma


def test_counting_by_added_words_finds_every_true_of_dense_and_sparse_rows():
    from vecsim.bench.blokus import _count_true, _nth_true

    for density in (0.0, 0.003, 0.5, 1.0):  # all True: every byte lane of a block's sum at its most
        row = _masks(1, 36403, density, seed=3)[0]
        legal = np.flatnonzero(row)
        assert _count_true(row) == len(legal)
        for k in (0, len(legal) // 3, len(legal) - 1) if len(legal) else ():
            assert _nth_true(row, k) == legal[k]
        assert _nth_true(row, len(legal)) == -1


def _window_side(scale):
    """A side of the window protocol that answers its k-th window (from 1) with ``scale * k``."""
    return [sys.executable, "-c", f"import sys\nfor k, line in enumerate(sys.stdin, 1): print({scale} * k, flush=True)"]


def test_paired_windows_pair_each_window_with_the_peers_window_of_the_same_turn():
    from vecsim.bench.blokus import paired_windows

    got = paired_windows(_window_side(3), _window_side(1), pairs=6, seconds=0.01)
    assert got["ratio"] == 3.0 and got["quartiles"] == (3.0, 3.0)  # the warm-up window on both sides
    assert got["ours"] == 3 * 4.5 and got["theirs"] == 4.5  # windows 2..7, medians of the timed ones


def test_paired_windows_name_a_side_that_stops_answering():
    from vecsim.bench.blokus import paired_windows

    with pytest.raises(RuntimeError, match="exited before it answered"):
        paired_windows(_window_side(2), [sys.executable, "-c", "pass"], pairs=2, seconds=0.01)
    for pairs, seconds, bad in ((0, 1.0, "pairs=0"), (2.0, 1.0, "pairs=2.0"), (2, 0, "seconds=0")):
        with pytest.raises(ValueError, match=bad):
            paired_windows(_window_side(2), _window_side(1), pairs=pairs, seconds=seconds)
