"""``vecsim.core.rng``: counter-based per-env streams (SplitMix64 over a key and a counter)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from vecsim.core.rng import MAX_SEED, mix64, next_double, next_u64, randint, seed_env, seed_stream_key, uniform


@njit(cache=True)
def _u64s(rng, i, k):
    out = np.empty(k, dtype=np.uint64)
    for j in range(k):
        out[j] = next_u64(rng, i)
    return out


@njit(cache=True)
def _doubles(rng, i, k):
    out = np.empty(k)
    for j in range(k):
        out[j] = next_double(rng, i)
    return out


@njit(cache=True)
def _uniforms(rng, i, k, low, high):
    out = np.empty(k)
    for j in range(k):
        out[j] = uniform(rng, i, low, high)
    return out


@njit(cache=True)
def _randints(rng, i, k, n):
    out = np.empty(k, dtype=np.int64)
    for j in range(k):
        out[j] = randint(rng, i, n)
    return out


def _stream(seed, num_envs=1, env=0):
    rng = np.zeros((num_envs, 2), dtype=np.uint64)
    seed_env(rng, env, seed)
    return rng


def test_same_seed_gives_the_same_draws():
    assert np.array_equal(_u64s(_stream(42), 0, 1000), _u64s(_stream(42), 0, 1000))


def test_different_seeds_give_different_draws():
    draws = [_u64s(_stream(s), 0, 64) for s in (0, 1, 2, 2**32, MAX_SEED)]
    for a in range(len(draws)):
        for b in range(a + 1, len(draws)):
            assert not np.any(draws[a] == draws[b])


def test_a_stream_does_not_depend_on_the_env_row_it_lives_in():
    rng = np.zeros((6, 2), dtype=np.uint64)
    seed_env(rng, 4, 9)
    assert np.array_equal(_u64s(rng, 4, 50), _u64s(_stream(9), 0, 50))
    assert not rng[:4].any() and not rng[5].any()


def test_draws_depend_only_on_the_key_and_counter():
    rng = _stream(5)
    first = _u64s(rng, 0, 10)
    assert rng[0, 1] == 10
    rng[0, 1] = 3
    assert np.array_equal(_u64s(rng, 0, 7), first[3:])


def test_seeding_restarts_the_counter_and_matches_seed_stream_key():
    rng = _stream(77)
    _u64s(rng, 0, 5)
    seed_env(rng, 0, 77)
    assert rng[0, 1] == 0 and rng[0, 0] == seed_stream_key(77)


def test_mix64_is_a_bijection_on_a_sample():
    ys = np.array([mix64(x) for x in np.arange(2000, dtype=np.uint64)], dtype=np.uint64)
    assert len(np.unique(ys)) == 2000


def test_next_double_is_in_unit_interval_with_53_bits():
    xs = _doubles(_stream(3), 0, 200_000)
    assert xs.min() >= 0.0 and xs.max() < 1.0
    assert abs(xs.mean() - 0.5) < 0.005
    assert np.all(xs * 2.0**53 == np.floor(xs * 2.0**53))


@pytest.mark.parametrize("low, high", [(-0.05, 0.05), (-np.pi, np.pi), (-0.6, -0.4), (2.0, 2.0)])
def test_uniform_stays_in_range(low, high):
    xs = _uniforms(_stream(11), 0, 100_000, low, high)
    assert xs.min() >= low
    assert xs.max() < high or low == high
    if low < high:
        hist, _ = np.histogram(xs, bins=10, range=(low, high))
        assert hist.min() > 9_000 and hist.max() < 11_000


@pytest.mark.parametrize("n", [2, 3, 7, 10])
def test_randint_is_uniform_by_chi_square(n):
    draws = 70_000 * n
    counts = np.bincount(_randints(_stream(2024 + n), 0, draws, n), minlength=n)
    assert counts.shape == (n,)
    expected = draws / n
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    # 99.9% quantiles of chi-square with n - 1 degrees of freedom.
    critical = {1: 10.83, 2: 13.82, 6: 22.46, 9: 27.88}[n - 1]
    assert chi2 < critical, (counts, chi2)


def test_randint_with_a_huge_range_uses_rejection_and_stays_in_range():
    n = 2**62 + 12345  # 2**64 % n is large: the rejection branch is taken often
    xs = _randints(_stream(1), 0, 20_000, n)
    assert xs.min() >= 0 and xs.max() < n
    # An unbiased draw lands in the top quarter of [0, n) about a quarter of the time.
    assert 0.23 < np.mean(xs >= 3 * (n // 4)) < 0.27


def test_randint_of_one_is_always_zero():
    assert not _randints(_stream(0), 0, 100, 1).any()


def test_max_seed_is_accepted():
    rng = _stream(MAX_SEED)
    assert _u64s(rng, 0, 3).shape == (3,)
