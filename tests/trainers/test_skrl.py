"""skrl's PPO (its real agent, memory and ``SequentialTrainer``) on the README's vecsim env.

skrl's Gymnasium wrapper resets a vector env once and then takes whatever observation ``step``
returns as the next one; it never reads ``info["final_obs"]``. With ``SAME_STEP`` autoreset a
finished env's next observation is the first of its new episode and the done flag cuts the
episode at the right transition: every transition skrl stores is a real one. These tests check
what skrl saw against the physics of CartPole and against a replay of its actions.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from learning import RESET_BOUND, beyond_limits, run_readme_snippet, torch_threads, train_skrl

pytestmark = pytest.mark.trainers

TIMESTEPS = 256  # trainer steps of all 16 envs: 4096 env steps, 8 PPO updates


def stacked(agent, key):
    return np.stack([s[key].numpy() for s in agent.seen])


@pytest.fixture(scope="module")
def trained():
    with torch_threads(1):
        env = run_readme_snippet("skrl")["env"]
        agent, _ = train_skrl(env, TIMESTEPS, seed=0)
    yield env, agent
    env.close()


def test_the_readme_env_is_vecsims_in_same_step_mode(trained):
    env, _ = trained
    assert env.num_envs == 16
    assert env._env.unwrapped.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert type(env._env.unwrapped).__name__ == "VecsimVectorEnv"


def test_skrl_saw_exactly_what_the_env_returns_for_its_actions(trained):
    _, agent = trained
    actions = stacked(agent, "actions")[..., 0].astype(np.int64)  # (T, 16)
    replay = gym.make_vec("vecsim/CartPole-v1", num_envs=16, vectorization_mode="vector_entry_point",
                          autoreset_mode=AutoresetMode.SAME_STEP)
    obs, _ = replay.reset(seed=0)  # skrl's wrapper resets with its seed, set_seed(0)
    np.testing.assert_array_equal(stacked(agent, "observations")[0], obs)
    for t, step_actions in enumerate(actions):
        obs, rewards, terminations, truncations, _ = replay.step(step_actions)
        np.testing.assert_array_equal(agent.seen[t]["next_observations"].numpy(), obs)
        np.testing.assert_array_equal(agent.seen[t]["rewards"].numpy()[:, 0], rewards)
        np.testing.assert_array_equal(agent.seen[t]["terminated"].numpy()[:, 0], terminations)
        np.testing.assert_array_equal(agent.seen[t]["truncated"].numpy()[:, 0], truncations)
    replay.close()


def test_every_stored_transition_is_a_real_step(trained):
    _, agent = trained
    # CartPole pays 1 for every step it plays; a reset step (NEXT_STEP mode) would pay 0.
    assert (stacked(agent, "rewards") == 1.0).all()
    # No transition starts from a terminal state.
    assert not beyond_limits(stacked(agent, "observations")).any()


def test_a_finished_env_continues_from_a_fresh_start_and_its_terminal_state_is_in_info(trained):
    _, agent = trained
    terminated = stacked(agent, "terminated")[..., 0]
    done = terminated | stacked(agent, "truncated")[..., 0]
    assert terminated.sum() > 100
    starts = stacked(agent, "next_observations")[done]
    assert (np.abs(starts) <= RESET_BOUND).all()
    for t, i in zip(*np.nonzero(terminated)):
        assert beyond_limits(agent.seen[t]["final_obs"][i]), (t, i)


def test_skrl_counts_each_episode_return_as_the_rewards_add_up(trained):
    _, agent = trained
    rewards, done = stacked(agent, "rewards")[..., 0], (stacked(agent, "terminated") | stacked(agent, "truncated"))[..., 0]
    expected, running = [], np.zeros(rewards.shape[1])
    for step_rewards, step_done in zip(rewards, done):
        running += step_rewards
        expected += running[step_done].tolist()
        running[step_done] = 0
    assert agent.counted_returns == pytest.approx(expected)
    assert len(expected) == done.sum() > 100


def test_skrls_memory_holds_the_last_rollout_it_saw(trained):
    _, agent = trained
    rollout = agent.seen[-agent.memory.memory_size:]
    np.testing.assert_array_equal(agent.memory.get_tensor_by_name("observations").numpy(),
                                  np.stack([s["observations"].numpy() for s in rollout]))
    np.testing.assert_array_equal(agent.memory.get_tensor_by_name("terminated").numpy(),
                                  np.stack([s["terminated"].numpy() for s in rollout]))


def test_next_step_autoreset_would_store_transitions_from_terminal_states():
    # Why the README asks for SAME_STEP: the same trainer on NEXT_STEP stores, per episode, a
    # step from the terminal state into the next episode that pays 0 and is not marked done.
    from skrl.envs.wrappers.torch import wrap_env

    env = wrap_env(gym.make_vec("vecsim/CartPole-v1", num_envs=16, vectorization_mode="vector_entry_point"),
                   wrapper="gymnasium")
    with torch_threads(1):
        agent, _ = train_skrl(env, 64, seed=0)
    ghosts = beyond_limits(stacked(agent, "observations"))
    assert ghosts.any()
    assert (stacked(agent, "rewards")[ghosts] == 0.0).all()
    assert not (stacked(agent, "terminated") | stacked(agent, "truncated"))[ghosts].any()
    env.close()
