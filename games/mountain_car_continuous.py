"""MountainCarContinuous-v0, identical to Gymnasium's
``gymnasium/envs/classic_control/continuous_mountain_car.py``.

Description
    MountainCar with a continuous engine force: a car at the bottom of a sinusoidal valley
    must rock back and forth to reach the flag on the right hill.
Action Space
    ``Box(min_action, max_action, (1,), float32)`` = [-1, 1]: the engine force, clipped to the
    bounds and multiplied by ``power``. Any finite float32 is accepted; out-of-bounds actions
    are clipped for the dynamics but penalised unclipped, as in Gymnasium.
Observation Space
    ``Box((2,), float32)``: position in ``[min_position, max_position]`` and velocity in
    ``[-max_speed, max_speed]``.
Transition
    ``velocity += force * power - gravity * cos(3 * position)``, clipped to
    ``[-max_speed, max_speed]``; ``position += velocity``, clipped to
    ``[min_position, max_position]``; hitting the left wall with negative velocity sets the
    velocity to 0.
Rewards
    ``-0.1 * action**2`` every step (the unclipped action), plus 100 on reaching the goal.
Starting State
    Position uniform on ``[reset_low, reset_high]`` = [-0.6, -0.4], velocity 0.
Episode End
    Terminated when ``position >= goal_position`` (0.45) and ``velocity >= goal_velocity``;
    truncated after 999 steps.
Arguments
    The fields of ``Params``; each may be a scalar or a per-env array of length ``num_envs``.
    ``goal_velocity`` is Gymnasium's constructor argument; ``reset_low``/``reset_high`` are its
    reset options ``low``/``high``; ``gravity`` is the literal 0.0025 of Gymnasium's step.
Version History
    v0 (vecsim 0.1): Gymnasium MountainCarContinuous-v0 bit for bit in float64.

Gymnasium's arithmetic here mixes three types, and this port reproduces each (NumPy 2
promotion rules, where a Python float meeting an ``np.float32`` is converted to float32):

* the state is a float64 array after ``reset`` but a float32 array after every ``step``
  (``self.state = np.array([position, velocity], dtype=np.float32)``), so the first step of
  an episode computes in float64 and later steps in float32: ``3 * position`` rounds to
  float32 before the cosine, and ``velocity += ...`` and ``position += velocity`` round each
  sum to float32. The same values give different steps in the two arrays, so the engine,
  which stores every state in float64, keeps the array's dtype as state of its own:
  ``float64_position`` holds the position while Gymnasium's array would be float64 (reset
  writes the position it draws) and ``inf`` once a step has made it float32. A step computes
  in float64 when ``position == float64_position`` or when the position or the velocity is
  not a float32 number, and in float32 otherwise. ``env.unwrapped.state = values`` keeps the
  dtype of ``values`` (``write_physical_state``): a float64 array steps in float64 even where
  its numbers are float32 ones, as in Gymnasium. A state written into the engine's
  ``position`` and ``velocity`` arrays is typed by its values; to step float32 numbers as
  Gymnasium's float64 array, write the position into ``float64_position`` as well.
  (Gymnasium's state is an array of either dtype; a Python list written into it would follow
  yet other promotions, and is taken here as a float64 array.)
* ``force = min(max(action[0], min_action), max_action)`` is the ``np.float32`` action when
  in bounds, so ``force * power - 0.0025 * cos(3 * position)`` is float32, and the Python
  float bound otherwise, so it is float64.
* each comparison with a bound (``velocity > max_speed``, ``position >= goal_position``...)
  happens in float32 when the value is an ``np.float32`` (the bound rounded to float32), and
  a clipped value becomes the Python float bound itself.

``precision="float32"`` steps with ``games/classic_float32.py``; the pictures, the observation
and the parameter checks are MountainCar-v0's.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from gymnasium import spaces

from vecsim.core.contract import KernelHints, allocate_float_fields, param
from vecsim.core.jit import exact
from vecsim.core.rng import uniform
from vecsim.games.classic_float32 import mountain_car_continuous_step as step_env_fast
from vecsim.games.classic_render import mountain_car_rgb as render_rgb, mountain_car_text as render_text
from vecsim.games.mountain_car import check_mountain_params, observation_space, write_obs

NAME = "MountainCarContinuous"
ENV_ID = "MountainCarContinuous-v0"
MAX_EPISODE_STEPS = 999
REWARD_THRESHOLD = 90.0
KERNEL_HINTS = KernelHints(obs_order="F", step_uses_rng=False, write_obs_fills_row=True)
RENDER_FPS = 30


class Params(NamedTuple):
    min_action: float = -1.0
    max_action: float = 1.0
    min_position: float = -1.2
    max_position: float = 0.6
    max_speed: float = 0.07
    goal_position: float = 0.45  # 0.5 in MountainCar-v0
    goal_velocity: float = 0.0
    power: float = 0.0015
    gravity: float = 0.0025
    reset_low: float = -0.6
    reset_high: float = -0.4


class State(NamedTuple):
    """The same car as MountainCar-v0's, and the dtype of Gymnasium's state array."""

    position: np.ndarray  # (N,) float64 car position along the x-axis [m]
    velocity: np.ndarray  # (N,) float64 car velocity [m/step]
    # (N,) float64 the position while Gymnasium's state array is float64 (after reset), inf
    # while it is float32 (after a step); see the module docstring
    float64_position: np.ndarray


PHYSICAL_STATE = ("position", "velocity")


def allocate_state(num_envs: int, float_dtype, params=None) -> State:
    return allocate_float_fields(State, num_envs, float_dtype)


def write_physical_state(state, i, values) -> None:
    """``env.unwrapped.state = values``: position and velocity, and whether Gymnasium's state
    array would be float64 (its dtype, not its numbers, types the next step)."""
    state.position[i], state.velocity[i] = float(values[0]), float(values[1])
    state.float64_position[i] = state.position[i] if values.dtype != np.float32 else math.inf


def check_params(values: dict) -> None:
    check_mountain_params(NAME, values)
    if np.any(values["min_action"] > values["max_action"]):
        raise ValueError(f"{NAME} min_action must be <= max_action, but got "
                         f"min_action={values['min_action']} and max_action={values['max_action']}")


def action_space(p: Params) -> spaces.Box:
    return spaces.Box(p.min_action, p.max_action, shape=(1,), dtype=np.float32)


@exact
def reset_env(s, p, i, rng):
    s.position[i] = uniform(rng, i, param(p.reset_low, i), param(p.reset_high, i))
    s.velocity[i] = 0.0
    s.float64_position[i] = s.position[i]  # Gymnasium's reset stores a float64 array


@exact
def _bound(value, is_f32):
    """A Python float bound as NumPy compares it with a value of type float32 or float64."""
    return np.float64(np.float32(value)) if is_f32 else value


@exact
def step_env(s, p, i, actions, events, rng):
    position, velocity = s.position[i], s.velocity[i]
    # Gymnasium's state array: float64 after reset, float32 after a step (module docstring)
    f32 = (position != s.float64_position[i]
           and np.float32(position) == position and np.float32(velocity) == velocity)
    action = actions[i, 0]
    min_action = param(p.min_action, i)
    max_action = param(p.max_action, i)
    gravity_term = param(p.gravity, i) * math.cos(
        np.float64(np.float32(3.0) * np.float32(position)) if f32 else 3.0 * position
    )
    if _bound(min_action, True) > action:
        term = min_action * param(p.power, i) - gravity_term
    elif _bound(max_action, True) < action:
        term = max_action * param(p.power, i) - gravity_term
    else:  # the np.float32 action: float32 arithmetic
        term = np.float64(action * np.float32(param(p.power, i)) - np.float32(gravity_term))
    if f32:
        velocity = np.float64(np.float32(velocity) + np.float32(term))
    else:
        velocity = velocity + term
    velocity_f32 = f32
    max_speed = param(p.max_speed, i)
    if velocity > _bound(max_speed, velocity_f32):
        velocity = max_speed
        velocity_f32 = False
    if velocity < _bound(-max_speed, velocity_f32):
        velocity = -max_speed
        velocity_f32 = False
    if f32:
        position = np.float64(np.float32(position) + np.float32(velocity))
    else:
        position = position + velocity
    position_f32 = f32
    max_position = param(p.max_position, i)
    min_position = param(p.min_position, i)
    if position > _bound(max_position, position_f32):
        position = max_position
        position_f32 = False
    if position < _bound(min_position, position_f32):
        position = min_position
        position_f32 = False
    if position == _bound(min_position, position_f32) and velocity < 0:
        velocity = 0.0
        velocity_f32 = False
    terminated = (position >= _bound(param(p.goal_position, i), position_f32)
                  and velocity >= _bound(param(p.goal_velocity, i), velocity_f32))
    a = np.float64(action)
    reward = (100.0 if terminated else 0.0) - a * a * 0.1  # math.pow(a, 2): exact for a float32
    s.position[i] = np.float32(position)
    s.velocity[i] = np.float32(velocity)
    s.float64_position[i] = math.inf  # Gymnasium's step stores a float32 array
    return reward, terminated
