"""Tetromino tables: cells of every rotation state, anchors, row bitmasks and SRS kicks.

Everything here is built once at import from the spawn-state cells and the published SRS
kick tables (see ``SPEC.md``) and read by the kernels as global constant arrays.

Coordinates: rows grow downward, columns to the right. A pose is kept by its **anchor**
``(r, y, x)``: the top-left corner of the cells' own bounding box in rotation state ``r``.
"""

from __future__ import annotations

import numpy as np

W = 10  # columns
H = 24  # rows: 4 hidden spawn rows on top of 20 visible ones
HIDDEN = 4
N_TYPES = 7
NONE = 7  # "no piece" (empty hold)
FULL_ROW = (1 << W) - 1
SPAWN_BOX_ROW = 2
SPAWN_BOX_COL = 3
N_POSES = 4 * H * W  # anchors (r, y, x): the reach action space without hold
NAMES = "IOTSZJL"
I, O, T, S, Z, J, L = range(7)

_SPAWN_CELLS = {
    I: (4, [(1, 0), (1, 1), (1, 2), (1, 3)]),
    O: (4, [(0, 1), (0, 2), (1, 1), (1, 2)]),
    T: (3, [(0, 1), (1, 0), (1, 1), (1, 2)]),
    S: (3, [(0, 1), (0, 2), (1, 0), (1, 1)]),
    Z: (3, [(0, 0), (0, 1), (1, 1), (1, 2)]),
    J: (3, [(0, 0), (1, 0), (1, 1), (1, 2)]),
    L: (3, [(0, 2), (1, 0), (1, 1), (1, 2)]),
}

# SRS offsets in (x right, y up) form, for rotation from state r to r+1 (cw) and r to r-1 (ccw).
_JLSTZ_KICKS = {
    (0, 1): [(0, 0), (-1, 0), (-1, 1), (0, -2), (-1, -2)],
    (1, 0): [(0, 0), (1, 0), (1, -1), (0, 2), (1, 2)],
    (1, 2): [(0, 0), (1, 0), (1, -1), (0, 2), (1, 2)],
    (2, 1): [(0, 0), (-1, 0), (-1, 1), (0, -2), (-1, -2)],
    (2, 3): [(0, 0), (1, 0), (1, 1), (0, -2), (1, -2)],
    (3, 2): [(0, 0), (-1, 0), (-1, -1), (0, 2), (-1, 2)],
    (3, 0): [(0, 0), (-1, 0), (-1, -1), (0, 2), (-1, 2)],
    (0, 3): [(0, 0), (1, 0), (1, 1), (0, -2), (1, -2)],
}
_I_KICKS = {
    (0, 1): [(0, 0), (-2, 0), (1, 0), (-2, -1), (1, 2)],
    (1, 0): [(0, 0), (2, 0), (-1, 0), (2, 1), (-1, -2)],
    (1, 2): [(0, 0), (-1, 0), (2, 0), (-1, 2), (2, -1)],
    (2, 1): [(0, 0), (1, 0), (-2, 0), (1, -2), (-2, 1)],
    (2, 3): [(0, 0), (2, 0), (-1, 0), (2, 1), (-1, -2)],
    (3, 2): [(0, 0), (-2, 0), (1, 0), (-2, -1), (1, 2)],
    (3, 0): [(0, 0), (1, 0), (-2, 0), (1, -2), (-2, 1)],
    (0, 3): [(0, 0), (-1, 0), (2, 0), (-1, 2), (2, -1)],
}
N_KICKS = 5


def _rotation_cells() -> np.ndarray:
    cells = np.zeros((N_TYPES, 4, 4, 2), dtype=np.int64)
    for t, (b, spawn) in _SPAWN_CELLS.items():
        cur = list(spawn)
        for r in range(4):
            cells[t, r] = sorted(cur)
            if t != O:  # O keeps its cells in every state
                cur = [(c, b - 1 - row) for row, c in cur]
    return cells


