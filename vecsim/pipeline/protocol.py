"""The agent protocol of the actor-learner loop, and the batch the learner receives.

Framework-free: parameters, optimiser state and actor state are whatever the agent makes of
them (NumPy arrays, torch tensors, nested dicts); the loop only passes them along. The
pipeline's observations, masks, actions and rewards are NumPy arrays, time-major as in
Sebulba (Hessel et al., "Podracer architectures for scalable reinforcement learning", 2021).
"""

from __future__ import annotations

import dataclasses
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Agent(Protocol):
    """What the loop asks of an agent. ``initial_actor_state`` is optional.

    ``act(params, actor_state, obs, mask) -> (actions, actor_state)`` or ``(actions, actor_state, extras)``
        One decision for every env of an actor's slice of ``n`` envs.

        - ``params``: the newest parameters the learner published when the actor's cycle began
          (the same object for the whole cycle).
        - ``actor_state``: what the previous call returned (``initial_actor_state`` at the
          start). Return a new object rather than changing it in place: the learner receives the
          state the cycle started from.
        - ``obs``: ``(n, obs_dim)`` array of the game's observation dtype (float32 for
          CartPole; uint8 for Tetris, whose Dict observation is flattened in Gymnasium's order).
        - ``mask``: ``(n, n_actions)`` bool, the legal actions, or ``None`` for games without
          masks. A finished env's row is all True.
        - ``actions``: ``(n,)`` integers for ``Discrete`` actions, ``(n, d)`` numbers for ``Box``.
        - ``extras`` (optional): a dict of arrays with leading axis ``n`` (log-probabilities,
          values, ...), stored per step in ``Batch.extras``.

        Runs in an actor thread while other actors step their envs and the learner learns:
        code that releases the GIL (NumPy's matrix products, torch) overlaps with them.

    ``learn(params, opt_state, batch) -> (params, opt_state, metrics)``
        One update from a ``Batch`` of every env; ``metrics`` is a dict of numbers (or
        ``None``). Runs in the thread that called ``Pipeline.run``. The returned ``params`` are
        handed to the actors as they are: never change them in place afterwards (return new
        arrays, or a copy of the tensors the optimiser updates).

    ``initial_actor_state(env_seeds) -> actor_state`` (optional)
        The actor state of a slice whose envs are seeded ``env_seeds`` (``(n,)`` int64: env
        ``k`` of the whole batch has seed ``seed + k``); per-env random streams derived from
        these make the agent's draws independent of how the envs are split between actors.
        Without it the actor state is ``None``.
    """

    def act(self, params, actor_state, obs: np.ndarray, mask: np.ndarray | None): ...

    def learn(self, params, opt_state, batch: "Batch"): ...


@dataclasses.dataclass
class Batch:
    """``T = steps_per_cycle`` steps of ``n`` envs, time-major; what ``Agent.learn`` receives.

    An actor fills one for its slice of envs each cycle; the learner receives the slices of
    one cycle joined along the env axis, in env order (``n = num_envs``), so env ``k`` of the
    batch is env ``k`` of the whole loop.

    Attributes
    ----------
    observations : ndarray, shape (T + 1, n, obs_dim), the game's observation dtype
        ``observations[t]`` is what the agent saw before action ``t``; ``observations[T]`` is
        the observation after the last step (the first of the next cycle). After an episode
        ended at step ``t``, ``observations[t + 1]`` is the next episode's first observation.
    masks : ndarray of bool, shape (T + 1, n, n_actions), or None
        The legal actions at each observation; ``None`` for games without masks.
    actions : ndarray, shape (T, n) int64 for Discrete, (T, n, d) for Box
    rewards : ndarray of float64 (float32 with precision="float32"), shape (T, n)
    terminated, truncated : ndarray of bool, shape (T, n)
        The episode ended at this step in a terminal state, or was cut by the step limit.
    final_observations : ndarray, shape (T, n, obs_dim)
        Where an episode ended at step ``t``, the observation it ended in (to bootstrap a
        truncated episode); zeros elsewhere.
    extras : dict of str to ndarray, each of shape (T, n, ...)
        What ``act`` returned as extras at each step.
    episode_returns, episode_lengths : ndarray of float64 / int64, shape (E,)
        The episodes that ended during these steps (their whole return and length, also the
        parts played in earlier cycles), in step order then env order.
    episode_steps, episode_envs : ndarray of int64, shape (E,)
        The step ``t`` at which each of those episodes ended, and its env (an index into the
        batch's env axis).
    initial_actor_states, final_actor_states : tuple, one per actor
        The actor state each actor's slice began the cycle with, and the one it ended with.
    params_versions : tuple of int, one per actor
        The version of the parameters each actor acted with (0: the initial parameters; the
        learner's ``k``-th update published version ``k``).
    env_slices : tuple of (int, int), one per actor
        Each actor's envs ``[start, stop)``.
    cycle : int
        The cycle of the loop (from 0, counted over every ``run``).
    """

    observations: np.ndarray
    masks: np.ndarray | None
    actions: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    final_observations: np.ndarray
    extras: dict
    episode_returns: np.ndarray
    episode_lengths: np.ndarray
    episode_steps: np.ndarray
    episode_envs: np.ndarray
    initial_actor_states: tuple
    final_actor_states: tuple
    params_versions: tuple
    env_slices: tuple
    cycle: int

    @property
    def num_steps(self) -> int:
        return self.actions.shape[0]

    @property
    def num_envs(self) -> int:
        return self.actions.shape[1]

    @property
    def dones(self) -> np.ndarray:
        """``terminated | truncated``, shape (T, n)."""
        return self.terminated | self.truncated


def join_slices(parts: list[Batch]) -> Batch:
    """The batches of one cycle's actors, in env order, joined along the env axis."""
    if len(parts) == 1:
        return parts[0]

    def cat(name, axis=1):
        return np.concatenate([getattr(p, name) for p in parts], axis=axis)

    # Episodes in step order, then env order, as one actor over every env would list them.
    steps = cat("episode_steps", 0)
    envs = cat("episode_envs", 0)
    order = np.lexsort((envs, steps))
    joined = Batch(
        observations=cat("observations"), masks=None if parts[0].masks is None else cat("masks"),
        actions=cat("actions"), rewards=cat("rewards"), terminated=cat("terminated"), truncated=cat("truncated"),
        final_observations=cat("final_observations"),
        extras={k: np.concatenate([p.extras[k] for p in parts], axis=1) for k in parts[0].extras},
        episode_returns=np.concatenate([p.episode_returns for p in parts])[order],
        episode_lengths=np.concatenate([p.episode_lengths for p in parts])[order],
        episode_steps=steps[order], episode_envs=envs[order],
        initial_actor_states=sum((p.initial_actor_states for p in parts), ()),
        final_actor_states=sum((p.final_actor_states for p in parts), ()),
        params_versions=sum((p.params_versions for p in parts), ()),
        env_slices=sum((p.env_slices for p in parts), ()), cycle=parts[0].cycle)
    return joined
