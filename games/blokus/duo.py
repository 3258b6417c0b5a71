"""BlokusDuo-v0: Blokus Duo, two seats on a 14x14 board, as a vecsim game.

Seat 0 starts on (4, 4), seat 1 on (9, 9) (the official 5-5 and 10-10 points); otherwise the
spec is ``Blokus-v0``'s (``games/blokus/classic.py``): ``Discrete(91 * 14 * 14)`` actions,
the observation turned half a turn for seat 1, ``mode`` ``"selfplay"`` or ``"single"``. A game
has at most 42 placements.

Version History
    v0: first version.
"""

from vecsim.games.blokus import env as _env
from vecsim.games.blokus.env import (  # noqa: F401
    EVENTS, PHYSICAL_STATE, STRUCTURAL, Params, State, check_params, enforce_mask, info_fields, prepare_params,
    reset_env, step_env, write_mask, write_obs,
)
from vecsim.games.blokus.render import render_rgb, render_text  # noqa: F401

NAME = "BlokusDuo"
ENV_ID = "BlokusDuo-v0"
SEATS = 2
SIZE = 14
MAX_EPISODE_STEPS = None


def allocate_state(num_envs, float_dtype, params):
    return _env.allocate_state(num_envs, float_dtype, params, SEATS, SIZE)


def observation_space(p):
    return _env.observation_space(SEATS, SIZE)


def action_space(p):
    return _env.action_space(SIZE)
