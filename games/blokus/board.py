"""Blokus boards as structure-of-arrays, and the validated Python entry points to the rules.

``new_boards(num_envs, "classic" | "duo")`` allocates ``BoardState``; the functions below
check their arguments and call the kernels of ``rules.py`` for one env ``i``. Kernels trust
their inputs; these functions are where a bad index, seat or action becomes a ``ValueError``.
"""

from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from vecsim.games.blokus import rules
from vecsim.games.blokus.pieces import MAX_CELLS, N_ORIENT, N_ROW_PATTERNS, action_parts

#: variant -> (board size S, start cell of each seat in seat order, 0-based (row, col)).
#: Classic: the four corners clockwise from the top-left; Duo: the official 5-5 and 10-10 points.
VARIANTS = {
    "classic": (20, ((0, 0), (0, 19), (19, 19), (19, 0))),
    "duo": (14, ((4, 4), (9, 9))),
}


class BoardState(NamedTuple):
    rows: np.ndarray  # (N, P, S) int64: seat p's squares in board row r, bit c = column c
    cells: np.ndarray  # (N, S, S) int8: 0 empty, p + 1 a square of seat p
    pieces_left: np.ndarray  # (N, P) int64: bit k set while seat p still holds piece k
    last_piece: np.ndarray  # (N, P) int8: the piece seat p placed last, -1 before its first
    out: np.ndarray  # (N, P) bool: seat p has passed for good (no legal move, or no piece)
    to_move: np.ndarray  # (N,) int64: the seat to play
    game_over: np.ndarray  # (N,) bool: no seat can move
    start: np.ndarray  # (N, P, 2) int64: each seat's start cell (row, col)
    forbid: np.ndarray  # (N, S) int64 scratch: cells the seat being generated may not cover
    corner: np.ndarray  # (N, S) int64 scratch: its free diagonal (or start) cells
    forbid_spread: np.ndarray  # (N, N_ROW_PATTERNS, S + 4) int64 scratch: forbid spread by piece-row patterns
    corner_spread: np.ndarray  # (N, N_ROW_PATTERNS, S + 4) int64 scratch: corner the same way


