"""Per-env reset specs: new game constants for some envs of a batch, set as they are reset
(``Engine.reset_envs(mask, seed, **params)``), checked exactly as the constructor checks them.

A world kernel's reset spec per env (a level, a speed, a virus target: fields of the game's
``Params``; the RNG seed is ``reset_envs``'s ``seed``) is one keyword argument per field, each
a scalar for every masked env or a ``(num_envs,)`` array whose masked entries are taken (the
caller's own spec arrays, reused from call to call).
"""

from __future__ import annotations

import numbers

import numpy as np


def params_after_reset(game, build_params, public, flags: np.ndarray, given: dict, float_dtype):
    """The batch's constants once the envs of ``flags`` take the values ``given``.

    Parameters
    ----------
    game : GameSpec
    build_params : callable
        ``vecsim.engine.engine.build_params`` (the constructor's check).
    public : Params
        The batch's constants now (``Engine.params``: floats, or ``(num_envs,)`` arrays).
    flags : ndarray of bool, shape (num_envs,)
        The envs being reset.
    given : dict
        Field name -> a scalar (or a named choice) for every env of ``flags``, or a
        ``(num_envs,)`` array of which the entries of ``flags`` are taken.
    float_dtype : numpy dtype
        The kernels' float type.

    Returns
    -------
    ``build_params``' ``(public, P, scalar)`` for the whole batch; raises ``TypeError`` or
    ``ValueError`` naming a bad parameter (nothing is changed), also for a field in
    ``game.structural``, which shapes the spaces or the compiled kernels and so cannot change
    at a reset.
    """
    n = flags.shape[0]
    prepared = game.prepare_params(dict(given))
    unknown = sorted(set(prepared) - set(public._fields))
    if unknown:
        raise TypeError(f"{game.name} got unknown parameter(s) {unknown}; valid parameters are {list(public._fields)}")
    merged = {name: getattr(public, name) for name in public._fields}
    for name, value in prepared.items():
        if isinstance(value, (bool, np.bool_)):
            value = float(value)
        if not isinstance(value, numbers.Real):
            try:
                value = np.asarray(value, dtype=np.float64)
            except (TypeError, ValueError):
                raise TypeError(f"{game.name} parameter {name} must be a number or an array of {n} numbers, "
                                f"but got {name}={value!r}") from None
            if value.ndim and value.shape != (n,):
                raise ValueError(f"{game.name} parameter {name} per env must have shape ({n},), "
                                 f"but got shape {value.shape}")
        now = np.broadcast_to(np.asarray(merged[name], dtype=np.float64), (n,))
        new = np.where(flags, value, now)
        if name in game.structural and np.any(new != now):
            k = int(np.flatnonzero(new != now)[0])
            raise ValueError(f"{game.name} parameter {name} shapes the spaces or the compiled kernels and cannot "
                             f"change at a reset, but env {k} would go from {now[k]} to {new[k]}")
        merged[name] = new
    return build_params(game, n, float_dtype, merged)
