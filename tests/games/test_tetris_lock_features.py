"""The lock's incremental features (``lock_features``) against the whole-board recount
(``board_features``) on random boards, including boards no game reaches (empty rows under
filled ones, floating cells, deep wells), for every piece and rotation."""

from __future__ import annotations

import numpy as np
import pytest

from vecsim.core.cells import load_word
from vecsim.games.tetris.pieces import FULL_ROW, H, HEIGHT, ROW_MASKS, W, WIDTH
from vecsim.games.tetris.rules import (
    BOARD_ROWS_PER_LOAD, N_FEATURES, blocked, board_features, lock_features, packed_rows,
)


def _random_rows(rng, style):
    """A (1, H) uint16 board: ``style`` 0 a pile with holes, 1 scattered cells at any
    height, 2 a pile with one-column wells."""
    rows = np.zeros((1, H), np.uint16)
    top = int(rng.integers(0, H + 1))
    for y in range(top, H):
        if style == 0:
            bits = int(rng.integers(0, FULL_ROW))  # never a full row
        elif style == 1:
            bits = int(rng.integers(0, FULL_ROW)) if rng.random() < 0.5 else 0
        else:
            bits = FULL_ROW
            for c in rng.choice(W, size=int(rng.integers(1, 4)), replace=False):
                bits &= ~(1 << int(c))
        rows[0, y] = bits
    return rows


def _fits_without_clear(rows, t, r, y, x):
    if blocked(rows, 0, t, r, y, x):
        return False
    return all((int(rows[0, y + k]) | (int(ROW_MASKS[t, r, k]) << x)) != FULL_ROW for k in range(HEIGHT[t, r]))


@pytest.mark.parametrize("style", [0, 1, 2])
def test_lock_features_match_the_whole_board_count(style):
    rng = np.random.default_rng(style)
    checked = 0
    while checked < 1500:
        rows = _random_rows(rng, style)
        feat = np.zeros((1, N_FEATURES), np.int16)
        board_features(rows, 0, feat)
        t, r = int(rng.integers(7)), int(rng.integers(4))
        x = int(rng.integers(0, W - WIDTH[t, r] + 1))
        y = int(rng.integers(0, H - HEIGHT[t, r] + 1))
        if not _fits_without_clear(rows, t, r, y, x):
            continue
        for k in range(HEIGHT[t, r]):
            rows[0, y + k] |= np.uint16(int(ROW_MASKS[t, r, k]) << x)
        expected = feat.copy()
        board_features(rows, 0, expected)
        lock_features(rows, 0, feat, t, r, y, x)
        assert feat[0, :15].tolist() == expected[0, :15].tolist(), (rows[0].tolist(), t, r, y, x)
        checked += 1


def test_packed_rows_lays_four_rows_end_to_end():
    """The observation's board is written four rows at a time from ``packed_rows``: bit
    ``W * k + c`` must be column ``c`` of the group's row ``k``."""
    rng = np.random.default_rng(7)
    rows = rng.integers(0, FULL_ROW + 1, (1, H)).astype(np.uint16)
    for g in range(H // BOARD_ROWS_PER_LOAD):
        packed = int(packed_rows(load_word(rows, 0, g * BOARD_ROWS_PER_LOAD)))
        expected = sum(int(rows[0, g * BOARD_ROWS_PER_LOAD + k]) << (W * k) for k in range(BOARD_ROWS_PER_LOAD))
        assert packed == expected
