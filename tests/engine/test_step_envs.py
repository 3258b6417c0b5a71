"""``Engine.step_envs``: one step of a subset of the envs, the others left as they were (what
``vecsim.engine.opponents`` steps the envs waiting on an opponent with)."""

from __future__ import annotations

import numpy as np
import pytest

import vecsim
from vecsim.engine.reset_mask import ResetMask

CARTPOLE = "vecsim/CartPole-v1"


def outputs(eng):
    return [a.copy() for a in (eng.obs, eng.rewards, eng.terminals, eng.truncations, eng.state.x, eng.rng)]


def test_only_the_masked_envs_step_and_they_step_as_in_a_full_step():
    n = 70  # two words of the mask
    full, part = vecsim.make(CARTPOLE, n), vecsim.make(CARTPOLE, n)
    full.reset(seed=1)
    part.reset(seed=1)
    mask = np.zeros(n, bool)
    mask[[0, 3, 63, 64, 69]] = True
    actions = np.arange(n) % 2
    before = outputs(part)
    part.step_envs(mask, actions)
    full.step_no_reset(actions)
    for a, b, old in zip(outputs(part), outputs(full), before):
        np.testing.assert_array_equal(a[mask], b[mask])
        np.testing.assert_array_equal(a[~mask], old[~mask])
    part.step_envs(ResetMask.from_bools(~mask), actions)  # the rest: every env stepped once in both
    for a, b in zip(outputs(part), outputs(full)):
        np.testing.assert_array_equal(a, b)


def test_a_finished_or_illegal_env_in_the_mask_is_refused_and_nothing_steps():
    eng = vecsim.make("vecsim/BlokusDuo-v0", 3)
    eng.reset(seed=0)
    before = eng.state.cells.copy()
    actions = eng.masks.argmax(axis=1)
    actions[2] = int(np.flatnonzero(~eng.masks[2])[0])
    with pytest.raises(ValueError, match="not a legal action for env 2"):
        eng.step_envs(np.array([True, False, True]), actions)
    np.testing.assert_array_equal(eng.state.cells, before)
    eng.step_envs(np.array([True, False, False]), actions)  # env 2's illegal action is not read
    assert eng.state.cells[0].any() and not eng.state.cells[1:].any()

    cart = vecsim.make(CARTPOLE, 2)
    cart.reset(seed=0)
    while not cart.terminals[0]:
        cart.step_envs(np.array([True, False]), np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="env 0"):
        cart.step_envs(np.array([True, True]), np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="step_envs mask must have shape"):
        cart.step_envs(np.ones(3, bool), np.zeros(2, np.int64))


def test_moves_not_counted_leave_the_step_count_and_never_truncate():
    cart = vecsim.make(CARTPOLE, 2, max_episode_steps=2)
    cart.reset(seed=0)
    both = np.ones(2, bool)
    cart.step_envs(both, np.zeros(2, np.int64))
    assert cart.elapsed.tolist() == [1, 1]
    for _ in range(3):
        cart.step_envs(both, np.ones(2, np.int64), counted=False)
        assert cart.elapsed.tolist() == [1, 1] and not cart.truncations.any()
    cart.step_envs(both, np.zeros(2, np.int64))
    assert cart.elapsed.tolist() == [2, 2] and cart.truncations.all()
    with pytest.raises(TypeError, match="counted must be a bool"):
        cart.step_envs(both, np.zeros(2, np.int64), counted=1)
