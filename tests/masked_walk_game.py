"""A tiny game with an action mask, for collector tests: a noisy walk that may not step outward.

Actions: 0 left, 1 stay, 2 right. Left is illegal at ``x <= -1`` and right at ``x >= 1``;
the episode terminates when the noise carries ``|x|`` past ``bound``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from gymnasium import spaces

from rng_walk_game import State, allocate_state, observation_space, render_text, write_obs  # noqa: F401
from vecsim.core.contract import discrete_ok, param
from vecsim.core.jit import exact
from vecsim.core.rng import uniform

NAME = "MaskedWalk"
ENV_ID = "MaskedWalk-v0"
MAX_EPISODE_STEPS = 50
REWARD_THRESHOLD = None
PHYSICAL_STATE = ("x",)


class Params(NamedTuple):
    stride: float = 0.4
    noise: float = 0.5
    bound: float = 1.6


def action_space(p):
    return spaces.Discrete(3)


@exact
def action_ok(p, actions, i):
    return discrete_ok(actions, i, 3)


@exact
def write_mask(s, p, i, masks):
    masks[i, 0] = s.x[i] > -1.0
    masks[i, 1] = True
    masks[i, 2] = s.x[i] < 1.0


@exact
def reset_env(s, p, i, rng):
    s.x[i] = uniform(rng, i, -1.0, 1.0)


@exact
def step_env(s, p, i, actions, events, rng):
    noise = param(p.noise, i)
    s.x[i] += (actions[i] - 1) * param(p.stride, i) + uniform(rng, i, -noise, noise)
    bound = param(p.bound, i)
    return -abs(s.x[i]), s.x[i] > bound or s.x[i] < -bound


def render_rgb(values, p):
    return np.zeros((4, 4, 3), dtype=np.uint8)

