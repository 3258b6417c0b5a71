"""Tetris rules as per-env ``@njit`` functions over the structure-of-arrays state.

The board of env ``i`` is kept twice: ``rows[i, y]`` is a bitmask of the filled columns of
row ``y`` (collision tests are a shift and an AND per piece row) and ``cells[i, y, x]`` holds
the colours for rendering. Every function here keeps both in step. See ``SPEC.md`` for the
rules these functions implement.
"""

from __future__ import annotations

import numpy as np

from vecsim.games.tetris.pieces import (
    CELLS, COL_MASKS, DROP_Y, FULL_ROW, H, HEIGHT, KICK_COUNT, KICK_DELTAS, NONE, ROW_MASKS, ROW_WORDS, SPAWN_X, SPAWN_Y, W, WIDTH,
)
from vecsim.core.bits import ctz, popcount
from vecsim.core.cells import load_word
from vecsim.core.jit import exact
from vecsim.core.rng import randint

N_FEATURES = 17
# Feature slots after the ten column heights.
F_HOLES, F_BUMPINESS, F_ROW_T, F_COL_T, F_WELLS, F_LANDING, F_ERODED = range(10, 17)
QUEUE_SLOTS = 6  # the internal queue length, whatever the visible one
LINE_SCORES = np.array([0, 100, 300, 500, 800], dtype=np.int64)


@exact
def blocked(rows, i, t, r, y, x):
    """Whether piece ``t`` in state ``r`` with anchor ``(y, x)`` overlaps a wall, the floor,
    the ceiling or a filled cell of env ``i``; ``rows``: (N, H) uint16 bit rows."""
    if y < 0 or x < 0 or x + WIDTH[t, r] > W or y + HEIGHT[t, r] > H:
        return True
    # The four board rows from y in one load (from H - 4 near the floor, shifted down).
    first = min(y, H - 4)
    board = load_word(rows, i, first) >> (16 * (y - first))
    return (board & (ROW_WORDS[t, r] << x)) != 0


#: Board rows one ``load_word`` reads (uint16 rows, four to a 64-bit word).
BOARD_ROWS_PER_LOAD = 4


@exact(inline="always")
def packed_rows(word):
    """Four uint16 board rows as ``load_word`` reads them (row ``k`` in bits ``16k`` and up) as
    40 contiguous cells (row ``k``'s column ``c`` in bit ``W * k + c``); int64 in and out."""
    gap = 16 - W
    return ((word & FULL_ROW) | ((word >> gap) & (FULL_ROW << W)) | ((word >> (2 * gap)) & (FULL_ROW << (2 * W)))
            | ((word >> (3 * gap)) & (FULL_ROW << (3 * W))))


@exact
def drop_row(rows, i, t, r, y, x):
    """The anchor row where the piece comes to rest falling straight down from ``y``."""
    top = max(y, 0)  # the first filled row from y down
    while top < H and rows[i, top] == 0:
        top += 1
    # Rows y .. top - 1 are empty: the piece falls through them without a test.
    y = max(y, top - HEIGHT[t, r])
    while not blocked(rows, i, t, r, y + 1, x):
        y += 1
    return y


@exact
def rotate(rows, i, t, r, y, x, direction, kicks):
    """Rotate (direction 0: clockwise, 1: counter-clockwise) trying up to ``kicks`` SRS tests.

    Returns the new ``(r, y, x)``, unchanged if no test fits.
    """
    r2 = (r + 1) % 4 if direction == 0 else (r + 3) % 4
    n = min(kicks, KICK_COUNT[t])
    for k in range(n):
        y2 = y + KICK_DELTAS[t, r, direction, k, 0]
        x2 = x + KICK_DELTAS[t, r, direction, k, 1]
        if not blocked(rows, i, t, r2, y2, x2):
            return r2, y2, x2
    return r, y, x


