"""WalkToTarget-v0, the minimal game of ``games/README.md`` (the tests register and check it).

Description
    A walker steps along a line of ``size`` cells until it stands on the target cell.
Action Space
    ``Discrete(3)``: 0 steps left, 1 stays, 2 steps right; the ends of the line stop the walker.
Observation Space
    ``Box((2,), float32)``: the walker's cell and the target's cell, in ``[0, size - 1]``.
Rewards
    +1 on reaching the target, else minus the distance still to walk.
Starting State
    Walker and target on two different cells, uniform, drawn from the env's own random stream.
Episode End
    Terminated on reaching the target; truncated after 50 steps.
Arguments
    ``size``: number of cells, an integer >= 2, one value for the whole batch (default 10).
Version History
    v0: first version.
"""

from typing import NamedTuple

import numpy as np
from gymnasium import spaces

from vecsim.core.contract import allocate_float_fields, param
from vecsim.core.jit import exact
from vecsim.core.rng import randint

NAME = "WalkToTarget"
ENV_ID = "WalkToTarget-v0"
MAX_EPISODE_STEPS = 50
STRUCTURAL = ("size",)  # it sets the bounds of the observation space


class Params(NamedTuple):
    size: float = 10.0  # kernels read every constant as a float


class State(NamedTuple):
    pos: np.ndarray  # (N,) the walker's cell
    target: np.ndarray  # (N,) the target's cell


def check_params(values):
    size = values["size"]
    if np.any(size < 2) or np.any(size % 1 != 0):
        raise ValueError(f"{NAME} size must be an integer >= 2, but got size={size}")


def allocate_state(num_envs, float_dtype, params):
    return allocate_float_fields(State, num_envs, float_dtype)


def observation_space(p):
    return spaces.Box(0.0, p.size - 1, shape=(2,), dtype=np.float32)


def action_space(p):
    return spaces.Discrete(3)


@exact
def reset_env(s, p, i, rng):
    n = int(param(p.size, i))
    s.target[i] = randint(rng, i, n)
    start = randint(rng, i, n - 1)  # one of the n - 1 cells other than the target
    s.pos[i] = start + 1 if start >= s.target[i] else start


@exact
def step_env(s, p, i, actions, events, rng):
    s.pos[i] = min(max(s.pos[i] + actions[i] - 1, 0.0), param(p.size, i) - 1)
    reached = s.pos[i] == s.target[i]
    return 1.0 if reached else -abs(s.pos[i] - s.target[i]), reached


@exact
def write_obs(s, p, i, obs):
    obs[i, 0] = s.pos[i]
    obs[i, 1] = s.target[i]


def render_rgb(values, p):
    """The line as 16-pixel cells: the target green, the walker red."""
    img = np.full((16, 16 * int(p.size), 3), 255, dtype=np.uint8)
    for field, color in (("target", (0, 160, 0)), ("pos", (200, 0, 0))):
        x = 16 * int(values[field])
        img[4:12, x + 4:x + 12] = color
    return img


def render_text(values, p):
    cells = ["."] * int(p.size)
    cells[int(values["target"])] = "T"
    cells[int(values["pos"])] = "@"
    return "".join(cells)
