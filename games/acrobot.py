"""Acrobot-v1, identical to Gymnasium's ``gymnasium/envs/classic_control/acrobot.py``.

Description
    Two links hang in a chain from a fixed joint; only the joint between them is actuated
    (Sutton, NIPS 1995; Sutton and Barto's book). Swing the free end above the target height.
Action Space
    ``Discrete(3)``: torque -1, 0 or +1 on the joint between the links.
Observation Space
    ``Box((6,), float32)``: ``cos(theta1)``, ``sin(theta1)``, ``cos(theta2)``, ``sin(theta2)``,
    ``dtheta1`` in ``[-max_vel_1, max_vel_1]`` = ±4 pi and ``dtheta2`` in
    ``[-max_vel_2, max_vel_2]`` = ±9 pi. ``theta1`` = 0 points the first link down;
    ``theta2`` is relative to the first link.
Rewards
    -1 every step that does not reach the target, 0 on the step that does.
Starting State
    All four state variables uniform on ``[reset_low, reset_high]`` = [-0.1, 0.1], rounded to
    float32 (Gymnasium stores ``uniform(...).astype(np.float32)``).
Episode End
    Terminated when ``-cos(theta1) - cos(theta2 + theta1) > 1``; truncated after 500 steps.
Arguments
    The fields of ``Params``; each may be a scalar or a per-env array of length ``num_envs``.
    Gymnasium has no constructor arguments: the fields are its class attributes in lower
    case (``dt``, ``LINK_MASS_1`` as ``link_mass_1``, ...) and ``g``, the 9.8 written inside
    its ``_dsdt``. ``book_or_nips`` is 0 for ``"book"`` (the default) and 1 for ``"nips"``.
    ``reset_low``/``reset_high`` are its reset options ``low``/``high``. Torque noise
    (``torque_noise_max``, 0 in Gymnasium) is not supported: a step draws no random numbers.
Version History
    v1 (vecsim 0.1): Gymnasium Acrobot-v1 bit for bit in float64.

One step is one classical Runge-Kutta step of length ``dt`` over the equations of motion
(``_dsdt``), then angles wrapped to [-pi, pi] and velocities bounded, in Gymnasium's operation
order. Its ``x**2`` on NumPy and Python scalars is the C library's ``pow(x, 2.0)``, which
differs from ``x * x`` in the last bit for about 1 value in 1,000 (see ``vecsim.core.exactmath``).
``precision="float32"`` steps with ``games/classic_float32.py``; the pictures are
``games/classic_render.py``'s.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from gymnasium import spaces

from vecsim.core.contract import KernelHints, allocate_float_fields, param
from vecsim.core.exactmath import pow64
from vecsim.core.fastmath import sincos
from vecsim.core.jit import exact
from vecsim.core.rng import uniform
from vecsim.games.classic_float32 import acrobot_step as step_env_fast
from vecsim.games.classic_render import acrobot_rgb as render_rgb, acrobot_text as render_text
from vecsim.games.train_presets import RL_ZOO

NAME = "Acrobot"
ENV_ID = "Acrobot-v1"
MAX_EPISODE_STEPS = 500
REWARD_THRESHOLD = -100.0
TRAIN_PRESETS = RL_ZOO[ENV_ID]  # vecsim train's settings
# Runs of 16 envs a call: its RK4 step is too large for LLVM to inline into a loop over envs.
KERNEL_HINTS = KernelHints(obs_order="F", step_uses_rng=False, write_obs_fills_row=True, envs_per_call=16)
RENDER_FPS = 15

_PI = math.pi


class Params(NamedTuple):
    dt: float = 0.2  # integration time step [s]
    link_length_1: float = 1.0  # [m]
    link_length_2: float = 1.0  # [m], used only for rendering, as in Gymnasium
    link_mass_1: float = 1.0  # [kg]
    link_mass_2: float = 1.0  # [kg]
    link_com_pos_1: float = 0.5  # [m] position of the centre of mass of link 1
    link_com_pos_2: float = 0.5  # [m] position of the centre of mass of link 2
    link_moi: float = 1.0  # moment of inertia of both links
    max_vel_1: float = 4 * math.pi
    max_vel_2: float = 9 * math.pi
    g: float = 9.8
    book_or_nips: float = 0.0  # 0: "book" dynamics, 1: "nips" (missing a term)
    reset_low: float = -0.1
    reset_high: float = 0.1


class State(NamedTuple):
    theta1: np.ndarray  # (N,) float64 angle of link 1 [rad], 0 pointing down
    theta2: np.ndarray  # (N,) float64 angle of link 2 relative to link 1 [rad]
    dtheta1: np.ndarray  # (N,) float64 angular velocity of link 1 [rad/s]
    dtheta2: np.ndarray  # (N,) float64 angular velocity of link 2 [rad/s]


def allocate_state(num_envs: int, float_dtype, params=None) -> State:
    return allocate_float_fields(State, num_envs, float_dtype)


def check_params(values: dict) -> None:
    for name in ("dt", "link_length_1", "link_length_2", "link_mass_1", "link_mass_2", "link_moi"):
        if np.any(values[name] <= 0):
            raise ValueError(f"{NAME} {name} must be > 0, but got {name}={values[name]}")
    for name in ("max_vel_1", "max_vel_2"):
        if np.any(values[name] < 0):
            raise ValueError(f"{NAME} {name} must be >= 0, but got {name}={values[name]}")
    if not np.all(np.isin(values["book_or_nips"], (0.0, 1.0))):
        raise ValueError(f"{NAME} book_or_nips must be 0 (book) or 1 (nips), "
                         f"but got book_or_nips={values['book_or_nips']}")
    if np.any(values["reset_low"] > values["reset_high"]):
        raise ValueError(f"{NAME} reset_low must be <= reset_high, but got "
                         f"reset_low={values['reset_low']} and reset_high={values['reset_high']}")


def observation_space(p: Params) -> spaces.Box:
    high = np.array([1.0, 1.0, 1.0, 1.0, p.max_vel_1, p.max_vel_2], dtype=np.float32)
    return spaces.Box(-high, high, dtype=np.float32)


def action_space(p: Params) -> spaces.Discrete:
    return spaces.Discrete(3)


@exact
def reset_env(s, p, i, rng):
    low = param(p.reset_low, i)
    high = param(p.reset_high, i)
    s.theta1[i] = np.float32(uniform(rng, i, low, high))
    s.theta2[i] = np.float32(uniform(rng, i, low, high))
    s.dtheta1[i] = np.float32(uniform(rng, i, low, high))
    s.dtheta2[i] = np.float32(uniform(rng, i, low, high))


@exact
def _dsdt(p, i, a, theta1, theta2, dtheta1, dtheta2):
    """Gymnasium's ``_dsdt``: (dtheta1, dtheta2, ddtheta1, ddtheta2) for torque ``a``."""
    m1, m2, l1 = param(p.link_mass_1, i), param(p.link_mass_2, i), param(p.link_length_1, i)
    lc1, lc2, g = param(p.link_com_pos_1, i), param(p.link_com_pos_2, i), param(p.g, i)
    I1 = I2 = param(p.link_moi, i)  # both links share the moment of inertia, as in Gymnasium
    d1 = m1 * pow64(lc1, 2.0) + m2 * (pow64(l1, 2.0) + pow64(lc2, 2.0) + 2 * l1 * lc2 * math.cos(theta2)) + I1 + I2
    d2 = m2 * (pow64(lc2, 2.0) + l1 * lc2 * math.cos(theta2)) + I2
    phi2 = m2 * lc2 * g * math.cos(theta1 + theta2 - _PI / 2.0)
    phi1 = (
        -m2 * l1 * lc2 * pow64(dtheta2, 2.0) * math.sin(theta2)
        - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * math.sin(theta2)
        + (m1 * lc1 + m2 * l1) * g * math.cos(theta1 - _PI / 2)
        + phi2
    )
    if param(p.book_or_nips, i) != 0.0:
        ddtheta2 = (a + d2 / d1 * phi1 - phi2) / (m2 * pow64(lc2, 2.0) + I2 - pow64(d2, 2.0) / d1)
    else:
        ddtheta2 = (
            a + d2 / d1 * phi1 - m2 * l1 * lc2 * pow64(dtheta1, 2.0) * math.sin(theta2) - phi2
        ) / (m2 * pow64(lc2, 2.0) + I2 - pow64(d2, 2.0) / d1)
    ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
    return dtheta1, dtheta2, ddtheta1, ddtheta2


