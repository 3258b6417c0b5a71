"""A CleanRL-style single-file PPO for Gymnasium 1.x discrete-action vector envs.

Written for the tests after CleanRL's ``ppo.py`` as ported to Gymnasium 1.x (vwxyzjn/cleanrl
PR #516): the same defaults, a ``SAME_STEP`` vector env, and above all the same reading of
``infos`` — episode statistics come only from ``infos["final_info"]["episode"]``, selected by
``infos["final_info"]["_episode"]``, exactly where that script looks (so an env that puts them
anywhere else fails here as it fails there, with ``KeyError: '_episode'``). Everything else
(logging, argument parsing, devices) is left out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn
from torch.distributions.categorical import Categorical


@dataclass
class PPOConfig:
    """CleanRL's ``ppo.py`` defaults (its ``total_timesteps`` is 500_000)."""

    total_timesteps: int = 4096
    learning_rate: float = 2.5e-4
    num_steps: int = 128  # rollout length per env
    anneal_lr: bool = True
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 4
    norm_adv: bool = True
    clip_coef: float = 0.2
    clip_vloss: bool = True
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    seed: int = 1


@dataclass
class PPORun:
    """What the script logged and what it stepped through.

    ``episodes``: ``(global_step, env_index, return, length)`` read from ``infos`` at the step
    that ended each episode, in the script's order. ``rewards`` and ``dones``:
    ``(iterations * num_steps, num_envs)`` arrays of every step, for checking those figures.
    """

    episodes: list = field(default_factory=list)
    rewards: np.ndarray | None = None
    dones: np.ndarray | None = None
    steps_per_second: float = 0.0


def _layer(layer: nn.Linear, std: float = float(np.sqrt(2)), bias: float = 0.0) -> nn.Linear:
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


class ActorCritic(nn.Module):
    """Separate 64-64 tanh actor and critic, orthogonally initialised, as in CleanRL."""

    def __init__(self, obs_dim: int, n_actions: int):
        super().__init__()
        self.critic = nn.Sequential(_layer(nn.Linear(obs_dim, 64)), nn.Tanh(), _layer(nn.Linear(64, 64)), nn.Tanh(),
                                    _layer(nn.Linear(64, 1), std=1.0))
        self.actor = nn.Sequential(_layer(nn.Linear(obs_dim, 64)), nn.Tanh(), _layer(nn.Linear(64, 64)), nn.Tanh(),
                                   _layer(nn.Linear(64, n_actions), std=0.01))

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(obs).squeeze(-1)

    def act(self, obs: torch.Tensor, action: torch.Tensor | None = None):
        dist = Categorical(logits=self.actor(obs))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.value(obs)


def episodes_from_infos(infos: dict) -> list[tuple[int, float, int]]:
    """``(env_index, return, length)`` of the episodes that ended this step, read as CleanRL's
    Gymnasium 1.x ``ppo.py`` reads them."""
    if "final_info" not in infos:
        return []
    over = np.nonzero(infos["final_info"]["_episode"])[0]
    returns = infos["final_info"]["episode"]["r"][over]
    lengths = infos["final_info"]["episode"]["l"][over]
    return [(int(i), float(r), int(n)) for i, r, n in zip(over, returns, lengths)]


