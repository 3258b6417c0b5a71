"""Returns and advantages over a time-major ``Batch`` (``(T, n)`` arrays), with truncated
episodes bootstrapped from the value of the observation they were cut at (not treated as
terminal), and the trajectory's end bootstrapped from the value of ``observations[T]``."""

from __future__ import annotations

import numpy as np


def bootstrapped_rewards(batch, gamma: float, value_of) -> np.ndarray:
    """The rewards, with ``gamma * V(final observation)`` added where an episode was truncated;
    ``value_of(obs (k, obs_dim)) -> (k,)``."""
    rewards = batch.rewards.astype(np.float64)
    cut = batch.truncated & ~batch.terminated
    if cut.any():
        rewards[cut] += gamma * value_of(batch.final_observations[cut])
    return rewards


def discounted_returns(rewards: np.ndarray, dones: np.ndarray, last_value: np.ndarray, gamma: float) -> np.ndarray:
    """Returns to go ``(T, n)``: ``G_t = r_t + gamma * G_{t+1}``, restarted after each episode's
    end, ``G_T = last_value``."""
    out = np.empty_like(rewards)
    g = last_value.astype(np.float64)
    for t in range(rewards.shape[0] - 1, -1, -1):
        g = rewards[t] + gamma * g * ~dones[t]
        out[t] = g
    return out


def gae(rewards: np.ndarray, dones: np.ndarray, values: np.ndarray, last_value: np.ndarray, gamma: float,
        lam: float) -> np.ndarray:
    """Generalised advantage estimates ``(T, n)`` (Schulman et al., 2016) from the behaviour
    values ``(T, n)``."""
    adv = np.empty_like(rewards)
    running = np.zeros(rewards.shape[1])
    next_value = last_value.astype(np.float64)
    for t in range(rewards.shape[0] - 1, -1, -1):
        live = ~dones[t]
        delta = rewards[t] + gamma * next_value * live - values[t]
        running = delta + gamma * lam * live * running
        adv[t] = running
        next_value = values[t]
    return adv
