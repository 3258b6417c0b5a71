"""vecsim inside the Gymnasium ecosystem: env_checker, TimeLimit, and the vector wrappers."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import vecsim  # noqa: F401  (registers the ids)
from vecsim.testing import sample_actions

from conftest import lenient

N = 6


def _make_vec(game_id, **kwargs):
    return gym.make_vec(game_id, N, vectorization_mode="vector_entry_point", **kwargs)


def test_single_env_passes_gymnasium_env_checker(game_id):
    # The checker steps with action_space.sample(): a masked game flags illegal actions.
    env = gym.make(game_id, **lenient(game_id))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # infinite Box bounds are Gymnasium's own choice
        check_env(env.unwrapped, skip_render_check=False)
    env.close()


def test_single_env_is_truncated_by_the_registered_time_limit():
    env = gym.make("vecsim/MountainCar-v0")  # random actions never reach the flag in 200 steps
    env.reset(seed=0)
    steps, truncated = 0, False
    while not truncated:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        assert not terminated
        steps += 1
    assert steps == gym.spec("vecsim/MountainCar-v0").max_episode_steps == 200


def test_state_written_through_unwrapped_matches_gymnasium():
    ours, theirs = gym.make("vecsim/CartPole-v1").unwrapped, gym.make("CartPole-v1").unwrapped
    ours.reset(seed=0)
    theirs.reset(seed=0)
    state = np.array([0.3, -0.2, 0.05, 0.4])
    ours.state = state
    theirs.state = state.copy()
    np.testing.assert_array_equal(ours.state, state)
    for action in (1, 0, 0, 1, 1):
        a = ours.step(action)
        b = theirs.step(action)
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1:4] == b[1:4]
    np.testing.assert_array_equal(ours.state, theirs.state)


def test_record_episode_statistics_counts_each_episode(rng):
    envs = gym.wrappers.vector.RecordEpisodeStatistics(_make_vec("vecsim/CartPole-v1"))
    envs.reset(seed=3)
    returns, lengths = np.zeros(N), np.zeros(N, dtype=int)
    seen = 0
    for _ in range(300):
        _, rewards, terms, truncs, info = envs.step(rng.integers(0, 2, N))
        returns += rewards
        lengths += 1
        done = terms | truncs
        if done.any():
            ep = info["episode"]
            np.testing.assert_array_equal(info["_episode"], done)
            np.testing.assert_allclose(ep["r"][done], returns[done])
            np.testing.assert_array_equal(ep["l"][done], lengths[done])
            seen += int(done.sum())
        # NEXT_STEP: the step after an episode's end is the reset step, which earns nothing.
        returns[done] = 0.0
        lengths[done] = -1
    assert seen > 10


def test_normalize_observation_and_reward_wrap_the_vector_env(rng):
    raw = _make_vec("vecsim/Pendulum-v1")
    envs = gym.wrappers.vector.NormalizeReward(gym.wrappers.vector.NormalizeObservation(_make_vec("vecsim/Pendulum-v1")))
    raw.reset(seed=1)
    envs.reset(seed=1)
    for _ in range(400):
        actions = sample_actions(raw.single_action_space, N, rng)
        raw_obs, raw_rewards, *_ = raw.step(actions)
        obs, rewards, *_ = envs.step(actions)
    assert obs.shape == raw_obs.shape and obs.dtype == raw_obs.dtype
    assert not np.allclose(obs, raw_obs)
    # Normalised observations of a long run are roughly centred and scaled.
    assert np.all(np.abs(obs.mean(axis=0)) < 3.0)
    assert np.abs(rewards).mean() < np.abs(raw_rewards).mean()


@pytest.mark.parametrize("box_game", ["vecsim/Pendulum-v1", "vecsim/MountainCarContinuous-v0"])
def test_clip_action_gives_the_same_trajectory_as_clipped_actions(box_game, rng):
    game_id = box_game
    wrapped = gym.wrappers.vector.ClipAction(_make_vec(game_id))
    plain = _make_vec(game_id)
    wrapped.reset(seed=5)
    plain.reset(seed=5)
    space = plain.single_action_space
    for _ in range(50):
        actions = sample_actions(space, N, rng, overshoot=1.0)
        a = wrapped.step(actions)
        b = plain.step(np.clip(actions, space.low, space.high))
        for x, y in zip(a[:4], b[:4]):
            np.testing.assert_array_equal(x, y)


def test_disabled_autoreset_names_the_vector_envs_reset_when_a_finished_env_is_stepped():
    # The engine's remedy is reset_envs; a VectorEnv user resets through reset(options=...).
    envs = gym.make_vec("vecsim/CartPole-v1", num_envs=4, vectorization_mode="vector_entry_point",
                        autoreset_mode=gym.vector.AutoresetMode.DISABLED, max_episode_steps=2)
    envs.reset(seed=0)
    actions = np.zeros(4, dtype=np.int64)
    envs.step(actions)
    envs.step(actions)  # every env truncated
    with pytest.raises(ValueError, match=r'env 0 finished its episode \(terminated=False, truncated=True\); '
                                         r'reset it with reset\(options=\{"reset_mask": mask\}\)') as caught:
        envs.step(actions)
    assert "reset_envs" not in str(caught.value)
    envs.reset(options={"reset_mask": np.ones(4, dtype=bool)})
    envs.step(actions)  # stepping again after the masked reset
    envs.close()


def test_reset_refuses_options_it_would_ignore():
    # Gymnasium's CartPole takes options={"low": ..., "high": ...}; vecsim sets reset ranges as
    # constants (make(..., reset_low=...)), so such options are refused rather than ignored.
    envs = _make_vec("vecsim/CartPole-v1")
    env = gym.make("vecsim/CartPole-v1")
    with pytest.raises(ValueError, match=r"vecsim/CartPole-v1 reset takes only 'reset_mask', but got options "
                                         r"with 'high', 'low'; .*make\(\.\.\., name=value\)"):
        envs.reset(seed=0, options={"low": -0.1, "high": 0.1})
    with pytest.raises(ValueError, match=r"vecsim/CartPole-v1 reset takes no options, but got options with 'low'"):
        env.reset(seed=0, options={"low": -0.1})
    with pytest.raises(TypeError, match="options must be a dict or None, but got list"):
        env.reset(options=["low"])
    # None and an empty dict are what Gymnasium's wrappers pass: accepted, and the same reset.
    a, _ = envs.reset(seed=3, options={})
    b, _ = envs.reset(seed=3)
    np.testing.assert_array_equal(a, b)
    assert env.reset(seed=3, options={})[0] is not None
    envs.close()
    env.close()
