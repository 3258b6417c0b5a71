"""RLlib's env runners on vecsim vector envs: the README's config, as written there, learns
CartPole with PPO on two env runners of a local Ray cluster; a runner's episodes are exactly
the single env's under the seeds RLlib gives."""

from __future__ import annotations

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("ray.rllib")
from ray.rllib.algorithms.ppo import PPOConfig  # noqa: E402
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner  # noqa: E402

from ray_cluster import local_ray  # noqa: E402
from readme import run_readme_snippet  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    with local_ray() as r:
        yield r


def test_a_runner_steps_one_vecsim_vector_env_and_plays_the_single_envs_episodes():
    seed, worker_index, num_envs = 10, 2, 4
    config = (PPOConfig().environment("vecsim:vecsim/CartPole-v1")
              .env_runners(num_envs_per_env_runner=num_envs, gym_env_vectorize_mode="vector_entry_point")
              .debugging(seed=seed))
    runner = SingleAgentEnvRunner(config=config, worker_index=worker_index)
    try:
        from vecsim.gym.vector import VecsimVectorEnv

        assert isinstance(runner.env.unwrapped, VecsimVectorEnv)
        assert runner.env.unwrapped.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
        episodes = runner.sample(num_timesteps=300, random_actions=True)
    finally:
        runner.stop()
    # Runner w resets its env i with seed + w + i (RLlib's seed per runner, Gymnasium's per env).
    single = gym.make("vecsim/CartPole-v1")
    starts = {single.reset(seed=seed + worker_index + i)[0].tobytes(): seed + worker_index + i
              for i in range(num_envs)}
    firsts = [e for e in episodes if e.get_observations(0).tobytes() in starts]
    assert len(firsts) == num_envs
    for episode in firsts:  # replayed in the single env: the same steps, no reset in between
        obs, _ = single.reset(seed=starts[episode.get_observations(0).tobytes()])
        for t, action in enumerate(episode.get_actions()):
            obs, reward, terminated, truncated, _ = single.step(int(action))
            np.testing.assert_array_equal(obs, episode.get_observations(t + 1))
            assert reward == episode.get_rewards(t)
        assert episode.is_terminated == terminated and episode.is_truncated == truncated


def test_the_vecsim_prefix_finds_the_ids_in_a_process_that_never_imported_vecsim():
    code = ("import sys, gymnasium as gym; assert 'vecsim' not in sys.modules; "
            "env = gym.make_vec('vecsim:vecsim/CartPole-v1', num_envs=3, vectorization_mode='vector_entry_point'); "
            "print(type(env).__name__, env.num_envs)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["VecsimVectorEnv", "3"]


@pytest.mark.slow
def test_ppo_on_two_env_runners_reaches_450(cluster):
    names = run_readme_snippet("rllib")  # docs/ray.md's config, as written there
    assert names["result"]["env_runners"]["episode_return_mean"] >= 450
