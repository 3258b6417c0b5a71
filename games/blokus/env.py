"""The vecsim game contract shared by ``Blokus-v0`` (``classic.py``) and ``BlokusDuo-v0``
(``duo.py``): state, params, seats and opponents, observation and mask, over the rules of
``rules.py``. The two id modules differ only in board size and seat count, which every
kernel here reads from the state's array shapes. The full spec is ``classic.py``'s docstring.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from gymnasium import spaces

from vecsim.core import buffers as placed
from vecsim.core.contract import KernelHints, named_choices, param
from vecsim.core.jit import exact
from vecsim.core.bits import ctz
from vecsim.core.rng import randint
from vecsim.games.blokus import rules
from vecsim.games.blokus.board import VARIANTS
from vecsim.games.blokus.pieces import MAX_CELLS, N_ORIENT, N_PIECES, N_ROW_PATTERNS, ORIENT_SIZE

#: What an id module (``classic.py``, ``duo.py``) takes from here with ``import *``.
__all__ = [
    "CALLABLE_OPPONENT", "CHOICES", "EVENTS", "KERNEL_HINTS", "PHYSICAL_STATE", "STRUCTURAL", "Params", "State",
    "action_legal", "check_params", "enforce_mask", "info_fields", "kernel_functions",
    "prepare_params", "reset_env", "step_env", "step_selfplay_env", "write_mask", "write_mask_packed",
    "all_legal_packed", "write_obs", "render_rgb", "render_text",
]
SELFPLAY, SINGLE = 0, 1
RANDOM, GREEDY, CALLABLE = 0, 1, 2
CHOICES = {"mode": ("selfplay", "single"), "opponent": ("random", "greedy", "callable")}
#: ``opponent=f`` in single mode: f plays the other seats out of the kernel (vecsim.engine.opponents).
CALLABLE_OPPONENT = ("opponent", "callable")
EVENTS = ("placements", "passes")
EV_PLACEMENTS, EV_PASSES = range(2)
PHYSICAL_STATE = ()  # no reference state vector
KERNEL_HINTS = KernelHints(write_obs_fills_row=True, call_by_symbol=True)
STRUCTURAL = ("mode",)  # single mode allocates the opponents' mask scratch
INITIAL_SCORE = -89  # minus the 89 squares of a full set

#: (4, 2) and (2, 2) start cells (row, col) of each seat, as ``board.VARIANTS``.
CLASSIC_START = np.array(VARIANTS["classic"][1], np.int64)
DUO_START = np.array(VARIANTS["duo"][1], np.int64)


class Params(NamedTuple):
    mode: float = 0.0  # 0 selfplay, 1 single (the learner is seat 0)
    opponent: float = 0.0  # single mode: 0 random legal, 1 greedy (largest piece first), 2 a callable's


class State(NamedTuple):
    # The rules' BoardState fields (rules.py reads them by these names).
    rows: np.ndarray  # (N, P, S) int64: seat p's squares in board row r, bit c = column c
    cells: np.ndarray  # (N, S, S) int8: 0 empty, p + 1 a square of seat p
    pieces_left: np.ndarray  # (N, P) int64: bit k set while seat p holds piece k
    last_piece: np.ndarray  # (N, P) int8: seat p's last piece, -1 before its first
    out: np.ndarray  # (N, P) bool: seat p has passed for good
    to_move: np.ndarray  # (N,) int64: the seat to play
    game_over: np.ndarray  # (N,) bool
    start: np.ndarray  # (N, P, 2) int64: each seat's start cell
    forbid: np.ndarray  # (N, S) int64 scratch of the move generator
    corner: np.ndarray  # (N, S) int64 scratch of the move generator
    forbid_spread: np.ndarray  # (N, N_ROW_PATTERNS, S + 4) int64 scratch of the move generator
    corner_spread: np.ndarray  # (N, N_ROW_PATTERNS, S + 4) int64 scratch of the move generator
    # The env's own fields.
    acting_seat: np.ndarray  # (N,) int64: whose turn it is (always 0 in single mode)
    seat_rewards: np.ndarray  # (N, P): each seat's score change over the last step
    final_scores: np.ndarray  # (N, P) int64: final scores from the last step until reset, else 0
    winner: np.ndarray  # (N,) int64: the seat with the best final score, -1 on a tie or before the end
    legal_corners: np.ndarray  # (N, S) int64: the acting seat's free corner cells, bit c = column c
    opp_mask: np.ndarray  # (N, A) bool in single mode ((N, 0) otherwise): an opponent's legal moves


def prepare_params(given: dict) -> dict:
    """Turn ``mode="single"`` and ``opponent="greedy"`` into their numbers."""
    return named_choices("Blokus", CHOICES, given)


def check_params(values: dict) -> None:
    for name, names in CHOICES.items():
        v = np.asarray(values[name])
        bad = (v != np.round(v)) | (v < 0) | (v > len(names) - 1)
        if np.any(bad):
            raise ValueError(f"Blokus {name} must be one of {names} (or 0..{len(names) - 1}), "
                             f"but got {name}={v.flat[int(np.flatnonzero(bad)[0])]}")
    if np.any(np.asarray(values["opponent"]) == CALLABLE) and np.any(np.asarray(values["mode"]) != SINGLE):
        raise ValueError("Blokus opponent=f (a callable) plays the other seats of mode='single', "
                         "but got mode='selfplay', where every seat is the caller's")


def _allocate_state(num_envs: int, float_dtype, params, seats: int, size: int) -> State:
    n, single = num_envs, int(np.max(params.mode)) == SINGLE
    starts = CLASSIC_START if seats == 4 else DUO_START
    return State(
        rows=placed.zeros((n, seats, size), np.int64), cells=placed.zeros((n, size, size), np.int8),
        pieces_left=placed.zeros((n, seats), np.int64), last_piece=placed.full((n, seats), -1, np.int8),
        out=placed.zeros((n, seats), np.bool_), to_move=placed.zeros(n, np.int64),
        game_over=placed.zeros(n, np.bool_), start=np.broadcast_to(starts, (n, seats, 2)).copy(),
        forbid=placed.zeros((n, size), np.int64), corner=placed.zeros((n, size), np.int64),
        forbid_spread=placed.zeros((n, N_ROW_PATTERNS, size + MAX_CELLS - 1), np.int64),
        corner_spread=placed.zeros((n, N_ROW_PATTERNS, size + MAX_CELLS - 1), np.int64),
        acting_seat=placed.zeros(n, np.int64), seat_rewards=placed.zeros((n, seats), float_dtype),
        final_scores=placed.zeros((n, seats), np.int64), winner=placed.full(n, -1, np.int64),
        legal_corners=placed.zeros((n, size), np.int64),
        opp_mask=placed.zeros((n, N_ORIENT * size * size if single else 0), np.bool_),
    )


def _observation_space(seats: int, size: int) -> spaces.Dict:
    """The acting seat's view, parts in Gymnasium's (sorted) ``Dict`` order."""
    return spaces.Dict({
        "board": spaces.Box(0, 1, (seats, size, size), np.uint8),
        "corners": spaces.Box(0, 1, (size, size), np.uint8),
        "pieces": spaces.Box(0, 1, (seats, N_PIECES), np.uint8),
    })


def sized(seats: int, size: int):
    """``allocate_state``, ``observation_space`` and ``action_space`` of the game with
    ``seats`` seats on a ``size`` x ``size`` board."""

    def allocate_state(num_envs, float_dtype, params):
        return _allocate_state(num_envs, float_dtype, params, seats, size)

    def observation_space(p):
        return _observation_space(seats, size)

    def action_space(p):
        return spaces.Discrete(N_ORIENT * size * size)

    return allocate_state, observation_space, action_space


def info_fields(p) -> dict:
    return {"final_scores": "final_scores", "winner": "winner"}


@exact
def enforce_mask(p, i):
    """An action outside the acting seat's legal moves is never played."""
    return True


