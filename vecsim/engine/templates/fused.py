"""Template of a game's fused step or reset functions compiled once and called by symbol.

This file is never imported. For a game with ``KernelHints.call_by_symbol``,
``vecsim.engine.codegen.fused_source`` renders its STEP part (the fused step of one env and of
a run of envs, ``vecsim.engine.fusion``, for one precision and mask; ``FLAG_SHARED``: one step
for both invalid-action rules) or its RESET part as a module of their own in vecsim's cache
folder. Each function is compiled once, cached by Numba, and registered under a symbol
(``vecsim.core.symbol_call``); every kernel module of the game with the same part calls it
there, instead of optimising and emitting the game's rules again into each kernel and parallel
region. The reset part does not
depend on the precision (resets draw in float64), so kernels of both precisions share it.
"""

from numba import njit

from vecsim.core.jit import EXACT_OPTIONS, kernel_options
from vecsim.core.symbol_call import by_symbol
from vecsim.engine import fusion

import GAME_MODULE as _game

# STEP BEGIN
_one = fusion.step_and_write(_game, "STEP_ENV", "PRECISION", "WRITE_MASK", FLAG_SHARED, TELEMETRY_ON)
_run = fusion.step_run_and_write(_game, "STEP_ENV", "PRECISION", "WRITE_MASK", FLAG_SHARED, TELEMETRY_ON)


@by_symbol
@njit(**dict(kernel_options("PRECISION", False), cache=True))
def step_and_write(s, p, i, actions, events, rng, obs, masks, TELEMETRY_PARAM):
    return _one(s, p, i, actions, events, rng, obs, masks, TELEMETRY_PARAM)


@by_symbol
@njit(**dict(kernel_options("PRECISION", False), cache=True))
def step_run(s, p, lo, hi, skip_due, max_steps, actions, events, rng, obs, whole_obs, masks, elapsed, rewards,
             term, trunc, needs_reset, was_done, TELEMETRY_PARAM):
    _run(s, p, lo, hi, skip_due, max_steps, actions, events, rng, obs, whole_obs, masks, elapsed, rewards, term,
         trunc, needs_reset, was_done, TELEMETRY_PARAM)
# STEP END
# RESET BEGIN
_reset = fusion.reset_and_write(_game, "WRITE_MASK", "RESET_ENV")


@by_symbol
@njit(**dict(EXACT_OPTIONS, cache=True))
def reset_and_write(s, p, i, rng, events, rewards, elapsed, term, trunc, needs_reset, has_final, obs, masks,
                    final_obs, same_step):
    _reset(s, p, i, rng, events, rewards, elapsed, term, trunc, needs_reset, has_final, obs, masks, final_obs,
           same_step)
# RESET END
