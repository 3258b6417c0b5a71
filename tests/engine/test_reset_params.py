"""Per-env reset specs: ``reset_envs(mask, seed, **params)`` sets the masked envs' constants,
checked as the constructor checks them, and those envs then play as in an engine built with
them."""

from __future__ import annotations

import numpy as np
import pytest

import vecsim

N = 6
MASK = np.array([True, False, True, False, False, True])


@pytest.fixture(scope="module")
def cartpole():
    return vecsim.make("CartPole-v1", N, parallel=False)


def _play(eng, steps=40):
    """Observations of ``steps`` NO_RESET steps of constant pushes, finished envs reset."""
    out = []
    for _ in range(steps):
        result = eng.step_no_reset(np.ones(N, np.int64))
        out.append(result.observations.copy())
        eng.reset_envs(result.to_reset_mask())
    return np.array(out)


def test_masked_envs_play_as_an_engine_built_with_their_constants(cartpole):
    gravity = np.array([3.0, 99.0, 15.0, 99.0, 99.0, 1.5])  # unmasked entries are not read
    cartpole.reset(seed=11)
    cartpole.reset_envs(MASK, seed=11, gravity=gravity, length=0.75)
    expected_gravity = np.where(MASK, gravity, 9.8)
    assert np.array_equal(cartpole.params.gravity, expected_gravity)
    assert np.array_equal(cartpole.params.length, np.where(MASK, 0.75, 0.5))
    ref = vecsim.make("CartPole-v1", N, parallel=False, gravity=expected_gravity,
                      length=np.where(MASK, 0.75, 0.5))
    ref.reset(seed=11)
    assert np.array_equal(cartpole.obs, ref.obs)
    assert np.array_equal(_play(cartpole), _play(ref))
    cartpole.reset_envs(np.ones(N, bool), gravity=9.8, length=0.5)  # back to the defaults for the next test


def test_a_scalar_batch_switches_to_per_env_constants_once_they_differ():
    eng = vecsim.make("CartPole-v1", N, parallel=False)
    eng.reset(seed=0)
    P = eng.kernel_params
    eng.reset_envs(np.ones(N, bool), masspole=0.2)  # the same for every env: scalar kernels still serve
    assert eng.kernel_params is P and P.ndim == 1 and P[2] == 0.2 and np.all(eng.params.masspole == 0.2)
    eng.reset_envs(MASK, masspole=0.3)
    assert eng.kernel_params.ndim == 2 and np.array_equal(eng.kernel_params[2], np.where(MASK, 0.3, 0.2))
    eng.step(np.zeros(N, np.int64))  # the per-env kernels run
    per_env = eng.kernel_params
    eng.reset_envs(~MASK, masspole=0.4)
    assert eng.kernel_params is per_env and np.array_equal(per_env[2], np.where(MASK, 0.3, 0.4))


def test_bad_reset_specs_are_refused_as_the_constructor_refuses_them(cartpole):
    cartpole.reset(seed=1)
    obs, params = cartpole.obs.copy(), cartpole.params
    with pytest.raises(ValueError, match="CartPole masspole must be > 0"):
        cartpole.reset_envs(MASK, masspole=np.where(MASK, -1.0, 0.1))
    with pytest.raises(TypeError, match=r"unknown parameter\(s\) \['gravityy'\]"):
        cartpole.reset_envs(MASK, gravityy=1.0)
    with pytest.raises(ValueError, match=r"parameter gravity per env must have shape \(6,\), but got shape \(3,\)"):
        cartpole.reset_envs(MASK, gravity=np.ones(3))
    with pytest.raises(TypeError, match="parameter gravity must be a number or an array of 6 numbers"):
        cartpole.reset_envs(MASK, gravity="heavy")
    with pytest.raises(ValueError, match="parameter gravity must be finite, but got gravity=nan at env 0"):
        cartpole.reset_envs(MASK, gravity=np.full(N, np.nan))
    with pytest.raises(ValueError, match=r"seed must be in"):
        cartpole.reset_envs(MASK, seed=-1, gravity=5.0)
    assert np.array_equal(cartpole.obs, obs) and cartpole.params == params  # nothing was reset or set


def test_a_masked_nan_is_ignored_where_the_env_is_not_reset(cartpole):
    cartpole.reset(seed=1)
    cartpole.reset_envs(MASK, gravity=np.where(MASK, 9.8, np.nan))
    assert np.all(cartpole.params.gravity == 9.8)


def test_a_constant_that_shapes_the_spaces_cannot_change_at_a_reset():
    eng = vecsim.make("Tetris-v0", 4, parallel=False)
    eng.reset(seed=0)
    with pytest.raises(ValueError, match="Tetris parameter queue shapes the spaces or the compiled kernels and "
                                         "cannot change at a reset, but env 0 would go from 5.0 to 3.0"):
        eng.reset_envs(np.ones(4, bool), queue=3)
    eng.reset_envs(np.array([True, False, False, True]), scoring="lines", queue=5)  # named choices, same queue
    assert np.array_equal(eng.params.scoring, [0.0, 1.0, 1.0, 0.0])