#: Turns ``_wrap`` takes one at a time, as Gymnasium does, before it takes the rest at once.
_WRAP_TURNS = 1 << 20


@exact
def _wrap(x, m, M):
    """Gymnasium's ``wrap``, which subtracts or adds ``M - m`` until ``x`` is in range. Bounded
    where Gymnasium's is not: an infinite ``x`` stays as it is (Gymnasium loops forever), and
    an ``x`` more than ``_WRAP_TURNS`` turns out (a state set by hand; Gymnasium would loop for
    days at 1e15) first drops its whole turns with ``np.fmod``."""
    diff = M - m
    if math.isfinite(x) and abs(x) > _WRAP_TURNS * diff:
        x = m + np.fmod(x - m, diff)  # exact, unlike a division and a floor
    while x > M and x - diff != x:
        x = x - diff
    while x < m and x + diff != x:
        x = x + diff
    return x


@exact
def _bound(x, m, M):
    """Gymnasium's ``bound``: ``min(max(x, m), M)`` of Python's builtins."""
    y = m if m > x else x
    return M if M < y else y


@exact
def step_env(s, p, i, actions, events, rng):
    a = float(actions[i] - 1)  # AVAIL_TORQUE = [-1.0, 0.0, +1]
    y0, y1, y2, y3 = s.theta1[i], s.theta2[i], s.dtheta1[i], s.dtheta2[i]
    # rk4(self._dsdt, s_augmented, [0, self.dt]): one step; the torque's derivative is 0
    dt = param(p.dt, i)
    dt2 = dt / 2.0
    k1 = _dsdt(p, i, a, y0, y1, y2, y3)
    k2 = _dsdt(p, i, a, y0 + dt2 * k1[0], y1 + dt2 * k1[1], y2 + dt2 * k1[2], y3 + dt2 * k1[3])
    k3 = _dsdt(p, i, a, y0 + dt2 * k2[0], y1 + dt2 * k2[1], y2 + dt2 * k2[2], y3 + dt2 * k2[3])
    k4 = _dsdt(p, i, a, y0 + dt * k3[0], y1 + dt * k3[1], y2 + dt * k3[2], y3 + dt * k3[3])
    h = dt / 6.0
    n0 = y0 + h * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
    n1 = y1 + h * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    n2 = y2 + h * (k1[2] + 2 * k2[2] + 2 * k3[2] + k4[2])
    n3 = y3 + h * (k1[3] + 2 * k2[3] + 2 * k3[3] + k4[3])
    n0 = _wrap(n0, -_PI, _PI)
    n1 = _wrap(n1, -_PI, _PI)
    max_vel_1 = param(p.max_vel_1, i)
    max_vel_2 = param(p.max_vel_2, i)
    n2 = _bound(n2, -max_vel_1, max_vel_1)
    n3 = _bound(n3, -max_vel_2, max_vel_2)
    s.theta1[i], s.theta2[i], s.dtheta1[i], s.dtheta2[i] = n0, n1, n2, n3
    terminated = -math.cos(n0) - math.cos(n1 + n0) > 1.0
    return (0.0 if terminated else -1.0), terminated


@exact
def write_obs(s, p, i, obs):
    sin1, cos1 = sincos(s.theta1[i])  # libm in float64 (exact), polynomials in float32
    sin2, cos2 = sincos(s.theta2[i])
    obs[i, 0] = cos1
    obs[i, 1] = sin1
    obs[i, 2] = cos2
    obs[i, 3] = sin2
    obs[i, 4] = s.dtheta1[i]
    obs[i, 5] = s.dtheta2[i]
