"""vecsim: Numba-JIT vectorized reinforcement-learning environments.

>>> import vecsim, numpy as np
>>> engine = vecsim.make("CartPole-v1", num_envs=4096)
>>> obs = engine.reset(seed=0)
>>> result = engine.step_no_reset(np.ones(4096, dtype=np.int64))

``import vecsim`` also registers ``vecsim/<Game>`` ids with Gymnasium, for ``gymnasium.make``
and ``gymnasium.make_vec(..., vectorization_mode="vector_entry_point")``.
"""

from __future__ import annotations

import numpy as np

from vecsim.bench.calibrate import calibrate
from vecsim.collect.collector import EpisodeBatch, EpisodeCollector
from vecsim.engine.engine import NEXT_STEP, Engine
from vecsim.engine.registry import game_ids, resolve
from vecsim.gym.registration import register_all, register_gymnasium
from vecsim.engine.reset_mask import ResetMask
from vecsim.engine.step_result import StepResult

__version__ = "0.1.0"


def make(game_id: str, num_envs: int = 1, **kwargs) -> Engine:
    """Build an ``Engine`` of ``num_envs`` copies of a game.

    Parameters
    ----------
    game_id : str
        ``"vecsim/CartPole-v1"``, ``"CartPole-v1"`` or ``"CartPole"``; see ``game_ids()``.
    num_envs : int
        Number of envs (>= 1).
    **kwargs
        ``precision``, ``max_episode_steps`` (default: the id's registered limit; ``None``
        for none), ``parallel``, ``buffers``, ``invalid_action``, ``telemetry`` and game
        constants; see ``Engine``.
    """
    game = resolve(game_id)
    kwargs.setdefault("max_episode_steps", game.max_episode_steps)
    return Engine(game, num_envs, **kwargs)


def register(game) -> str:
    """Make a game module of your own a vecsim game and a Gymnasium id, without touching vecsim.

    Parameters
    ----------
    game : module or str
        A module that follows the game contract (``games/README.md``), its import name
        (``"my_pkg.my_game"``), or the path of its ``.py`` file (``"my_pkg/my_game.py"``: its
        folder, or the folder above its package, goes on ``sys.path``).

    Returns
    -------
    str
        Its Gymnasium id, ``"vecsim/<ENV_ID>"``: for ``vecsim.make``, ``gymnasium.make`` and
        ``gymnasium.make_vec(..., vectorization_mode="vector_entry_point")``.

    Raises
    ------
    TypeError
        The module breaks the contract (the message names what it lacks).
    ValueError
        Its ``ENV_ID`` is already registered for another module, or ``game`` is a path that
        does not end in ``.py``.
    FileNotFoundError
        ``game`` is the path of a ``.py`` file that does not exist.
    """
    from vecsim.engine import registry

    spec = registry.add(game)
    return register_gymnasium(spec.env_id, spec.max_episode_steps, spec.reward_threshold)


def unregister(game_id: str) -> None:
    """Undo ``register``: the game's id leaves vecsim and Gymnasium (built-in games stay).

    Raises
    ------
    ValueError
        ``game_id`` names a built-in game.
    """
    from vecsim.engine import registry
    from vecsim.gym.registration import unregister_gymnasium

    key = game_id.split("/", 1)[-1] if isinstance(game_id, str) else game_id
    registry.remove(game_id)
    if isinstance(key, str) and key not in registry.entries():
        unregister_gymnasium(key)


def warmup(game_id: str | None = None, precision: str = "float64", parallel: bool | None = None,
           **params) -> None:
    """Compile (or load from the cache) the kernels of one game, or of every game.

    Parameters
    ----------
    game_id : str or None
        A game id, or ``None`` for every registered game.
    precision : {"float64", "float32"}
    parallel : bool or None
        Warm only the parallel (``True``) or serial (``False``) kernels; ``None``: both.
    **params
        Game parameters, for a game whose kernels depend on them (``kernel_functions`` in
        ``vecsim.engine.game``): Tetris compiles its reach planner only for
        ``action_mode="reach"``, so ``warmup("Tetris-v0", action_mode="reach")`` warms that
        mode and the default warms drop and primitive mode. Only with a ``game_id``.
    """
    if parallel not in (None, True, False):
        raise ValueError(f"parallel must be None, True or False, but got parallel={parallel!r}")
    if params and game_id is None:
        raise ValueError(f"game parameters {sorted(params)} need a game_id")
    ids = game_ids() if game_id is None else [game_id]
    variants = (False, True) if parallel is None else (parallel,)
    for gid in ids:
        for par in variants:
            eng = make(gid, 2, precision=precision, parallel=par, **params)
            eng.reset(seed=0)
            eng.step(_first_legal(eng))
            if eng.fresh_outputs_ok:  # VectorEnv.step with copy=True on large batches
                eng.step_mode_fresh(NEXT_STEP, _first_legal(eng))
            eng.reset_envs(ResetMask.all(2))
            eng.step_no_reset(_first_legal(eng))
            eng.refresh()
            eng.close()


def _first_legal(eng: Engine) -> np.ndarray:
    """Each env's first legal action (zeros where the game has no action mask)."""
    actions = eng.zero_actions()
    if eng.n_mask:
        masks = eng.masks if getattr(eng, "mask_format", "bool") == "bool" else eng.action_masks()
        masks.argmax(axis=1, out=actions)
    return actions


register_all()

__all__ = ["Engine", "EpisodeCollector", "EpisodeBatch", "ResetMask", "StepResult", "make", "register", "unregister", "warmup", "calibrate", "game_ids", "resolve", "__version__"]
