"""A tiny game with thread scratch (``SCRATCH_STATE``), for engine tests: a random walk whose step
adds up its noise draws in its thread's row of a scratch field before using them.

It takes the kernel path of a game with thread scratch (the thread pool started before its
kernels load, ``vecsim.engine.codegen``), which Dr. Mario's planner takes at many times the compile.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from vecsim.core import scratch
from vecsim.core.contract import param
from vecsim.core.jit import exact
from vecsim.core.rng import uniform

from rng_walk_game import (Params, action_space, observation_space, render_rgb, render_text,  # noqa: F401
                           reset_env, write_obs)

NAME = "ScratchWalk"
ENV_ID = "ScratchWalk-v0"
MAX_EPISODE_STEPS = 50
REWARD_THRESHOLD = None
PHYSICAL_STATE = ("x",)
SCRATCH_STATE = ("draws",)
DRAWS = 4


class State(NamedTuple):
    x: np.ndarray  # (N,) float64 position
    draws: np.ndarray  # (R, DRAWS) float64 thread scratch: the step's noise draws


def allocate_state(num_envs, float_dtype, params=None):
    return State(np.zeros(num_envs, float_dtype), scratch.zeros((DRAWS,), float_dtype))


@exact
def step_env(s, p, i, actions, events, rng):
    row = scratch.thread_row()
    noise = param(p.noise, i) / DRAWS
    for k in range(DRAWS):
        s.draws[row, k] = uniform(rng, i, -noise, noise)
    total = 0.0
    for k in range(DRAWS):
        total += s.draws[row, k]
    step = param(p.drift, i) if actions[i] == 1 else -param(p.drift, i)
    s.x[i] += step + total
    bound = param(p.bound, i)
    return -abs(s.x[i]), s.x[i] > bound or s.x[i] < -bound

