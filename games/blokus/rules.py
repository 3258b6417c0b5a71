"""Blokus rules as ``@njit`` functions over a structure-of-arrays state (``games/blokus/SPEC.md``).

Bitboards. Seat ``p``'s squares on env ``i``'s board are ``rows[i, p, r]``: an int64 word
per board row ``r`` whose bit ``c`` is column ``c`` (``S <= 20`` bits used, so a piece row
shifted by its anchor column never leaves the word). A move test is then a shift and an AND
per piece row. ``cells[i, r, c]`` keeps the colours (seat + 1, 0 empty) for observation and
rendering; ``place`` keeps both in step.

Move generation for seat ``p`` (``_prepare``) builds two words per board row into the env's
scratch rows:

* ``forbid[i, r]``: cells the seat may not cover: any seat's square, a cell edge-adjacent to
  its own squares, and every bit ``>= S`` (so a piece reaching past the right edge fails the
  same AND);
* ``corner[i, r]``: free cells diagonal to its own squares (before its first piece: its start
  cell, if free). Every legal placement covers one of them.

For an orientation whose cell ``(dy, dx)`` lands on a corner cell, the anchor is that cell
minus ``(dy, dx)``; so, for a whole row ``r`` of anchors at once, ``A = OR_k corner[r + dy_k]
>> dx_k`` are the anchors that touch a corner and ``F = OR_k forbid[r + dy_k] >> dx_k`` those
that cover a forbidden cell: ``A & ~F`` are the legal anchors of row ``r``, each once. Only
rows within the piece's height above a row holding a corner cell are visited, and only the
orientations of pieces the seat still holds. The 91 orientations' rows take only 13 column
patterns (``pieces.ROW_PATTERNS``), so the full generator first spreads each board row by each
pattern (``_spread``): ``A`` and ``F`` are then an OR of one word per piece row.
"""

from __future__ import annotations

import numpy as np

from vecsim.core.bits import ctz, popcount
from vecsim.core.jit import exact
from vecsim.core.symbol_call import by_symbol
from vecsim.games.blokus.pieces import (
    MAX_CELLS, MONOMINO, N_PIECES, N_ROW_PATTERNS, ORIENT_CELLS, ORIENT_H, ORIENT_PIECE, ORIENT_ROW_PATTERN,
    ORIENT_ROWS, ORIENT_SIZE, PIECE_FIRST, PIECE_SIZE, ROW_PATTERN_PARENT, ROW_PATTERN_TOP,
)

ALL_PIECES = (1 << N_PIECES) - 1
BONUS_ALL = 15  # every piece placed
BONUS_MONOMINO_LAST = 5  # on top of BONUS_ALL, when the monomino was the last piece


@exact
def clear_board(s, i):
    """Empty env ``i``'s board and give every seat its full set; seat 0 to move."""
    n_seats, size = s.rows.shape[1], s.rows.shape[2]
    for p in range(n_seats):
        for r in range(size):
            s.rows[i, p, r] = 0
        s.pieces_left[i, p] = ALL_PIECES
        s.last_piece[i, p] = -1
        s.out[i, p] = False
    for r in range(size):
        for c in range(size):
            s.cells[i, r, c] = 0
    s.to_move[i] = 0
    s.game_over[i] = False


@exact
def _row_rule(s, i, p, r, first):
    """``(forbid, diag)`` of board row ``r`` for seat ``p``: the cells it may not cover (any
    seat's square, or one edge-adjacent to its own; bits past the board not included) and the
    cells diagonal to its squares (before its first piece: its start cell)."""
    size = s.rows.shape[2]
    occ = np.int64(0)
    for q in range(s.rows.shape[1]):
        occ |= s.rows[i, q, r]
    own = s.rows[i, p, r]
    up = s.rows[i, p, r - 1] if r > 0 else np.int64(0)
    down = s.rows[i, p, r + 1] if r < size - 1 else np.int64(0)
    forbid = occ | (own << 1) | (own >> 1) | up | down
    if first:
        return forbid, (np.int64(1) << s.start[i, p, 1]) if r == s.start[i, p, 0] else np.int64(0)
    side = up | down
    return forbid, (side << 1) | (side >> 1)


@exact
def _prepare(s, i, p):
    """Write seat ``p``'s forbidden and corner rows into env ``i``'s scratch.

    Returns a bitmask of the board rows that hold at least one corner cell (0: no move)."""
    size = s.rows.shape[2]
    full = (np.int64(1) << size) - 1
    first = s.pieces_left[i, p] == ALL_PIECES
    corner_rows = np.int64(0)
    for r in range(size):
        forbid, diag = _row_rule(s, i, p, r, first)
        forbid |= ~full
        corner = diag & ~forbid
        s.forbid[i, r] = forbid
        s.corner[i, r] = corner
        if corner != 0:
            corner_rows |= np.int64(1) << r
    return corner_rows


