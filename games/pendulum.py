"""Pendulum-v1, identical to Gymnasium's ``gymnasium/envs/classic_control/pendulum.py``.

Description
    The inverted pendulum swing-up: a pendulum hangs from a fixed pivot and a torque on the
    pivot must swing it up and keep it upright (theta = 0 is upright).
Action Space
    ``Box(-max_torque, max_torque, (1,), float32)`` = [-2, 2]: the torque [N m], positive
    counter-clockwise. Any finite float32 is accepted and clipped to the bounds.
Observation Space
    ``Box((3,), float32)``: ``cos(theta)``, ``sin(theta)`` in [-1, 1] and the angular velocity
    in ``[-max_speed, max_speed]`` = [-8, 8].
Rewards
    ``-(angle_normalize(theta)**2 + 0.1 * theta_dot**2 + 0.001 * torque**2)``, the angle
    normalised to [-pi, pi): between about -16.27 and 0.
Starting State
    ``theta`` uniform on ``[-x_init, x_init]`` = [-pi, pi], ``theta_dot`` uniform on
    ``[-y_init, y_init]`` = [-1, 1].
Episode End
    Never terminated; truncated after 200 steps.
Arguments
    The fields of ``Params``; each may be a scalar or a per-env array of length ``num_envs``.
    ``g`` is Gymnasium's constructor argument; ``x_init``/``y_init`` are its reset options.
Version History
    v1 (vecsim 0.1): Gymnasium Pendulum-v1 bit for bit in float64.

Gymnasium mixes float32 and float64 here; under NumPy 2 promotion rules (a Python float
meeting an ``np.float32`` is converted to float32) the step computes:

* ``u = np.clip(u, -max_torque, max_torque)[0]``: an ``np.float32``, the bounds rounded to
  float32;
* ``0.001 * (u**2)``: ``powf(u, 2)`` times ``float32(0.001)``, in float32;
* ``3.0 / (m * l**2) * u``: ``float32(3.0 / (m * l**2)) * u``, in float32;
* every other ``x**2`` is the C library's ``pow(x, 2.0)`` in float64, which differs from
  ``x * x`` in the last bit for about 1 value in 1,000 (see ``vecsim.core.exactmath``).

The state is float64 throughout, as in Gymnasium. ``precision="float32"`` steps with
``games/classic_float32.py``; the pictures are ``games/classic_render.py``'s.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from gymnasium import spaces

from vecsim.core.contract import KernelHints, allocate_float_fields, param
from vecsim.core.exactmath import np_clip, pow32, pow64
from vecsim.core.fastmath import sincos
from vecsim.core.jit import exact
from vecsim.core.rng import uniform
from vecsim.games.classic_float32 import pendulum_step as step_env_fast
from vecsim.games.classic_render import pendulum_rgb as render_rgb, pendulum_text as render_text
from vecsim.games.train_presets import RL_ZOO

NAME = "Pendulum"
ENV_ID = "Pendulum-v1"
MAX_EPISODE_STEPS = 200
REWARD_THRESHOLD = None
TRAIN_PRESETS = RL_ZOO[ENV_ID]  # vecsim train's settings
KERNEL_HINTS = KernelHints(obs_order="F", step_uses_rng=False, write_obs_fills_row=True)
RENDER_FPS = 30


class Params(NamedTuple):
    max_speed: float = 8.0
    max_torque: float = 2.0
    dt: float = 0.05
    g: float = 10.0
    m: float = 1.0
    l: float = 1.0  # noqa: E741 (Gymnasium's name)
    x_init: float = math.pi  # reset: theta uniform on [-x_init, x_init]
    y_init: float = 1.0  # reset: theta_dot uniform on [-y_init, y_init]


class State(NamedTuple):
    theta: np.ndarray  # (N,) float64 angle [rad], 0 upright; not normalised
    theta_dot: np.ndarray  # (N,) float64 angular velocity [rad/s]
    last_u: np.ndarray  # (N,) float64 last clipped torque (0 after reset), for rendering


PHYSICAL_STATE = ("theta", "theta_dot")


def allocate_state(num_envs: int, float_dtype, params=None) -> State:
    return allocate_float_fields(State, num_envs, float_dtype)


def check_params(values: dict) -> None:
    for name in ("m", "l", "dt"):
        if np.any(values[name] <= 0):
            raise ValueError(f"{NAME} {name} must be > 0, but got {name}={values[name]}")
    for name in ("max_speed", "max_torque", "x_init", "y_init"):
        if np.any(values[name] < 0):
            raise ValueError(f"{NAME} {name} must be >= 0, but got {name}={values[name]}")


def observation_space(p: Params) -> spaces.Box:
    high = np.array([1.0, 1.0, p.max_speed], dtype=np.float32)
    return spaces.Box(-high, high, dtype=np.float32)


def action_space(p: Params) -> spaces.Box:
    return spaces.Box(-p.max_torque, p.max_torque, shape=(1,), dtype=np.float32)


@exact
def reset_env(s, p, i, rng):
    x_init = param(p.x_init, i)
    y_init = param(p.y_init, i)
    s.theta[i] = uniform(rng, i, -x_init, x_init)
    s.theta_dot[i] = uniform(rng, i, -y_init, y_init)
    s.last_u[i] = 0.0


@exact
def step_env(s, p, i, actions, events, rng):
    th, thdot = s.theta[i], s.theta_dot[i]
    g = param(p.g, i)
    m = param(p.m, i)
    l = param(p.l, i)  # noqa: E741
    dt = param(p.dt, i)
    max_torque = np.float32(param(p.max_torque, i))
    u = np_clip(actions[i, 0], -max_torque, max_torque)  # np.float32
    s.last_u[i] = u
    normalized = ((th + np.pi) % (2 * np.pi)) - np.pi
    costs = pow64(normalized, 2.0) + 0.1 * pow64(thdot, 2.0) + np.float32(0.001) * pow32(u, 2.0)
    newthdot = thdot + (3 * g / (2 * l) * math.sin(th) + np.float32(3.0 / (m * pow64(l, 2.0))) * u) * dt
    max_speed = param(p.max_speed, i)
    newthdot = np_clip(newthdot, -max_speed, max_speed)
    s.theta[i] = th + newthdot * dt
    s.theta_dot[i] = newthdot
    return -costs, False


@exact
def write_obs(s, p, i, obs):
    sin_th, cos_th = sincos(s.theta[i])  # libm in float64 (exact), polynomials in float32
    obs[i, 0] = cos_th
    obs[i, 1] = sin_th
    obs[i, 2] = s.theta_dot[i]
