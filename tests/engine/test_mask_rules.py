"""Rules the engine enforces once for every masked game, whatever the game's own mask says:
the mask of an env whose episode terminated is all True (the next action only resets it, and a
masked policy never sees a row without a legal action)."""

from __future__ import annotations

import numpy as np
import pytest

import vecsim
from vecsim.engine.engine import NEXT_STEP

N = 64


@pytest.fixture(scope="module")
def walk():
    """``tests/masked_walk_game.py``: right is illegal from x >= 1, and it terminates past 1.6."""
    game_id = vecsim.register("masked_walk_game")
    yield game_id
    vecsim.unregister(game_id)


def walk_right_until_some_terminate(eng):
    right = np.full(eng.num_envs, 2, dtype=np.int64)
    for _ in range(50):
        result = eng.step_no_reset(right)
        if result.terminals.any() and not result.terminals.all():
            return result
        eng.reset_envs(result.to_reset_mask())
    raise AssertionError("no step ended some episodes and not others")


@pytest.mark.parametrize("parallel", [False, True])
def test_a_terminated_env_has_an_all_true_mask_where_the_game_would_forbid_moves(walk, parallel):
    eng = vecsim.make(walk, N, parallel=parallel)
    eng.reset(seed=5)
    result = walk_right_until_some_terminate(eng)
    done = result.terminals
    assert eng.masks[done].all()
    # The game's own mask of those final states forbids moving right (x > 1.6 >= 1).
    assert (eng.state.x[done] >= 1.0).all()
    running = ~done & ~result.truncations
    np.testing.assert_array_equal(eng.masks[running, 2], eng.state.x[running] < 1.0)


def test_the_rule_survives_a_refresh_and_ends_with_the_reset(walk):
    eng = vecsim.make(walk, N)
    eng.reset(seed=6)
    done = walk_right_until_some_terminate(eng).terminals.copy()
    eng.refresh()  # observations and masks rewritten from the state
    assert eng.masks[done].all()
    eng.reset_envs(done)
    np.testing.assert_array_equal(eng.masks[done, 2], eng.state.x[done] < 1.0)


def test_next_step_autoreset_shows_the_all_true_mask_then_the_new_episodes(walk):
    eng = vecsim.make(walk, N)
    eng.reset(seed=7)
    right = np.full(N, 2, dtype=np.int64)
    for _ in range(50):
        eng.step_mode(NEXT_STEP, right)
        done = eng.terminals.copy()
        if done.any():
            break
    assert eng.masks[done].all()
    eng.step_mode(NEXT_STEP, right)  # the terminated envs reset
    np.testing.assert_array_equal(eng.masks[done, 2], eng.state.x[done] < 1.0)


def test_serial_and_parallel_kernels_write_the_same_masks(walk):
    engines = [vecsim.make(walk, N, parallel=p) for p in (False, True)]
    rng = np.random.default_rng(0)
    for eng in engines:
        eng.reset(seed=8)
    for _ in range(40):
        actions = rng.integers(0, 3, N)
        for eng in engines:
            eng.step_mode(NEXT_STEP, actions)
        np.testing.assert_array_equal(engines[0].masks, engines[1].masks)
        np.testing.assert_array_equal(engines[0].terminals, engines[1].terminals)
