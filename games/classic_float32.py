"""The float32 steps of the classic-control games: each game's ``step_env_fast``, the step of
``precision="float32"``. The equations of the game's float64 ``step_env`` in float32, with
polynomial trigonometry (``vecsim.core.fastmath.sincos_f32``), squares as products, and clips,
wraps and the mountain cars' wall stop as selects, so that a loop over envs vectorises. None of
the float64 steps' bookkeeping of Gymnasium's float32/float64 mixing: these follow Gymnasium
closely, not bit for bit (``tests/engine/test_engine.py`` bounds the distance)."""

from __future__ import annotations

import numpy as np

from vecsim.core.contract import param
from vecsim.core.fastmath import sincos_f32
from vecsim.core.jit import fast

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_TWO = np.float32(2.0)
_PI = np.float32(np.pi)
_TWO_PI = np.float32(2 * np.pi)
_INV_TWO_PI = np.float32(1 / (2 * np.pi))
_F43 = np.float32(4.0 / 3.0)


@fast
def cartpole_step(s, p, i, actions, events, rng):
    """CartPole's step; one division by the total mass, two products by its inverse."""
    gravity = param(p.gravity, i)
    masspole = param(p.masspole, i)
    total_mass = masspole + param(p.masscart, i)
    length = param(p.length, i)
    polemass_length = masspole * length
    tau = param(p.tau, i)
    fm = param(p.force_mag, i)
    force = fm if actions[i] == 1 else -fm
    x, x_dot, theta, theta_dot = s.x[i], s.x_dot[i], s.theta[i], s.theta_dot[i]
    sintheta, costheta = sincos_f32(theta)
    inv_mass = np.float32(1.0) / total_mass
    temp = (force + polemass_length * (theta_dot * theta_dot) * sintheta) * inv_mass
    thetaacc = (gravity * sintheta - costheta * temp) / (
        length * (_F43 - masspole * (costheta * costheta) * inv_mass)
    )
    xacc = temp - polemass_length * thetaacc * costheta * inv_mass
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
    reward = np.float32(-1.0 if terminated else 0.0) if sutton else np.float32(1.0)
    return reward, terminated


@fast(inline="always")
def _drive(s, p, i, engine_term, gravity):
    """Both mountain cars' update for ``velocity += engine_term - gravity * cos(3 position)``,
    clips and the wall stop; the car's new ``(position, velocity, terminated)``."""
    position, velocity = s.position[i], s.velocity[i]
    _, cos3 = sincos_f32(np.float32(3.0) * position)
    velocity += engine_term + cos3 * (-gravity)
    max_speed = param(p.max_speed, i)
    velocity = min(max(velocity, -max_speed), max_speed)
    position += velocity
    min_position = param(p.min_position, i)
    position = min(max(position, min_position), param(p.max_position, i))
    velocity = _ZERO if (position == min_position) & (velocity < _ZERO) else velocity
    terminated = (position >= param(p.goal_position, i)) & (velocity >= param(p.goal_velocity, i))
    s.position[i], s.velocity[i] = position, velocity
    return terminated


@fast
def mountain_car_step(s, p, i, actions, events, rng):
    """MountainCar's step."""
    terminated = _drive(s, p, i, np.float32(actions[i] - 1) * param(p.force, i), param(p.gravity, i))
    return np.float32(-1.0), terminated


@fast
def mountain_car_continuous_step(s, p, i, actions, events, rng):
    """MountainCarContinuous' step; the reward penalises the unclipped action, as Gymnasium's."""
    action = actions[i, 0]
    force = min(max(action, param(p.min_action, i)), param(p.max_action, i))
    terminated = _drive(s, p, i, force * param(p.power, i), param(p.gravity, i))
    return (np.float32(100.0) if terminated else _ZERO) - action * action * np.float32(0.1), terminated


@fast
def pendulum_step(s, p, i, actions, events, rng):
    """Pendulum's step; the angle normalised with ``floor`` (a vector instruction) instead of
    a modulo (the C library's ``fmod``)."""
    th, thdot = s.theta[i], s.theta_dot[i]
    g = param(p.g, i)
    m = param(p.m, i)
    l = param(p.l, i)  # noqa: E741
    dt = param(p.dt, i)
    max_torque = param(p.max_torque, i)
    u = min(max(actions[i, 0], -max_torque), max_torque)
    s.last_u[i] = u
    # ((th + pi) % (2 pi)) - pi, the floored modulo written out
    normalized = th - _TWO_PI * np.floor((th + _PI) * _INV_TWO_PI)
    costs = normalized * normalized + np.float32(0.1) * (thdot * thdot) + np.float32(0.001) * (u * u)
    sin_th, _ = sincos_f32(th)
    accel = np.float32(3.0) * g / (np.float32(2.0) * l) * sin_th + np.float32(3.0) / (m * (l * l)) * u
    newthdot = thdot + accel * dt
    max_speed = param(p.max_speed, i)
    newthdot = min(max(newthdot, -max_speed), max_speed)
    s.theta[i] = th + newthdot * dt
    s.theta_dot[i] = newthdot
    return -costs, False


