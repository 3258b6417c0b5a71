"""vecsim.trainers.sb3.SB3VecEnv against the real Stable-Baselines3 and sb3-contrib.

The reference is SB3's own ``DummyVecEnv`` of ``Monitor``-wrapped vecsim single envs, seeded
the same way: env ``i`` of both gets seed ``s + i`` and the same random stream, so every
observation, reward, done and info must be equal, step by step.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from stable_baselines3 import A2C, DQN, PPO, SAC
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecFrameStack, VecMonitor, VecNormalize

from learning import torch_threads
from readme import run_readme_snippet
from vecsim.trainers.sb3 import SB3VecEnv

pytestmark = pytest.mark.trainers

TETRIS = {"action_mode": "drop", "preset": "classic"}
BLOKUS_DUO = {"mode": "single", "opponent": "random"}
GAMES = [("vecsim/CartPole-v1", {}), ("vecsim/Pendulum-v1", {}), ("vecsim/Tetris-v0", TETRIS),
         ("vecsim/BlokusDuo-v0", BLOKUS_DUO)]


def same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    return np.array_equal(a, b)


def random_actions(venv, rng):
    space = venv.action_space
    if isinstance(space, gym.spaces.Box):
        return rng.uniform(space.low, space.high, (venv.num_envs,) + space.shape).astype(np.float32)
    masks = get_action_masks(venv)
    return (rng.random(masks.shape) * masks).argmax(axis=1)  # SB3 hands over int64 actions


@pytest.mark.parametrize("env_id, kwargs", GAMES, ids=[g for g, _ in GAMES])
def test_steps_equal_sb3s_dummy_vec_env_of_monitored_single_envs(env_id, kwargs):
    n, steps = 4, 400 if "Pendulum" in env_id else 250
    ours = SB3VecEnv(env_id, n, seed=3, **kwargs)
    ref = DummyVecEnv([lambda: Monitor(gym.make(env_id, **kwargs)) for _ in range(n)])
    ref.seed(3)
    assert isinstance(ours, VecEnv) and ours.num_envs == n
    assert ours.observation_space == ref.observation_space and ours.action_space == ref.action_space
    assert same(ours.reset(), ref.reset())
    assert all(same(a, b) for a, b in zip(ours.reset_infos, ref.reset_infos))
    rng = np.random.default_rng(0)
    finished = 0
    for t in range(steps):
        actions = random_actions(ours, rng)
        if "Tetris" in env_id or "Blokus" in env_id:
            assert np.array_equal(get_action_masks(ours), get_action_masks(ref))
        obs, rewards, dones, infos = ours.step(actions)
        r_obs, r_rewards, r_dones, r_infos = ref.step(actions)
        assert same(obs, r_obs), t
        assert rewards.dtype == r_rewards.dtype == np.float32 and np.array_equal(rewards, r_rewards), t
        assert dones.dtype == np.bool_ and np.array_equal(dones, r_dones), t
        for i in range(n):
            assert set(infos[i]) <= set(r_infos[i]) | {"episode"}, (t, i)
            for key in set(infos[i]) - {"episode", "terminal_observation"}:  # events, final scores, ...
                assert same(infos[i][key], r_infos[i][key]), (t, i, key)
            if not dones[i]:
                continue
            finished += 1
            assert same(infos[i]["terminal_observation"], r_infos[i]["terminal_observation"])
            assert infos[i]["TimeLimit.truncated"] == r_infos[i]["TimeLimit.truncated"]
            ep, r_ep = infos[i]["episode"], r_infos[i]["episode"]
            assert ep["l"] == r_ep["l"] and ep["r"] == pytest.approx(r_ep["r"], abs=1e-4)
            assert same(ours.reset_infos[i], ref.reset_infos[i])
    assert finished >= 3  # episodes ended, by termination or by the time limit
    ours.close()


def test_each_step_returns_new_arrays():
    venv = SB3VecEnv("vecsim/CartPole-v1", 8, seed=0)
    first = venv.reset()
    kept, copies = [first], [first.copy()]
    for _ in range(60):
        obs, rewards, dones, _ = venv.step(np.zeros(8, dtype=np.int64))
        assert obs.flags.writeable and rewards.flags.writeable and dones.flags.writeable
        kept.append(obs)
        copies.append(obs.copy())
    assert all(np.array_equal(a, b) for a, b in zip(kept, copies))  # nothing overwritten later
    assert len({id(a) for a in kept}) == len(kept)


def test_terminal_observation_is_the_last_state_and_obs_the_next_episodes_first():
    venv = SB3VecEnv("vecsim/CartPole-v1", 2, seed=7)
    obs = venv.reset()
    for _ in range(200):  # always pushing right: the pole falls within a few dozen steps
        prev = obs
        obs, _, dones, infos = venv.step(np.ones(2, dtype=np.int64))
        if dones[0]:
            break
    terminal = infos[0]["terminal_observation"]
    assert not infos[0]["TimeLimit.truncated"]
    assert abs(terminal[2]) > 0.2095 or abs(terminal[0]) > 2.4  # beyond a termination bound
    assert not np.array_equal(terminal, obs[0]) and np.all(np.abs(obs[0]) <= 0.05)  # a fresh start
    assert not np.array_equal(terminal, prev[0])


def test_time_limit_truncation_is_flagged():
    venv = SB3VecEnv("vecsim/Pendulum-v1", 2, seed=0, max_episode_steps=10)
    venv.reset()
    for t in range(10):
        _, _, dones, infos = venv.step(np.zeros((2, 1), dtype=np.float32))
    assert dones.all() and all(info["TimeLimit.truncated"] for info in infos)
    assert [info["episode"]["l"] for info in infos] == [10, 10]


def test_seed_and_options_apply_at_the_next_reset():
    a, b = SB3VecEnv("vecsim/CartPole-v1", 4), SB3VecEnv("vecsim/CartPole-v1", 4)
    assert a.seed(11) == [11, 12, 13, 14]
    b.seed(11)
    first = a.reset()
    assert np.array_equal(first, b.reset())
    a.step(np.zeros(4, dtype=np.int64))
    assert not np.array_equal(a.reset(), first)  # the seeds were used once, then streams continue
    a.seed(11)
    assert np.array_equal(a.reset(), first)
    single = gym.make("vecsim/CartPole-v1")
    assert np.array_equal(first[2], single.reset(seed=13)[0])
    a.set_options({})
    a.reset()
    with pytest.raises(ValueError, match="different options per env"):
        a.set_options([{"x": 1}, {}, {}, {}])
        a.reset()
    with pytest.raises(ValueError, match="4 dicts"):
        a.set_options([{}])
    with pytest.raises(ValueError, match="reset_mask"):
        a.set_options({"reset_mask": np.ones(4, dtype=bool)})
    with pytest.raises(TypeError, match="seed"):
        a.seed(1.5)
    with pytest.raises(ValueError, match="seed must be in"):
        SB3VecEnv("vecsim/CartPole-v1", 2, seed=-1)


def test_masks_after_a_done_are_the_new_episodes():
    venv = SB3VecEnv("vecsim/Tetris-v0", 16, seed=0, **TETRIS)
    assert is_masking_supported(venv) and venv.has_attr("action_masks")
    venv.reset()
    rng = np.random.default_rng(1)
    seen = 0
    for _ in range(400):
        masks = get_action_masks(venv)
        assert masks.shape == (16, 40) and masks.dtype == np.bool_
        obs, _, dones, infos = venv.step((rng.random(masks.shape) * masks).argmax(axis=1))
        after = get_action_masks(venv)
        for i in np.flatnonzero(dones):
            seen += 1
            # The mask is the new game's (empty board), not the finished game's.
            assert obs["board"][i].sum() == 0 < infos[i]["terminal_observation"]["board"].sum()
            assert np.array_equal(after[i], venv.reset_infos[i]["action_mask"]) and after[i].sum() >= 30
            assert infos[i]["episode"]["pieces"] >= 1 and "lines" in infos[i]["episode"]
    assert seen >= 2
    assert venv.env_method("action_masks", indices=[3])[0].shape == (40,)
    assert not SB3VecEnv("vecsim/Pendulum-v1", 2).has_attr("action_masks")


def test_mask_rows_a_caller_holds_are_never_overwritten():
    """env_method("action_masks") reuses its array only once every row it returned is gone."""
    venv = SB3VecEnv("vecsim/Tetris-v0", 8, seed=0, **TETRIS)
    venv.reset()
    rng = np.random.default_rng(2)
    held = []
    for t in range(30):
        rows = venv.env_method("action_masks")
        if t % 3 == 0:
            held.append((rows[t % 8], rows[t % 8].copy()))  # one row kept, the others dropped
        stacked = np.stack(rows)
        del rows
        venv.step((rng.random(stacked.shape) * stacked).argmax(axis=1))
    assert any(not np.array_equal(a, held[0][1]) for a, _ in held)  # the masks did change meanwhile
    for row, values in held:
        np.testing.assert_array_equal(row, values)
    np.testing.assert_array_equal(np.stack(venv.env_method("action_masks")), venv.engine.masks)


def test_bad_input_raises_in_the_adapters_words():
    venv = SB3VecEnv("vecsim/CartPole-v1", 4, seed=0)
    with pytest.raises(RuntimeError, match="reset"):
        venv.step(np.zeros(4, dtype=np.int64))
    venv.reset()
    with pytest.raises(ValueError):
        venv.step(np.full(4, 2, dtype=np.int64))  # CartPole has actions 0 and 1
    with pytest.raises(ValueError):
        venv.step(np.zeros(5, dtype=np.int64))
    venv.step(np.zeros(4, dtype=np.int64))  # the env is unharmed
    with pytest.raises(AttributeError, match="gravityy"):
        venv.get_attr("gravityy")
    assert venv.get_attr("gravity", indices=[1]) == [pytest.approx(9.8)]
    assert venv.get_attr("render_mode") == [None] * 4
    with pytest.raises(AttributeError, match="cannot set"):
        venv.set_attr("gravity", 3.0)
    with pytest.raises(AttributeError, match="no method 'foo'"):
        venv.env_method("foo")
    with pytest.raises(IndexError):
        venv.get_attr("render_mode", indices=[4])
    with pytest.raises(TypeError, match="autoreset_mode"):
        SB3VecEnv("vecsim/CartPole-v1", 2, autoreset_mode="NextStep")
    with pytest.raises(ValueError, match="vecsim env id"):
        SB3VecEnv("ALE/Pong-v5", 2)
    with pytest.raises(RuntimeError, match="step_async"):
        venv.step_wait()
    assert venv.env_is_wrapped(Monitor) == [True] * 4 and venv.env_is_wrapped(gym.wrappers.TimeLimit) == [False] * 4
    assert SB3VecEnv("vecsim/CartPole-v1", 2, monitor=False).env_is_wrapped(Monitor) == [False] * 2
    with pytest.raises(TypeError, match="monitor"):
        SB3VecEnv("vecsim/CartPole-v1", 2, monitor="yes")


def test_wrappers_on_top():
    venv = VecNormalize(VecMonitor(SB3VecEnv("vecsim/CartPole-v1", 4, seed=0, monitor=False)), gamma=0.99)
    obs = venv.reset()
    episodes = 0
    for _ in range(100):
        obs, rewards, dones, infos = venv.step(np.ones(4, dtype=np.int64))
        for i in np.flatnonzero(dones):
            episodes += 1
            raw = venv.unnormalize_obs(infos[i]["terminal_observation"])
            assert abs(raw[2]) > 0.2095 or abs(raw[0]) > 2.4  # normalised, and still the real last state
            assert infos[i]["episode"]["l"] >= 8
    assert episodes >= 4 and np.abs(obs).max() <= 10
    stacked = VecFrameStack(SB3VecEnv("vecsim/Tetris-v0", 4, seed=0, **TETRIS), n_stack=2)
    obs = stacked.reset()
    assert obs["features"].shape == (4, 34) and obs["board"].shape == (4, 24, 20)
    for _ in range(300):
        obs, _, dones, infos = stacked.step(get_action_masks(stacked).argmax(axis=1))
        if dones.any():
            i = int(np.flatnonzero(dones)[0])
            assert infos[i]["terminal_observation"]["features"].shape == (34,)
            break
    else:
        pytest.fail("no Tetris game ended in 300 hard drops")


@pytest.mark.slow
def test_sb3_algorithms_learn_a_few_updates():
    """PPO, A2C, DQN and SAC run through the adapter as they are (that PPO and MaskablePPO learn
    is held by notebooks/02_training.ipynb and 03_blokus.ipynb; MaskablePPO on Tetris, whose
    default invalid_action="raise" would raise at an illegal move, in the README's snippet below)."""
    cart = SB3VecEnv("vecsim/CartPole-v1", 8, seed=0)
    with torch_threads(1):  # beside another worker, torch's default two threads take several times longer
        PPO("MlpPolicy", cart, n_steps=32, batch_size=64, seed=0, device="cpu").learn(512)
        A2C("MlpPolicy", cart, seed=0, device="cpu").learn(512)
        DQN("MlpPolicy", SB3VecEnv("vecsim/CartPole-v1", 4, seed=0), learning_starts=64, seed=0,
            device="cpu").learn(256)
        SAC("MlpPolicy", SB3VecEnv("vecsim/Pendulum-v1", 2, seed=0), learning_starts=64, seed=0,
            device="cpu").learn(200)
        returns, _ = evaluate_policy(PPO("MlpPolicy", cart, seed=0, device="cpu"), cart, n_eval_episodes=8,
                                     return_episode_rewards=True)
    assert len(returns) == 8 and min(returns) >= 8  # episodes counted from the adapter's Monitor info


@pytest.mark.slow
def test_the_readmes_sb3_snippet_trains():
    with torch_threads(1):  # the test's choice (a worker shares the machine); the snippet leaves torch's own
        names = run_readme_snippet("sb3")
    model, tetris = names["model"], names["tetris"]
    assert names["model"].num_timesteps >= 4_096 and len(model.ep_info_buffer) > 0
    assert all(set(ep) >= {"r", "l", "lines"} for ep in model.ep_info_buffer)  # Monitor's, plus events
    assert len(names["venv"].reset_infos) == 8 and tetris.num_envs == 8
