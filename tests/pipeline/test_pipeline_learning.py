"""The example agents learn: CartPole to Gymnasium's threshold of 475, Tetris better than random play.

Seeds are fixed; the synchronous runs are deterministic, the pipelined one depends on which
parameter versions the actors happened to take (the margin covers that: four seeds reached a
greedy return of 500). BLAS runs one thread here, as docs/pipeline.md advises where the loop's
threads fill the cores (OpenBLAS's own threads made these runs 4-10x slower on a busy 2-core
machine); that changes the speed only. Each takes seconds to a minute on 2 cores."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

import vecsim
from vecsim.pipeline import Pipeline
from readme import run_readme_snippet
from vecsim.pipeline.agents import PPO, Reinforce, evaluate

CARTPOLE = "vecsim/CartPole-v1"
THRESHOLD = 475.0  # Gymnasium's reward_threshold for CartPole-v1
TETRIS = "vecsim/Tetris-v0"
TETRIS_DROP = {"action_mode": "drop", "preset": "classic"}

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def one_blas_thread():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        yield


def train(agent, env_id, num_envs, steps_per_cycle, cycles, mode, env_kwargs=None):
    params, opt_state = agent.init()
    with Pipeline(env_id, num_envs, agent, params=params, opt_state=opt_state, steps_per_cycle=steps_per_cycle,
                  mode=mode, seed=agent.seed, env_kwargs=env_kwargs) as loop:
        metrics = loop.run(cycles)
    return loop.params, metrics


def test_reinforce_with_a_baseline_reaches_475_on_cartpole():
    agent = Reinforce.for_env(CARTPOLE, lr=1e-3, lr_decay_updates=400, seed=2)
    params, metrics = train(agent, CARTPOLE, 64, 64, 400, "synchronous")
    returns, _ = evaluate(agent, params, CARTPOLE, 32)
    assert returns.mean() >= THRESHOLD, returns
    early = metrics.episode_returns[metrics.episode_cycles < 20].mean()
    assert early < 100


def test_reinforce_stepping_on_a_quarter_of_each_batch_reaches_475_on_cartpole():
    """The benchmark's balanced learner: a gradient step on a random minibatch of each batch."""
    agent = Reinforce.for_env(CARTPOLE, lr=1e-3, lr_decay_updates=400, seed=2, minibatch_size=1024)
    params, metrics = train(agent, CARTPOLE, 64, 64, 400, "synchronous")
    returns, _ = evaluate(agent, params, CARTPOLE, 32)
    assert returns.mean() >= THRESHOLD, returns
    assert metrics.episode_returns[metrics.episode_cycles < 20].mean() < 100


def test_pipelined_ppo_reaches_475_on_cartpole():
    names = run_readme_snippet("pipeline")  # docs/pipeline.md's example, as written there
    returns, metrics = names["returns"], names["metrics"]
    assert returns.mean() >= THRESHOLD, returns
    assert metrics.episode_returns[metrics.episode_cycles >= 140].mean() >= THRESHOLD


def tetris_scale():
    engine = vecsim.make(TETRIS, 1, **TETRIS_DROP)
    high = spaces.flatten_space(engine.single_observation_space).high
    engine.close()
    return np.where(high > 1, 1 / 16, 1.0).astype(np.float32)  # features and piece ids up to 255, board 0/1


def random_legal_play(episodes=256):
    rng = np.random.default_rng(0)
    with vecsim.EpisodeCollector(TETRIS, 64, 2000, lambda obs, mask: (rng.random(mask.shape) * mask).argmax(axis=1),
                                 seed=10_000, **TETRIS_DROP) as collector:
        batch = collector.request_episodes(episodes)
    return batch.rewards.sum(axis=1), batch.lengths


def test_ppo_with_masks_beats_random_play_in_tetris_drop_mode():
    agent = PPO.for_env(TETRIS, env_kwargs=TETRIS_DROP, obs_scale=tetris_scale(), minibatches=8, lr=5e-4,
                        ent_coef=0.01, seed=0)
    params, _ = train(agent, TETRIS, 64, 32, 300, "synchronous", TETRIS_DROP)
    lines, pieces = evaluate(agent, params, TETRIS, 64, max_steps=2000, env_kwargs=TETRIS_DROP)
    random_lines, random_pieces = random_legal_play()
    assert pieces.mean() > 1.3 * random_pieces.mean()
    assert lines.mean() > random_lines.mean() + 0.2


@pytest.fixture
def one_torch_thread():
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the test is the caller here; vecsim never sets it
    yield torch
    torch.set_num_threads(threads)


def test_pipelined_torch_ppo_reaches_475_on_cartpole(one_torch_thread):
    from vecsim.pipeline.agents.torch_ppo import TorchPPO

    agent = TorchPPO.for_env(CARTPOLE, minibatches=16, lr=1e-3, seed=0)
    params, opt_state = agent.init()
    with Pipeline(CARTPOLE, 16, agent, params=params, opt_state=opt_state, steps_per_cycle=128, seed=0,
                  fixed_lag=1) as loop:  # a fixed lag: the same run every time
        metrics = loop.run(40)  # twice the fewest cycles that reach 475 with this seed: a margin for other CPUs
    returns, _ = evaluate(agent, loop.params, CARTPOLE, 32)
    assert returns.mean() >= THRESHOLD, returns
    assert metrics.episode_returns[metrics.episode_cycles < 10].mean() < 100  # it started from scratch
