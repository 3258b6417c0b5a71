"""Drawing one Dr. Mario env: an RGB image and a text picture of the bottle, the falling pill
and the preview. ``values`` maps ``State`` field names to that env's values."""

import numpy as np

from vecsim.games.drmario.tables import BOTTOM, LEFT, RIGHT, TOP

CELL = 8
_RGB = np.array([(232, 200, 0), (208, 32, 32), (40, 96, 224)], np.uint8)
_LETTER = "YRB"


def _pill_cells(x: int, y: int, rot: int, pill: int):
    """[(row, col, color, tile byte)] of a pill with anchor (x, y from the bottom, rot)."""
    c1, c2 = pill // 3, pill % 3
    row = 15 - y
    if rot & 1:
        bottom, top = (c1, c2) if rot == 1 else (c2, c1)
        return [(row, x, bottom, BOTTOM | bottom), (row - 1, x, top, TOP | top)]
    left, right = (c1, c2) if rot == 0 else (c2, c1)
    return [(row, x, left, LEFT | left), (row, x + 1, right, RIGHT | right)]


def _falling(values) -> list:
    if int(values["next_action"]) != 0 or int(values["outcome"]) != 0:
        return []
    return _pill_cells(int(values["x"]), int(values["y"]), int(values["rot"]), int(values["falling"]))


def render_rgb(values, p) -> np.ndarray:
    """``uint8 (H, W, 3)``: the bottle (viruses as rings, pill halves filled, the falling pill
    outlined in white) with the preview pill above it."""
    h, w = (16 + 3) * CELL, 10 * CELL
    img = np.zeros((h, w, 3), np.uint8)
    top, left = 3 * CELL, CELL
    img[top - 2:, left - 2:left + 8 * CELL + 2] = (90, 90, 120)
    img[top:top + 16 * CELL, left:left + 8 * CELL] = 0

    def paint(row, col, color, kind, y0=top, outline=False):
        y, x = y0 + row * CELL, left + col * CELL
        img[y + 1:y + CELL - 1, x + 1:x + CELL - 1] = _RGB[color]
        if kind == 0xD0:  # a virus: a ring
            img[y + 3:y + CELL - 3, x + 3:x + CELL - 3] = 0
        if outline:
            img[y, x:x + CELL] = img[y + CELL - 1, x:x + CELL] = 255
            img[y:y + CELL, x] = img[y:y + CELL, x + CELL - 1] = 255

    board = np.asarray(values["board"])
    for k in range(128):
        v = int(board[k])
        if v < 0xF0 and (v & 15) <= 2:
            paint(k // 8, k % 8, v & 15, v & 0xF0)
    for row, col, color, kind in _falling(values):
        if row >= 0:
            paint(row, col, color, kind, outline=True)
    for row, col, color, kind in _pill_cells(3, 15, 0, int(values["next_pill"])):
        paint(0, col, color, kind, y0=CELL)
    return img


def render_text(values, p) -> str:
    """The bottle as 16 lines of 8 cells (virus ``Y R B``, pill half ``y r b``, the falling
    pill as ``@``, empty ``.``), under a line with the falling and preview pills' colors, the
    level, the viruses left and the displayed score."""
    grid = [["."] * 8 for _ in range(16)]
    board = np.asarray(values["board"])
    for k in range(128):
        v = int(board[k])
        if v < 0xF0 and (v & 15) <= 2:
            letter = _LETTER[v & 15]
            grid[k // 8][k % 8] = letter if (v & 0xF0) == 0xD0 else letter.lower()
    falling = {(r, c) for r, c, _, _ in _falling(values) if r >= 0}
    pill, nxt = int(values["falling"]), int(values["next_pill"])
    lines = [f"falling {_LETTER[pill // 3]}{_LETTER[pill % 3]}  next {_LETTER[nxt // 3]}{_LETTER[nxt % 3]}  "
             f"level {int(values['level'])}  "
             f"viruses {int(values['virus_left'])}  score {int(values['score']) * 10}"]
    for r in range(16):
        lines.append("|" + "".join("@" if (r, c) in falling else grid[r][c] for c in range(8)) + "|")
    return "\n".join(lines)
