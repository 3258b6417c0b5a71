"""The pictures of the classic-control games: the scenes of Gymnasium's pygame renderers
(``gymnasium/envs/classic_control/*.py``, ``render``) drawn with ``vecsim.core.draw``, and small
text views. Each game module takes its pair as ``render_rgb`` and ``render_text``
(``values``: one env's state fields; ``p``: scalar ``Params``)."""

from __future__ import annotations

import math

import numpy as np

from vecsim.core import draw


def cartpole_rgb(values: dict, p) -> np.ndarray:
    """Gymnasium's scene (600x400): track, cart, pole and axle."""
    width, height = 600, 400
    img = draw.canvas(height, width)
    scale = width / (p.x_threshold * 2)
    polelen = scale * (2 * p.length)
    cartx = float(values["x"]) * scale + width / 2.0
    carty = height - 100.0  # y points down in the image
    axle_y = carty - 30.0 / 4.0
    draw.draw_line(img, 0, carty, width, carty, (0, 0, 0), 1.0)
    draw.fill_convex_polygon(
        img, [(cartx - 25, carty - 15), (cartx + 25, carty - 15), (cartx + 25, carty + 15), (cartx - 25, carty + 15)], (0, 0, 0)
    )
    theta = float(values["theta"])
    tip = (cartx + polelen * math.sin(theta), axle_y - polelen * math.cos(theta))
    draw.draw_line(img, cartx, axle_y, tip[0], tip[1], (202, 152, 101), 10.0)
    draw.fill_circle(img, cartx, axle_y, 5.0, (129, 132, 203))
    return img


def cartpole_text(values: dict, p) -> str:
    """The cart ``[#]`` on a track, its pole ``|``, ``/`` or ``\\`` by the way it leans."""
    width = 41
    pos = int(round((float(values["x"]) / (2 * p.x_threshold) + 0.5) * (width - 1)))
    pos = min(max(pos, 0), width - 1)
    lean = float(values["theta"])
    pole = "|" if abs(lean) < 0.05 else ("/" if lean > 0 else "\\")
    line1 = " " * pos + pole
    line2 = " " * max(pos - 1, 0) + "[#]"
    track = "-" * width
    return (
        f"{line1}\n{line2}\n{track}\n"
        f"x={float(values['x']):+.3f} x_dot={float(values['x_dot']):+.3f} "
        f"theta={float(values['theta']):+.3f} theta_dot={float(values['theta_dot']):+.3f}"
    )


def _valley_height(x):
    return np.sin(3 * x) * 0.45 + 0.55


def _rotate(x: float, y: float, angle: float) -> tuple[float, float]:
    c, s = math.cos(angle), math.sin(angle)
    return x * c - y * s, x * s + y * c


def mountain_car_rgb(values: dict, p) -> np.ndarray:
    """Gymnasium's scene (600x400): valley, car with two wheels, goal flag (both cars)."""
    width, height = 600, 400
    img = draw.canvas(height, width)
    scale = width / (p.max_position - p.min_position)

    def to_px(x_world_px: float, y_world_px: float) -> tuple[float, float]:
        return x_world_px, height - y_world_px  # Gymnasium draws with y up, then flips

    xs = np.linspace(p.min_position, p.max_position, 100)
    ys = _valley_height(xs)
    draw.draw_polyline(img, (xs - p.min_position) * scale, height - ys * scale, (0, 0, 0), 1.0)

    pos = float(values["position"])
    angle = math.cos(3 * pos)
    clearance = 10.0
    base_x = (pos - p.min_position) * scale
    base_y = clearance + float(_valley_height(pos)) * scale
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
    flagy1 = int(_valley_height(p.goal_position) * scale)
    flagy2 = flagy1 + 50
    draw.draw_line(img, *to_px(flagx, flagy1), *to_px(flagx, flagy2), (0, 0, 0), 1.0)
    draw.fill_convex_polygon(
        img, [to_px(flagx, flagy2), to_px(flagx, flagy2 - 10), to_px(flagx + 25, flagy2 - 5)], (204, 204, 0)
    )
    return img


def mountain_car_text(values: dict, p) -> str:
    """The valley as rows of text, the car as ``o`` and the goal flag as ``F``."""
    width, rows = 49, 8
    span = p.max_position - p.min_position

    def column(x: float) -> int:
        return min(max(int(round((x - p.min_position) / span * (width - 1))), 0), width - 1)

    def row(x: float) -> int:
        return int(round((1.0 - float(_valley_height(x))) / 0.9 * (rows - 1)))

    grid = [[" "] * width for _ in range(rows + 1)]
    for c in range(width):
        grid[row(p.min_position + span * c / (width - 1)) + 1][c] = "_"
    goal, pos = float(p.goal_position), float(values["position"])
    grid[row(goal)][column(goal)] = "F"
    grid[row(pos)][column(pos)] = "o"
    lines = ["".join(r).rstrip() for r in grid]
    lines.append(f"position={pos:+.4f} velocity={float(values['velocity']):+.5f}")
    return "\n".join(lines)


def pendulum_rgb(values: dict, p) -> np.ndarray:
    """Gymnasium's scene (500x500): rod, pivot, and a torque arc."""
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


def pendulum_text(values: dict, p) -> str:
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


def acrobot_rgb(values: dict, p) -> np.ndarray:
    """Gymnasium's scene (500x500): target line, two links, two joints."""
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


def acrobot_text(values: dict, p) -> str:
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
