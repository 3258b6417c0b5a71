"""Pierre Dellacherie's one-piece Tetris controller, as Numba kernels over the vecsim state.

The evaluator
-------------
For every legal placement of the current piece (and, with hold, of the piece holding would
bring), the afterstate is built: the piece is written in, full rows are removed, and the
placement is rated

    rating = -1 * landing_height + 1 * eroded_piece_cells - 1 * row_transitions
             - 1 * column_transitions - 4 * holes - 1 * cumulative_wells

(Dellacherie's weights, as published by C. Fahey, 2003, and reported by Thiery & Scherrer,
"Building controllers for Tetris", ICGA Journal 32(1), 2009). The placement with the highest
rating is played.

Definitions: Fahey's code of Dellacherie's evaluator, exactly
-------------------------------------------------------------
The features are those of the published code (Fahey's ``PierreDellacherieOnePiece2003``,
whose definitions Thiery & Scherrer's ``mdptetris`` also uses: see its ``get_row_transitions``
and ``get_well_sums_dellacherie``). They are computed from ``vecsim.games.tetris.rules.board_features``
(SPEC.md's observation features) run on the scratch afterstate (it writes
``scratch_feat[i, :15]``), plus the corrections below. Heights count rows from the floor; the
20 visible rows are Fahey's 20-row board (rows 0-3 of ours are the hidden spawn rows above it).

``landing_height``
    The height of the middle of the piece where it lands, before rows are removed:
    ``(ymin + ymax) / 2`` with ``ymin``/``ymax`` the 1-based heights of its lowest and highest
    cells (Fahey: ``0.5 * (YMin + YMax)``). SPEC's ``landing_height`` feature counts the rows
    below the lowest cell, ``ymin - 1``; so ours is SPEC's ``+ 1 + (piece height - 1) / 2``.
    (Thiery & Scherrer's ``landing_height_bottom + (height - 1) / 2`` differs by the constant 1,
    which changes no decision.)
``eroded_piece_cells``
    Rows removed x cells of the piece in them: SPEC's ``eroded_cells``, the same.
``row_transitions``
    Empty/filled changes along every row of the board, the side walls filled, **an empty row
    counting 2** (Fahey: ``2 * (boardHeight - pileHeight)`` plus the rows of the pile). SPEC's
    ``row_transitions`` counts only the rows from the highest filled one down, so ours is
    SPEC's ``+ 2 * (20 - pile_height)``, ``pile_height = max(column heights)`` after the
    removal. The difference is not a constant: every row the pile grows by costs 2 row
    transitions less than with SPEC's count (an empty row already counted 2), and every row
    removed 2 more. (With the pile in the hidden rows, ``20 - pile_height`` goes negative:
    the same formula continued, i.e. all 24 rows counted, minus the constant 8.)
``column_transitions``
    Changes along every column, the floor filled and the sky above the board empty. SPEC's
    ``col_transitions`` does not count the sky; ours adds 1 per filled cell in the top row
    (row 0), which only a piece kicked into the top hidden row can fill. Otherwise the same.
``holes``
    Empty cells with a filled cell above in the same column: SPEC's ``holes``, the same.
``cumulative_wells``
    Fahey's ``GetAllWellsForColumn``: for every cell whose left and right neighbours are
    filled (walls count as filled), add the number of consecutive empty cells from that cell
    downward (0 if the cell is filled). SPEC's ``cumulative_wells`` adds ``d(d+1)/2`` per
    maximal vertical run of ``d`` well cells. The two agree when every run of well cells
    ends on a filled cell; they differ when empty non-well cells lie under a well (Fahey's
    value then also counts them, once per well cell above), so this one is computed here.

With the pile inside the 20 visible rows, the rating equals Fahey's to the last bit. Ratings
are kept as integers (twice the rating: the landing height is a multiple of 1/2), so equal
ratings compare equal exactly.

Tie-break
---------
Dellacherie's priority (Fahey's ``PrivateStrategyEvaluate``), adapted to our coordinates:
among placements of equal rating, the one with the highest
``100 * |dx| + (10 if dx < 0) - r`` is played, where ``dx`` is how many columns the piece's
SRS box moved from its spawn column (``x - MIN_COL[t, r] - 3``) and ``r`` the rotation state
(clockwise turns from spawn). That is: prefer placements far from the centre, then to the
left, then with fewer rotations. (Fahey measures ``dx`` at his piece's rotation centre and
counts orientations in his own rotation order, so among placements that also tie on ``dx``
and ``r`` the choice can differ from his.) Any remaining tie goes to the first action in
action order (the non-hold half first), so the policy is deterministic.

API
---
``policy(s, p, i, rng) -> int64``
    ``@exact`` per-env function (call it from kernels): the best legal action of env ``i`` in
    drop mode (``rules.drop_legal``) or reach mode (``s.cost[i, a] >= 0``; the engine's
    ``write_mask`` must have run since the last change of the state, as it does after every
    reset and step), hold half included when holding is possible. It writes only
    ``s.scratch_cols[i]`` and draws no random numbers (``rng`` is unused: the policy is
    deterministic). Primitive mode, or no legal action: returns 0.

The policy over a whole batch (``dellacherie_actions(engine)``, ``play_games(...)``,
``afterstate_rating(engine, i, action)``) is in ``vecsim.collect.tetris``: it runs on vecsim's
engine, and this package holds rules only.

Speed: three computations of the same rating, fastest first (the tests check all three
against a cell-by-cell transcription of Fahey's code on random boards):

``rating2_cols`` (the policy's)
    Once per decision, ``load_columns`` turns the board into ten column bitboards and keeps
    every column's feature terms; a placement that removes no row re-rates only the columns
    it touches and their neighbours, every feature a ``popcount`` or trailing-zero count
    (``vecsim.core.bits``). A drop's landing row is found on the columns too
    (``drop_row_cols``), and a rotation state whose drops equal an earlier state's
    (``DUPLICATE_OF``: I, S, Z turned twice, O in any state) is skipped where the earlier
    one is legal.
``rating2``
    The afterstate built on ``State.scratch_rows``, rated row by row from the top of the pile.
``rating2_from_features``
    SPEC's ``board_features`` (a pass over all 240 cells) on that afterstate, plus the
    corrections above.

All kernels follow ``vecsim.core.jit``: no allocation, no NRT.
"""

