"""vecsim on a Ray cluster: the episode collector spread over Ray actors (``RayEpisodeCollector``).

RLlib's env runners need no code of vecsim's here: ``config.environment("vecsim:vecsim/<Game>")``
with ``gym_env_vectorize_mode="vector_entry_point"`` builds each runner's envs as one
``VecsimVectorEnv`` (docs/ray.md). Importing this package does not import Ray; building a
collector does (the ``ray`` extra).
"""

from vecsim.distributed.collector import CollectorTimeout, RayEpisodeCollector

__all__ = ["CollectorTimeout", "RayEpisodeCollector"]