@exact
def action_legal(s, p, i, a):
    """Whether action ``a`` (in range) is one of the legal moves ``write_mask`` sets: asked of
    the board, so the kernels never read a mask back."""
    if s.game_over[i]:
        return False
    size = s.rows.shape[2]
    return rules.is_legal(s, i, s.to_move[i], a // (size * size), (a // size) % size, a % size)


@exact
def _finish_turn(s, p, i):
    """Set the acting seat, its corner cells and, once the game is over, the final scores."""
    seats = s.rows.shape[1]
    single = np.int64(param(p.mode, i)) == SINGLE
    external = np.int64(param(p.opponent, i)) == CALLABLE  # the other seats step one move at a time
    s.acting_seat[i] = 0 if single and (not external or s.game_over[i]) else s.to_move[i]
    if s.game_over[i]:
        for r in range(s.rows.shape[2]):
            s.legal_corners[i, r] = 0
        best, winner = np.int64(-1000), np.int64(-1)
        for q in range(seats):
            sc = np.int64(rules.score(s, i, q))
            s.final_scores[i, q] = sc
            if sc > best:
                best, winner = sc, np.int64(q)
            elif sc == best:
                winner = np.int64(-1)
        s.winner[i] = winner
    else:
        rules.write_corner_rows(s, i, s.acting_seat[i], s.legal_corners)


@exact
def reset_env(s, p, i, rng):
    seats = s.rows.shape[1]
    for q in range(seats):
        for k in range(2):
            s.start[i, q, k] = CLASSIC_START[q, k] if seats == 4 else DUO_START[q, k]
        s.seat_rewards[i, q] = 0.0
        s.final_scores[i, q] = 0
    s.winner[i] = -1
    rules.clear_board(s, i)
    _finish_turn(s, p, i)


@exact
def _opponent_action(s, p, i, q, rng):
    """Seat ``q``'s move by the built-in opponent: uniform over its legal moves, or greedy (a
    largest piece; among those the lowest action index, i.e. the first piece in ``PIECE_NAMES``
    order, then orientation, row, column)."""
    mask = s.opp_mask[i]
    n = rules.write_legal_mask(s, i, q, mask)
    cells = s.rows.shape[2] * s.rows.shape[2]
    if np.int64(param(p.opponent, i)) == GREEDY:
        best, best_size = np.int64(0), np.int64(0)
        for a in range(mask.shape[0]):
            if mask[a] and ORIENT_SIZE[a // cells] > best_size:
                best, best_size = np.int64(a), ORIENT_SIZE[a // cells]
        return best
    k = randint(rng, i, n)
    for a in range(mask.shape[0]):
        if mask[a]:
            if k == 0:
                return np.int64(a)
            k -= 1
    return np.int64(0)


@exact(inline="always")
def _rewards_before(s, i):
    """Start a step: each seat's reward is its score change, so minus its score before."""
    for q in range(s.rows.shape[1]):
        s.seat_rewards[i, q] = -rules.score(s, i, q)


@exact(inline="always")
def _end_step(s, p, i, events, seat, placements, passes):
    """End a step in which seat ``seat`` acted: the rewards, events and turn; returns the
    acting seat's reward and whether the game is over."""
    for q in range(s.rows.shape[1]):
        s.seat_rewards[i, q] += rules.score(s, i, q)
    events[i, EV_PLACEMENTS] = placements
    events[i, EV_PASSES] = passes
    _finish_turn(s, p, i)
    return s.seat_rewards[i, seat], s.game_over[i]


@exact
def step_env(s, p, i, actions, events, rng):
    seat = s.to_move[i]
    _rewards_before(s, i)
    passes = rules.play(s, i, np.int64(actions[i]))
    placements = 1
    if np.int64(param(p.mode, i)) == SINGLE and np.int64(param(p.opponent, i)) != CALLABLE:
        while not s.game_over[i] and s.to_move[i] != 0:
            passes += rules.play(s, i, _opponent_action(s, p, i, s.to_move[i], rng))
            placements += 1
    return _end_step(s, p, i, events, seat, placements, passes)


@exact
def step_selfplay_env(s, p, i, actions, events, rng):
    """``step_env`` of a selfplay batch (``kernel_functions``): the built-in opponents are not
    compiled in."""
    seat = s.to_move[i]
    _rewards_before(s, i)
    return _end_step(s, p, i, events, seat, 1, rules.play(s, i, np.int64(actions[i])))


def kernel_functions(p) -> dict:
    """A selfplay batch (``mode`` is one for the whole batch) steps without the opponents' code."""
    return {"step_env": "step_selfplay_env"} if int(p.mode) == SELFPLAY else {}


@exact
def write_mask(s, p, i, masks):
    if s.game_over[i]:
        for a in range(masks.shape[1]):
            masks[i, a] = False
    else:
        rules.write_legal_mask(s, i, s.to_move[i], masks[i])


@exact
def write_mask_packed(s, p, i, packed):
    if s.game_over[i]:
        for j in range(packed.shape[1]):
            packed[i, j] = 0
    else:
        rules.write_legal_bits(s, i, s.to_move[i], packed[i])


@exact
def all_legal_packed(s, p, i, packed):
    """Every action's bit of env ``i``'s packed row set, the last byte's unused bits clear."""
    n_actions = N_ORIENT * s.rows.shape[2] * s.rows.shape[2]
    for j in range(packed.shape[1]):
        packed[i, j] = 0xFF
    if n_actions % 8:
        packed[i, packed.shape[1] - 1] = (1 << (n_actions % 8)) - 1


@exact(inline="always")
def _turned(r, c, k, size):
    """Cell ``(r, c)`` after ``k`` counter-clockwise quarter turns of the board, as one index."""
    if k == 0:
        return r * size + c
    if k == 1:
        return (size - 1 - c) * size + r
    if k == 2:
        return (size - 1 - r) * size + size - 1 - c
    return c * size + size - 1 - r


@exact(inline="always")
def _write_row_bits(obs, i, start, bits, r, turns, size):
    """Set ``obs[i, start + cell]`` for each column ``c`` set in ``bits``, cell ``(r, c)`` turned."""
    while bits != 0:
        c = ctz(bits)
        bits &= bits - 1
        obs[i, start + _turned(r, c, turns, size)] = 1


@exact
def write_obs(s, p, i, obs):
    seats, size = s.rows.shape[1], s.rows.shape[2]
    cells = size * size
    seat = s.acting_seat[i]
    turns = seat * (4 // seats)  # quarter turns that bring the seat's start corner to seat 0's
    for k in range(seats * cells + cells):
        obs[i, k] = 0
    # The set bits of the row bitboards only: a board is mostly empty early and the loop skips
    # the empty cells a per-cell scan would read.
    for r in range(size):
        for j in range(seats):
            _write_row_bits(obs, i, j * cells, s.rows[i, (seat + j) % seats, r], r, turns, size)
        _write_row_bits(obs, i, seats * cells, s.legal_corners[i, r], r, turns, size)
    o = seats * cells + cells
    for j in range(seats):
        left = s.pieces_left[i, (seat + j) % seats]
        for k in range(N_PIECES):
            obs[i, o + j * N_PIECES + k] = (left >> k) & 1


from vecsim.games.blokus.render import render_rgb, render_text  # noqa: E402,F401
