"""``vecsim.core.exactmath.sincos_small`` and ``cos_wide``: glibc's values where they say so.

CartPole's float64 step takes sin and cos of theta from ``sincos_small``, MountainCar's
cos(3 * position) from ``cos_wide`` (libm where they are unsure), and both must stay bit for
bit Gymnasium's ``math.sin``/``math.cos``: these tests compare against the C library over tens
of millions of arguments, and check that the fast path really is taken.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba import njit

from vecsim.core.exactmath import LIBM_IS_GLIBC, cos_wide, sincos_small

pytestmark = pytest.mark.skipif(not LIBM_IS_GLIBC, reason="the margins of sincos_small are glibc's")


@njit(parallel=False, cache=False)
def _compare(x):
    """(arguments where a sure value differs from libm, how many were sure)."""
    wrong = np.zeros(x.shape[0], np.bool_)
    sure_count = 0
    for i in range(x.shape[0]):
        s, c, sure = sincos_small(x[i])
        if sure:
            sure_count += 1
            wrong[i] = s != math.sin(x[i]) or c != math.cos(x[i])
    return wrong, sure_count


def _arguments(n: int, seed: int) -> np.ndarray:
    """Half uniform on [-0.25, 0.25], half log-uniform in magnitude on [2**-24, 0.25]."""
    rng = np.random.default_rng(seed)
    uniform = rng.uniform(-0.25, 0.25, n // 2)
    magnitude = np.exp(rng.uniform(np.log(2.0**-24), np.log(0.25), n - n // 2))
    return np.concatenate([uniform, magnitude * rng.choice([-1.0, 1.0], magnitude.size)])


def test_sure_values_are_the_c_librarys_bit_for_bit():
    for seed in range(4):
        x = _arguments(5_000_000, seed)
        wrong, sure = _compare(x)
        assert not wrong.any(), f"sincos_small differs from libm at x={x[wrong][:5].tolist()}"
        assert sure > 0.9 * x.size, f"only {sure} of {x.size} arguments were sure: the fast path is not taken"


def test_edges_of_the_range_and_odd_values():
    tiny, top = 2.0**-24, 0.25
    edges = [tiny, np.nextafter(tiny, 1.0), np.nextafter(tiny, 0.0), top, np.nextafter(top, 0.0),
             np.nextafter(top, 1.0), 0.126, np.nextafter(0.126, 0.0), 0.0, 5e-324, 1e-300, 0.3, 3.0, 1e300,
             math.inf, math.nan]
    x = np.array(edges + [-v for v in edges])
    outside = ~((np.abs(x) >= tiny) & (np.abs(x) <= top))
    sure = np.array([sincos_small(v)[2] for v in x])
    assert not sure[outside].any(), f"sure outside [2**-24, 0.25]: {x[outside & sure].tolist()}"
    wrong, _ = _compare(x)
    assert not wrong.any(), f"sincos_small differs from libm at x={x[wrong].tolist()}"


def test_unsure_share_is_small_where_the_pole_is_up():
    x = np.random.default_rng(9).uniform(-0.21, 0.21, 1_000_000)
    _, sure = _compare(x)
    assert 1 - sure / x.size < 0.08, f"{1 - sure / x.size:.1%} of arguments went to libm"


@njit(parallel=False, cache=False)
def _compare_cos(x):
    """(arguments where a sure ``cos_wide`` value differs from libm, how many were sure)."""
    wrong = np.zeros(x.shape[0], np.bool_)
    sure_count = 0
    for i in range(x.shape[0]):
        c, sure = cos_wide(x[i])
        if sure:
            sure_count += 1
            wrong[i] = c != math.cos(x[i])
    return wrong, sure_count


def test_cos_wide_sure_values_are_the_c_librarys_bit_for_bit():
    rng = np.random.default_rng(11)
    near = (np.pi / 2 * np.arange(-2, 3))[:, None] + rng.uniform(-1e-4, 1e-4, (5, 400_000))
    for x in (rng.uniform(-4.0, 4.0, 10_000_000), rng.uniform(-3.6, 1.8, 5_000_000), near.ravel(),
              _arguments(2_000_000, 12)):
        wrong, sure = _compare_cos(x)
        assert not wrong.any(), f"cos_wide differs from libm at x={x[wrong][:5].tolist()}"
        assert sure > 0.85 * x.size, f"only {sure} of {x.size} arguments were sure"


def test_cos_wide_edges_and_odd_values():
    half_pi = [k * np.pi / 2 for k in range(-2, 3)]
    edges = [4.0, np.nextafter(4.0, 0.0), np.nextafter(4.0, 5.0), 0.0, 5e-324, 1e-300, 2.0**-30, 1.0, 0.5,
             np.pi, 3.6, 1.8, 10.0, 1e300, math.inf, math.nan] + half_pi + [np.nextafter(v, 9.0) for v in half_pi]
    x = np.array(edges + [-v for v in edges])
    sure = np.array([cos_wide(v)[1] for v in x])
    assert not sure[~(np.abs(x) <= 4.0)].any(), "sure outside [-4, 4] or for NaN"
    wrong, _ = _compare_cos(x)
    assert not wrong.any(), f"cos_wide differs from libm at x={x[wrong].tolist()}"
