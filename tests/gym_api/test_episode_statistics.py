"""``SubEnvEpisodeStatistics`` against its reference: ``SyncVectorEnv`` over single envs each
wrapped in ``gymnasium.wrappers.RecordEpisodeStatistics``, in every autoreset mode.

vecsim's single env of a game follows the same per-env random stream as sub-env ``i`` of its
``VectorEnv`` (seed ``s + i``), so both sides play identical episodes and every info entry
must agree: keys, nesting, masks, dtypes and values (episode times only in where they are set).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers import RecordEpisodeStatistics

import vecsim  # noqa: F401  (registers the vecsim/... ids)
from vecsim.gym import SubEnvEpisodeStatistics

ENV_ID = "vecsim/CartPole-v1"
NUM_ENVS = 5
STEPS = 400


def assert_same_info(got, want, path="info"):
    """Equal nested info dicts; episode times ``t`` are wall-clock, so only their zeros agree."""
    assert list(got) == list(want), f"{path}: keys {list(got)} != {list(want)}"
    for key in want:
        where = f"{path}[{key!r}]"
        if isinstance(want[key], dict):
            assert_same_info(got[key], want[key], where)
        elif key == "final_obs":
            for g, w in zip(got[key], want[key]):
                assert (g is None) == (w is None), where
                if w is not None:
                    np.testing.assert_array_equal(g, w, err_msg=where)
        else:
            assert got[key].dtype == want[key].dtype, f"{where}: {got[key].dtype} != {want[key].dtype}"
            if key == "t":
                np.testing.assert_array_equal(got[key] > 0, want[key] > 0, err_msg=where)
            else:
                np.testing.assert_array_equal(got[key], want[key], err_msg=where)


@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda m: m.name)
def test_infos_equal_sync_vector_env_of_wrapped_sub_envs(mode):
    ours = SubEnvEpisodeStatistics(gym.make_vec(ENV_ID, num_envs=NUM_ENVS, vectorization_mode="vector_entry_point",
                                                autoreset_mode=mode))
    reference = gym.vector.SyncVectorEnv(
        [lambda: RecordEpisodeStatistics(gym.make(ENV_ID)) for _ in range(NUM_ENVS)], autoreset_mode=mode)
    obs, _ = ours.reset(seed=7)
    ref_obs, _ = reference.reset(seed=7)
    np.testing.assert_array_equal(obs, ref_obs)
    rng = np.random.default_rng(7)
    finished = 0
    for _ in range(STEPS):
        actions = rng.integers(0, 2, NUM_ENVS)
        got, want = ours.step(actions), reference.step(actions)
        for g, w in zip(got[:4], want[:4]):
            np.testing.assert_array_equal(g, w)
        assert_same_info(got[4], want[4])
        done = want[2] | want[3]
        finished += int(done.sum())
        if mode == AutoresetMode.DISABLED and done.any():
            obs, info = ours.reset(options={"reset_mask": done.copy()})
            ref_obs, ref_info = reference.reset(options={"reset_mask": done.copy()})
            np.testing.assert_array_equal(obs, ref_obs)
    assert finished > 20  # many episodes ended, in every sub-env position
    assert ours.episode_count == finished
    ours.close()
    reference.close()


def test_same_step_statistics_sit_beside_the_final_observations():
    envs = SubEnvEpisodeStatistics(gym.make_vec(ENV_ID, num_envs=3, vectorization_mode="vector_entry_point",
                                                autoreset_mode=AutoresetMode.SAME_STEP))
    envs.reset(seed=0)
    while True:
        _, _, terminations, truncations, info = envs.step(np.zeros(3, dtype=np.int64))
        if (terminations | truncations).any():
            break
    assert "episode" not in info
    np.testing.assert_array_equal(info["final_info"]["_episode"], info["_final_obs"])
    envs.close()


def test_stats_key_must_be_a_string():
    envs = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="vector_entry_point")
    with pytest.raises(TypeError, match="stats_key"):
        SubEnvEpisodeStatistics(envs, stats_key=3)
    envs.close()
