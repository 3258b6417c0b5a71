"""Blokus drawn for ``render()``: the board in the four colours with each seat's pieces left
below it (RGB), or as text."""

from __future__ import annotations

import numpy as np

from vecsim.games.blokus.pieces import MONOMINO, N_PIECES, PIECE_SIZE
from vecsim.games.blokus.rules import BONUS_ALL, BONUS_MONOMINO_LAST

CELL = 16  # pixels per board cell
#: Empty, then the seats in play order: blue, yellow, red, green (the classic set's colours).
COLOURS = np.array([(235, 235, 235), (30, 90, 200), (230, 190, 20), (200, 40, 40), (40, 160, 60)], np.uint8)
LETTERS = ".BYRG"


def _scores(values) -> list[int]:
    out = []
    for left, last in zip(values["pieces_left"], values["last_piece"]):
        left = int(left)
        if left == 0:
            out.append(BONUS_ALL + (BONUS_MONOMINO_LAST if int(last) == MONOMINO else 0))
        else:
            out.append(-int(sum(PIECE_SIZE[k] for k in range(N_PIECES) if left >> k & 1)))
    return out


def render_rgb(values, p):
    """The board (16-pixel cells, a 1-pixel grid), then one strip per seat: its 21 pieces,
    each a square in the seat's colour while held, grey once placed."""
    cells = np.asarray(values["cells"], np.int64)
    size, seats = cells.shape[0], len(values["pieces_left"])
    strip = CELL // 2
    img = np.full((size * CELL + seats * (strip + 2) + 2, max(size * CELL, N_PIECES * strip), 3), 255, np.uint8)
    board = COLOURS[cells].repeat(CELL, axis=0).repeat(CELL, axis=1)
    board[::CELL, :] = 120
    board[:, ::CELL] = 120
    img[:size * CELL, :size * CELL] = board
    for q, left in enumerate(values["pieces_left"]):
        y = size * CELL + 2 + q * (strip + 2)
        for k in range(N_PIECES):
            colour = COLOURS[q + 1] if int(left) >> k & 1 else COLOURS[0]
            img[y:y + strip - 1, k * strip:(k + 1) * strip - 1] = colour
    return img


def render_text(values, p):
    """The board as letters (``B Y R G`` by seat, ``.`` empty), then each seat's pieces left
    and score, and whose turn it is."""
    cells = np.asarray(values["cells"], np.int64)
    lines = ["".join(LETTERS[v] for v in row) for row in cells]
    for q, (left, score) in enumerate(zip(values["pieces_left"], _scores(values))):
        lines.append(f"{LETTERS[q + 1]}: {bin(int(left)).count('1')} pieces left, score {score}")
    if bool(values["game_over"]):
        lines.append("game over, final scores " + " ".join(str(int(v)) for v in values["final_scores"]))
    else:
        lines.append(f"{LETTERS[int(values['acting_seat']) + 1]} to move")
    return "\n".join(lines)
