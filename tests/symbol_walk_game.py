"""``rng_walk_game`` with ``KernelHints(call_by_symbol=True)``, for engine tests: its kernels call
the fused step and reset compiled once, by symbol (``vecsim.engine.codegen.fused_source``)."""

from __future__ import annotations

from vecsim.core.contract import KernelHints

from rng_walk_game import (EVENTS, MAX_EPISODE_STEPS, PHYSICAL_STATE, REWARD_THRESHOLD, Params, State,  # noqa: F401
                           action_space, allocate_state, observation_space, render_rgb, render_text, reset_env,
                           step_env, write_obs)

NAME = "SymbolWalk"
ENV_ID = "SymbolWalk-v0"
KERNEL_HINTS = KernelHints(call_by_symbol=True)
