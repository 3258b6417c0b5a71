"""Autoreset semantics for a game whose step draws random numbers (``KernelHints.step_uses_rng``, the default).

NEXT_STEP autoreset must reset an env *instead of* stepping it, and SAME_STEP must step and
then reset: a step drawn at the wrong moment would shift the env's stream. The reference is
one single-env engine per env (seeded ``seed + i``) driven through the non-autoreset API.
"""

from __future__ import annotations

import numpy as np
import pytest

from vecsim.core.contract import KernelHints
from vecsim.engine.game import load_game
from vecsim.engine.engine import NEXT_STEP, SAME_STEP, Engine
from vecsim.engine.reset_mask import ResetMask

N = 37
STEPS = 150
SEED = 11


@pytest.fixture(scope="module", params=[1, 8], ids=["per_env", "runs_of_8"])
def game(request):
    """The game as written (one env a call) and stepped in runs of 8 envs a call, where the
    parallel kernel resets the envs due for reset inside each run (N is no multiple of 8)."""
    if request.param == 1:
        return load_game("rng_walk_game")
    module = load_game("rng_walk_game").module
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, "KERNEL_HINTS", KernelHints(envs_per_call=request.param), raising=False)
        return load_game("rng_walk_game")


def _actions(t):
    return np.random.default_rng(t).integers(0, 2, N)


def _batched(game, mode, parallel):
    eng = Engine(game, N, max_episode_steps=game.module.MAX_EPISODE_STEPS, parallel=parallel)
    eng.reset(SEED)
    out = []
    for t in range(STEPS):
        eng.step_mode(mode, eng.coerce_actions(_actions(t)))
        final = np.where(eng.has_final[:, None], eng.final_obs, np.nan)
        out.append(np.concatenate([eng.obs[:, 0], eng.rewards, eng.terminals, eng.truncations,
                                   eng.events[:, 0], final[:, 0]]))
    return np.array(out)


def _reference(game, mode):
    singles = [Engine(game, 1, max_episode_steps=game.module.MAX_EPISODE_STEPS) for _ in range(N)]
    everyone = ResetMask.all(1)
    for i, eng in enumerate(singles):
        eng.reset(SEED + i)
    due = np.zeros(N, dtype=bool)
    out = []
    for t in range(STEPS):
        acts = _actions(t)
        row = np.full((6, N), np.nan)
        for i, eng in enumerate(singles):
            if mode == NEXT_STEP and due[i]:
                eng.reset_envs(everyone)  # reset instead of stepping, continuing the stream
                row[:5, i] = eng.obs[0, 0], 0.0, False, False, 0
                due[i] = False
                continue
            eng.step_no_reset(acts[i:i + 1])
            done = bool(eng.terminals[0] or eng.truncations[0])
            row[:5, i] = eng.obs[0, 0], eng.rewards[0], eng.terminals[0], eng.truncations[0], eng.events[0, 0]
            if mode == SAME_STEP and done:
                row[5, i] = eng.obs[0, 0]
                eng.reset_envs(everyone)
                row[0, i] = eng.obs[0, 0]
            due[i] = done
        out.append(row.reshape(-1))
    return np.array(out)


@pytest.mark.parametrize("mode", [NEXT_STEP, SAME_STEP], ids=["next_step", "same_step"])
@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
def test_autoreset_of_a_stochastic_step_matches_single_envs(game, mode, parallel):
    batched = _batched(game, mode, parallel)
    reference = _reference(game, mode)
    n_done = int(np.nansum(reference[:, 2 * N:4 * N]))
    assert n_done > 20, "the scenario must end many episodes to test autoreset"
    np.testing.assert_array_equal(batched, reference)
