"""What a game's rules use from vecsim besides the compile options: per-env constants,
well-formed-action checks, and state allocation. The contract itself is documented in
``vecsim.engine.game`` (the one reader of a game module) and ``games/README.md``."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import types
from numba.extending import overload

from vecsim.core import buffers as placed
from vecsim.core.jit import exact


def param(value, i):
    """Value of a game constant for env ``i``: ``value[i]`` if per-env, else ``value``."""
    return value[i] if isinstance(value, np.ndarray) else value


@overload(param)
def _param_overload(value, i):
    if isinstance(value, types.Array):
        return lambda value, i: value[i]
    return lambda value, i: value


# These three take a game's State: no cache entry, since one index file would name every game's
# types, and a process that cannot import one of those games would find it unreadable. They are
# a line each and compiled into kernels, which are cached whole.
@exact(cache=False)
def no_mask(s, p, i, masks):
    """``write_mask`` of a game whose actions are always legal."""
    return


@exact(cache=False)
def no_refuse(s, p, i):
    """``refuse_env`` of a game that keeps no step outputs in its state."""
    return


@exact(cache=False)
def no_pre_step(s, p, i, actions):
    """``pre_step_env`` of a game that needs no separate pass."""
    return


@exact
def discrete_ok(actions, i, n):
    """Whether the discrete action of env ``i`` lies in ``[0, n)``."""
    a = actions[i]
    return a >= 0 and a < n


@exact
def box_finite(actions, i):
    """Whether every component of env ``i``'s continuous action is finite."""
    ok = True
    for k in range(actions.shape[1]):
        v = actions[i, k]
        ok = ok and (v - v == 0.0)
    return ok


def allocate_float_fields(state_cls, num_envs: int, float_dtype) -> tuple:
    """Allocate one ``(num_envs,)`` float array per field of ``state_cls``, placed apart in the
    cache (``vecsim.core.buffers``)."""
    return state_cls(*(placed.zeros(num_envs, float_dtype) for _ in state_cls._fields))


def named_choices(game: str, choices: dict, given: dict) -> dict:
    """``given`` with each named choice turned into its number (its index in ``choices[key]``):
    what a game's ``prepare_params`` does for ``action_mode="reach"`` and the like. Numbers
    pass through unchanged; an unknown name raises ``ValueError`` naming the value."""
    out = {}
    for key, value in given.items():
        names = choices.get(key)
        if names is not None and isinstance(value, str):
            if value not in names:
                raise ValueError(f"{game} {key} must be one of {names}, but got {key}={value!r}")
            value = float(names.index(value))
        out[key] = value
    return out


class KernelHints(NamedTuple):
    """Performance hints of a game, all optional (``KERNEL_HINTS = KernelHints(...)``); none
    changes a result.

    obs_order : {"C", "F"}
        ``"F"``: the ``(num_envs, obs_dim)`` observation buffer is column-major, so a step loop
        writing observation ``k`` of consecutive envs touches consecutive addresses and
        vectorises (small observations); ``"C"`` for large per-env observations.
    step_uses_rng : bool
        ``False`` when ``step_env`` draws nothing and writes only env ``i``'s state: envs due
        for reset are then stepped with the others in one branch-free pass and reset after,
        which lets the step loop vectorise.
    write_obs_fills_row : bool
        ``True`` when ``write_obs`` writes every element of ``obs[i]``: a VectorEnv with
        ``copy=True`` may then have the kernel write into new arrays instead of copying.
    envs_per_call : int
        More than 1: the step kernels call the fused step function once for a run of envs
        (the serial kernel for all its envs, the parallel one for each thread's share, a
        multiple of this many envs; the episode collector for runs of this many): a game of
        many ``State`` arrays pays their passing once a run. Leave 1 for a step loop that
        vectorises.
    call_by_symbol : bool
        ``True``: the game's step and reset (fused with its observation and mask) compile once,
        cached, and every kernel variant that shares them calls them by symbol
        (``vecsim.core.symbol_call``), instead of optimising and emitting them again into each
        kernel and parallel region. Its kernels read the constants per env (``param(p.field,
        i)`` of a ``(num_envs,)`` array) whether they differ between envs or not, so that
        scalar and per-env constants share one compile of the rules.
        For a large step (a puzzle's rules, a planner): it cuts compile time, and nothing of
        the step is inlined into the kernels' loops. Leave ``False`` for a step loop that
        vectorises.
    """

    obs_order: str = "C"
    step_uses_rng: bool = True
    write_obs_fills_row: bool = False
    envs_per_call: int = 1
    call_by_symbol: bool = False

    def check(self, where: str) -> None:
        """Raise ``TypeError`` naming a malformed hint of ``where``."""
        if self.obs_order not in ("C", "F"):
            raise TypeError(f"{where}: KernelHints.obs_order must be 'C' or 'F', but got {self.obs_order!r}")
        n = self.envs_per_call
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise TypeError(f"{where}: KernelHints.envs_per_call must be an int >= 1, but got {n!r}")
        if not isinstance(self.call_by_symbol, (bool, np.bool_)):
            raise TypeError(f"{where}: KernelHints.call_by_symbol must be True or False, but got {self.call_by_symbol!r}")
