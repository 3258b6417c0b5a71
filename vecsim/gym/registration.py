"""Registration of vecsim's games as Gymnasium ids: ``vecsim/<ENV_ID>`` with the single env
(``gymnasium.make``) and the vector entry point (``gymnasium.make_vec(...,
vectorization_mode="vector_entry_point")``)."""

from __future__ import annotations

import gymnasium

from vecsim.engine import registry


def register_gymnasium(env_id: str, max_episode_steps, reward_threshold) -> str:
    """Register ``vecsim/<env_id>`` with Gymnasium (idempotent); returns the full id."""
    full = f"{registry.NAMESPACE}/{env_id}"
    if full not in gymnasium.registry:
        gymnasium.register(
            id=full,
            entry_point="vecsim.gym.single:VecsimEnv",
            vector_entry_point="vecsim.gym.vector:VecsimVectorEnv",
            max_episode_steps=max_episode_steps,
            reward_threshold=reward_threshold,
            kwargs={"game_id": env_id},
        )
    return full


def register_all() -> None:
    """Register every game of vecsim's registry with Gymnasium (idempotent)."""
    for env_id, (_, max_steps, threshold) in registry.entries().items():
        register_gymnasium(env_id, max_steps, threshold)


def unregister_gymnasium(env_id: str) -> None:
    """Remove ``vecsim/<env_id>`` from Gymnasium's registry, if there."""
    gymnasium.registry.pop(f"{registry.NAMESPACE}/{env_id}", None)