@exact
def write_corner_rows(s, i, p, out):
    """Write seat ``p``'s free corner cells (diagonal to its squares, or its start cell before
    its first piece) into ``out[i, r]`` (bit ``c`` = column ``c``), one word per board row."""
    _prepare(s, i, p)
    for r in range(s.rows.shape[2]):
        out[i, r] = s.corner[i, r]


@exact
def _spread(s, i):
    """Fill env ``i``'s spread rows from its forbidden and corner rows: for each piece-row
    pattern ``j`` (``ROW_PATTERNS``), ``forbid_spread[i, j, r]`` is the OR of ``forbid[i, r] >>
    dx`` over the columns ``dx`` of the pattern (the anchors of row ``r`` that such a piece row
    blocks), and ``corner_spread`` the same of ``corner``; each pattern from its parent's, one
    shift and OR. Pattern 0 (no cell) and the rows past the board stay zero."""
    for r in range(s.forbid.shape[1]):
        forbid, corner = s.forbid[i, r], s.corner[i, r]
        for j in range(1, N_ROW_PATTERNS):
            k, dx = ROW_PATTERN_PARENT[j], ROW_PATTERN_TOP[j]
            s.forbid_spread[i, j, r] = s.forbid_spread[i, k, r] | (forbid >> dx)
            s.corner_spread[i, j, r] = s.corner_spread[i, k, r] | (corner >> dx)


@exact(inline="always")
def _anchor_rows(corner_rows, o, size):
    """Rows where an anchor of orientation ``o`` could put a cell on a corner cell."""
    h = ORIENT_H[o]
    cand = np.int64(0)
    for dy in range(h):
        cand |= corner_rows >> dy
    return cand & ((np.int64(1) << (size - h + 1)) - 1)


@exact(inline="always")
def _legal_anchors(s, i, o, r):
    """Bitmask of the columns ``c`` where orientation ``o`` anchored at ``(r, c)`` is legal."""
    touch = np.int64(0)
    blocked = np.int64(0)
    for k in range(MAX_CELLS):
        dy = ORIENT_CELLS[o, k, 0]
        dx = ORIENT_CELLS[o, k, 1]
        touch |= s.corner[i, r + dy] >> dx
        blocked |= s.forbid[i, r + dy] >> dx
    return touch & ~blocked


@exact(inline="always")
def _legal_anchors_spread(s, i, o, r):
    """``_legal_anchors`` from the spread rows (``_spread``): a load per piece row, not a
    load and a shift per cell."""
    touch = np.int64(0)
    blocked = np.int64(0)
    for dy in range(MAX_CELLS):
        j = ORIENT_ROW_PATTERN[o, dy]
        touch |= s.corner_spread[i, j, r + dy]
        blocked |= s.forbid_spread[i, j, r + dy]
    return touch & ~blocked


# What _generate does with each legal placement besides counting it.
COUNT, SET_BOOL, SET_BIT = 0, 1, 2


@exact(inline="always")
def _generate(s, i, p, mask, write):
    """Count seat ``p``'s legal placements; ``write`` SET_BOOL sets each one's action in
    ``mask`` (bool), SET_BIT its bit in ``mask`` (packed uint8: action ``a`` at bit ``a % 8`` of
    byte ``a // 8``), COUNT writes nothing (the mask is not cleared here)."""
    size = s.rows.shape[2]
    corner_rows = _prepare(s, i, p)
    if corner_rows == 0:
        return 0
    _spread(s, i)
    n = 0
    left = s.pieces_left[i, p]
    while left != 0:
        k = ctz(left)
        left &= left - 1
        for o in range(PIECE_FIRST[k], PIECE_FIRST[k + 1]):
            rows = _anchor_rows(corner_rows, o, size)
            while rows != 0:
                r = ctz(rows)
                rows &= rows - 1
                legal = _legal_anchors_spread(s, i, o, r)
                n += popcount(legal)
                base = (o * size + r) * size
                if write == SET_BOOL:
                    while legal != 0:
                        mask[base + ctz(legal)] = True
                        legal &= legal - 1
                elif write == SET_BIT:
                    # A board row's anchors are consecutive actions: at most S + 7 bits from
                    # byte base // 8, OR-ed in a byte at a time.
                    bits = legal << (base & 7)
                    byte = base >> 3
                    while bits != 0:
                        mask[byte] |= np.uint8(bits & 0xFF)
                        bits >>= 8
                        byte += 1
    return n


@by_symbol
@exact
def write_legal_mask(s, i, p, mask):
    """Write seat ``p``'s legal placements on env ``i`` into ``mask`` (bool ``(91 * S * S,)``,
    e.g. env ``i``'s row of a batch's masks); returns how many there are."""
    for a in range(mask.shape[0]):
        mask[a] = False
    return _generate(s, i, p, mask, SET_BOOL)


