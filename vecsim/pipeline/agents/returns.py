"""Returns and advantages over a time-major ``Batch`` (``(T, n)`` arrays), with truncated
episodes bootstrapped from the value of the observation they were cut at (not treated as
terminal), and the trajectory's end bootstrapped from the value of ``observations[T]``. The
recursions over time run compiled and release the GIL (a learner thread then leaves it to the
actors instead of taking it for each of ``T`` small NumPy steps)."""

from __future__ import annotations

import numpy as np

from vecsim.core.jit import exact


def bootstrapped_rewards(batch, gamma: float, value_of) -> np.ndarray:
    """The rewards, with ``gamma * V(final observation)`` added where an episode was truncated;
    ``value_of(obs (k, obs_dim)) -> (k,)``."""
    rewards = batch.rewards.astype(np.float64)
    cut = batch.truncated & ~batch.terminated
    if cut.any():
        rewards[cut] += gamma * value_of(batch.final_observations[cut])
    return rewards


def _check_time_major(rewards, dones, last_value, values=None) -> None:
    """``ValueError`` naming the array whose shape does not fit ``rewards`` ``(T, n)``."""
    shape = np.shape(rewards)
    if len(shape) != 2:
        raise ValueError(f"rewards must have shape (T, n), but got shape {shape}")
    for name, a, want in (("dones", dones, shape), ("values", values, shape), ("last_value", last_value, shape[1:])):
        if a is not None and np.shape(a) != want:
            raise ValueError(f"{name} must have shape {want} (as rewards {shape}), but got shape {np.shape(a)}")


def discounted_returns(rewards: np.ndarray, dones: np.ndarray, last_value: np.ndarray, gamma: float) -> np.ndarray:
    """Returns to go ``(T, n)`` float64: ``G_t = r_t + gamma * G_{t+1}``, restarted after each
    episode's end, ``G_T = last_value``; ``rewards`` ``(T, n)``, ``dones`` ``(T, n)`` bool,
    ``last_value`` ``(n,)``."""
    _check_time_major(rewards, dones, last_value)
    out = np.empty(np.shape(rewards), dtype=np.float64)
    _discounted_returns(np.ascontiguousarray(rewards, dtype=np.float64), np.ascontiguousarray(dones, dtype=np.bool_),
                        np.array(last_value, dtype=np.float64), float(gamma), out)
    return out


@exact(cache=True)
def _discounted_returns(rewards, dones, g, gamma, out):
    """Fills ``out`` backwards from ``g`` ``(n,)`` (overwritten), rounding as NumPy rounds
    ``rewards[t] + gamma * g * ~dones[t]``."""
    for t in range(rewards.shape[0] - 1, -1, -1):
        for j in range(rewards.shape[1]):
            g[j] = rewards[t, j] + gamma * g[j] * (0.0 if dones[t, j] else 1.0)
            out[t, j] = g[j]


def gae(rewards: np.ndarray, dones: np.ndarray, values: np.ndarray, last_value: np.ndarray, gamma: float,
        lam: float) -> np.ndarray:
    """Generalised advantage estimates ``(T, n)`` float64 (Schulman et al., 2016) from the
    behaviour values ``(T, n)``; ``rewards`` ``(T, n)``, ``dones`` ``(T, n)`` bool, ``last_value``
    ``(n,)``."""
    _check_time_major(rewards, dones, last_value, values)
    adv = np.empty(np.shape(rewards), dtype=np.float64)
    _gae(np.ascontiguousarray(rewards, dtype=np.float64), np.ascontiguousarray(dones, dtype=np.bool_),
         np.ascontiguousarray(values, dtype=np.float64), np.array(last_value, dtype=np.float64),
         np.zeros(adv.shape[1]), float(gamma), float(gamma * lam), adv)
    return adv


@exact(cache=True)
def _gae(rewards, dones, values, next_value, running, gamma, gamma_lam, adv):
    """Fills ``adv`` backwards (``next_value`` and ``running`` ``(n,)`` are overwritten), rounding
    as NumPy rounds ``delta = r + gamma * next_value * live - value`` and
    ``running = delta + gamma * lam * live * running``."""
    for t in range(rewards.shape[0] - 1, -1, -1):
        for j in range(rewards.shape[1]):
            live = 0.0 if dones[t, j] else 1.0
            delta = rewards[t, j] + gamma * next_value[j] * live - values[t, j]
            running[j] = delta + gamma_lam * live * running[j]
            adv[t, j] = running[j]
            next_value[j] = values[t, j]
