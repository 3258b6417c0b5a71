"""Python helpers to set up and inspect Tetris envs (scenarios, tests, notebooks).

``set_board`` writes an ASCII board into env ``i`` of an engine, keeping the bitboard, the
colours and the features consistent, and recomputes the observation and the mask.
"""

from __future__ import annotations

import numpy as np

from vecsim.games.tetris.pieces import CELLS, NAMES, NONE, SPAWN_X, SPAWN_Y, H, W
from vecsim.games.tetris.rules import N_FEATURES, board_features, blocked


def parse_board(text: str) -> np.ndarray:
    """An ASCII board as an ``(H, W)`` uint8 array of colours (8 for a filled cell).

    ``text`` holds rows of ``W`` characters; ``.`` (or a space) is empty, anything else
    filled. The rows given are the **bottom** rows of the board.
    """
    lines = [ln.strip() for ln in text.strip("\n").splitlines() if ln.strip()]
    if len(lines) > H:
        raise ValueError(f"a board has at most {H} rows, but got {len(lines)}")
    board = np.zeros((H, W), np.uint8)
    for k, line in enumerate(lines):
        if len(line) != W:
            raise ValueError(f"board row {k} must have {W} characters, but got {line!r}")
        y = H - len(lines) + k
        board[y] = [0 if ch in ". " else 8 for ch in line]
    return board


def _piece_type(piece) -> int:
    if isinstance(piece, str):
        if piece.upper() not in NAMES:
            raise ValueError(f"piece must be one of {list(NAMES)} or 0-6, but got piece={piece!r}")
        return NAMES.index(piece.upper())
    if not 0 <= int(piece) < 7:
        raise ValueError(f"piece must be one of {list(NAMES)} or 0-6, but got piece={piece!r}")
    return int(piece)


def set_board(engine, i: int, board, piece=None, hold=None, queue=None, pose=None, can_hold=True) -> None:
    """Give env ``i`` of a Tetris ``engine`` a board, and optionally its pieces.

    Parameters
    ----------
    board : str or ndarray
        ASCII (see ``parse_board``) or an ``(H, W)`` array (non-zero = filled).
    piece : str or int, optional
        The current piece (``"T"`` or 2); placed at its spawn pose unless ``pose`` is given.
    hold : str or int or None
        The held piece (``None`` keeps it; ``"-"`` empties the hold).
    queue : str or sequence, optional
        Upcoming pieces, first first (``"IOT"``); at most 6, the rest is kept.
    pose : (r, y, x), optional
        Anchor of the current piece instead of the spawn pose.
    """
    i = engine.env_index(i)
    s = engine.state
    cells = parse_board(board) if isinstance(board, str) else np.asarray(board)
    if cells.shape != (H, W):
        raise ValueError(f"board must have shape ({H}, {W}), but got {cells.shape}")
    s.cells[i] = np.where(cells != 0, np.minimum(cells, 8), 0).astype(np.uint8)
    s.rows[i] = ((cells != 0) * (1 << np.arange(W))).sum(axis=1).astype(np.uint16)
    if piece is not None:
        t = _piece_type(piece)
        s.piece[i] = t
        r, y, x = pose if pose is not None else (0, SPAWN_Y[t], SPAWN_X[t])
        s.rot[i], s.y[i], s.x[i] = r, y, x
    elif pose is not None:
        s.rot[i], s.y[i], s.x[i] = pose
    if hold is not None:
        s.hold[i] = NONE if hold in ("-", NONE) else _piece_type(hold)
    if queue is not None:
        for k, q in enumerate(queue):
            s.queue[i, k] = _piece_type(q)
    s.can_hold[i] = bool(can_hold)
    t = int(s.piece[i])
    if blocked(s.rows, i, t, int(s.rot[i]), int(s.y[i]), int(s.x[i])):
        raise ValueError(f"the current piece {NAMES[t]} overlaps the board at pose "
                         f"{(int(s.rot[i]), int(s.y[i]), int(s.x[i]))}")
    board_features(s.rows, i, s.feat)
    s.feat[i, N_FEATURES - 2:] = 0
    engine.needs_reset[i] = False
    engine.refresh()


def board_text(engine, i: int) -> str:
    """Env ``i``'s board as text (``#`` filled), without the active piece."""
    s = engine.state
    i = engine.env_index(i)
    return "\n".join("".join("#" if c else "." for c in row) for row in s.cells[i])


def piece_cells(t: int, r: int, y: int, x: int) -> list[tuple[int, int]]:
    """Board cells (row, col) of piece ``t`` at anchor ``(r, y, x)``."""
    return [(y + int(dy), x + int(dx)) for dy, dx in CELLS[t, r]]