@exact
def draw_piece(bag, bag_pos, rng, i, use_bag):
    """The next piece type of env ``i``'s sequence (7-bag or uniform), as SPEC.md orders draws."""
    if not use_bag:
        return randint(rng, i, 7)
    if bag_pos[i] >= 7:
        for k in range(7):
            bag[i, k] = k
        for k in range(6, 0, -1):
            j = randint(rng, i, k + 1)
            tmp = bag[i, k]
            bag[i, k] = bag[i, j]
            bag[i, j] = tmp
        bag_pos[i] = 0
    t = bag[i, bag_pos[i]]
    bag_pos[i] += 1
    return np.int64(t)


@exact(inline="always")
def advance(s, i, rng, use_bag):
    """The next piece of the queue becomes current; one draw refills the queue's end."""
    s.piece[i] = s.queue[i, 0]
    for k in range(QUEUE_SLOTS - 1):
        s.queue[i, k] = s.queue[i, k + 1]
    s.queue[i, QUEUE_SLOTS - 1] = draw_piece(s.bag, s.bag_pos, rng, i, use_bag)


@exact(inline="always")
def spawn(s, i):
    """Put the current piece at its spawn pose; False if it cannot spawn (game over)."""
    t = np.int64(s.piece[i])
    s.rot[i] = 0
    s.y[i] = SPAWN_Y[t]
    s.x[i] = SPAWN_X[t]
    return not blocked(s.rows, i, t, 0, SPAWN_Y[t], SPAWN_X[t])


@exact(inline="always")
def hold_target(s, i):
    """The piece that holding now would make current."""
    return np.int64(s.queue[i, 0]) if s.hold[i] == NONE else np.int64(s.hold[i])


@exact
def do_hold(s, i, rng, use_bag):
    """Hold the current piece; returns whether the new current piece could spawn.

    A call, not inlined: the step holds in two places, and Numba compiles an inlined function
    once per call site (see docs/numba-workarounds.md); a hold is one step in many."""
    cur = s.piece[i]
    if s.hold[i] == NONE:
        s.hold[i] = cur
        advance(s, i, rng, use_bag)
    else:
        s.piece[i] = s.hold[i]
        s.hold[i] = cur
    s.can_hold[i] = False
    return spawn(s, i)


@exact(inline="always")
def lock(s, i, t, r, y, x):
    """Write the piece into the board, clear full rows and update the features.

    Returns the number of rows cleared.
    """
    rows, cells = s.rows, s.cells
    for k in range(4):
        cy = y + CELLS[t, r, k, 0]
        cx = x + CELLS[t, r, k, 1]
        cells[i, cy, cx] = t + 1
        rows[i, cy] = np.int64(rows[i, cy]) | (1 << cx)
    # Piece cells in rows that are now full: eroded cells count them.
    lines = 0
    piece_cells = 0
    for k in range(HEIGHT[t, r]):
        if np.int64(rows[i, y + k]) == FULL_ROW:
            lines += 1
            for c in range(4):
                if CELLS[t, r, c, 0] == k:
                    piece_cells += 1
    if lines == 0:
        lock_features(rows, i, s.feat, t, r, y, x)
    else:
        dst = H - 1
        for src in range(H - 1, -1, -1):
            if np.int64(rows[i, src]) == FULL_ROW:
                continue
            if dst != src:
                rows[i, dst] = rows[i, src]
                for c in range(W):
                    cells[i, dst, c] = cells[i, src, c]
            dst -= 1
        while dst >= 0:
            rows[i, dst] = 0
            for c in range(W):
                cells[i, dst, c] = 0
            dst -= 1
        board_features(rows, i, s.feat)
    s.feat[i, F_LANDING] = H - 1 - (y + HEIGHT[t, r] - 1)
    s.feat[i, F_ERODED] = lines * piece_cells
    return lines