from __future__ import annotations


import numpy as np

from vecsim.games.tetris import DROP, N_DROP, Params, PRIMITIVE
from vecsim.core.bits import ctz, popcount
from vecsim.games.tetris.pieces import (
    CELLS, COL_BOTTOM, COL_MASKS, DROP_Y, FULL_ROW, H, HEIGHT, HIDDEN, MIN_COL, N_POSES, ROW_MASKS,
    SPAWN_BOX_COL, W,
)
from vecsim.games.tetris.rules import F_COL_T, F_HOLES, F_ROW_T, board_features, hold_target
from vecsim.core.contract import param
from vecsim.core.jit import exact

#: Dellacherie's weights: landing height, eroded piece cells, row transitions, column
#: transitions, holes, cumulative wells (integers: the kernels rate in exact integers).
WEIGHTS = (-1, 1, -1, -1, -4, -1)
_W_LAND, _W_ERODED, _W_ROW_T, _W_COL_T, _W_HOLES, _W_WELLS = WEIGHTS
#: Fahey's board height: the rows below the hidden spawn rows.
VISIBLE_ROWS = H - HIDDEN
#: Number of filled cells of every 10-bit row (and of every piece row mask).
POPCOUNT = np.array([bin(v).count("1") for v in range(1 << W)], dtype=np.int64)
#: Transitions of every 11-bit pattern (a row between its walls, shifted and XORed).
POPCOUNT11 = np.array([bin(v).count("1") for v in range(1 << (W + 1))], dtype=np.int64)
#: Index of the lowest set bit of every 10-bit row (0 for 0).
LOWEST_BIT = np.array([(v & -v).bit_length() - 1 if v else 0 for v in range(1 << W)], dtype=np.int64)
#: Rating of "no legal action" (below every real rating).
_NO_RATING = np.int64(-(1 << 62))
_NO_PRIORITY = np.int64(-(1 << 62))


