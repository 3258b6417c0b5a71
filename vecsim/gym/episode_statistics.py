"""``SubEnvEpisodeStatistics``: episode statistics where per-sub-env wrappers put them.

A script written for ``SyncVectorEnv([RecordEpisodeStatistics(env) ...])`` (CleanRL's
Gymnasium 1.x scripts, vwxyzjn/cleanrl PR #516) reads each sub-env's statistics from the
sub-env's own info, which ``SyncVectorEnv`` batches with ``VectorEnv._add_info``: in
``info["final_info"]`` under ``SAME_STEP`` autoreset, in ``info`` itself otherwise, always with
``_r``/``_l``/``_t`` masks inside. ``gymnasium.wrappers.vector.RecordEpisodeStatistics`` counts the
same episodes but always writes ``info["episode"]`` without those masks, so such a script fails
on a single ``VectorEnv`` (``KeyError: '_episode'`` under ``SAME_STEP``). This wrapper counts as
Gymnasium's vector wrapper does and writes as the per-sub-env wrappers would.
"""

from __future__ import annotations

import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers.vector import RecordEpisodeStatistics


class SubEnvEpisodeStatistics(RecordEpisodeStatistics):
    """Each sub-env's episode return, length and time, laid out as ``SyncVectorEnv`` lays out
    the infos of sub-envs wrapped in ``gymnasium.wrappers.RecordEpisodeStatistics``.

    On a step where sub-envs finish (``done = terminations | truncations``), with ``key`` the
    ``stats_key`` (default ``"episode"``)::

        target[key] = {"r": (N,) float64, "_r": done, "l": (N,) int64, "_l": done,
                       "t": (N,) float64, "_t": done}      # zeros where not done
        target[f"_{key}"] = done

    where ``target`` is ``info["final_info"]`` under ``AutoresetMode.SAME_STEP`` and ``info``
    under ``NEXT_STEP`` and ``DISABLED``. ``return_queue``, ``length_queue``, ``time_queue``
    and ``episode_count`` are Gymnasium's vector wrapper's.

    Parameters
    ----------
    env : gymnasium.vector.VectorEnv
        With ``metadata["autoreset_mode"]`` (every vecsim ``VectorEnv`` has it).
    buffer_length : int
        Length of the queues.
    stats_key : str
        Info key of the statistics.

    Examples
    --------
    >>> import gymnasium as gym, vecsim
    >>> envs = SubEnvEpisodeStatistics(gym.make_vec(
    ...     "vecsim/CartPole-v1", num_envs=4, vectorization_mode="vector_entry_point",
    ...     autoreset_mode=gym.vector.AutoresetMode.SAME_STEP))
    """

    def __init__(self, env, buffer_length: int = 100, stats_key: str = "episode"):
        if not isinstance(stats_key, str):
            raise TypeError(f"stats_key must be a str, but got stats_key={stats_key!r}")
        super().__init__(env, buffer_length=buffer_length, stats_key=stats_key)

    def step(self, actions):
        obs, rewards, terminations, truncations, info = super().step(actions)
        key = self._stats_key
        if key in info:
            stats, done = info.pop(key), info.pop(f"_{key}")
            sub_env_stats = {}
            for name in ("r", "l", "t"):
                sub_env_stats[name] = stats[name]
                sub_env_stats[f"_{name}"] = done.copy()
            target = info["final_info"] if self._autoreset_mode == AutoresetMode.SAME_STEP else info
            target[key] = sub_env_stats
            target[f"_{key}"] = np.array(done, dtype=np.bool_)
        return obs, rewards, terminations, truncations, info
