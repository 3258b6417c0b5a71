"""One actor: a vecsim engine over a slice of the loop's envs, played one cycle at a time.

The engine steps without autoreset (``step_no_reset``, then ``reset_envs`` of the envs that
finished, each continuing its own random stream), so a terminal observation is read before
the reset replaces it. Env ``k`` of the loop is env ``k - start`` of this engine, reset once
with seed ``seed + start``: it gets seed ``seed + k`` whatever the slicing.
"""

from __future__ import annotations

import numpy as np

import vecsim
from vecsim.core.jit import exact
from vecsim.pipeline.protocol import Batch


@exact(cache=True)
def _record_step(t, rewards, terminals, truncations, observations, batch_rewards, batch_terminated,
                 batch_truncated, final_observations, returns, lengths, ended_returns, ended_lengths, ended_steps,
                 ended_envs, num_ended):
    """Store step ``t``'s outcome in the batch, add it to the running episodes and list those that
    ended (step order, then env order) from slot ``num_ended`` on; return the new count."""
    for i in range(rewards.shape[0]):
        batch_rewards[t, i] = rewards[i]
        batch_terminated[t, i] = terminals[i]
        batch_truncated[t, i] = truncations[i]
        returns[i] += rewards[i]
        lengths[i] += 1
        if terminals[i] or truncations[i]:
            for j in range(observations.shape[1]):
                final_observations[t, i, j] = observations[i, j]
            ended_returns[num_ended] = returns[i]
            ended_lengths[num_ended] = lengths[i]
            ended_steps[num_ended] = t
            ended_envs[num_ended] = i
            num_ended += 1
            returns[i] = 0.0
            lengths[i] = 0
    return num_ended


