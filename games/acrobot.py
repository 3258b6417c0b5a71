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
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from gymnasium import spaces

from vecsim.core import draw
from vecsim.core.contract import KernelHints, allocate_float_fields, param
from vecsim.core.exactmath import pow64
from vecsim.core.fastmath import sincos, sincos_f32
from vecsim.core.jit import exact, fast
from vecsim.core.rng import uniform

NAME = "Acrobot"
ENV_ID = "Acrobot-v1"
MAX_EPISODE_STEPS = 500
REWARD_THRESHOLD = -100.0
#: ``vecsim train``'s settings: RL Baselines3 Zoo's tuned hyperparameters (its dqn.yml).
TRAIN_PRESETS = {
    "dqn": dict(hyperparameters=dict(learning_rate=6.3e-4, batch_size=128, buffer_size=50_000, learning_starts=0,
                                     gamma=0.99, target_update_interval=250, train_freq=4, gradient_steps=-1,
                                     exploration_fraction=0.12, exploration_final_eps=0.1,
                                     policy_kwargs=dict(net_arch=[256, 256])),
                num_envs=1, steps=100_000, source="rl-baselines3-zoo dqn.yml"),
}
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
        raise ValueError(f"{NAME} reset_low must be <= reset_high")


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


@exact(inline="always")
def _links(p, i):
    """Env ``i``'s link constants ``(m1, m2, l1, lc1, lc2, I1, g)`` (both links share the
    moment of inertia, as in Gymnasium)."""
    return (param(p.link_mass_1, i), param(p.link_mass_2, i), param(p.link_length_1, i),
            param(p.link_com_pos_1, i), param(p.link_com_pos_2, i), param(p.link_moi, i), param(p.g, i))


@exact
def _dsdt(p, i, a, theta1, theta2, dtheta1, dtheta2):
    """Gymnasium's ``_dsdt``: (dtheta1, dtheta2, ddtheta1, ddtheta2) for torque ``a``."""
    m1, m2, l1, lc1, lc2, I1, g = _links(p, i)
    I2 = I1
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


@exact
def _wrap(x, m, M):
    """Gymnasium's ``wrap``; stops (where Gymnasium would loop forever) once ``x`` is infinite."""
    diff = M - m
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


_F32_PI = np.float32(np.pi)
_F32_TWO_PI = np.float32(2 * np.pi)
_F32_INV_TWO_PI = np.float32(1 / (2 * np.pi))
_F32_ZERO = np.float32(0.0)
_F32_ONE = np.float32(1.0)
_F32_TWO = np.float32(2.0)


@fast(inline="always")  # inlined before LLVM: a call in the loop would keep it scalar
def _dsdt_fast(p, i, a, theta1, theta2, dtheta1, dtheta2):
    """``_dsdt`` in float32: ``cos(x - pi/2)`` as ``sin(x)``, squares as products, the
    book/NIPS choice as a select."""
    m1, m2, l1, lc1, lc2, I1, g = _links(p, i)
    I2 = I1
    sin2, cos2 = sincos_f32(theta2)
    sin1, _ = sincos_f32(theta1)
    sin12, _ = sincos_f32(theta1 + theta2)
    d1 = m1 * (lc1 * lc1) + m2 * (l1 * l1 + lc2 * lc2 + _F32_TWO * l1 * lc2 * cos2) + I1 + I2
    d2 = m2 * (lc2 * lc2 + l1 * lc2 * cos2) + I2
    phi2 = m2 * lc2 * g * sin12
    phi1 = (-m2 * l1 * lc2 * (dtheta2 * dtheta2) * sin2 - _F32_TWO * m2 * l1 * lc2 * dtheta2 * dtheta1 * sin2
            + (m1 * lc1 + m2 * l1) * g * sin1 + phi2)
    denom = m2 * (lc2 * lc2) + I2 - (d2 * d2) / d1
    nips = (a + d2 / d1 * phi1 - phi2) / denom
    book = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * (dtheta1 * dtheta1) * sin2 - phi2) / denom
    ddtheta2 = nips if param(p.book_or_nips, i) != _F32_ZERO else book
    ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
    return dtheta1, dtheta2, ddtheta1, ddtheta2


@fast(inline="always")
def _wrap_fast(x):
    """``_wrap(x, -pi, pi)`` without a loop: whole turns off above pi, on below -pi."""
    above = max(np.ceil((x - _F32_PI) * _F32_INV_TWO_PI), _F32_ZERO)
    below = max(np.ceil((-_F32_PI - x) * _F32_INV_TWO_PI), _F32_ZERO)
    return x - _F32_TWO_PI * above + _F32_TWO_PI * below


