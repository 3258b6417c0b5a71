"""Which games exist: ids (``"CartPole-v1"``) to game modules, read once by ``load_game``.

The built-in games are listed with their registration numbers, so that ``import vecsim``
registers every id with Gymnasium without importing (and compiling) any game; a test checks
the numbers against the modules'. ``register`` adds a user's own game module.
"""

from __future__ import annotations

import importlib
import pathlib
import sys
import threading
from types import ModuleType

from vecsim.engine.game import GameSpec, load_game

NAMESPACE = "vecsim"

#: Built-in games: id (without namespace) -> (module, max_episode_steps, reward_threshold).
BUILTIN = {
    "CartPole-v1": ("vecsim.games.cartpole", 500, 475.0),
    "MountainCar-v0": ("vecsim.games.mountain_car", 200, -110.0),
    "MountainCarContinuous-v0": ("vecsim.games.mountain_car_continuous", 999, 90.0),
    "Pendulum-v1": ("vecsim.games.pendulum", 200, None),
    "Acrobot-v1": ("vecsim.games.acrobot", 500, -100.0),
    "Tetris-v0": ("vecsim.games.tetris", None, None),
    "Blokus-v0": ("vecsim.games.blokus.classic", None, None),
    "BlokusDuo-v0": ("vecsim.games.blokus.duo", None, None),
    "DrMario-v0": ("vecsim.games.drmario", None, None),
}

#: Every game: id -> (module name, max_episode_steps, reward_threshold).
_ENTRIES: dict[str, tuple[str, int | None, float | None]] = dict(BUILTIN)
_LOADED: dict[str, GameSpec] = {}
_LOCK = threading.Lock()


def game_ids() -> list[str]:
    """The ids of every registered game, with the ``vecsim/`` namespace."""
    return [f"{NAMESPACE}/{env_id}" for env_id in _ENTRIES]


def entries() -> dict[str, tuple[str, int | None, float | None]]:
    """Every registered id (without namespace) -> (module name, max_episode_steps,
    reward_threshold): what Gymnasium registration needs, without importing any game."""
    return dict(_ENTRIES)


def _key(game_id) -> str:
    if not isinstance(game_id, str):
        raise TypeError(f"game id must be a str, but got {game_id!r}")
    key = game_id.split("/", 1)[1] if game_id.startswith(NAMESPACE + "/") else game_id
    if key in _ENTRIES:
        return key
    by_name = {env_id.rsplit("-v", 1)[0]: env_id for env_id in _ENTRIES}
    if key not in by_name:
        raise ValueError(f"unknown game id {game_id!r}; known ids are {game_ids()}")
    return by_name[key]


def resolve(game_id: str) -> GameSpec:
    """The game of ``game_id`` (``"vecsim/CartPole-v1"``, ``"CartPole-v1"`` or ``"CartPole"``),
    read once."""
    key = _key(game_id)
    with _LOCK:
        if key not in _LOADED:
            _LOADED[key] = load_game(_ENTRIES[key][0])
        return _LOADED[key]


def _module_name_of(game: str) -> str:
    """The import name of ``game``: an import name as it is, or for the path of a ``.py`` file
    the name it is imported by, its folder (or the folder above its package) put on
    ``sys.path`` first, since the generated kernels import the game by name."""
    if not game.endswith(".py"):
        if "/" in game or "\\" in game:
            raise ValueError(f"register takes a game module, its import name ('my_pkg.my_game') or the path of "
                             f"its .py file ('my_pkg/my_game.py'), but got {game!r}")
        return game
    path = pathlib.Path(game).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"register: no game module file at {game!r}")
    parts, folder = [path.stem], path.parent
    while (folder / "__init__.py").is_file():  # a module of a package: imported as pkg.module
        parts.insert(0, folder.name)
        folder = folder.parent
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    return ".".join(parts)


def add(game) -> GameSpec:
    """Read the game module ``game`` (a module, its import name or the path of its ``.py``
    file) and list it under its ``ENV_ID``. The same module again is a no-op; another module under a listed id is refused.

    Raises
    ------
    TypeError
        ``game`` is not a module or import name, or the module breaks the contract.
    ValueError
        Its ``ENV_ID`` is already taken by another module.
    """
    if isinstance(game, str):
        module = importlib.import_module(_module_name_of(game))
    elif isinstance(game, ModuleType):
        module = game
    else:
        raise TypeError(f"register takes a game module, its import name or the path of its .py file, but got {game!r}")
    try:
        importable = importlib.import_module(module.__name__) is module
    except ImportError:
        importable = False
    if not importable:
        raise TypeError(f"game module {module.__name__!r} must be importable by that name (its kernels import "
                        f"it in a generated module): put it in a file on sys.path or in a package")
    spec = load_game(module)
    with _LOCK:
        taken = _ENTRIES.get(spec.env_id)
        if taken is not None and taken[0] != module.__name__:
            raise ValueError(f"game id {spec.env_id!r} is already registered for module {taken[0]!r}; "
                             f"give module {module.__name__!r} another ENV_ID")
        _ENTRIES[spec.env_id] = (module.__name__, spec.max_episode_steps, spec.reward_threshold)
        _LOADED.setdefault(spec.env_id, spec)
        return _LOADED[spec.env_id]


def remove(game_id: str) -> None:
    """Unlist a game added with ``add`` (the built-in games stay); an id not listed is ignored."""
    try:
        key = _key(game_id)
    except ValueError:
        return
    if key in BUILTIN:
        raise ValueError(f"{game_id!r} is a built-in game and cannot be removed")
    with _LOCK:
        _ENTRIES.pop(key, None)
        _LOADED.pop(key, None)
