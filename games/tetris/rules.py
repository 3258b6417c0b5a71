"""Tetris rules as per-env ``@njit`` functions over the structure-of-arrays state.

The board of env ``i`` is kept twice: ``rows[i, y]`` is a bitmask of the filled columns of
row ``y`` (collision tests are a shift and an AND per piece row) and ``cells[i, y, x]`` holds
the colours for rendering. Every function here keeps both in step. See ``SPEC.md`` for the
rules these functions implement.
"""

from __future__ import annotations

import numpy as np

from games.tetris.pieces import (
    CELLS, DROP_Y, FULL_ROW, H, HEIGHT, KICK_COUNT, KICK_DELTAS, NONE, ROW_MASKS, SPAWN_X, SPAWN_Y, W, WIDTH,
)
from vecsim.jit import exact
from vecsim.rng import randint

N_FEATURES = 17
# Feature slots after the ten column heights.
F_HOLES, F_BUMPINESS, F_ROW_T, F_COL_T, F_WELLS, F_LANDING, F_ERODED = range(10, 17)
QUEUE_SLOTS = 6  # the internal queue length, whatever the visible one
LINE_SCORES = np.array([0, 100, 300, 500, 800], dtype=np.int64)


@exact
def blocked(rows, i, t, r, y, x):
    """Whether piece ``t`` in state ``r`` with anchor ``(y, x)`` overlaps a wall, the floor,
    the ceiling or a filled cell of env ``i``."""
    if y < 0 or x < 0 or x + WIDTH[t, r] > W or y + HEIGHT[t, r] > H:
        return True
    for k in range(HEIGHT[t, r]):
        if np.int64(rows[i, y + k]) & (ROW_MASKS[t, r, k] << x):
            return True
    return False


@exact
def drop_row(rows, i, t, r, y, x):
    """The anchor row where the piece comes to rest falling straight down from ``y``."""
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


@exact
def advance(s, i, rng, use_bag):
    """The next piece of the queue becomes current; one draw refills the queue's end."""
    s.piece[i] = s.queue[i, 0]
    for k in range(QUEUE_SLOTS - 1):
        s.queue[i, k] = s.queue[i, k + 1]
    s.queue[i, QUEUE_SLOTS - 1] = draw_piece(s.bag, s.bag_pos, rng, i, use_bag)


@exact
def spawn(s, i):
    """Put the current piece at its spawn pose; False if it cannot spawn (game over)."""
    t = np.int64(s.piece[i])
    s.rot[i] = 0
    s.y[i] = SPAWN_Y[t]
    s.x[i] = SPAWN_X[t]
    return not blocked(s.rows, i, t, 0, SPAWN_Y[t], SPAWN_X[t])


@exact
def hold_target(s, i):
    """The piece that holding now would make current."""
    return np.int64(s.queue[i, 0]) if s.hold[i] == NONE else np.int64(s.hold[i])


@exact
def do_hold(s, i, rng, use_bag):
    """Hold the current piece; returns whether the new current piece could spawn."""
    cur = s.piece[i]
    if s.hold[i] == NONE:
        s.hold[i] = cur
        advance(s, i, rng, use_bag)
    else:
        s.piece[i] = s.hold[i]
        s.hold[i] = cur
    s.can_hold[i] = False
    return spawn(s, i)


@exact
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
    if lines > 0:
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


#: Number of set bits of every 11-bit value.
POPCOUNT = np.array([bin(v).count("1") for v in range(1 << (W + 1))], dtype=np.int64)
_COL_BITS = 6  # per-column counters packed in one int64 (a run never exceeds H = 24 < 64)
_COL_MASK = (1 << _COL_BITS) - 1


@exact
def board_features(rows, i, feat):
    """Column heights, holes, bumpiness, row and column transitions and wells of env ``i``'s
    board into ``feat[i, :15]`` (the definitions of SPEC.md), a row at a time with bit
    operations: ``seen`` marks columns with a filled cell above the current row."""
    seen = 0
    prev = 0
    holes = 0
    col_t = 0
    row_t = 0
    wells = 0
    runs = 0  # packed per-column lengths of the current vertical run of well cells
    for c in range(W):
        feat[i, c] = 0
    for y in range(H):
        bits = np.int64(rows[i, y])
        if y > 0:
            col_t += POPCOUNT[bits ^ prev]
        new = bits & ~seen
        while new:
            c = 0
            while not (new >> c) & 1:
                c += 1
            feat[i, c] = H - y
            new &= new - 1
        holes += POPCOUNT[~bits & seen & FULL_ROW]
        seen |= bits
        if seen:  # rows from the highest filled one down
            walled = (bits << 1) | 1 | (1 << (W + 1))
            row_t += POPCOUNT[(walled ^ (walled >> 1)) & ((1 << (W + 1)) - 1)]
        well = ~bits & ((bits << 1) | 1) & ((bits >> 1) | (1 << (W - 1))) & FULL_ROW
        if well or runs:
            for c in range(W):
                shift = c * _COL_BITS
                if (well >> c) & 1:
                    run = ((runs >> shift) & _COL_MASK) + 1
                    runs = (runs & ~(_COL_MASK << shift)) | (run << shift)
                    wells += run  # 1 + 2 + ... + d over a run of d cells
                else:
                    runs &= ~(_COL_MASK << shift)
        prev = bits
    col_t += POPCOUNT[~prev & FULL_ROW]  # the bottom row against the filled floor
    bump = 0
    for c in range(W - 1):
        bump += abs(np.int64(feat[i, c]) - np.int64(feat[i, c + 1]))
    feat[i, F_HOLES] = holes
    feat[i, F_BUMPINESS] = bump
    feat[i, F_ROW_T] = row_t
    feat[i, F_COL_T] = col_t
    feat[i, F_WELLS] = wells


@exact
def drop_legal(s, i, t, r, x):
    """Whether piece ``t`` fits in state ``r`` at drop column ``x`` in the spawn rows."""
    return x + WIDTH[t, r] <= W and not blocked(s.rows, i, t, r, DROP_Y[t, r], x)


@exact
def clear_board(s, i):
    for y in range(H):
        s.rows[i, y] = 0
        for c in range(W):
            s.cells[i, y, c] = 0