@exact(inline="always")
def _sliced_add(b0, b1, b2, b3, b4, ones):
    """Add 1 to the 5-bit counters of the columns set in ``ones``; counter ``c`` is bit ``c``
    of ``b0`` (its lowest bit) .. ``b4`` (its highest). Returns the new five words."""
    carry = ones
    t0 = b0 ^ carry
    carry &= b0
    t1 = b1 ^ carry
    carry &= b1
    t2 = b2 ^ carry
    carry &= b2
    t3 = b3 ^ carry
    carry &= b3
    return t0, t1, t2, t3, b4 ^ carry


@exact(inline="always")
def _row_transitions(bits):
    """Filled/empty changes along row ``bits``, the walls counted as filled."""
    walled = (bits << 1) | 1 | (1 << (W + 1))
    return popcount((walled ^ (walled >> 1)) & ((1 << (W + 1)) - 1))


@exact(inline="always")
def _well_cells(bits):
    """The empty cells of row ``bits`` whose left and right neighbours are filled (or a wall)."""
    return ~bits & ((bits << 1) | 1) & ((bits >> 1) | (1 << (W - 1))) & FULL_ROW


#: One 16-bit lane of a ``load_word`` of board rows, and the walls of a row in every lane
#: (bit 0 and bit W + 1 of a row shifted left by one).
LANE = (1 << 16) - 1
_LANE_WALLS = sum((1 | (1 << (W + 1))) << (16 * k) for k in range(4))
_LANE_CELLS = sum(((1 << (W + 1)) - 1) << (16 * k) for k in range(4))
#: ``FLOOR_LANES[n]``: the filled floor in the top ``n`` lanes (rows below the board).
FLOOR_LANES = np.array([sum(FULL_ROW << (16 * k) for k in range(4 - n, 4)) for n in range(5)], dtype=np.int64)


@exact(inline="always")
def _lane_row_transitions(word):
    """The sum of ``_row_transitions`` over the four 16-bit lanes of ``word`` (an empty lane
    counts 2, as an empty row does)."""
    walled = (word << 1) | _LANE_WALLS
    return popcount((walled ^ (walled >> 1)) & _LANE_CELLS)


@exact(inline="always")
def _run_sum(b0, b1, b2, b3, b4):
    """The sum of the bit-sliced 5-bit counters ``b0``..``b4`` over all columns."""
    return popcount(b0) + 2 * popcount(b1) + 4 * popcount(b2) + 8 * popcount(b3) + 16 * popcount(b4)


