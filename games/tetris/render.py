"""Pictures of one Tetris env: an RGB image (board, active piece, its ghost, hold and queue)
and a text board."""

from __future__ import annotations

import numpy as np

from vecsim.games.tetris.pieces import CELLS, COLORS, HIDDEN, NAMES, NONE, H, W

#: Colours by cell value - 1: the seven pieces, then grey for cells set up by ``set_board``.
_PALETTE = np.vstack([COLORS, np.array([[128, 128, 128]], np.uint8)])

CELL = 16  # pixels per cell
_BG = np.array((24, 24, 32), np.uint8)
_GRID = np.array((44, 44, 56), np.uint8)


def _active_cells(values: dict):
    t, r, y, x = (int(values[k]) for k in ("piece", "rot", "y", "x"))
    return t, [(y + int(dy), x + int(dx)) for dy, dx in CELLS[t, r]]


def _ghost_row(values: dict, t: int, cells) -> int:
    occupied = np.asarray(values["cells"]) != 0
    drop = 0
    while True:
        nxt = [(cy + drop + 1, cx) for cy, cx in cells]
        if any(cy >= H or occupied[cy, cx] for cy, cx in nxt):
            return drop
        drop += 1


def _block(img, py, px, color, size=CELL):
    img[py + 1: py + size - 1, px + 1: px + size - 1] = color


def _mini_piece(img, t, top, left):
    for dy, dx in CELLS[t, 0]:
        _block(img, top + int(dy) * (CELL // 2), left + int(dx) * (CELL // 2), COLORS[t], CELL // 2)


def render_rgb(values: dict, p) -> np.ndarray:
    """The 20 visible rows (and any blocks in the hidden rows above, dimmed), the active piece
    and its landing ghost, with hold and queue in a side panel: uint8 (H, W, 3)."""
    rows = H
    panel = 5 * CELL
    img = np.empty((rows * CELL, W * CELL + panel, 3), np.uint8)
    img[:] = _BG
    img[:, : W * CELL] = _GRID
    img[: HIDDEN * CELL, : W * CELL] = _BG
    cells = np.asarray(values["cells"])
    for y in range(rows):
        for x in range(W):
            c = int(cells[y, x])
            if c:
                color = _PALETTE[c - 1] if y >= HIDDEN else (_PALETTE[c - 1] // 2)
                _block(img, y * CELL, x * CELL, color)
            elif y >= HIDDEN:
                _block(img, y * CELL, x * CELL, _BG)
    t, act = _active_cells(values)
    drop = _ghost_row(values, t, act)
    for cy, cx in act:
        if 0 <= cy + drop < rows:
            _block(img, (cy + drop) * CELL, cx * CELL, (COLORS[t] // 3).astype(np.uint8))
    for cy, cx in act:
        if 0 <= cy < rows and 0 <= cx < W:
            _block(img, cy * CELL, cx * CELL, COLORS[t])
    left = W * CELL + CELL // 2
    hold = int(values.get("hold", NONE))
    if p.hold and hold != NONE:
        _mini_piece(img, hold, CELL // 2, left)
    for k in range(int(p.queue)):
        _mini_piece(img, int(values["queue"][k]), (3 + 3 * k) * CELL // 2 + CELL, left)
    return img


def render_text(values: dict, p) -> str:
    """The board as text: ``#`` filled, ``@`` the active piece, ``.`` empty; a line of dashes
    separates the hidden rows."""
    cells = np.asarray(values["cells"])
    grid = [["#" if cells[y, x] else "." for x in range(W)] for y in range(H)]
    t, act = _active_cells(values)
    for cy, cx in act:
        if 0 <= cy < H and 0 <= cx < W:
            grid[cy][cx] = "@"
    lines = ["".join(row) for row in grid]
    lines.insert(HIDDEN, "-" * W)
    extra = f"piece {NAMES[t]}"
    if p.hold:
        hold = int(values["hold"])
        extra += f"  hold {NAMES[hold] if hold != NONE else '-'}"
    if int(p.queue):
        extra += "  next " + "".join(NAMES[int(q)] for q in values["queue"][: int(p.queue)])
    return "\n".join(lines + [extra])