# ------------------------------------------------------------------------------ kernels
@exact
def fahey_wells(rows, i):
    """Fahey's cumulative wells of env ``i``'s board ``rows[i]`` (see the module docstring)."""
    total = 0
    for c in range(W):
        run = 0  # empty cells from the current row down to the first filled one
        for y in range(H - 1, -1, -1):
            bits = np.int64(rows[i, y])
            if (bits >> c) & 1:
                run = 0
            else:
                run += 1
            left = c == 0 or (bits >> (c - 1)) & 1
            right = c == W - 1 or (bits >> (c + 1)) & 1
            if left and right:
                total += run
    return total


@exact
def _place(s, i, t, r, y, x):
    """Write the afterstate of locking ``t`` at ``(r, y, x)`` into ``s.scratch_rows[i]``.

    Returns ``(lines, eroded_cells)``."""
    rows = s.scratch_rows
    for k in range(H):
        rows[i, k] = s.rows[i, k]
    h = HEIGHT[t, r]
    for k in range(h):
        rows[i, y + k] = np.int64(rows[i, y + k]) | (ROW_MASKS[t, r, k] << x)
    lines = 0
    piece_cells = 0
    for k in range(h):
        if np.int64(rows[i, y + k]) == FULL_ROW:
            lines += 1
            piece_cells += POPCOUNT[ROW_MASKS[t, r, k]]
    if lines > 0:
        dst = H - 1
        for src in range(H - 1, -1, -1):
            if np.int64(rows[i, src]) == FULL_ROW:
                continue
            rows[i, dst] = rows[i, src]
            dst -= 1
        while dst >= 0:
            rows[i, dst] = 0
            dst -= 1
    return lines, lines * piece_cells


@exact
def _landing2(t, r, y):
    """Twice Fahey's landing height: heights from the floor of the lowest and highest cells."""
    return (H - (y + HEIGHT[t, r] - 1)) + (H - y)


@exact
def _combine(t, r, y, eroded, row_t, col_t, holes, wells):
    """Twice the weighted sum of the six features."""
    return (_W_LAND * _landing2(t, r, y)
            + 2 * (_W_ERODED * eroded + _W_ROW_T * row_t + _W_COL_T * col_t + _W_HOLES * holes + _W_WELLS * wells))


@exact
def rating2_from_features(s, i, t, r, y, x):
    """Twice Dellacherie's rating of locking ``t`` at ``(r, y, x)`` in env ``i``, computed
    from SPEC's features (``rules.board_features`` on ``s.scratch_rows[i]``, written into
    ``s.scratch_feat[i, :15]``) and the corrections of the module docstring. The reference
    for ``rating2``, which computes the same number several times faster."""
    lines, eroded = _place(s, i, t, r, y, x)
    rows = s.scratch_rows
    feat = s.scratch_feat
    board_features(rows, i, feat)
    pile = 0
    for c in range(W):
        pile = max(pile, np.int64(feat[i, c]))
    row_t = np.int64(feat[i, F_ROW_T]) + 2 * (VISIBLE_ROWS - pile)
    col_t = np.int64(feat[i, F_COL_T]) + POPCOUNT[np.int64(rows[i, 0])]
    holes = np.int64(feat[i, F_HOLES])
    wells = fahey_wells(rows, i)
    return _combine(t, r, y, eroded, row_t, col_t, holes, wells)


