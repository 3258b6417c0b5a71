"""Which games exist, how ids map to game modules, and Gymnasium registration."""

from __future__ import annotations

import gymnasium

from vecsim.contract import GameSpec, load_game

NAMESPACE = "vecsim"

#: Gymnasium id (without namespace) -> game module.
GAME_MODULES = {
    "CartPole-v1": "games.cartpole",
    "MountainCar-v0": "games.mountain_car",
    "MountainCarContinuous-v0": "games.mountain_car_continuous",
    "Pendulum-v1": "games.pendulum",
    "Acrobot-v1": "games.acrobot",
}

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
    for env_id, module in GAME_MODULES.items():
        full = f"{NAMESPACE}/{env_id}"
        if full in gymnasium.registry:
            continue
        game = load_game(module)
        gymnasium.register(
            id=full,
            entry_point="vecsim.single:VecsimEnv",
            vector_entry_point="vecsim.vector:VecsimVectorEnv",
            max_episode_steps=game.module.MAX_EPISODE_STEPS,
            reward_threshold=game.module.REWARD_THRESHOLD,
            kwargs={"game_id": env_id},
        )