@fast(inline="always")  # inlined before LLVM: a call in the loop would keep it scalar
def _acrobot_dsdt(p, i, a, theta1, theta2, dtheta1, dtheta2):
    """Acrobot's ``_dsdt``: ``cos(x - pi/2)`` as ``sin(x)``, the book/NIPS choice as a select."""
    m1, m2, l1 = param(p.link_mass_1, i), param(p.link_mass_2, i), param(p.link_length_1, i)
    lc1, lc2, g = param(p.link_com_pos_1, i), param(p.link_com_pos_2, i), param(p.g, i)
    I1 = I2 = param(p.link_moi, i)
    sin2, cos2 = sincos_f32(theta2)
    sin1, _ = sincos_f32(theta1)
    sin12, _ = sincos_f32(theta1 + theta2)
    d1 = m1 * (lc1 * lc1) + m2 * (l1 * l1 + lc2 * lc2 + _TWO * l1 * lc2 * cos2) + I1 + I2
    d2 = m2 * (lc2 * lc2 + l1 * lc2 * cos2) + I2
    phi2 = m2 * lc2 * g * sin12
    phi1 = (-m2 * l1 * lc2 * (dtheta2 * dtheta2) * sin2 - _TWO * m2 * l1 * lc2 * dtheta2 * dtheta1 * sin2
            + (m1 * lc1 + m2 * l1) * g * sin1 + phi2)
    denom = m2 * (lc2 * lc2) + I2 - (d2 * d2) / d1
    nips = (a + d2 / d1 * phi1 - phi2) / denom
    book = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * (dtheta1 * dtheta1) * sin2 - phi2) / denom
    ddtheta2 = nips if param(p.book_or_nips, i) != _ZERO else book
    ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
    return dtheta1, dtheta2, ddtheta1, ddtheta2


@fast(inline="always")
def _wrap_angle(x):
    """Acrobot's ``wrap(x, -pi, pi)`` without a loop: whole turns off above pi, on below -pi."""
    above = max(np.ceil((x - _PI) * _INV_TWO_PI), _ZERO)
    below = max(np.ceil((-_PI - x) * _INV_TWO_PI), _ZERO)
    return x - _TWO_PI * above + _TWO_PI * below


@fast
def acrobot_step(s, p, i, actions, events, rng):
    """Acrobot's RK4 step, the angle wrap and velocity bounds without loops or branches. Still
    one env at a time: LLVM declines to inline a step this large into the kernel's loop."""
    a = np.float32(actions[i] - 1)
    y0, y1, y2, y3 = s.theta1[i], s.theta2[i], s.dtheta1[i], s.dtheta2[i]
    dt = param(p.dt, i)
    dt2 = dt * np.float32(0.5)
    k1 = _acrobot_dsdt(p, i, a, y0, y1, y2, y3)
    k2 = _acrobot_dsdt(p, i, a, y0 + dt2 * k1[0], y1 + dt2 * k1[1], y2 + dt2 * k1[2], y3 + dt2 * k1[3])
    k3 = _acrobot_dsdt(p, i, a, y0 + dt2 * k2[0], y1 + dt2 * k2[1], y2 + dt2 * k2[2], y3 + dt2 * k2[3])
    k4 = _acrobot_dsdt(p, i, a, y0 + dt * k3[0], y1 + dt * k3[1], y2 + dt * k3[2], y3 + dt * k3[3])
    h = dt / np.float32(6.0)
    n0 = _wrap_angle(y0 + h * (k1[0] + _TWO * k2[0] + _TWO * k3[0] + k4[0]))
    n1 = _wrap_angle(y1 + h * (k1[1] + _TWO * k2[1] + _TWO * k3[1] + k4[1]))
    n2 = y2 + h * (k1[2] + _TWO * k2[2] + _TWO * k3[2] + k4[2])
    n3 = y3 + h * (k1[3] + _TWO * k2[3] + _TWO * k3[3] + k4[3])
    max_vel_1 = param(p.max_vel_1, i)
    max_vel_2 = param(p.max_vel_2, i)
    n2 = min(max(n2, -max_vel_1), max_vel_1)
    n3 = min(max(n3, -max_vel_2), max_vel_2)
    s.theta1[i], s.theta2[i], s.dtheta1[i], s.dtheta2[i] = n0, n1, n2, n3
    _, cos0 = sincos_f32(n0)
    _, cos01 = sincos_f32(n1 + n0)
    terminated = -cos0 - cos01 > _ONE
    return (_ZERO if terminated else -_ONE), terminated