@fast
def step_env_fast(s, p, i, actions, events, rng):
    """float32 step: the same RK4 step in float32 with polynomial sine and cosine (16 of
    them, against 16 C library calls in float64), the angle wrap and velocity bounds without
    loops or branches. Still one env at a time: LLVM declines to inline a step this large
    into the kernel's loop, so the loop does not vectorise."""
    a = np.float32(actions[i] - 1)
    y0, y1, y2, y3 = s.theta1[i], s.theta2[i], s.dtheta1[i], s.dtheta2[i]
    dt = param(p.dt, i)
    dt2 = dt * np.float32(0.5)
    k1 = _dsdt_fast(p, i, a, y0, y1, y2, y3)
    k2 = _dsdt_fast(p, i, a, y0 + dt2 * k1[0], y1 + dt2 * k1[1], y2 + dt2 * k1[2], y3 + dt2 * k1[3])
    k3 = _dsdt_fast(p, i, a, y0 + dt2 * k2[0], y1 + dt2 * k2[1], y2 + dt2 * k2[2], y3 + dt2 * k2[3])
    k4 = _dsdt_fast(p, i, a, y0 + dt * k3[0], y1 + dt * k3[1], y2 + dt * k3[2], y3 + dt * k3[3])
    h = dt / np.float32(6.0)
    n0 = _wrap_fast(y0 + h * (k1[0] + _F32_TWO * k2[0] + _F32_TWO * k3[0] + k4[0]))
    n1 = _wrap_fast(y1 + h * (k1[1] + _F32_TWO * k2[1] + _F32_TWO * k3[1] + k4[1]))
    n2 = y2 + h * (k1[2] + _F32_TWO * k2[2] + _F32_TWO * k3[2] + k4[2])
    n3 = y3 + h * (k1[3] + _F32_TWO * k2[3] + _F32_TWO * k3[3] + k4[3])
    max_vel_1 = param(p.max_vel_1, i)
    max_vel_2 = param(p.max_vel_2, i)
    n2 = min(max(n2, -max_vel_1), max_vel_1)
    n3 = min(max(n3, -max_vel_2), max_vel_2)
    s.theta1[i], s.theta2[i], s.dtheta1[i], s.dtheta2[i] = n0, n1, n2, n3
    _, cos0 = sincos_f32(n0)
    _, cos01 = sincos_f32(n1 + n0)
    terminated = -cos0 - cos01 > _F32_ONE
    return (_F32_ZERO if terminated else -_F32_ONE), terminated


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


def render_rgb(values: dict, p) -> np.ndarray:
    """The scene of Gymnasium's renderer (500x500): target line, two links, two joints."""
    dim = 500
    img = draw.canvas(dim, dim)
    bound = p.link_length_1 + p.link_length_2 + 0.2
    scale = dim / (bound * 2)
    offset = dim / 2
    t1, t2 = float(values["theta1"]), float(values["theta2"])

    def to_px(x: float, y: float) -> tuple[float, float]:
        return x + offset, dim - (y + offset)  # Gymnasium draws with y up, then flips

    draw.draw_line(img, *to_px(-2.2 * scale, 1 * scale), *to_px(2.2 * scale, 1 * scale), (0, 0, 0), 1.0)
    joints = [(0.0, 0.0), (p.link_length_1 * math.sin(t1) * scale, -p.link_length_1 * math.cos(t1) * scale)]
    thetas = [t1 - math.pi / 2, t1 + t2 - math.pi / 2]
    lengths = [p.link_length_1 * scale, p.link_length_2 * scale]
    for (x, y), th, length in zip(joints, thetas, lengths):
        ex, ey = x + length * math.cos(th), y + length * math.sin(th)
        draw.draw_line(img, *to_px(x, y), *to_px(ex, ey), (0, 204, 204), 0.2 * scale)
        draw.fill_circle(img, *to_px(x, y), int(0.1 * scale), (204, 204, 0))
    return img


def render_text(values: dict, p) -> str:
    """An 11x11 character view: ``O`` the fixed joint, ``*`` link 1, ``+`` link 2, ``=`` target."""
    size, half = 11, 5
    t1, t2 = float(values["theta1"]), float(values["theta2"])
    cell = half / (p.link_length_1 + p.link_length_2)
    grid = [["."] * size for _ in range(size)]
    target = half - int(round(1.0 * cell))
    grid[target] = ["="] * size
    x1, y1 = p.link_length_1 * math.sin(t1), -p.link_length_1 * math.cos(t1)
    x2, y2 = x1 + p.link_length_2 * math.sin(t1 + t2), y1 - p.link_length_2 * math.cos(t1 + t2)
    for (xa, ya), (xb, yb), mark in (((0.0, 0.0), (x1, y1), "*"), ((x1, y1), (x2, y2), "+")):
        for f in np.linspace(0.0, 1.0, 8)[1:]:
            col = half + int(round((xa + f * (xb - xa)) * cell))
            row = half - int(round((ya + f * (yb - ya)) * cell))
            if 0 <= row < size and 0 <= col < size:
                grid[row][col] = mark
    grid[half][half] = "O"
    lines = [" ".join(r) for r in grid]
    lines.append(f"theta1={t1:+.3f} theta2={t2:+.3f} dtheta1={float(values['dtheta1']):+.3f} "
                 f"dtheta2={float(values['dtheta2']):+.3f}")
    return "\n".join(lines)
