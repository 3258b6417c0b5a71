"""Blokus pieces: the 21 free polyominoes of one to five squares and their 91 orientations.

Built once at import from the drawings below and read by the kernels as global constant
arrays. Coordinates: rows grow downward, columns to the right, ``(row, col)``.

Orientations. Each piece's drawing is turned clockwise 0, 1, 2, 3 times, then mirrored
left-right and turned 0..3 times again; each of these eight images is moved so that its
bounding box starts at ``(0, 0)``, its cells are sorted, and an image equal to an earlier one
of the same piece is dropped. The survivors, piece by piece in ``PIECE_NAMES`` order, are
orientations ``0 .. 90``: orientation ``o`` belongs to piece ``ORIENT_PIECE[o]``, and the
orientations of piece ``k`` are ``PIECE_FIRST[k] <= o < PIECE_FIRST[k + 1]``.

Anchor. A placement is ``(o, row, col)`` where ``(row, col)`` is the board cell under the
**top-left corner of the orientation's bounding box** (the box's top row and left column;
that cell itself may be empty, as for the Y below). It is chosen because every placement
inside the board then has ``0 <= row <= S - height`` and ``0 <= col <= S - width``: the
anchor is never off the board, and ``action = o * S * S + row * S + col`` is a dense index
in ``[0, 91 * S * S)`` (``S = 20`` classic, 14 Duo).

Encoding, drawn for the Y pentomino's first orientation ``o = PIECE_FIRST[19]``::

        col:  0 1 2 3               ORIENT_CELLS[o] = (0,1) (1,0) (1,1) (2,1) (3,1)
    row 0     . #                   ORIENT_ROWS[o]  = 0b10, 0b11, 0b10, 0b10, 0
    row 1     # #                   ORIENT_H, ORIENT_W = 4, 2
    row 2     . #                   the anchor is (row 0, col 0), an empty cell here;
    row 3     . #                   the piece covers board cells anchor + ORIENT_CELLS[o]

``ORIENT_ROWS[o, dy]`` has bit ``dx`` set when ``(dy, dx)`` is a cell: row ``dy`` of the
piece, shifted left by the anchor's column, is that row's bitboard word.
"""

from __future__ import annotations

import numpy as np

MAX_CELLS = 5

# The pieces in their own drawing (any orientation would do: all eight images are taken).
# Names follow the usual polyomino letters, with the size where a letter repeats.
_DRAWINGS = {
    "I1": ["#"],
    "I2": ["##"],
    "I3": ["###"],
    "V3": ["#.",
           "##"],
    "I4": ["####"],
    "O4": ["##",
           "##"],
    "T4": ["###",
           ".#."],
    "L4": ["#.",
           "#.",
           "##"],
    "Z4": ["##.",
           ".##"],
    "F": [".##",
          "##.",
          ".#."],
    "I5": ["#####"],
    "L5": ["#.",
           "#.",
           "#.",
           "##"],
    "N": ["##..",
          ".###"],
    "P": ["##",
          "##",
          "#."],
    "T5": ["###",
           ".#.",
           ".#."],
    "U": ["#.#",
          "###"],
    "V5": ["#..",
           "#..",
           "###"],
    "W": ["#..",
          "##.",
          ".##"],
    "X": [".#.",
          "###",
          ".#."],
    "Y": [".#",
          "##",
          ".#",
          ".#"],
    "Z5": ["##.",
           ".#.",
           ".##"],
}

PIECE_NAMES = tuple(_DRAWINGS)
N_PIECES = len(PIECE_NAMES)  # 21
MONOMINO = PIECE_NAMES.index("I1")
ALL_PIECES = (1 << N_PIECES) - 1  # the bitmask of a full set


def _cells(drawing):
    return [(r, c) for r, line in enumerate(drawing) for c, ch in enumerate(line) if ch == "#"]


def _normalised(cells):
    r0 = min(r for r, _ in cells)
    c0 = min(c for _, c in cells)
    return tuple(sorted((r - r0, c - c0) for r, c in cells))


