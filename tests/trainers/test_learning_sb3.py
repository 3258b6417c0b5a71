"""SB3 learns on vecsim envs through ``SB3VecEnv``, driven by ``vecsim.trainers.train`` (the code
path of ``vecsim train``): PPO balances CartPole, MaskablePPO clears Tetris lines several times
as often as random legal play; once per trainer (SB3 and sb3-contrib). SAC and the other
algorithms are run through the adapter in test_sb3_adapter.py, where every transition is
checked against SB3's own ``DummyVecEnv``. Fixed seeds and one torch thread:
each run is the same every time."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.trainers, pytest.mark.slow]

#: Of the preset's 400k: enough for several times random play's lines on 2 cores.
TETRIS_STEPS = 300_000


def test_ppo_balances_cartpole_with_rl_zoo_settings():
    from stable_baselines3.common.evaluation import evaluate_policy

    from vecsim.trainers import train
    from vecsim.trainers.sb3 import SB3VecEnv

    result = train.train("vecsim/CartPole-v1", "ppo", seed=0, eval_episodes=0, torch_threads=1)
    assert result.summary["num_envs"] == 8 and result.summary["steps"] >= 100_000  # the RL Zoo preset
    env = SB3VecEnv("vecsim/CartPole-v1", 4, seed=10_000)
    try:
        mean, std = evaluate_policy(result.model, env, n_eval_episodes=20, deterministic=True)
    finally:
        env.close()
    assert mean >= 475, (mean, std)


def test_maskable_ppo_clears_more_tetris_lines_than_random_legal_play():
    from vecsim.trainers import train

    episodes = 100
    result = train.train("vecsim/Tetris-v0", "maskable-ppo", steps=TETRIS_STEPS, seed=0, eval_episodes=episodes,
                         torch_threads=1, action_mode="drop", preset="classic")
    trained, random_play = result.summary["evaluation"], result.summary["random_play"]
    assert trained["episodes"] == random_play["episodes"] == episodes
    assert trained["lines_per_episode"] >= max(5 * random_play["lines_per_episode"], 0.2), (trained, random_play)
    assert trained["mean_length"] > random_play["mean_length"]
