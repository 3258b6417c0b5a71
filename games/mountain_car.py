"""MountainCar-v0, identical to Gymnasium's ``gymnasium/envs/classic_control/mountain_car.py``.

Description
    A car is placed at the bottom of a sinusoidal valley (Moore, 1990). Its engine is too weak
    to drive up the right hill directly: it must rock back and forth to build momentum.
Action Space
    ``Discrete(3)``: 0 accelerates left, 1 does not accelerate, 2 accelerates right.
Observation Space
    ``Box((2,), float32)``: position in ``[min_position, max_position]`` and velocity in
    ``[-max_speed, max_speed]``.
Transition
    ``velocity += (action - 1) * force + cos(3 * position) * (-gravity)``, clipped to
    ``[-max_speed, max_speed]``; ``position += velocity``, clipped to
    ``[min_position, max_position]``. Hitting the left wall with negative velocity sets the
    velocity to 0 (an inelastic collision).
Rewards
    -1 every step.
Starting State
    Position uniform on ``[reset_low, reset_high]`` = [-0.6, -0.4], velocity 0.
Episode End
    Terminated when ``position >= goal_position`` and ``velocity >= goal_velocity``;
    truncated after 200 steps.
Arguments
    The fields of ``Params``; each may be a scalar or a per-env array of length ``num_envs``.
    ``goal_velocity`` is Gymnasium's constructor argument; ``reset_low``/``reset_high`` are its
    reset options ``low``/``high``.
Version History
    v0 (vecsim 0.1): Gymnasium MountainCar-v0 bit for bit in float64.

Gymnasium keeps the state in float64 (a float64 array after reset, float64 scalars after a
step) and computes in float64 throughout, so the float64 physics here follows its operation
order and matches it exactly. The step reads ``cos(3 * position)`` from the pass at the end of
this module. ``precision="float32"`` steps with ``games/classic_float32.py``; the pictures are
``games/classic_render.py``'s.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from gymnasium import spaces

from vecsim.core.contract import KernelHints, allocate_float_fields, param
from vecsim.core.exactmath import LIBM_IS_GLIBC, cos_wide, np_clip
from vecsim.core.jit import exact
from vecsim.core.rng import uniform
from vecsim.games.classic_float32 import mountain_car_step as step_env_fast
from vecsim.games.classic_render import mountain_car_rgb as render_rgb, mountain_car_text as render_text
from vecsim.games.train_presets import RL_ZOO

NAME = "MountainCar"
ENV_ID = "MountainCar-v0"
MAX_EPISODE_STEPS = 200
REWARD_THRESHOLD = -110.0
TRAIN_PRESETS = RL_ZOO[ENV_ID]  # vecsim train's settings
KERNEL_HINTS = KernelHints(obs_order="F", step_uses_rng=False, write_obs_fills_row=True)
RENDER_FPS = 30


class Params(NamedTuple):
    min_position: float = -1.2
    max_position: float = 0.6
    max_speed: float = 0.07
    goal_position: float = 0.5
    goal_velocity: float = 0.0
    force: float = 0.001
    gravity: float = 0.0025
    reset_low: float = -0.6
    reset_high: float = -0.4


class State(NamedTuple):
    position: np.ndarray  # (N,) float64 car position along the x-axis [m]
    velocity: np.ndarray  # (N,) float64 car velocity [m/step]
    cos3: np.ndarray  # (N,) float64 scratch: cos(3 * position) from the pre-step passes


PHYSICAL_STATE = ("position", "velocity")


def allocate_state(num_envs: int, float_dtype, params=None) -> State:
    return allocate_float_fields(State, num_envs, float_dtype)


def check_mountain_params(name: str, values: dict) -> None:
    """Checks shared by both mountain cars."""
    if np.any(values["min_position"] >= values["max_position"]):
        raise ValueError(f"{name} min_position must be < max_position, but got "
                         f"min_position={values['min_position']} and max_position={values['max_position']}")
    if np.any(values["max_speed"] < 0):
        raise ValueError(f"{name} max_speed must be >= 0, but got max_speed={values['max_speed']}")
    if np.any(values["reset_low"] > values["reset_high"]):
        raise ValueError(f"{name} reset_low must be <= reset_high, but got "
                         f"reset_low={values['reset_low']} and reset_high={values['reset_high']}")


def check_params(values: dict) -> None:
    check_mountain_params(NAME, values)


def observation_space(p: Params) -> spaces.Box:
    low = np.array([p.min_position, -p.max_speed], dtype=np.float32)
    high = np.array([p.max_position, p.max_speed], dtype=np.float32)
    return spaces.Box(low, high, dtype=np.float32)


def action_space(p: Params) -> spaces.Discrete:
    return spaces.Discrete(3)


@exact
def reset_env(s, p, i, rng):
    s.position[i] = uniform(rng, i, param(p.reset_low, i), param(p.reset_high, i))
    s.velocity[i] = 0.0


@exact
def step_env(s, p, i, actions, events, rng):
    min_position = param(p.min_position, i)
    max_speed = param(p.max_speed, i)
    position, velocity = s.position[i], s.velocity[i]
    velocity += (actions[i] - 1) * param(p.force, i) + s.cos3[i] * (-param(p.gravity, i))
    velocity = np_clip(velocity, -max_speed, max_speed)
    position += velocity
    position = np_clip(position, min_position, param(p.max_position, i))
    if position == min_position and velocity < 0:
        velocity = 0.0
    terminated = position >= param(p.goal_position, i) and velocity >= param(p.goal_velocity, i)
    s.position[i], s.velocity[i] = position, velocity
    return -1.0, terminated


@exact
def write_obs(s, p, i, obs):
    obs[i, 0] = s.position[i]
    obs[i, 1] = s.velocity[i]


# -- the pass before the step loop, so that the loop vectorises (results as above) --------


@exact
def pre_step_draft_env(s, p, i, actions):
    """cos(3 * position) as glibc computes it, without calling it (the loop vectorises); NaN
    where ``cos_wide`` cannot promise glibc's value, for ``pre_step_fix_env``."""
    if LIBM_IS_GLIBC:  # a compile-time constant
        value, sure = cos_wide(3 * s.position[i])
        s.cos3[i] = value if sure else math.nan
    else:
        s.cos3[i] = math.nan


@exact
def pre_step_env(s, p, i, actions):
    """cos(3 * position) from libm, for a step taken one env at a time (the collectors)."""
    s.cos3[i] = math.cos(3 * s.position[i])


@exact
def pre_step_fix_env(s, p, i, actions):
    """libm's value for the envs the draft left NaN."""
    if s.cos3[i] != s.cos3[i]:
        pre_step_env(s, p, i, actions)