def _orientations(cells):
    """The distinct images of ``cells``: rotations, then rotations of the mirror image."""
    out = []
    for mirrored in (False, True):
        cur = [(r, -c) for r, c in cells] if mirrored else list(cells)
        for _ in range(4):
            image = _normalised(cur)
            if image not in out:
                out.append(image)
            cur = [(c, -r) for r, c in cur]  # a clockwise quarter turn
    return out


def _build():
    per_piece = [_orientations(_cells(_DRAWINGS[name])) for name in PIECE_NAMES]
    n = sum(len(x) for x in per_piece)
    cells = np.zeros((n, MAX_CELLS, 2), dtype=np.int64)
    piece = np.zeros(n, dtype=np.int64)
    size = np.zeros(n, dtype=np.int64)
    first = np.zeros(N_PIECES + 1, dtype=np.int64)
    o = 0
    for k, images in enumerate(per_piece):
        first[k] = o
        for image in images:
            # Padding repeats the first cell: an OR over all MAX_CELLS slots is then exact.
            cells[o] = list(image) + [image[0]] * (MAX_CELLS - len(image))
            piece[o] = k
            size[o] = len(image)
            o += 1
    first[N_PIECES] = n
    return cells, piece, size, first


#: (91, 5, (dy, dx)) cells of each orientation relative to its anchor; slots past the
#: orientation's size repeat its first cell.
#: (91,) piece id and number of cells of each orientation.
#: (22,) orientations of piece k are PIECE_FIRST[k] .. PIECE_FIRST[k + 1] - 1.
ORIENT_CELLS, ORIENT_PIECE, ORIENT_SIZE, PIECE_FIRST = _build()
N_ORIENT = len(ORIENT_PIECE)  # 91
#: (91,) bounding-box height and width of each orientation.
ORIENT_H = ORIENT_CELLS[:, :, 0].max(axis=1) + 1
ORIENT_W = ORIENT_CELLS[:, :, 1].max(axis=1) + 1
#: (21,) squares of each piece.
PIECE_SIZE = ORIENT_SIZE[PIECE_FIRST[:-1]]


def _row_masks():
    masks = np.zeros((N_ORIENT, MAX_CELLS), dtype=np.int64)
    for o in range(N_ORIENT):
        for dy, dx in ORIENT_CELLS[o]:
            masks[o, dy] |= 1 << dx
    return masks


#: (91, 5) bit dx of ORIENT_ROWS[o, dy] is set when (dy, dx) is a cell of orientation o.
ORIENT_ROWS = _row_masks()


def _row_patterns():
    """The distinct values of ORIENT_ROWS with every pattern each reaches by dropping its
    highest columns one by one (so each pattern's parent is in the list), sorted, 0 first; each
    one's parent (its index) and the column it adds to it."""
    patterns = set()
    for value in ORIENT_ROWS.ravel().tolist():
        while value:
            patterns.add(value)
            value &= ~(1 << (value.bit_length() - 1))
    patterns = np.array(sorted(patterns | {0}), np.int64)
    top = np.array([max(int(v).bit_length() - 1, 0) for v in patterns], np.int64)
    parent = np.searchsorted(patterns, patterns & ~(np.int64(1) << top))
    return patterns, parent, top


#: (13,) piece-row column patterns (the distinct values of ORIENT_ROWS), 0 (no cell) first;
#: pattern j is pattern ROW_PATTERN_PARENT[j] plus column ROW_PATTERN_TOP[j].
ROW_PATTERNS, ROW_PATTERN_PARENT, ROW_PATTERN_TOP = _row_patterns()
N_ROW_PATTERNS = len(ROW_PATTERNS)
#: (91, 5) ORIENT_ROWS[o, dy] as its index in ROW_PATTERNS.
ORIENT_ROW_PATTERN = np.searchsorted(ROW_PATTERNS, ORIENT_ROWS)


def action_index(o: int, row: int, col: int, size: int) -> int:
    """The action of orientation ``o`` anchored at ``(row, col)`` on a ``size``-wide board."""
    return (o * size + row) * size + col


def action_parts(action: int, size: int) -> tuple[int, int, int]:
    """``(o, row, col)`` of an action on a ``size``-wide board."""
    action = int(action)
    return action // (size * size), (action // size) % size, action % size
