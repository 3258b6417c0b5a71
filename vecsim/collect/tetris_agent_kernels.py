"""The Dellacherie agent's batched kernels (``vecsim.collect.tetris`` calls them).

Nothing imports this file by name: ``vecsim.engine.codegen.load_game_module`` imports a copy of
it from the kernel cache folder, named with a fingerprint of Tetris's sources, so that Numba's
cache of these kernels is replaced whenever a function they call changes.
"""

import numba
import numpy as np
from numba import prange

from vecsim.core.contract import param
from vecsim.core.jit import exact, kernel_options
from vecsim.games.tetris import DROP, EV_LINES, EV_PIECES, N_DROP, State, step_env, write_mask
from vecsim.games.tetris.agent import (
    _NO_RATING, _make_params, load_columns, drop_row_cols, policy, rating2, rating2_cols, rating2_from_features,
)
from vecsim.games.tetris.pieces import DROP_Y, H, N_POSES, W
from vecsim.games.tetris.rules import drop_row, hold_target


# The prange bodies pass the env index on as int64: a prange index is uint64 inside the
# loop, and calling the per-env functions with it would compile them a second time (see
# docs/numba-workarounds.md).
@numba.njit(**kernel_options("float64", True))
def _actions_kernel(state, P, rng, out):
    for i in prange(out.shape[0]):
        s = State(*state)
        p = _make_params(P)
        out[i] = policy(s, p, np.int64(i), rng)


@exact
def _play_game(s, p, g, rng, actions, events, masks, max_pieces):
    """Play env ``g`` until it ends or has locked ``max_pieces`` pieces (0: no cap).

    Returns ``(lines, pieces, terminated, invalid)``."""
    pieces = 0
    lines = 0
    done = False
    while not done and (max_pieces <= 0 or pieces < max_pieces):
        actions[g] = policy(s, p, g, rng)
        _, done = step_env(s, p, g, actions, events, rng)
        if events[g, EV_PIECES] == 0:  # every legal placement locks a piece; an illegal one, nothing
            return lines, pieces, done, True
        pieces += events[g, EV_PIECES]
        lines += events[g, EV_LINES]
        if not done:
            write_mask(s, p, g, masks)
    return lines, pieces, done, False


@numba.njit(**kernel_options("float64", True))
def _games_kernel(state, P, rng, actions, events, masks, max_pieces, lines, pieces, ended, invalid):
    for g in prange(lines.shape[0]):
        s = State(*state)
        p = _make_params(P)
        n_lines, n_pieces, done, bad = _play_game(s, p, np.int64(g), rng, actions, events, masks, max_pieces)
        lines[g] = n_lines
        pieces[g] = n_pieces
        ended[g] = done
        invalid[g] = bad


@numba.njit(**kernel_options("float64", False))
def _rating_kernel(state, P, i, a, method):
    s = State(*state)
    p = _make_params(P)
    half = N_DROP if np.int64(param(p.action_mode, i)) == DROP else N_POSES
    hh = a // half
    k = a % half
    t = np.int64(s.piece[i]) if hh == 0 else hold_target(s, i)
    load_columns(s.scratch_cols, s.rows, i)
    if half == N_DROP:
        r = k // W
        x = k % W
        y = drop_row(s.rows, i, t, r, DROP_Y[t, r], x)
        if drop_row_cols(s.scratch_cols, i, t, r, x) != y:
            return _NO_RATING  # never: the tests check it
    else:
        r = k // (H * W)
        y = (k // W) % H
        x = k % W
    if method == 2:
        return rating2_from_features(s, i, t, r, y, x)
    if method == 1:
        return rating2(s, i, t, r, y, x)
    return rating2_cols(s.scratch_cols, s.rows, i, t, r, y, x)
