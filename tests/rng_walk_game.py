"""A tiny stochastic game for engine tests: a random walk whose step draws from the env's RNG.

It exercises the kernel path for games with ``KernelHints.step_uses_rng`` (the default) (Tetris-like games that
draw pieces while stepping), which no classic-control game takes.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from gymnasium import spaces

from vecsim.core.contract import allocate_float_fields, param
from vecsim.core.jit import exact
from vecsim.core.rng import uniform

NAME = "RngWalk"
ENV_ID = "RngWalk-v0"
MAX_EPISODE_STEPS = 50
REWARD_THRESHOLD = None
EVENTS = ("crossings",)
PHYSICAL_STATE = ("x",)


class Params(NamedTuple):
    drift: float = 0.1
    noise: float = 1.0
    bound: float = 3.0


class State(NamedTuple):
    x: np.ndarray  # (N,) float64 position


def allocate_state(num_envs, float_dtype, params=None):
    return allocate_float_fields(State, num_envs, float_dtype)


def observation_space(p):
    return spaces.Box(-np.inf, np.inf, shape=(1,), dtype=np.float64)


def action_space(p):
    return spaces.Discrete(2)


@exact
def reset_env(s, p, i, rng):
    s.x[i] = uniform(rng, i, -1.0, 1.0)


@exact
def step_env(s, p, i, actions, events, rng):
    step = param(p.drift, i) if actions[i] == 1 else -param(p.drift, i)
    noise = param(p.noise, i)
    before = s.x[i]
    s.x[i] = before + step + uniform(rng, i, -noise, noise)
    events[i, 0] = 1 if (before < 0.0) != (s.x[i] < 0.0) else 0
    bound = param(p.bound, i)
    return -abs(s.x[i]), s.x[i] > bound or s.x[i] < -bound


@exact
def write_obs(s, p, i, obs):
    obs[i, 0] = s.x[i]


def render_rgb(values, p):
    img = np.full((8, 64, 3), 255, dtype=np.uint8)
    col = int(np.clip((values["x"] / (2 * p.bound) + 0.5) * 63, 0, 63))
    img[:, col] = (200, 0, 0)
    return img


def render_text(values, p):
    return f"x={values['x']:+.3f}"