#: (type, r, k, (row, col)) cell k of state r inside the piece's box.
BOX_CELLS = _rotation_cells()
#: (type, r) the top-left of the cells' bounding box inside the box, and its size.
MIN_ROW = BOX_CELLS[..., 0].min(axis=2)
MIN_COL = BOX_CELLS[..., 1].min(axis=2)
HEIGHT = BOX_CELLS[..., 0].max(axis=2) - MIN_ROW + 1
WIDTH = BOX_CELLS[..., 1].max(axis=2) - MIN_COL + 1
#: (type, r, k, (dy, dx)) cell k relative to the anchor.
CELLS = BOX_CELLS - np.stack([MIN_ROW, MIN_COL], axis=-1)[:, :, None, :]


def _row_masks() -> np.ndarray:
    masks = np.zeros((N_TYPES, 4, 4), dtype=np.int64)
    for t in range(N_TYPES):
        for r in range(4):
            for dy, dx in CELLS[t, r]:
                masks[t, r, dy] |= 1 << dx
    return masks


#: (type, r, k) bitmask of the columns (relative to the anchor's x) filled in row y + k.
ROW_MASKS = _row_masks()
#: (type, r) the four ``ROW_MASKS`` rows in one word, row k in bits 16k and up (as
#: ``vecsim.core.cells.load_word`` reads four uint16 board rows).
ROW_WORDS = (ROW_MASKS << (16 * np.arange(4))).sum(axis=2)



def _column_masks() -> tuple[np.ndarray, np.ndarray]:
    cols = np.zeros((N_TYPES, 4, 4), dtype=np.int64)
    bottom = np.zeros((N_TYPES, 4, 4), dtype=np.int64)
    for t in range(N_TYPES):
        for r in range(4):
            for dy, dx in CELLS[t, r]:
                cols[t, r, dx] |= 1 << dy
                bottom[t, r, dx] = max(bottom[t, r, dx], dy)
    return cols, bottom


#: (type, r, k) bitmask of the rows (relative to the anchor's y) filled in column x + k, and
#: the lowest of them (every column of a tetromino is one vertical run of cells).
COL_MASKS, COL_BOTTOM = _column_masks()

def _kick_deltas() -> np.ndarray:
    """(type, r, direction, k, (dy, dx)): anchor moves of rotating with kick test k.

    direction 0 is clockwise, 1 counter-clockwise. The anchor move combines the box offset of
    the kick (y up in the published tables, so its sign flips) with the anchor's own shift
    inside the box between the two states.
    """
    out = np.zeros((N_TYPES, 4, 2, N_KICKS, 2), dtype=np.int64)
    for t in range(N_TYPES):
        table = _I_KICKS if t == I else _JLSTZ_KICKS
        for r in range(4):
            for d, r2 in enumerate(((r + 1) % 4, (r + 3) % 4)):
                kicks = [(0, 0)] * N_KICKS if t == O else table[(r, r2)]
                for k, (kx, ky) in enumerate(kicks):
                    out[t, r, d, k, 0] = -ky + MIN_ROW[t, r2] - MIN_ROW[t, r]
                    out[t, r, d, k, 1] = kx + MIN_COL[t, r2] - MIN_COL[t, r]
    return out


KICK_DELTAS = _kick_deltas()
#: Number of kick tests per piece: 1 for O (its rotation never moves it), else 5.
KICK_COUNT = np.array([1 if t == O else N_KICKS for t in range(N_TYPES)], dtype=np.int64)
#: (type,) anchor of the spawn pose (state 0).
SPAWN_Y = SPAWN_BOX_ROW + MIN_ROW[:, 0]
SPAWN_X = SPAWN_BOX_COL + MIN_COL[:, 0]
#: (type, r) anchor row of state r rotated in place at the spawn box (drop mode).
DROP_Y = SPAWN_BOX_ROW + MIN_ROW
#: RGB colours of the seven pieces (Guideline colours), index = type.
COLORS = np.array([
    (0, 240, 240), (240, 240, 0), (160, 0, 240), (0, 240, 0), (240, 0, 0), (0, 0, 240), (240, 160, 0),
], dtype=np.uint8)


def pose_index(r: int, y: int, x: int) -> int:
    """The reach-mode action (without hold) of anchor ``(r, y, x)``."""
    return (r * H + y) * W + x


def pose_of(index: int) -> tuple[int, int, int]:
    """``(r, y, x)`` of a reach-mode pose index (without the hold half)."""
    index = int(index) % N_POSES
    return index // (H * W), (index // W) % H, index % W