@exact
def lock_features(rows, i, feat, t, r, y, x):
    """Update ``feat[i, :15]`` (``board_features``) for piece ``t`` just written into ``rows``
    at ``(r, y, x)`` without clearing a line, from the rows and columns the piece changed.

    Column heights rise in the piece's columns only, and every cell the piece covers or
    leaves empty under it changes holes by a column's height minus its filled cells. Row
    transitions are a sum over the rows from the pile's top (an empty row above it counts 2,
    so the sum is every row's minus 2 per row above the top); column transitions a sum over
    pairs of adjacent rows. Both transitions are read from the piece's four rows in one
    64-bit word (``load_word``), before and after the lock, with the terms of the rows the
    piece left unchanged cancelling. Wells change in the piece's rows and in the rows below
    them until the runs of well cells before and after the lock agree again."""
    h = HEIGHT[t, r]
    holes = np.int64(feat[i, F_HOLES])
    old_top = H
    for c in range(W):
        old_top = min(old_top, H - np.int64(feat[i, c]))
    for k in range(WIDTH[t, r]):
        column = COL_MASKS[t, r, k]
        old_h = np.int64(feat[i, x + k])
        new_h = max(old_h, H - y - ctz(column))
        feat[i, x + k] = new_h
        holes += new_h - old_h - popcount(column)
    new_top = min(old_top, y)
    # Rows y .. y + 3 in one word, row y + k in lane k (16 bits); lanes below the board are
    # empty in ``after`` and the filled floor in ``below`` (what column transitions see).
    first = min(y, H - 4)
    after = load_word(rows, i, first) >> (16 * (y - first))
    below = after | FLOOR_LANES[y - first]
    piece = ROW_WORDS[t, r] << x
    before = after & ~piece
    # Rows the piece does not touch are the same in both words, and their terms cancel.
    row_t = np.int64(feat[i, F_ROW_T]) - 2 * (new_top - old_top) + _lane_row_transitions(after) \
        - _lane_row_transitions(before)
    # Column transitions of the pairs (y - 1, y) .. (y + 2, y + 3): each lane against the lane
    # above it, row y - 1 (not the piece's) in lane 0; nothing lies above row 0.
    above = np.int64(rows[i, y - 1]) if y > 0 else below & LANE
    col_t = np.int64(feat[i, F_COL_T]) + popcount(below ^ ((below << 16) | above)) \
        - popcount((below & ~piece) ^ (((below & ~piece) << 16) | (above if y > 0 else before & LANE)))
    if h == 4:  # the pair (y + 3, y + 4), y + 4 the floor below the board
        last = np.int64(rows[i, y + 4]) if y + 4 < H else FULL_ROW
        col_t += popcount(((below >> 48) & LANE) ^ last) - popcount(((before >> 48) & LANE) ^ last)
    # The runs of well cells ending just above the piece, the same before and after.
    d0 = d1 = d2 = d3 = d4 = 0
    alive = FULL_ROW
    for yy in range(y - 1, -1, -1):
        alive &= _well_cells(np.int64(rows[i, yy]))
        if alive == 0:
            break
        d0, d1, d2, d3, d4 = _sliced_add(d0, d1, d2, d3, d4, alive)
    a0, a1, a2, a3, a4 = d0, d1, d2, d3, d4
    b0, b1, b2, b3, b4 = d0, d1, d2, d3, d4
    wells = np.int64(feat[i, F_WELLS])
    for k in range(h):  # the piece's rows, where well cells change
        well = _well_cells((after >> (16 * k)) & LANE)
        a0, a1, a2, a3, a4 = _sliced_add(a0, a1, a2, a3, a4, FULL_ROW)
        a0, a1, a2, a3, a4 = a0 & well, a1 & well, a2 & well, a3 & well, a4 & well
        well = _well_cells((before >> (16 * k)) & LANE)
        b0, b1, b2, b3, b4 = _sliced_add(b0, b1, b2, b3, b4, FULL_ROW)
        b0, b1, b2, b3, b4 = b0 & well, b1 & well, b2 & well, b3 & well, b4 & well
        wells += _run_sum(a0, a1, a2, a3, a4) - _run_sum(b0, b1, b2, b3, b4)
    for yy in range(y + h, H):  # the same rows before and after: until the runs agree again
        if a0 == b0 and a1 == b1 and a2 == b2 and a3 == b3 and a4 == b4:
            break
        well = _well_cells(np.int64(rows[i, yy]))
        a0, a1, a2, a3, a4 = _sliced_add(a0, a1, a2, a3, a4, FULL_ROW)
        a0, a1, a2, a3, a4 = a0 & well, a1 & well, a2 & well, a3 & well, a4 & well
        b0, b1, b2, b3, b4 = _sliced_add(b0, b1, b2, b3, b4, FULL_ROW)
        b0, b1, b2, b3, b4 = b0 & well, b1 & well, b2 & well, b3 & well, b4 & well
        wells += _run_sum(a0, a1, a2, a3, a4) - _run_sum(b0, b1, b2, b3, b4)
    bump = 0
    for c in range(1, W):
        bump += abs(np.int64(feat[i, c]) - np.int64(feat[i, c - 1]))
    feat[i, F_HOLES] = holes
    feat[i, F_BUMPINESS] = bump
    feat[i, F_ROW_T] = row_t
    feat[i, F_COL_T] = col_t
    feat[i, F_WELLS] = wells