@by_symbol
@exact
def write_legal_bits(s, i, p, packed):
    """``write_legal_mask`` packed: seat ``p``'s legal placements on env ``i`` as the bits of
    ``packed`` (uint8 ``(ceil(91 * S * S / 8),)``, action ``a`` at bit ``a % 8`` of byte
    ``a // 8``: ``numpy.packbits(mask, bitorder="little")``), set straight from the bitboards
    without a bool mask; returns how many there are."""
    for j in range(packed.shape[0]):
        packed[j] = 0
    return _generate(s, i, p, packed, SET_BIT)


@exact
def count_legal_moves(s, i, p):
    """Number of seat ``p``'s legal placements, with no mask written."""
    # With write=False the loop never touches its mask; env i's ``out`` row stands in for one.
    return _generate(s, i, p, s.out[i], COUNT)


@by_symbol
@exact
def any_legal_move(s, i, p):
    """Whether seat ``p`` has a legal placement; stops at the first one found."""
    size = s.rows.shape[2]
    corner_rows = _prepare(s, i, p)
    if corner_rows == 0:
        return False
    left = s.pieces_left[i, p]
    # Largest pieces first: on an open board a big piece fits early, and on a cramped one the
    # small pieces' orientations are rejected quickly either way.
    for k in range(N_PIECES - 1, -1, -1):
        if (left >> k) & 1 == 0:
            continue
        for o in range(PIECE_FIRST[k], PIECE_FIRST[k + 1]):
            rows = _anchor_rows(corner_rows, o, size)
            while rows != 0:
                r = ctz(rows)
                rows &= rows - 1
                if _legal_anchors(s, i, o, r) != 0:
                    return True
    return False


@exact
def is_legal(s, i, p, o, r, c):
    """Whether seat ``p`` may place orientation ``o`` anchored at ``(r, c)``: the same answer as
    the generator's, from the board rows the piece covers and their neighbours only."""
    size = s.rows.shape[2]
    if o < 0 or o >= ORIENT_PIECE.shape[0] or r < 0 or c < 0 or r + ORIENT_H[o] > size or c >= size:
        return False
    left = s.pieces_left[i, p]
    if (left >> ORIENT_PIECE[o]) & 1 == 0:
        return False
    first = left == ALL_PIECES
    touches = False
    for dy in range(ORIENT_H[o]):
        y = r + dy
        cover = ORIENT_ROWS[o, dy] << c
        if cover >> size != 0:  # past the right edge
            return False
        forbid, diag = _row_rule(s, i, p, y, first)
        if cover & forbid != 0:
            return False
        touches |= cover & diag != 0
    return touches


@exact
def place(s, i, p, o, r, c):
    """Put seat ``p``'s orientation ``o`` with its anchor on ``(r, c)`` (trusted to be legal)."""
    for k in range(ORIENT_SIZE[o]):
        y = r + ORIENT_CELLS[o, k, 0]
        x = c + ORIENT_CELLS[o, k, 1]
        s.rows[i, p, y] |= np.int64(1) << x
        s.cells[i, y, x] = p + 1
    piece = ORIENT_PIECE[o]
    s.pieces_left[i, p] &= ~(np.int64(1) << piece)
    s.last_piece[i, p] = piece


@exact
def advance_turn(s, i):
    """Hand the turn to the next seat, in seat order, that can move.

    Seats met with no legal move pass for good (``out``); the current seat is tried last, so
    a seat alone keeps playing. Returns the number of seats that passed; with no seat left
    the game is over."""
    n_seats = s.rows.shape[1]
    cur = s.to_move[i]
    passes = 0
    for step in range(1, n_seats + 1):
        q = (cur + step) % n_seats
        if s.out[i, q]:
            continue
        if s.pieces_left[i, q] != 0 and any_legal_move(s, i, q):
            s.to_move[i] = q
            return passes
        s.out[i, q] = True
        passes += 1
    s.game_over[i] = True
    return passes


@exact
def play(s, i, action):
    """The seat to move plays ``action`` (trusted legal), then the turn advances.

    Returns the number of seats that passed after it."""
    size = s.rows.shape[2]
    o = action // (size * size)
    r = (action // size) % size
    c = action % size
    place(s, i, s.to_move[i], o, r, c)
    return advance_turn(s, i)


@exact
def score(s, i, p):
    """Seat ``p``'s score: minus its unplaced squares, +15 with every piece placed, +5 more
    when the monomino went last."""
    left = s.pieces_left[i, p]
    if left == 0:
        return BONUS_ALL + (BONUS_MONOMINO_LAST if s.last_piece[i, p] == MONOMINO else 0)
    total = 0
    while left != 0:
        total -= PIECE_SIZE[ctz(left)]
        left &= left - 1
    return total
