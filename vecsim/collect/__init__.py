"""Episode collection: ``B`` episodes of at most ``K`` steps as padded ``[B, K, ...]`` arrays."""

from vecsim.collect.collector import EpisodeBatch, EpisodeCollector

__all__ = ["EpisodeBatch", "EpisodeCollector"]