@exact
def board_features(rows, i, feat):
    """Column heights, holes, bumpiness, row and column transitions and wells of env ``i``'s
    board into ``feat[i, :15]`` (the definitions of SPEC.md), a row at a time with bit
    operations and no data-dependent branch in the row loop.

    ``seen`` marks the columns with a filled cell at or above the current row. Two per-column
    5-bit counters are kept bit-sliced across five words (bit ``c`` of word ``k`` is bit ``k``
    of column ``c``'s count; counts never exceed H = 24 < 32):

    * ``h0``..``h4``: the column's height, one more for every row from its highest filled
      cell down (each row adds ``seen``);
    * ``run0``..``run4``: the length of the vertical run of well cells ending at the current
      row (every run grows by one, then the runs not continued by a well cell stop).
    """
    seen = 0
    holes = 0
    col_t = 0
    row_t = 0
    wells = 0
    run0 = run1 = run2 = run3 = run4 = 0
    h0 = h1 = h2 = h3 = h4 = 0
    top = 0  # rows above the pile add nothing
    while top < H and rows[i, top] == 0:
        top += 1
    # The row above ``top`` is empty, except that nothing lies above row 0 (no transitions).
    prev = np.int64(rows[i, 0]) if top == 0 else 0
    for y in range(top, H):
        bits = np.int64(rows[i, y])
        col_t += popcount(bits ^ prev)
        holes += popcount(~bits & seen & FULL_ROW)
        seen |= bits
        h0, h1, h2, h3, h4 = _sliced_add(h0, h1, h2, h3, h4, seen)  # every column seen so far grows
        row_t += _row_transitions(bits)
        well = _well_cells(bits)
        # Wells: every run grows by one, then the runs not continued by a well cell stop.
        s0, s1, s2, s3, s4 = _sliced_add(run0, run1, run2, run3, run4, FULL_ROW)
        run0, run1, run2, run3, run4 = s0 & well, s1 & well, s2 & well, s3 & well, s4 & well
        # A well cell adds its run's length so far: 1 + 2 + ... + d over a run of d cells.
        wells += _run_sum(run0, run1, run2, run3, run4)
        prev = bits
    col_t += popcount(~prev & FULL_ROW)  # the bottom row against the filled floor
    bump = 0
    last = 0
    for c in range(W):
        h = (((h0 >> c) & 1) | (((h1 >> c) & 1) << 1) | (((h2 >> c) & 1) << 2) | (((h3 >> c) & 1) << 3)
             | (((h4 >> c) & 1) << 4))
        feat[i, c] = h
        if c > 0:
            bump += abs(h - last)
        last = h
    feat[i, F_HOLES] = holes
    feat[i, F_BUMPINESS] = bump
    feat[i, F_ROW_T] = row_t
    feat[i, F_COL_T] = col_t
    feat[i, F_WELLS] = wells


@exact(inline="always")
def drop_legal(s, i, t, r, x):
    """Whether piece ``t`` fits in state ``r`` at drop column ``x`` in the spawn rows."""
    return x + WIDTH[t, r] <= W and not blocked(s.rows, i, t, r, DROP_Y[t, r], x)


@exact(inline="always")
def drop_columns(rows, i, t, r):
    """The columns ``x`` at which piece ``t`` in state ``r`` drops legally (``drop_legal``), as
    bit ``x`` of the result, all at once: a piece row ``k`` whose cells are the bits ``b`` of
    ``ROW_MASKS[t, r, k]`` hits board row ``y`` at anchor ``x`` exactly when bit ``x + b`` of
    the row is set for some ``b``, so ``OR_b (row >> b)`` marks every ``x`` it blocks."""
    y0 = DROP_Y[t, r]
    bad = 0
    for k in range(HEIGHT[t, r]):
        row = np.int64(rows[i, y0 + k])
        m = ROW_MASKS[t, r, k]
        for b in range(4):
            if (m >> b) & 1:
                bad |= row >> b
    return ~bad & ((1 << (W - WIDTH[t, r] + 1)) - 1)


@exact(inline="always")
def clear_board(s, i):
    for y in range(H):
        s.rows[i, y] = 0
        for c in range(W):
            s.cells[i, y, c] = 0