@exact
def rating2(s, i, t, r, y, x):
    """Twice Dellacherie's rating of locking piece ``t`` at anchor ``(r, y, x)`` on env ``i``'s
    board (an integer). Builds the afterstate in ``s.scratch_rows[i]``; the env's own board is
    only read. Bit-parallel over the columns, from the top of the pile down; equal to
    ``rating2_from_features`` (tests/games/test_tetris_agent.py checks it on random boards)."""
    lines, eroded = _place(s, i, t, r, y, x)
    rows = s.scratch_rows
    top = 0
    while top < H and rows[i, top] == 0:
        top += 1
    # Fahey's 20-row board: each empty row above the pile has 2 row transitions.
    row_t = 2 * (top - HIDDEN)
    col_t = 0
    holes = 0
    wells = 0
    prev = 0  # the sky above the board is empty
    covered = 0  # columns with a filled cell above the current row
    for y2 in range(top, H):
        bits = np.int64(rows[i, y2])
        walled = (bits << 1) | 1 | (1 << (W + 1))
        row_t += POPCOUNT11[(walled ^ (walled >> 1)) & 0x7FF]
        col_t += POPCOUNT[bits ^ prev]
        empty = ~bits & FULL_ROW
        holes += POPCOUNT[covered & empty]
        covered |= bits
        well = empty & ((bits << 1) | 1) & ((bits >> 1) | (1 << (W - 1)))
        while well:
            c = LOWEST_BIT[well]
            well &= well - 1
            k = y2
            while k < H and not (np.int64(rows[i, k]) >> c) & 1:
                wells += 1
                k += 1
        prev = bits
    col_t += POPCOUNT[~prev & FULL_ROW]  # the filled floor
    return _combine(t, r, y, eroded, row_t, col_t, holes, wells)



# ------------------------------------------------------------------ column bitboards
# The policy's evaluator. ``load_columns`` turns env ``i``'s board into ten column bitboards
# (bit ``y`` of column ``c`` is cell ``(y, c)``; bit ``H`` stands for the floor) and stores
# each column's (and each pair of neighbouring columns') weighted feature terms. A placement
# that removes no row changes at most four columns: ``rating2_cols`` then re-rates those
# four, the five column pairs around them and the wells of six columns, straight-line code
# with no loop over the board. A placement that removes rows is rated from scratch on its
# compacted columns. Every feature is a popcount or trailing-zero count of a column:
#   column transitions  popcount(col ^ (col >> 1 | floor)) + (row 0 filled: the sky)
#   holes               cells from the column's top down, minus its filled cells
#   row transitions     popcount(left ^ right) per pair of neighbouring columns, the walls
#                       full columns; all 24 rows counted, minus the 4 empty hidden rows' 8
#   Fahey's wells       per well cell (empty, both neighbours filled): the trailing zeros
#                       of the column below it (the empty cells down to the next filled one)
# The columns are kept padded with wall columns (all rows filled) at index 0 and 11-15, so a
# piece's four columns and their neighbours are read without bounds tests: an unchanged
# column's terms cancel, and a wall column has no wells.
MASK24 = (1 << H) - 1
_FLOOR = 1 << H
_BOTTOM = 1 << (H - 1)
_PAD = 16  # padded columns: index j holds column j - 1
# State.scratch_cols[i] layout (SCRATCH_COLS = 96 int64 words).
_K_CV = _PAD  # [16, 32): weighted column transitions and holes of padded column j
_K_WV = 2 * _PAD  # [32, 48): weighted Fahey wells of padded column j
_K_PV = 3 * _PAD  # [48, 64): weighted row transitions between padded columns j - 1 and j
_K_TOTAL = 4 * _PAD  # 64: the board's sum of those terms over the ten columns and eleven pairs
_K_NEW = _K_TOTAL + 1  # [65, 75): the columns of an afterstate that removes rows
_K_REST = _K_NEW + W  # [75, 85): the total without the terms a piece at anchor column x can change