def new_boards(num_envs: int, variant: str = "classic") -> BoardState:
    """``num_envs`` boards of ``variant`` (``"classic"``: 4 seats on 20x20, ``"duo"``: 2 on
    14x14), each at the start of a game with seat 0 to move."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, but got variant={variant!r}")
    num_envs = operator.index(num_envs)
    if num_envs < 1:
        raise ValueError(f"num_envs must be >= 1, but got num_envs={num_envs}")
    size, starts = VARIANTS[variant]
    n, p = num_envs, len(starts)
    b = BoardState(
        rows=np.zeros((n, p, size), np.int64),
        cells=np.zeros((n, size, size), np.int8),
        pieces_left=np.zeros((n, p), np.int64),
        last_piece=np.zeros((n, p), np.int8),
        out=np.zeros((n, p), np.bool_),
        to_move=np.zeros(n, np.int64),
        game_over=np.zeros(n, np.bool_),
        start=np.broadcast_to(np.array(starts, np.int64), (n, p, 2)).copy(),
        forbid=np.zeros((n, size), np.int64),
        corner=np.zeros((n, size), np.int64),
        forbid_spread=np.zeros((n, N_ROW_PATTERNS, size + MAX_CELLS - 1), np.int64),
        corner_spread=np.zeros((n, N_ROW_PATTERNS, size + MAX_CELLS - 1), np.int64),
    )
    for i in range(n):
        rules.clear_board(b, i)
    return b


def board_size(b: BoardState) -> int:
    return b.rows.shape[2]


def n_seats(b: BoardState) -> int:
    return b.rows.shape[1]


def n_actions(b: BoardState) -> int:
    """``91 * S * S``: the length of a legal-move mask."""
    return N_ORIENT * board_size(b) ** 2


def _env(b, i) -> int:
    i = operator.index(i)
    if not 0 <= i < b.rows.shape[0]:
        raise ValueError(f"env index must be in [0, {b.rows.shape[0]}), but got i={i}")
    return i


def _seat(b, i, seat) -> int:
    if seat is None:
        return int(b.to_move[i])
    seat = operator.index(seat)
    if not 0 <= seat < n_seats(b):
        raise ValueError(f"seat must be in [0, {n_seats(b)}), but got seat={seat} (env {i})")
    return seat


def reset(b: BoardState, i: int) -> None:
    """Start a new game on env ``i``."""
    rules.clear_board(b, _env(b, i))


def legal_mask(b: BoardState, i: int, seat: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """Seat ``seat``'s (default: the seat to move) legal placements on env ``i``.

    Returns ``out`` (or a new array): bool ``(91 * S * S,)``, True at each legal action
    ``orientation * S * S + row * S + col``."""
    i = _env(b, i)
    seat = _seat(b, i, seat)
    if out is None:
        out = np.empty(n_actions(b), np.bool_)
    elif not isinstance(out, np.ndarray) or out.dtype != np.bool_ or out.shape != (n_actions(b),):
        raise ValueError(f"out must be a bool array of shape ({n_actions(b)},), but got "
                         f"{getattr(out, 'dtype', type(out))} {getattr(out, 'shape', '')}")
    elif not out.flags.writeable:
        raise ValueError("out must be writeable")
    rules.write_legal_mask(b, i, seat, out)
    return out


def legal_actions(b: BoardState, i: int, seat: int | None = None) -> np.ndarray:
    """The legal actions of ``seat`` (default: the seat to move) on env ``i``, ascending."""
    return np.flatnonzero(legal_mask(b, i, seat))


def count_legal_moves(b: BoardState, i: int, seat: int | None = None) -> int:
    i = _env(b, i)
    return int(rules.count_legal_moves(b, i, _seat(b, i, seat)))


def has_legal_move(b: BoardState, i: int, seat: int | None = None) -> bool:
    i = _env(b, i)
    return bool(rules.any_legal_move(b, i, _seat(b, i, seat)))


def play(b: BoardState, i: int, action: int) -> int:
    """The seat to move on env ``i`` plays ``action``; the turn passes to the next seat that
    can move. Returns how many seats passed for good after it."""
    i = _env(b, i)
    if b.game_over[i]:
        raise ValueError(f"env {i}: the game is over; reset it first")
    action = operator.index(action)
    size = board_size(b)
    if not 0 <= action < n_actions(b):
        raise ValueError(f"action must be in [0, {n_actions(b)}), but got action={action} (env {i})")
    o, r, c = action_parts(action, size)
    if not rules.is_legal(b, i, int(b.to_move[i]), o, r, c):
        raise ValueError(f"env {i}: action {action} (orientation {o}, row {r}, col {c}) is not "
                         f"legal for seat {int(b.to_move[i])}")
    return int(rules.play(b, i, action))


def scores(b: BoardState, i: int) -> np.ndarray:
    """(P,) int64: each seat's score on env ``i`` as the game stands (final once it is over)."""
    i = _env(b, i)
    return np.array([rules.score(b, i, p) for p in range(n_seats(b))], np.int64)


def set_position(b: BoardState, i: int, cells, pieces_left=None, to_move: int = 0) -> None:
    """Give env ``i`` the position ``cells`` (``(S, S)``: 0 empty, ``p + 1`` seat ``p``), for
    scenarios and tests; ``pieces_left`` (``(P,)`` bitmasks) defaults to full sets for seats
    with no square and to all but the monomino otherwise. No seat is out; the game is not over."""
    i = _env(b, i)
    size, seats = board_size(b), n_seats(b)
    cells = np.asarray(cells)
    if cells.shape != (size, size) or not np.issubdtype(cells.dtype, np.integer):
        raise ValueError(f"cells must be an integer ({size}, {size}) array, but got {cells.dtype} {cells.shape}")
    if cells.min() < 0 or cells.max() > seats:
        raise ValueError(f"cells must hold 0 (empty) to {seats} (seat + 1), but got values "
                         f"{cells.min()}..{cells.max()} (env {i})")
    if pieces_left is None:
        pieces_left = [rules.ALL_PIECES if not (cells == p + 1).any() else rules.ALL_PIECES & ~1
                       for p in range(seats)]
    pieces_left = np.asarray(pieces_left, np.int64)
    if pieces_left.shape != (seats,) or pieces_left.min() < 0 or pieces_left.max() > rules.ALL_PIECES:
        raise ValueError(f"pieces_left must be {seats} bitmasks in [0, {rules.ALL_PIECES}], "
                         f"but got {pieces_left!r} (env {i})")
    to_move = _seat(b, i, to_move)
    rules.clear_board(b, i)
    b.cells[i] = cells
    for p in range(seats):
        owned = cells == p + 1
        b.rows[i, p] = (owned.astype(np.int64) << np.arange(size)).sum(axis=1)
    b.pieces_left[i] = pieces_left
    b.to_move[i] = to_move
