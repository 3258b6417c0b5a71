"""Gymnasium front ends over the engine: ``VecsimVectorEnv`` (a ``gymnasium.vector.VectorEnv``
with every autoreset mode), ``VecsimEnv`` (a single ``gymnasium.Env``), and their registration
as ``vecsim/<Game>`` ids."""

from vecsim.gym.episode_statistics import SubEnvEpisodeStatistics

__all__ = ["SubEnvEpisodeStatistics"]
