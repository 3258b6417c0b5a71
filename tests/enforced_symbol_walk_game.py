"""``enforced_walk_game`` with ``KernelHints(call_by_symbol=True)``, for engine tests: one compile
of its fused step serves both ``invalid_action="raise"`` and ``"flag"`` batches."""

from __future__ import annotations

from vecsim.core.contract import KernelHints

from enforced_walk_game import (  # noqa: F401
    MAX_EPISODE_STEPS, PHYSICAL_STATE, Params, State, action_space, allocate_state, enforce_mask, observation_space,
    render_rgb, render_text, reset_env, step_env, write_mask, write_obs)

NAME = "EnforcedSymbolWalk"
ENV_ID = "EnforcedSymbolWalk-v0"
KERNEL_HINTS = KernelHints(call_by_symbol=True)