class Actor:
    """Envs ``[start, stop)`` of the loop, their episode bookkeeping and the agent's actor state.

    Parameters
    ----------
    index : int
        The actor's number (for messages).
    env_id : str
        A vecsim game id.
    start, stop : int
        The slice of the loop's envs this actor steps.
    seed : int
        The loop's seed: env ``k`` is seeded ``seed + k``.
    agent : Agent
        Its ``act`` (and ``initial_actor_state``, if it has one).
    steps_per_cycle : int
        Steps in each trajectory.
    env_kwargs : dict
        Keyword arguments of ``vecsim.make``.
    """

    def __init__(self, index: int, env_id: str, start: int, stop: int, seed: int, agent, steps_per_cycle: int,
                 env_kwargs: dict):
        self.index, self.start, self.stop = index, start, stop
        self.agent = agent
        self.steps_per_cycle = steps_per_cycle
        n = stop - start
        self.engine = engine = vecsim.make(env_id, n, **env_kwargs)
        engine.reset(seed=seed + start)
        self.has_masks = engine.n_mask > 0
        self._act_shape, self._act_dtype = engine.zero_actions().shape, engine.zero_actions().dtype
        make_state = getattr(agent, "initial_actor_state", None)
        env_seeds = np.arange(start, stop, dtype=np.int64) + seed
        self.actor_state = make_state(env_seeds) if make_state is not None else None
        self._returns = np.zeros(n, dtype=np.float64)  # of the running episodes
        self._lengths = np.zeros(n, dtype=np.int64)
        #: Set by the loop to stop a cycle between two steps.
        self.stopping = False

    @property
    def num_envs(self) -> int:
        return self.stop - self.start

    def _allocate(self, cycle: int, version: int) -> Batch:
        engine, T, n = self.engine, self.steps_per_cycle, self.num_envs
        return Batch(
            observations=np.empty((T + 1, n, engine.obs_dim), dtype=engine.obs_dtype),
            masks=np.empty((T + 1, n, engine.n_mask), dtype=np.bool_) if self.has_masks else None,
            actions=np.empty((T,) + self._act_shape, dtype=self._act_dtype),
            rewards=np.empty((T, n), dtype=engine.rewards.dtype),
            terminated=np.empty((T, n), dtype=np.bool_), truncated=np.empty((T, n), dtype=np.bool_),
            final_observations=np.zeros((T, n, engine.obs_dim), dtype=engine.obs_dtype), extras={},
            episode_returns=None, episode_lengths=None, episode_steps=None, episode_envs=None,
            initial_actor_states=(self.actor_state,), final_actor_states=None, params_versions=(version,),
            env_slices=((self.start, self.stop),), cycle=cycle)

    def _decide(self, params, obs, mask, t: int, batch: Batch) -> None:
        """Call ``act`` and store its actions (and extras) as step ``t`` of ``batch``."""
        out = self.agent.act(params, self.actor_state, obs, mask)
        if not isinstance(out, tuple) or len(out) not in (2, 3):
            raise TypeError(f"agent.act must return (actions, actor_state) or (actions, actor_state, extras), "
                            f"but returned {type(out).__name__}"
                            + (f" of length {len(out)}" if isinstance(out, tuple) else ""))
        actions, self.actor_state = out[0], out[1]
        if type(actions) is not np.ndarray:
            actions = np.asarray(actions)
        if actions.shape != self._act_shape:
            raise ValueError(f"agent.act returned actions of shape {actions.shape}, but actor {self.index} "
                             f"steps {self.num_envs} envs of {self.engine.single_action_space}: expected shape "
                             f"{self._act_shape}")
        batch.actions[t] = actions
        if len(out) == 3 and out[2]:
            self._store_extras(batch, t, out[2])

    def _store_extras(self, batch: Batch, t: int, extras) -> None:
        if not isinstance(extras, dict):
            raise TypeError(f"the extras agent.act returns must be a dict of arrays, but got {type(extras).__name__}")
        for name, value in extras.items():
            value = np.asarray(value)
            if value.ndim == 0 or value.shape[0] != self.num_envs:
                raise ValueError(f"agent.act extra {name!r} must have leading axis {self.num_envs} (one row per "
                                 f"env), but got shape {value.shape}")
            stored = batch.extras.get(name)
            if stored is None:
                if t != 0:
                    raise ValueError(f"agent.act returned extra {name!r} at step {t} but not at step 0")
                stored = batch.extras[name] = np.empty((self.steps_per_cycle,) + value.shape, dtype=value.dtype)
            stored[t] = value

    def play_cycle(self, params, version: int, cycle: int) -> Batch | None:
        """Play ``steps_per_cycle`` steps with ``params``; return the batch of this slice, or
        ``None`` when ``stopping`` was set before the cycle ended."""
        engine, T, n = self.engine, self.steps_per_cycle, self.num_envs
        batch = self._allocate(cycle, version)
        obs_buf, masks, actions = batch.observations, batch.masks, batch.actions
        rewards, terminated, truncated, finals = batch.rewards, batch.terminated, batch.truncated, \
            batch.final_observations
        result, returns, lengths = engine.result, self._returns, self._lengths
        # At most one episode per env and step ends in a cycle.
        ended_returns = np.empty(T * n, dtype=np.float64)
        ended_lengths, ended_steps, ended_envs = (np.empty(T * n, dtype=np.int64) for _ in range(3))
        num_ended = 0
        for t in range(T):
            if self.stopping:
                return None
            obs_buf[t] = engine.obs
            if masks is not None:
                masks[t] = engine.action_masks()
            self._decide(params, obs_buf[t], None if masks is None else masks[t], t, batch)
            engine.step_no_reset(actions[t])
            num_ended = _record_step(t, result.rewards, result.terminals, result.truncations, result.observations,
                                     rewards, terminated, truncated, finals, returns, lengths, ended_returns,
                                     ended_lengths, ended_steps, ended_envs, num_ended)
            if result.num_done:
                engine.reset_envs(result.to_reset_mask())
        obs_buf[T] = engine.obs
        if masks is not None:
            masks[T] = engine.action_masks()
        batch.final_actor_states = (self.actor_state,)
        batch.episode_returns = ended_returns[:num_ended].copy()
        batch.episode_lengths = ended_lengths[:num_ended].copy()
        batch.episode_steps = ended_steps[:num_ended].copy()
        batch.episode_envs = ended_envs[:num_ended] + self.start
        return batch

    def close(self) -> None:
        self.engine.close()
