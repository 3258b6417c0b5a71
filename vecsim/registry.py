"""Which games exist, how ids map to game modules, and Gymnasium registration."""

from __future__ import annotations

import gymnasium

from vecsim.contract import GameSpec, load_game

NAMESPACE = "vecsim"

#: Gymnasium id (without namespace) -> (game module, max_episode_steps, reward_threshold).
#: The registration numbers are repeated here so that ``import vecsim`` registers every id
#: without importing the games; ``tests/test_engine.py`` checks they equal the modules'.
GAMES = {
    "CartPole-v1": ("games.cartpole", 500, 475.0),
    "MountainCar-v0": ("games.mountain_car", 200, -110.0),
    "MountainCarContinuous-v0": ("games.mountain_car_continuous", 999, 90.0),
    "Pendulum-v1": ("games.pendulum", 200, None),
    "Acrobot-v1": ("games.acrobot", 500, -100.0),
    "Tetris-v0": ("games.tetris", None, None),
}
GAME_MODULES = {env_id: entry[0] for env_id, entry in GAMES.items()}

_GAMES: dict[str, GameSpec] = {}


def game_ids() -> list[str]:
    """The ids of every registered game, with the ``vecsim/`` namespace."""
    return [f"{NAMESPACE}/{env_id}" for env_id in GAME_MODULES]


def resolve(game_id: str) -> GameSpec:
    """The game of ``game_id`` (``"vecsim/CartPole-v1"``, ``"CartPole-v1"`` or ``"CartPole"``)."""
    if not isinstance(game_id, str):
        raise TypeError(f"game id must be a str, but got {game_id!r}")
    key = game_id.split("/", 1)[1] if game_id.startswith(NAMESPACE + "/") else game_id
    if key not in GAME_MODULES:
        by_name = {env_id.rsplit("-v", 1)[0]: env_id for env_id in GAME_MODULES}
        if key not in by_name:
            raise ValueError(f"unknown game id {game_id!r}; known ids are {game_ids()}")
        key = by_name[key]
    if key not in _GAMES:
        _GAMES[key] = load_game(GAME_MODULES[key])
    return _GAMES[key]


def register_all() -> None:
    """Register every game with Gymnasium (idempotent): single env and vector entry point."""
    for env_id, (_, max_steps, threshold) in GAMES.items():
        full = f"{NAMESPACE}/{env_id}"
        if full in gymnasium.registry:
            continue
        gymnasium.register(
            id=full,
            entry_point="vecsim.single:VecsimEnv",
            vector_entry_point="vecsim.vector:VecsimVectorEnv",
            max_episode_steps=max_steps,
            reward_threshold=threshold,
            kwargs={"game_id": env_id},
        )