def _duplicate_states() -> np.ndarray:
    """(type, r): an earlier rotation state ``r0`` of the same cells, ``MIN_COL`` and a drop
    row at most one above ``r``'s, or -1. Dropped at the same anchor column from their drop
    rows, the two give the same afterstate whenever ``r0`` is legal (``r0`` passes through
    ``r``'s drop pose, or ``r`` is not legal), and ``r0`` wins Dellacherie's tie-break
    (``- r``): so ``r`` is never played where ``r0`` is legal."""
    dup = np.full((7, 4), -1, dtype=np.int64)
    for t in range(7):
        for r in range(4):
            for r0 in range(r):
                if (sorted(map(tuple, CELLS[t, r])) == sorted(map(tuple, CELLS[t, r0]))
                        and MIN_COL[t, r] == MIN_COL[t, r0] and 0 <= DROP_Y[t, r] - DROP_Y[t, r0] <= 1):
                    dup[t, r] = r0
                    break
    return dup


DUPLICATE_OF = _duplicate_states()
#: (type, r, k) the drop-row bitmask of the piece's column k, and the shift that brings the
#: row below its lowest cell to bit 0 (H + 1 for a column the piece does not cover: nothing).
DROP_MASKS = COL_MASKS << DROP_Y[:, :, None]
DROP_SHIFT = np.where(COL_MASKS != 0, DROP_Y[:, :, None] + COL_BOTTOM + 1, H + 1)


@exact
def _col_term(col):
    """Weighted column transitions and holes of one column."""
    trans = popcount((col ^ ((col >> 1) | _BOTTOM)) & MASK24) + (col & 1)
    holes = 0
    if col != 0:
        holes = H - ctz(col) - popcount(col)
    return _W_COL_T * trans + _W_HOLES * holes


@exact
def _wells_term(left, col, right):
    """Weighted Fahey wells of column ``col`` between its neighbours (walls: ``MASK24``)."""
    well = ~col & left & right & MASK24
    below = col | _FLOOR
    total = 0
    while well != 0:
        b = ctz(well)
        well &= well - 1
        total += ctz(below >> b)
    return _W_WELLS * total


@exact
def _pair_term(left, right):
    """Weighted row transitions between two neighbouring columns."""
    return _W_ROW_T * popcount(left ^ right)


@exact
def _terms_total(sc, i, base):
    """The weighted board terms of the ten columns ``sc[i, base:base + W]`` between walls."""
    total = _W_ROW_T * (-2 * HIDDEN)
    left = np.int64(MASK24)
    for c in range(W):
        col = sc[i, base + c]
        right = sc[i, base + c + 1] if c + 1 < W else np.int64(MASK24)
        total += _col_term(col) + _wells_term(left, col, right) + _pair_term(left, col)
        left = col
    return total + _pair_term(left, MASK24)


@exact
def load_columns(sc, rows, i):
    """Padded column bitboards of env ``i``'s board ``rows[i]`` and their terms into ``sc[i]``
    (``State.scratch_cols``). ``drop_legal_cols``, ``drop_row_cols`` and ``rating2_cols``
    read them: call this after every change of the board."""
    for j in range(_PAD):
        sc[i, j] = MASK24 if j == 0 or j > W else 0
    for y in range(H):
        bits = np.int64(rows[i, y])
        while bits != 0:
            sc[i, 1 + ctz(bits)] |= np.int64(1) << y
            bits &= bits - 1
    for j in range(_PAD):
        col = sc[i, j]
        sc[i, _K_CV + j] = _col_term(col)
        sc[i, _K_WV + j] = _wells_term(sc[i, j - 1], col, sc[i, j + 1]) if 0 < j < _PAD - 1 else 0
        sc[i, _K_PV + j] = _pair_term(sc[i, j - 1], col) if j > 0 else 0
    total = _W_ROW_T * (-2 * HIDDEN) + sc[i, _K_PV + W + 1]
    for j in range(1, W + 1):
        total += sc[i, _K_CV + j] + sc[i, _K_WV + j] + sc[i, _K_PV + j]
    sc[i, _K_TOTAL] = total
    for x in range(W):  # what rating2_cols re-rates for a piece whose first column is x
        q = x + 1
        rest = total
        for j in range(q, q + 4):
            rest -= sc[i, _K_CV + j]
        for j in range(q, q + 5):
            rest -= sc[i, _K_PV + j]
        for j in range(q - 1, q + 5):
            rest -= sc[i, _K_WV + j]
        sc[i, _K_REST + x] = rest


