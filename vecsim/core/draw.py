"""Small NumPy rasteriser for ``render_rgb`` (no window, no pygame).

Images are ``uint8`` arrays of shape ``(height, width, 3)``; coordinates are pixels with
``y`` pointing down. Shapes are sampled at pixel centres.
"""

from __future__ import annotations

import numpy as np


def canvas(height: int, width: int, color=(255, 255, 255)) -> np.ndarray:
    """A new ``(height, width, 3)`` uint8 image filled with ``color``."""
    img = np.empty((height, width, 3), dtype=np.uint8)
    img[:] = color
    return img


def _grid(img, x0, x1, y0, y1):
    h, w = img.shape[:2]
    xa, xb = max(int(np.floor(x0)), 0), min(int(np.ceil(x1)) + 1, w)
    ya, yb = max(int(np.floor(y0)), 0), min(int(np.ceil(y1)) + 1, h)
    if xa >= xb or ya >= yb:
        return None
    ys, xs = np.mgrid[ya:yb, xa:xb]
    return (slice(ya, yb), slice(xa, xb)), xs + 0.5, ys + 0.5


def fill_convex_polygon(img: np.ndarray, points, color) -> None:
    """Fill the convex polygon with vertices ``points`` ((k, 2) x, y; any winding)."""
    pts = np.asarray(points, dtype=np.float64)
    grid = _grid(img, pts[:, 0].min(), pts[:, 0].max(), pts[:, 1].min(), pts[:, 1].max())
    if grid is None:
        return
    window, xs, ys = grid
    inside_pos = np.ones(xs.shape, dtype=bool)
    inside_neg = np.ones(xs.shape, dtype=bool)
    for k in range(len(pts)):
        (ax, ay), (bx, by) = pts[k], pts[(k + 1) % len(pts)]
        cross = (bx - ax) * (ys - ay) - (by - ay) * (xs - ax)
        inside_pos &= cross >= 0
        inside_neg &= cross <= 0
    img[window][inside_pos | inside_neg] = color


def fill_circle(img: np.ndarray, cx: float, cy: float, radius: float, color) -> None:
    """Fill the disc of ``radius`` pixels around ``(cx, cy)``."""
    grid = _grid(img, cx - radius, cx + radius, cy - radius, cy + radius)
    if grid is None:
        return
    window, xs, ys = grid
    img[window][(xs - cx) ** 2 + (ys - cy) ** 2 <= radius * radius] = color


def draw_line(img: np.ndarray, x0, y0, x1, y1, color, width: float = 1.0) -> None:
    """Draw a segment ``width`` pixels thick."""
    dx, dy = x1 - x0, y1 - y0
    length = float(np.hypot(dx, dy))
    if length == 0.0:
        fill_circle(img, x0, y0, width / 2, color)
        return
    nx, ny = -dy / length * width / 2, dx / length * width / 2
    fill_convex_polygon(img, [(x0 + nx, y0 + ny), (x1 + nx, y1 + ny), (x1 - nx, y1 - ny), (x0 - nx, y0 - ny)], color)


def draw_polyline(img: np.ndarray, xs, ys, color, width: float = 1.0) -> None:
    """Draw connected segments through the points ``(xs[k], ys[k])``."""
    for k in range(len(xs) - 1):
        draw_line(img, xs[k], ys[k], xs[k + 1], ys[k + 1], color, width)
