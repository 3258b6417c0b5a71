"""A CleanRL-style PPO (``cleanrl_style_ppo.py``, which reads ``infos`` as CleanRL's Gymnasium
1.x ``ppo.py`` does) on the README's vecsim env: ``SubEnvEpisodeStatistics`` around a
``SAME_STEP`` vector env is all the script needs."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from cleanrl_style_ppo import PPOConfig, train
from learning import run_readme_snippet, torch_threads

pytestmark = pytest.mark.trainers

TOTAL_TIMESTEPS = 4096  # 8 iterations of 4 envs x 128 steps


@pytest.fixture(scope="module")
def run():
    envs = run_readme_snippet("cleanrl")["envs"]
    with torch_threads(1):
        result = train(envs, PPOConfig(total_timesteps=TOTAL_TIMESTEPS, seed=1))
    yield result
    envs.close()


def episodes_from_rewards(rewards: np.ndarray, dones: np.ndarray) -> list[tuple[int, int, float, int]]:
    """``(global_step, env, return, length)`` of each finished episode, from the per-step
    rewards and done flags alone, in the script's logging order."""
    num_envs = rewards.shape[1]
    returns, lengths, found = np.zeros(num_envs), np.zeros(num_envs, dtype=int), []
    for t, (step_rewards, step_done) in enumerate(zip(rewards, dones)):
        returns += step_rewards
        lengths += 1
        for i in np.flatnonzero(step_done):
            found.append(((t + 1) * num_envs, int(i), float(returns[i]), int(lengths[i])))
        returns[step_done], lengths[step_done] = 0.0, 0
    return found


def test_the_episodes_the_script_logs_are_those_the_rewards_add_up_to(run):
    assert run.episodes == episodes_from_rewards(run.rewards, run.dones)
    assert len(run.episodes) > 100


def test_the_script_logs_every_episode_at_the_step_that_ends_it(run):
    assert len(run.episodes) == run.dones.sum()
    assert {step for step, *_ in run.episodes} == {(t + 1) * 4 for t in np.flatnonzero(run.dones.any(axis=1))}


def test_the_script_learns_something_in_4096_steps(run):
    returns = [r for _, _, r, _ in run.episodes]
    assert np.mean(returns[-20:]) > np.mean(returns[:20])


def test_gymnasiums_vector_episode_statistics_stop_the_script_with_keyerror_episode():
    # The failure SubEnvEpisodeStatistics exists for: these statistics sit in info["episode"].
    envs = gym.wrappers.vector.RecordEpisodeStatistics(gym.make_vec(
        "vecsim/CartPole-v1", num_envs=4, vectorization_mode="vector_entry_point",
        autoreset_mode=AutoresetMode.SAME_STEP))
    with torch_threads(1), pytest.raises(KeyError, match="_episode"):
        train(envs, PPOConfig(total_timesteps=512, seed=1))
    envs.close()