@exact(inline="always")
def drop_legal_cols(sc, i, t, r, x):
    """``rules.drop_legal`` on the padded columns: no cell of the piece at its drop row is
    filled (the walls beside the board are)."""
    q = x + 1
    return ((sc[i, q] & DROP_MASKS[t, r, 0]) | (sc[i, q + 1] & DROP_MASKS[t, r, 1])
            | (sc[i, q + 2] & DROP_MASKS[t, r, 2]) | (sc[i, q + 3] & DROP_MASKS[t, r, 3])) == 0


@exact(inline="always")
def drop_row_cols(sc, i, t, r, x):
    """``rules.drop_row`` from the drop row, on the columns: each column of the piece falls
    to the first filled cell below its lowest cell (the piece is legal at its drop row); the
    piece stops at the column with the shortest fall."""
    q = x + 1
    f0 = ctz((sc[i, q] | _FLOOR) >> DROP_SHIFT[t, r, 0])
    f1 = ctz((sc[i, q + 1] | _FLOOR) >> DROP_SHIFT[t, r, 1])
    f2 = ctz((sc[i, q + 2] | _FLOOR) >> DROP_SHIFT[t, r, 2])
    f3 = ctz((sc[i, q + 3] | _FLOOR) >> DROP_SHIFT[t, r, 3])
    return DROP_Y[t, r] + min(min(f0, f1), min(f2, f3))


@exact(inline="always")
def rating2_cols(sc, rows, i, t, r, y, x):
    """``rating2`` (twice Dellacherie's rating of locking ``t`` at ``(r, y, x)``) from the
    columns ``load_columns`` left in ``sc[i]`` (``State.scratch_cols``) and the board's
    ``rows``: the same integer, re-rating only what the piece changes. Writes only
    ``sc[i, 65:75]``. (It takes the two arrays, not the ``State``: a call that passes the
    whole state tuple copies every array's shape, strides and pointer onto the stack.)"""
    full = np.int64(0)
    piece_cells = 0
    for k in range(HEIGHT[t, r]):
        m = ROW_MASKS[t, r, k]
        if (np.int64(rows[i, y + k]) | (m << x)) == FULL_ROW:
            full |= np.int64(1) << (y + k)
            piece_cells += POPCOUNT[m]
    if full == 0:
        q = x + 1  # padded index of the piece's first column
        left2 = sc[i, q - 2] if q >= 2 else np.int64(MASK24)
        left = sc[i, q - 1]
        c0 = sc[i, q] | (COL_MASKS[t, r, 0] << y)
        c1 = sc[i, q + 1] | (COL_MASKS[t, r, 1] << y)
        c2 = sc[i, q + 2] | (COL_MASKS[t, r, 2] << y)
        c3 = sc[i, q + 3] | (COL_MASKS[t, r, 3] << y)
        right = sc[i, q + 4]
        right2 = sc[i, q + 5]
        v = (sc[i, _K_REST + x]
             + _col_term(c0) + _col_term(c1) + _col_term(c2) + _col_term(c3)
             + _pair_term(left, c0) + _pair_term(c0, c1) + _pair_term(c1, c2) + _pair_term(c2, c3)
             + _pair_term(c3, right)
             + _wells_term(left2, left, c0) + _wells_term(left, c0, c1) + _wells_term(c0, c1, c2)
             + _wells_term(c1, c2, c3) + _wells_term(c2, c3, right) + _wells_term(c3, right, right2))
        return _W_LAND * _landing2(t, r, y) + 2 * v
    # Rows removed: compact every column (rows above a removed one move down) and rate anew.
    for c in range(W):
        col = sc[i, 1 + c]
        k = c - x
        if 0 <= k < 4:
            col |= COL_MASKS[t, r, k] << y
        f = full
        while f != 0:  # the highest removed row first: the rows below it do not move
            b = ctz(f)
            f &= f - 1
            above = (np.int64(1) << b) - 1
            col = (col & ~(above | (np.int64(1) << b))) | ((col & above) << 1)
        sc[i, _K_NEW + c] = col
    v = _terms_total(sc, i, _K_NEW)
    return _W_LAND * _landing2(t, r, y) + 2 * (_W_ERODED * popcount(full) * piece_cells + v)


