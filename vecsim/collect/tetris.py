"""Tetris over vecsim's collectors and engines: the collector preset and Dellacherie's agent
run over a batch (its per-env policy is a rule-level function, ``vecsim.games.tetris.agent``).

``BatchedTetrisCollector``
    A thin preset over ``vecsim.EpisodeCollector`` (which works for every game): Tetris-v0 in
    ``drop`` mode by default, and ``policy_fn="dellacherie"`` for the in-kernel heuristic agent
    (``vecsim.games.tetris.agent.policy``), the fastest path (no Python per step).
``dellacherie_actions(engine, out=None) -> ndarray``
    The policy's action for every env of a Tetris engine, as int64 ``(num_envs,)``.
``play_games(num_games, seed=0, max_pieces=None, **env_kwargs) -> dict``
    Whole games played by the policy in one parallel kernel.
``afterstate_rating(engine, i, action, method="columns") -> float``
    The rating of one legal action of env ``i`` (for tests and inspection).

The batched kernels are in ``tetris_agent_kernels.py``, loaded through the kernel cache.
"""

from __future__ import annotations

import pathlib

import numba
import numpy as np

from vecsim.collect.collector import EpisodeCollector
from vecsim.core.scratch import start_thread_pool
from vecsim.games.tetris import DROP, REACH, Params
from vecsim.games.tetris.agent import _NO_RATING

__all__ = ["BatchedTetrisCollector", "dellacherie_actions", "play_games", "afterstate_rating", "RATING_METHODS"]


class BatchedTetrisCollector(EpisodeCollector):
    """Collect ``[B, K, ...]`` batches of Tetris episodes.

    Parameters
    ----------
    num_workers : int
        Env slots (>= 1); results do not depend on it.
    max_steps : int
        ``K``, the padded episode length (>= 1).
    policy_fn : "dellacherie", "random", callable, @njit function or ndarray
        ``"dellacherie"``: the jitted heuristic agent inside the kernel. Anything else is
        passed to ``EpisodeCollector`` (a batched Python ``policy(obs, masks)``, an @njit
        ``policy(s, p, i, rng)``, an action array or ``"random"``).
    seed : int
        Job ``j`` is seeded ``seed + j``.
    action_mode : {"drop", "reach", "primitive"}
    prefetch : bool
        Double buffering, as in ``EpisodeCollector``.
    **rules
        Tetris rule keywords (``preset="classic"``, ``hold=False``...) and engine options.

    Examples
    --------
    >>> with BatchedTetrisCollector(64, 256, "dellacherie", seed=0, preset="classic") as c:
    ...     batch = c.request_episodes(128)
    >>> batch.observations.dtype
    dtype('uint8')
    """

    def __init__(self, num_workers: int, max_steps: int, policy_fn="dellacherie", seed: int = 0, *,
                 action_mode: str = "drop", prefetch: bool = False, **rules):
        if isinstance(policy_fn, str) and policy_fn == "dellacherie":
            if action_mode == "primitive":
                raise ValueError("the Dellacherie agent chooses placements: use action_mode='drop' or 'reach', "
                                 "not action_mode='primitive'")
            from vecsim.games.tetris.agent import policy as policy_fn
        super().__init__("Tetris-v0", num_workers, max_steps, policy_fn, seed, prefetch=prefetch,
                         action_mode=action_mode, **rules)


#: ``afterstate_rating`` methods: the policy's column evaluator, the row-by-row one, SPEC's features.
RATING_METHODS = ("columns", "rows", "features")


# ------------------------------------------------------------------------------ Python API
def _kernels():
    """The module of the agent's batched kernels (``tetris_agent_kernels.py``), loaded through the
    kernel cache so that a warm process does not compile them again."""
    from vecsim.engine.codegen import load_game_module
    from vecsim.engine.registry import resolve

    return load_game_module(resolve("Tetris-v0"), pathlib.Path(__file__).with_name("tetris_agent_kernels.py"))


def _check_engine(engine) -> int:
    """The action mode of a Tetris ``engine`` in drop or reach mode; raises otherwise."""
    game = getattr(engine, "game", None)
    module = getattr(game, "module", None)
    if module is None or getattr(module, "ENV_ID", None) != "Tetris-v0":
        raise ValueError(f"Dellacherie's policy needs a vecsim Tetris-v0 engine, but got {engine!r}")
    engine.check_open()
    mode = int(engine.params_scalar.action_mode)
    if mode not in (DROP, REACH):
        raise ValueError("Dellacherie's policy needs action_mode='drop' or 'reach', "
                         "but the engine has action_mode='primitive'")
    return mode


def _params_array(engine) -> np.ndarray:
    P = engine.kernel_params
    if P.ndim not in (1, 2) or P.shape[0] != len(Params._fields):
        raise ValueError(f"unexpected Tetris parameter array of shape {P.shape}")
    return P


