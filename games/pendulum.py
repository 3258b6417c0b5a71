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

The state is float64 throughout, as in Gymnasium.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from gymnasium import spaces

from vecsim.core import draw
from vecsim.core.contract import KernelHints, allocate_float_fields, param
from vecsim.core.exactmath import np_clip, pow32, pow64
from vecsim.core.fastmath import sincos, sincos_f32
from vecsim.core.jit import exact, fast
from vecsim.core.rng import uniform

NAME = "Pendulum"
ENV_ID = "Pendulum-v1"
MAX_EPISODE_STEPS = 200
REWARD_THRESHOLD = None
#: ``vecsim train``'s settings: RL Baselines3 Zoo's tuned hyperparameters (its sac.yml).
TRAIN_PRESETS = {
    "sac": dict(hyperparameters=dict(learning_rate=1e-3), num_envs=1, steps=20_000, source="rl-baselines3-zoo sac.yml"),
}
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


_F32_PI = np.float32(np.pi)
_F32_TWO_PI = np.float32(2 * np.pi)
_F32_INV_TWO_PI = np.float32(1 / (2 * np.pi))


@fast
def step_env_fast(s, p, i, actions, events, rng):
    """float32 step: the same equations in float32, polynomial sine, the angle normalised
    with ``floor`` (a vector instruction) instead of a modulo (the C library's ``fmod``),
    squares as products; no branch, so the loop over envs vectorises."""
    th, thdot = s.theta[i], s.theta_dot[i]
    g = param(p.g, i)
    m = param(p.m, i)
    l = param(p.l, i)  # noqa: E741
    dt = param(p.dt, i)
    max_torque = param(p.max_torque, i)
    u = min(max(actions[i, 0], -max_torque), max_torque)
    s.last_u[i] = u
    # ((th + pi) % (2 pi)) - pi, the floored modulo written out
    normalized = th - _F32_TWO_PI * np.floor((th + _F32_PI) * _F32_INV_TWO_PI)
    costs = normalized * normalized + np.float32(0.1) * (thdot * thdot) + np.float32(0.001) * (u * u)
    sin_th, _ = sincos_f32(th)
    accel = np.float32(3.0) * g / (np.float32(2.0) * l) * sin_th + np.float32(3.0) / (m * (l * l)) * u
    newthdot = thdot + accel * dt
    max_speed = param(p.max_speed, i)
    newthdot = min(max(newthdot, -max_speed), max_speed)
    s.theta[i] = th + newthdot * dt
    s.theta_dot[i] = newthdot
    return -costs, False


@exact
def write_obs(s, p, i, obs):
    sin_th, cos_th = sincos(s.theta[i])  # libm in float64 (exact), polynomials in float32
    obs[i, 0] = cos_th
    obs[i, 1] = sin_th
    obs[i, 2] = s.theta_dot[i]


def render_rgb(values: dict, p) -> np.ndarray:
    """The scene of Gymnasium's renderer (500x500): rod, pivot, and a torque arc."""
    dim = 500
    img = draw.canvas(dim, dim)
    scale = dim / (2.2 * 2)
    offset = dim // 2
    rod_length = p.l * scale
    rod_width = 0.2 * scale
    angle = float(values["theta"]) + math.pi / 2
    # Gymnasium draws with y up and flips the image: image y = offset - world y.
    end = (offset + rod_length * math.cos(angle), offset - rod_length * math.sin(angle))
    color = (204, 77, 77)
    draw.draw_line(img, offset, offset, end[0], end[1], color, rod_width)
    draw.fill_circle(img, offset, offset, int(rod_width / 2), color)
    draw.fill_circle(img, end[0], end[1], int(rod_width / 2), color)
    u = float(values.get("last_u", 0.0))
    if u != 0.0:  # Gymnasium blits an arrow image sized by |u|; an arc of radius ~|u| here
        radius = scale * abs(u) / 4
        sweep = np.linspace(-0.75 * math.pi, 0.75 * math.pi, 24) * (1.0 if u > 0 else -1.0)
        xs = offset + radius * np.cos(sweep + math.pi / 2)
        ys = offset - radius * np.sin(sweep + math.pi / 2)
        draw.draw_polyline(img, xs, ys, (0, 0, 0), 3.0)
        draw.fill_circle(img, xs[-1], ys[-1], 5.0, (0, 0, 0))
    draw.fill_circle(img, offset, offset, int(0.05 * scale), (0, 0, 0))
    return img


def render_text(values: dict, p) -> str:
    """A 9x9 character dial: ``O`` the pivot, ``*`` the rod, ``@`` the bob (upright is up)."""
    size, half = 9, 4
    th = float(values["theta"])
    grid = [["."] * size for _ in range(size)]
    for k in range(1, half + 1):
        col = half + int(round(-k * math.sin(th)))
        row = half - int(round(k * math.cos(th)))
        grid[row][col] = "@" if k == half else "*"
    grid[half][half] = "O"
    lines = [" ".join(r) for r in grid]
    lines.append(f"theta={th:+.3f} theta_dot={float(values['theta_dot']):+.3f} "
                 f"torque={float(values.get('last_u', 0.0)):+.3f}")
    return "\n".join(lines)
