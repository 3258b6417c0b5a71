"""TorchRL's PPO pieces (``Collector``, ``GAE``, ``ClipPPOLoss``) on the README's vecsim env:
vecsim's ``VectorEnv`` in ``DISABLED`` autoreset mode, wrapped in ``GymWrapper``.

With ``DISABLED`` the collector resets only the finished envs (``reset_mask``) between steps, so
``("next", "observation")`` at a done step is the true terminal observation and the next
frame of that env starts a new episode. These tests check the batches against CartPole's physics
and against a replay of the collected actions.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from learning import RESET_BOUND, beyond_limits, run_readme_snippet, torch_threads, train_torchrl

pytestmark = pytest.mark.trainers

BATCHES = 4  # collector batches of 16 envs x 32 frames, each followed by a PPO update


@pytest.fixture(scope="module")
def run():
    env = run_readme_snippet("torchrl")["env"]
    with torch_threads(1):
        result = train_torchrl(env, BATCHES, seed=0, keep_batches=BATCHES)
    yield result
    env.close()


def frames(run, *key):
    """``key`` of every kept batch, concatenated along time: ``(16, BATCHES * 32, ...)``."""
    return np.concatenate([b.get(key if len(key) > 1 else key[0]).numpy() for b in run.batches], axis=1)


def test_batches_are_num_envs_by_frames(run):
    for batch in run.batches:
        assert tuple(batch.batch_size) == (16, 32)
        assert tuple(batch["observation"].shape) == (16, 32, 4)
        assert tuple(batch["next", "observation"].shape) == (16, 32, 4)
        assert tuple(batch["next", "reward"].shape) == (16, 32, 1)


def test_next_observation_at_a_done_step_is_the_true_terminal_one(run):
    terminated = frames(run, "next", "terminated")[..., 0]
    assert terminated.sum() > 50
    assert beyond_limits(frames(run, "next", "observation")[terminated]).all()


def test_the_frame_after_a_done_step_starts_a_new_episode(run):
    obs, next_obs = frames(run, "observation"), frames(run, "next", "observation")
    done = frames(run, "next", "done")[..., 0]
    traj = frames(run, "collector", "traj_ids")
    after_done = done[:, :-1]
    assert (np.abs(obs[:, 1:][after_done]) <= RESET_BOUND).all()
    assert (traj[:, 1:][after_done] != traj[:, :-1][after_done]).all()
    # Within an episode the next frame starts where the last one ended, in the same trajectory.
    np.testing.assert_array_equal(obs[:, 1:][~after_done], next_obs[:, :-1][~after_done])
    assert (traj[:, 1:][~after_done] == traj[:, :-1][~after_done]).all()


def test_every_frame_is_a_real_step(run):
    assert (frames(run, "next", "reward") == 1.0).all()


def test_the_collected_frames_replay_on_a_fresh_env(run):
    actions = frames(run, "action").argmax(-1)  # one-hot -> index
    done = frames(run, "next", "done")[..., 0]
    replay = gym.make_vec("vecsim/CartPole-v1", num_envs=16, vectorization_mode="vector_entry_point",
                          autoreset_mode=AutoresetMode.DISABLED)
    replay.reset(seed=0)  # env.set_seed(0) resets with the seed,
    obs, _ = replay.reset()  # then the collector resets again, each env continuing its stream
    for t in range(actions.shape[1]):
        np.testing.assert_array_equal(frames(run, "observation")[:, t], obs)
        obs, rewards, terminations, truncations, _ = replay.step(actions[:, t])
        np.testing.assert_array_equal(frames(run, "next", "observation")[:, t], obs)
        np.testing.assert_array_equal(terminations | truncations, done[:, t])
        if done[:, t].any():
            obs, _ = replay.reset(options={"reset_mask": done[:, t].copy()})
    replay.close()


def test_the_returns_read_from_batches_are_the_episode_lengths(run):
    traj, done = frames(run, "collector", "traj_ids"), frames(run, "next", "done")[..., 0]
    # Every reward is 1, so a return is the number of frames of its trajectory.
    ended = [int((traj == traj[i, t]).sum()) for t in range(traj.shape[1]) for i in np.flatnonzero(done[:, t])]
    assert run.returns[:len(ended)] == ended


def test_gym_wrapper_refuses_next_step_autoreset():
    from torchrl.envs import GymWrapper

    envs = gym.make_vec("vecsim/CartPole-v1", num_envs=4, vectorization_mode="vector_entry_point")
    with pytest.raises(RuntimeError, match="SAME_STEP or DISABLED"):
        GymWrapper(envs)
    envs.close()
