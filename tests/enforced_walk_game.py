"""``masked_walk_game`` with a binding mask (``enforce_mask``): an action outside the mask is
refused by the engine, or with ``invalid_action="flag"`` not stepped and flagged."""

from __future__ import annotations

from masked_walk_game import (  # noqa: F401
    MAX_EPISODE_STEPS, PHYSICAL_STATE, Params, State, action_space, allocate_state, observation_space, render_rgb,
    render_text, reset_env, step_env, write_mask, write_obs)
from vecsim.core.jit import exact

NAME = "EnforcedWalk"
ENV_ID = "EnforcedWalk-v0"


@exact
def enforce_mask(p, i):
    return True