@exact(inline="always")
def priority(t, r, x):
    """Dellacherie's tie-break priority of piece ``t`` in state ``r`` at anchor column ``x``."""
    dx = x - MIN_COL[t, r] - SPAWN_BOX_COL
    return 100 * abs(dx) + (10 if dx < 0 else 0) - r


@exact
def policy(s, p, i, rng):
    """Dellacherie's action for env ``i`` (drop or reach mode; 0 in primitive mode or when no
    action is legal). Writes only ``s.scratch_cols[i]``."""
    mode = np.int64(param(p.action_mode, i))
    if mode == PRIMITIVE:
        return np.int64(0)
    with_hold = param(p.hold, i) > 0
    hold_ok = with_hold and s.can_hold[i]
    best_a = np.int64(-1)
    best_v = _NO_RATING
    best_p = _NO_PRIORITY
    halves = 2 if hold_ok else 1
    sc = s.scratch_cols
    load_columns(sc, s.rows, i)
    for hh in range(halves):
        t = np.int64(s.piece[i]) if hh == 0 else hold_target(s, i)
        if mode == DROP:
            legal = np.int64(0)  # bit k: drop action k of this half is legal
            for k in range(N_DROP):
                r = k // W
                x = k % W
                if not drop_legal_cols(sc, i, t, r, x):
                    continue
                legal |= np.int64(1) << k
                r0 = DUPLICATE_OF[t, r]
                if r0 >= 0 and (legal >> (r0 * W + x)) & 1:
                    continue  # the same afterstate as r0's, which wins the tie
                y = drop_row_cols(sc, i, t, r, x)
                v = rating2_cols(sc, s.rows, i, t, r, y, x)
                pr = priority(t, r, x)
                if v > best_v or (v == best_v and pr > best_p):
                    best_a, best_v, best_p = hh * N_DROP + k, v, pr
        else:
            base = hh * N_POSES
            for k in range(N_POSES):
                if s.cost[i, base + k] < 0:
                    continue
                r = k // (H * W)
                y = (k // W) % H
                x = k % W
                v = rating2_cols(sc, s.rows, i, t, r, y, x)
                pr = priority(t, r, x)
                if v > best_v or (v == best_v and pr > best_p):
                    best_a, best_v, best_p = base + k, v, pr
    return best_a if best_a >= 0 else np.int64(0)


def _params_builder(n_fields: int):
    """An ``@exact`` function ``P -> Params(P[0], ..., P[n-1])`` (scalars for a 1-D ``P``,
    per-env rows for a 2-D one), as the batched kernels build it."""
    src = (f"def make_params(P):\n"
           f"    return Params({', '.join(f'P[{k}]' for k in range(n_fields))})\n")
    scope = {"Params": Params}
    exec(src, scope)  # noqa: S102 (generated from a field count)
    return exact(scope["make_params"])


_make_params = _params_builder(len(Params._fields))