def train(envs, config: PPOConfig = PPOConfig()) -> PPORun:
    """Train a PPO agent on ``envs`` (a ``SAME_STEP`` vector env with a ``Discrete`` action
    space); ``config.total_timesteps`` counts steps of all envs together."""
    torch.manual_seed(config.seed)
    shuffle = np.random.default_rng(config.seed)
    num_envs = envs.num_envs
    obs_dim = int(np.prod(envs.single_observation_space.shape))
    agent = ActorCritic(obs_dim, int(envs.single_action_space.n))
    optimizer = torch.optim.Adam(agent.parameters(), lr=config.learning_rate, eps=1e-5)

    t, n = config.num_steps, num_envs
    batch_size = t * n
    minibatch_size = batch_size // config.num_minibatches
    iterations = config.total_timesteps // batch_size
    obs_buf = torch.zeros((t, n, obs_dim))
    actions_buf = torch.zeros((t, n), dtype=torch.long)
    logprobs_buf, rewards_buf, dones_buf, values_buf = (torch.zeros((t, n)) for _ in range(4))
    run = PPORun(rewards=np.zeros((iterations * t, n)), dones=np.zeros((iterations * t, n), dtype=bool))

    global_step = 0
    start = time.perf_counter()
    next_obs = torch.as_tensor(envs.reset(seed=config.seed)[0], dtype=torch.float32)
    next_done = torch.zeros(n)
    for iteration in range(iterations):
        if config.anneal_lr:
            optimizer.param_groups[0]["lr"] = (1.0 - iteration / iterations) * config.learning_rate
        for step in range(t):
            global_step += n
            obs_buf[step], dones_buf[step] = next_obs, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.act(next_obs)
            actions_buf[step], logprobs_buf[step], values_buf[step] = action, logprob, value
            obs, reward, terminations, truncations, infos = envs.step(action.numpy())
            done = np.logical_or(terminations, truncations)
            rewards_buf[step] = torch.as_tensor(reward, dtype=torch.float32)
            next_obs = torch.as_tensor(obs, dtype=torch.float32)
            next_done = torch.as_tensor(done, dtype=torch.float32)
            run.rewards[iteration * t + step], run.dones[iteration * t + step] = reward, done
            run.episodes += [(global_step, i, r, length) for i, r, length in episodes_from_infos(infos)]

        # Generalised advantage estimation; a done step does not bootstrap (as CleanRL).
        with torch.no_grad():
            next_value = agent.value(next_obs)
            advantages = torch.zeros((t, n))
            last = torch.zeros(n)
            for step in reversed(range(t)):
                if step == t - 1:
                    not_done, following = 1.0 - next_done, next_value
                else:
                    not_done, following = 1.0 - dones_buf[step + 1], values_buf[step + 1]
                delta = rewards_buf[step] + config.gamma * following * not_done - values_buf[step]
                last = delta + config.gamma * config.gae_lambda * not_done * last
                advantages[step] = last
            returns = advantages + values_buf

        b_obs, b_actions = obs_buf.reshape(batch_size, obs_dim), actions_buf.reshape(-1)
        b_logprobs, b_advantages = logprobs_buf.reshape(-1), advantages.reshape(-1)
        b_returns, b_values = returns.reshape(-1), values_buf.reshape(-1)
        for _ in range(config.update_epochs):
            order = shuffle.permutation(batch_size)
            for begin in range(0, batch_size, minibatch_size):
                mb = torch.as_tensor(order[begin:begin + minibatch_size])
                _, new_logprob, entropy, new_value = agent.act(b_obs[mb], b_actions[mb])
                ratio = (new_logprob - b_logprobs[mb]).exp()
                adv = b_advantages[mb]
                if config.norm_adv:
                    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                clipped_ratio = torch.clamp(ratio, 1 - config.clip_coef, 1 + config.clip_coef)
                pg_loss = torch.max(-adv * ratio, -adv * clipped_ratio).mean()
                v_loss = (new_value - b_returns[mb]) ** 2
                if config.clip_vloss:
                    v_clipped = b_values[mb] + torch.clamp(new_value - b_values[mb], -config.clip_coef,
                                                           config.clip_coef)
                    v_loss = torch.max(v_loss, (v_clipped - b_returns[mb]) ** 2)
                loss = pg_loss - config.ent_coef * entropy.mean() + config.vf_coef * 0.5 * v_loss.mean()
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), config.max_grad_norm)
                optimizer.step()
    run.steps_per_second = global_step / (time.perf_counter() - start)
    return run
