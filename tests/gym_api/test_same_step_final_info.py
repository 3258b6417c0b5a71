"""SAME_STEP infos of a masked game with events and extra outputs equal a DISABLED env's,
stepped and then reset by hand: Gymnasium's ``final_info`` (the terminal step's info, zeros
for envs that did not finish) and the batch's info after the reset."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import vecsim  # noqa: F401  (registers the ids)

N = 4


def _make(mode, mask_format):
    return gym.make_vec("vecsim/BlokusDuo-v0", N, vectorization_mode="vector_entry_point", autoreset_mode=mode,
                        mask_format=mask_format)


def _assert_obs_equal(a, b):
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])


@pytest.mark.parametrize("mask_format", ["bool", "packed"])
def test_same_step_info_equals_a_disabled_env_stepped_then_reset(mask_format):
    same, manual = _make("same_step", mask_format), _make("disabled", mask_format)
    obs_s, info_s = same.reset(seed=3)
    obs_m, info_m = manual.reset(seed=3)
    rng = np.random.default_rng(0)
    finished = 0
    for _ in range(90):
        masks = same.unwrapped.engine.action_masks()
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        obs_s, rew_s, term_s, trunc_s, info_s = same.step(actions)
        obs_m, rew_m, term_m, trunc_m, info_m = manual.step(actions)
        for a, b in ((rew_s, rew_m), (term_s, term_m), (trunc_s, trunc_m)):
            np.testing.assert_array_equal(a, b)
        done = term_m | trunc_m
        if not done.any():
            _assert_obs_equal(obs_s, obs_m)
            assert info_s.keys() == info_m.keys()
            for key in info_m:
                np.testing.assert_array_equal(info_s[key], info_m[key])
            continue
        finished += int(done.sum())
        final = info_s["final_info"]
        assert final.keys() == info_m.keys()
        for key, value in info_m.items():
            if key.startswith("_"):
                np.testing.assert_array_equal(final[key], done)
                continue
            expected = value.copy()
            expected[~done] = 0
            np.testing.assert_array_equal(final[key], expected)
        np.testing.assert_array_equal(info_s["_final_obs"], done)
        for i in range(N):
            if done[i]:
                _assert_obs_equal(info_s["final_obs"][i], {k: v[i] for k, v in obs_m.items()})
            else:
                assert info_s["final_obs"][i] is None
        reset_obs, reset_info = manual.reset(options={"reset_mask": done})
        _assert_obs_equal(obs_s, reset_obs)
        for key, value in info_m.items():  # the reset envs' rows from the reset, the others' from the step
            if key.startswith("_"):
                assert info_s[key].all()
                continue
            expected = value.copy()
            expected[done] = reset_info[key][done]
            np.testing.assert_array_equal(info_s[key], expected)
        info_m = reset_info
    assert finished >= N  # every env finished a game at least once
    same.close()
    manual.close()
