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
order and matches it exactly.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from gymnasium import spaces

from vecsim.core import draw
from vecsim.core.contract import KernelHints, allocate_float_fields, param
from vecsim.core.exactmath import LIBM_IS_GLIBC, cos_wide, np_clip
from vecsim.core.fastmath import sincos_f32
from vecsim.core.jit import exact, fast
from vecsim.core.rng import uniform

NAME = "MountainCar"
ENV_ID = "MountainCar-v0"
MAX_EPISODE_STEPS = 200
REWARD_THRESHOLD = -110.0
#: ``vecsim train``'s settings: RL Baselines3 Zoo's tuned hyperparameters (its dqn.yml).
TRAIN_PRESETS = {
    "dqn": dict(hyperparameters=dict(learning_rate=4e-3, batch_size=128, buffer_size=10_000, learning_starts=1000,
                                     gamma=0.98, target_update_interval=600, train_freq=16, gradient_steps=8,
                                     exploration_fraction=0.2, exploration_final_eps=0.07,
                                     policy_kwargs=dict(net_arch=[256, 256])),
                num_envs=1, steps=120_000, source="rl-baselines3-zoo dqn.yml"),
}
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


_F32_ZERO = np.float32(0.0)


@fast
def step_env_fast(s, p, i, actions, events, rng):
    """float32 step: the same update in float32 with a polynomial cosine, clips and the wall
    stop as selects, so the loop over envs vectorises."""
    min_position = param(p.min_position, i)
    max_speed = param(p.max_speed, i)
    position, velocity = s.position[i], s.velocity[i]
    _, cos3 = sincos_f32(np.float32(3.0) * position)
    velocity += np.float32(actions[i] - 1) * param(p.force, i) + cos3 * (-param(p.gravity, i))
    velocity = min(max(velocity, -max_speed), max_speed)
    position += velocity
    position = min(max(position, min_position), param(p.max_position, i))
    velocity = _F32_ZERO if (position == min_position) & (velocity < _F32_ZERO) else velocity
    terminated = (position >= param(p.goal_position, i)) & (velocity >= param(p.goal_velocity, i))
    s.position[i], s.velocity[i] = position, velocity
    return np.float32(-1.0), terminated


@exact
def write_obs(s, p, i, obs):
    obs[i, 0] = s.position[i]
    obs[i, 1] = s.velocity[i]


def _height(x):
    return np.sin(3 * x) * 0.45 + 0.55


def _rotate(x: float, y: float, angle: float) -> tuple[float, float]:
    c, s = math.cos(angle), math.sin(angle)
    return x * c - y * s, x * s + y * c


def render_rgb(values: dict, p) -> np.ndarray:
    """The scene of Gymnasium's renderer (600x400): valley, car with two wheels, goal flag."""
    width, height = 600, 400
    img = draw.canvas(height, width)
    scale = width / (p.max_position - p.min_position)

    def to_px(x_world_px: float, y_world_px: float) -> tuple[float, float]:
        return x_world_px, height - y_world_px  # Gymnasium draws with y up, then flips

    xs = np.linspace(p.min_position, p.max_position, 100)
    ys = _height(xs)
    draw.draw_polyline(img, (xs - p.min_position) * scale, height - ys * scale, (0, 0, 0), 1.0)

    pos = float(values["position"])
    angle = math.cos(3 * pos)
    clearance = 10.0
    base_x = (pos - p.min_position) * scale
    base_y = clearance + float(_height(pos)) * scale
    car = []
    for cx, cy in [(-20.0, 0.0), (-20.0, 20.0), (20.0, 20.0), (20.0, 0.0)]:
        rx, ry = _rotate(cx, cy, angle)
        car.append(to_px(rx + base_x, ry + base_y))
    draw.fill_convex_polygon(img, car, (0, 0, 0))
    for cx in (10.0, -10.0):
        rx, ry = _rotate(cx, 0.0, angle)
        wx, wy = to_px(int(rx + base_x), int(ry + base_y))
        draw.fill_circle(img, wx, wy, 8.0, (128, 128, 128))

    flagx = int((p.goal_position - p.min_position) * scale)
    flagy1 = int(_height(p.goal_position) * scale)
    flagy2 = flagy1 + 50
    draw.draw_line(img, *to_px(flagx, flagy1), *to_px(flagx, flagy2), (0, 0, 0), 1.0)
    draw.fill_convex_polygon(
        img, [to_px(flagx, flagy2), to_px(flagx, flagy2 - 10), to_px(flagx + 25, flagy2 - 5)], (204, 204, 0)
    )
    return img


def render_text(values: dict, p) -> str:
    """The valley as rows of text, the car as ``o`` and the goal flag as ``F``."""
    width, rows = 49, 8
    span = p.max_position - p.min_position

    def column(x: float) -> int:
        return min(max(int(round((x - p.min_position) / span * (width - 1))), 0), width - 1)

    def row(x: float) -> int:
        return int(round((1.0 - float(_height(x))) / 0.9 * (rows - 1)))

    grid = [[" "] * width for _ in range(rows + 1)]
    for c in range(width):
        grid[row(p.min_position + span * c / (width - 1)) + 1][c] = "_"
    goal, pos = float(p.goal_position), float(values["position"])
    grid[row(goal)][column(goal)] = "F"
    grid[row(pos)][column(pos)] = "o"
    lines = ["".join(r).rstrip() for r in grid]
    lines.append(f"position={pos:+.4f} velocity={float(values['velocity']):+.5f}")
    return "\n".join(lines)
