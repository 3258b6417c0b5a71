"""CartPole-v1, identical to Gymnasium's ``gymnasium/envs/classic_control/cartpole.py``.

Description
    A pole is attached by an un-actuated joint to a cart moving along a frictionless track
    (Barto, Sutton and Anderson, 1983). The pole starts upright; push the cart left or right
    to keep it balanced.
Action Space
    ``Discrete(2)``: 0 pushes the cart left, 1 pushes it right, with ``force_mag`` newtons.
Observation Space
    ``Box((4,), float32)``: cart position, cart velocity, pole angle, pole angular velocity.
Rewards
    +1 every step, the terminating step included; with ``sutton_barto_reward=1``, 0 each
    step and -1 on the terminating step.
Starting State
    All four state variables uniform on [-0.05, 0.05].
Episode End
    Terminated when |x| > 2.4 or |theta| > 12 degrees; truncated after 500 steps (v1).
Arguments
    The fields of ``Params``; each may be a scalar or a per-env array of length ``num_envs``.
Version History
    v1 (vecsim 0.1): Gymnasium CartPole-v1 bit for bit in float64.

Physics in float64 with the same operation order as Gymnasium (bitwise equal results). The
step reads sin and cos of theta from the pass at the end of this module
(``vecsim.core.exactmath.sincos_small``: glibc's values in arithmetic that vectorises, libm for
the few it cannot promise). ``precision="float32"`` steps with ``games/classic_float32.py``; the
pictures are ``games/classic_render.py``'s.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from gymnasium import spaces

from vecsim.core.contract import KernelHints, allocate_float_fields, param
from vecsim.core.exactmath import LIBM_IS_GLIBC, sincos_small
from vecsim.core.jit import exact
from vecsim.core.rng import uniform
from vecsim.games.classic_float32 import cartpole_step as step_env_fast
from vecsim.games.classic_render import cartpole_rgb as render_rgb, cartpole_text as render_text
from vecsim.games.train_presets import RL_ZOO

NAME = "CartPole"
ENV_ID = "CartPole-v1"
MAX_EPISODE_STEPS = 500
REWARD_THRESHOLD = 475.0
TRAIN_PRESETS = RL_ZOO[ENV_ID]  # vecsim train's settings
KERNEL_HINTS = KernelHints(obs_order="F", step_uses_rng=False, write_obs_fills_row=True)
RENDER_FPS = 50


class Params(NamedTuple):
    gravity: float = 9.8
    masscart: float = 1.0
    masspole: float = 0.1
    length: float = 0.5  # half the pole's length, as in Gymnasium
    force_mag: float = 10.0
    tau: float = 0.02  # seconds between state updates
    semi_implicit: float = 0.0  # 0: Gymnasium's default "euler", 1: "semi-implicit euler"
    theta_threshold_radians: float = 12 * 2 * math.pi / 360
    x_threshold: float = 2.4
    sutton_barto_reward: float = 0.0  # 1: reward 0 per step and -1 on termination
    reset_low: float = -0.05
    reset_high: float = 0.05


class State(NamedTuple):
    x: np.ndarray  # (N,) float64 cart position [m]
    x_dot: np.ndarray  # (N,) float64 cart velocity [m/s]
    theta: np.ndarray  # (N,) float64 pole angle [rad]
    theta_dot: np.ndarray  # (N,) float64 pole angular velocity [rad/s]
    sin_theta: np.ndarray  # (N,) float64 scratch: sin(theta) from pre_step_env
    cos_theta: np.ndarray  # (N,) float64 scratch: cos(theta) from pre_step_env


PHYSICAL_STATE = ("x", "x_dot", "theta", "theta_dot")


def allocate_state(num_envs: int, float_dtype, params=None) -> State:
    return allocate_float_fields(State, num_envs, float_dtype)


def check_params(values: dict) -> None:
    for name in ("masscart", "masspole", "length", "tau"):
        if np.any(values[name] <= 0):
            raise ValueError(f"{NAME} {name} must be > 0, but got {name}={values[name]}")
    if np.any(values["reset_low"] > values["reset_high"]):
        raise ValueError(f"{NAME} reset_low must be <= reset_high, but got "
                         f"reset_low={values['reset_low']} and reset_high={values['reset_high']}")


def observation_space(p: Params) -> spaces.Box:
    high = np.array(
        [p.x_threshold * 2, np.inf, p.theta_threshold_radians * 2, np.inf], dtype=np.float32
    )
    return spaces.Box(-high, high, dtype=np.float32)


def action_space(p: Params) -> spaces.Discrete:
    return spaces.Discrete(2)


@exact
def reset_env(s, p, i, rng):
    low = param(p.reset_low, i)
    high = param(p.reset_high, i)
    s.x[i] = uniform(rng, i, low, high)
    s.x_dot[i] = uniform(rng, i, low, high)
    s.theta[i] = uniform(rng, i, low, high)
    s.theta_dot[i] = uniform(rng, i, low, high)


@exact
def step_env(s, p, i, actions, events, rng):
    gravity = param(p.gravity, i)
    masspole = param(p.masspole, i)
    total_mass = masspole + param(p.masscart, i)
    length = param(p.length, i)
    polemass_length = masspole * length
    tau = param(p.tau, i)
    force = param(p.force_mag, i) if actions[i] == 1 else -param(p.force_mag, i)
    x, x_dot, theta, theta_dot = s.x[i], s.x_dot[i], s.theta[i], s.theta_dot[i]
    costheta = s.cos_theta[i]
    sintheta = s.sin_theta[i]
    temp = (force + polemass_length * (theta_dot * theta_dot) * sintheta) / total_mass
    thetaacc = (gravity * sintheta - costheta * temp) / (
        length * (4.0 / 3.0 - masspole * (costheta * costheta) / total_mass)
    )
    xacc = temp - polemass_length * thetaacc * costheta / total_mass
    # Branch-free (selects, not jumps) so the loop over envs vectorises; each select picks
    # between the values Gymnasium's two integrators compute, in its operation order.
    semi = param(p.semi_implicit, i) != 0.0
    new_x_dot = x_dot + tau * xacc
    new_theta_dot = theta_dot + tau * thetaacc
    x = x + tau * (new_x_dot if semi else x_dot)
    theta = theta + tau * (new_theta_dot if semi else theta_dot)
    s.x[i], s.x_dot[i], s.theta[i], s.theta_dot[i] = x, new_x_dot, theta, new_theta_dot
    x_thr = param(p.x_threshold, i)
    th_thr = param(p.theta_threshold_radians, i)
    terminated = (x < -x_thr) | (x > x_thr) | (theta < -th_thr) | (theta > th_thr)
    sutton = param(p.sutton_barto_reward, i) != 0.0
    reward = (-1.0 if terminated else 0.0) if sutton else 1.0
    return reward, terminated


@exact
def write_obs(s, p, i, obs):
    obs[i, 0] = s.x[i]
    obs[i, 1] = s.x_dot[i]
    obs[i, 2] = s.theta[i]
    obs[i, 3] = s.theta_dot[i]


# -- the pass before the step loop, so that the loop vectorises (results as above) --------


@exact
def pre_step_draft_env(s, p, i, actions):
    """sin and cos of theta as glibc computes them, without calling it (the loop vectorises).

    Where ``sincos_small`` cannot promise glibc's values, cos is left NaN for
    ``pre_step_fix_env`` to call the library (a small share of envs while the pole is up).
    """
    theta = s.theta[i]
    if LIBM_IS_GLIBC:  # a compile-time constant
        sin_v, cos_v, sure = sincos_small(theta)
        s.sin_theta[i] = sin_v
        s.cos_theta[i] = cos_v if sure else math.nan
    else:
        s.cos_theta[i] = math.nan


@exact
def pre_step_env(s, p, i, actions):
    """sin and cos of theta from libm, for a step taken one env at a time (the collectors):
    one env's draft costs more than glibc's ``sincos``, and pays off only on SIMD lanes."""
    theta = s.theta[i]
    s.cos_theta[i] = math.cos(theta)
    s.sin_theta[i] = math.sin(theta)


@exact
def pre_step_fix_env(s, p, i, actions):
    """libm's values for the envs the draft left NaN."""
    if s.cos_theta[i] != s.cos_theta[i]:
        pre_step_env(s, p, i, actions)