def dellacherie_actions(engine, out=None) -> np.ndarray:
    """Dellacherie's action for every env of a Tetris engine in drop or reach mode.

    Parameters
    ----------
    engine : vecsim.Engine
        A reset ``Tetris-v0`` engine with ``action_mode="drop"`` or ``"reach"`` (any rule
        variant, hold included; per-env parameters are supported).
    out : ndarray, optional
        A C-contiguous int64 ``(num_envs,)`` array to write the actions into.

    Returns
    -------
    ndarray of int64, shape (num_envs,)
        Legal actions (``engine.masks[i, a]`` is True) for every env that is not finished;
        ``out`` if given. Only the state's ``scratch_rows`` and ``scratch_feat`` change.
    """
    _check_engine(engine)
    engine.check_started()
    n = engine.num_envs
    if out is None:
        out = np.zeros(n, dtype=np.int64)
    elif (not isinstance(out, np.ndarray) or out.dtype != np.int64 or out.shape != (n,)
          or not out.flags.c_contiguous or not out.flags.writeable):
        raise ValueError(f"out must be a writeable C-contiguous int64 array of shape ({n},)")
    start_thread_pool()
    _kernels()._actions_kernel(tuple(engine.state), _params_array(engine), engine.rng, out)
    return out


def afterstate_rating(engine, i: int, action: int, method: str = "columns") -> float:
    """Dellacherie's rating of playing ``action`` in env ``i`` of a Tetris engine (the action
    must be legal there), by one of three computations of the same number: ``"columns"``
    (``rating2_cols``, what the policy uses), ``"rows"`` (``rating2``) or ``"features"``
    (``rating2_from_features``: SPEC's features plus the corrections of the module
    docstring). Writes only the scratch fields of the state."""
    _check_engine(engine)
    engine.check_started()
    if method not in RATING_METHODS:
        raise ValueError(f"method must be one of {RATING_METHODS}, but got method={method!r}")
    i = engine.env_index(i)
    action = int(action)
    if not (0 <= action < engine.masks.shape[1]) or not engine.masks[i, action]:
        raise ValueError(f"action {action} is not legal in env {i}")
    rating = _kernels()._rating_kernel(tuple(engine.state), _params_array(engine), i, action, RATING_METHODS.index(method))
    if rating == _NO_RATING:
        raise RuntimeError(f"drop_row_cols disagrees with drop_row for action {action} of env {i}")
    return rating / 2.0


def play_games(num_games: int, seed: int = 0, max_pieces: int | None = None, **env_kwargs) -> dict:
    """Play ``num_games`` whole games with Dellacherie's policy, in one parallel kernel.

    Game ``g`` is the game of env ``g`` of ``vecsim.make("vecsim/Tetris-v0", num_games,
    **env_kwargs)`` reset with ``seed``: its pieces come from seed ``seed + g``, so results
    do not depend on ``num_games`` or on threads. Each game runs until it is terminated (a
    piece cannot spawn) or has locked ``max_pieces`` pieces.

    Parameters
    ----------
    num_games : int
    seed : int
    max_pieces : int or None
        Cap on the pieces locked per game (``None``: play every game to its end, which can
        take very long: Dellacherie's policy clears hundreds of thousands of lines on average).
    **env_kwargs
        Tetris parameters; defaults ``preset="classic"``, ``action_mode="drop"``.

    Returns
    -------
    dict
        ``lines`` (int64, per game: rows removed), ``pieces`` (int64: pieces locked),
        ``terminated`` (bool: the game ended; False where the cap stopped it), ``seed``,
        ``max_pieces``.
    """
    import vecsim

    if not isinstance(num_games, (int, np.integer)) or num_games < 1:
        raise ValueError(f"num_games must be an int >= 1, but got num_games={num_games!r}")
    if max_pieces is not None and (not isinstance(max_pieces, (int, np.integer)) or max_pieces < 1):
        raise ValueError(f"max_pieces must be an int >= 1 or None, but got max_pieces={max_pieces!r}")
    kwargs = dict(env_kwargs)
    if "preset" not in kwargs:
        kwargs["preset"] = "classic"
    kwargs.setdefault("action_mode", "drop")
    engine = vecsim.make("vecsim/Tetris-v0", int(num_games), **kwargs)
    _check_engine(engine)
    engine.reset(seed=seed)
    n = engine.num_envs
    lines = np.zeros(n, dtype=np.int64)
    pieces = np.zeros(n, dtype=np.int64)
    ended = np.zeros(n, dtype=np.bool_)
    invalid = np.zeros(n, dtype=np.bool_)
    actions = np.zeros(n, dtype=np.int64)
    masks = np.zeros_like(engine.masks)
    start_thread_pool()
    # Games differ in length by orders of magnitude: hand them to threads one at a time.
    with numba.parallel_chunksize(1):
        _kernels()._games_kernel(tuple(engine.state), _params_array(engine), engine.rng, actions, engine.events, masks,
                      0 if max_pieces is None else int(max_pieces), lines, pieces, ended, invalid)
    engine.close()
    if invalid.any():  # the policy only plays legal actions: a bug if this happens
        raise RuntimeError(f"the policy played an illegal action in game {int(np.flatnonzero(invalid)[0])}")
    return {"lines": lines, "pieces": pieces, "terminated": ended, "seed": seed, "max_pieces": max_pieces}
