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


# -- actions outside a binding mask ------------------------------------------------------------
@pytest.fixture(scope="module")
def enforced():
    """``tests/enforced_walk_game.py``: the walk with a binding mask (right illegal from x >= 1)."""
    game_id = vecsim.register("enforced_walk_game")
    yield game_id
    vecsim.unregister(game_id)


def near_the_wall(game_id, invalid_action, parallel=False, seed=9):
    """An engine after a few steps right, when some envs may no longer move right."""
    eng = vecsim.make(game_id, N, invalid_action=invalid_action, parallel=parallel)
    eng.reset(seed=seed)
    for _ in range(3):
        eng.reset_envs(eng.step_no_reset(np.where(eng.masks[:, 2], 2, 1)).to_reset_mask())
    assert (~eng.masks[:, 2]).any() and eng.masks[:, 2].any()
    return eng


def test_an_action_outside_a_binding_mask_is_refused_naming_the_env(enforced, engine_snapshot, assert_unchanged):
    eng = near_the_wall(enforced, "raise")
    before = engine_snapshot(eng)
    bad = int(np.flatnonzero(~eng.masks[:, 2])[0])
    with pytest.raises(ValueError, match=rf"actions\[{bad}\] = 2 is not a legal action for env {bad}.*invalid_action='flag'"):
        eng.step_no_reset(np.full(N, 2))
    assert_unchanged(eng, before)


@pytest.mark.parametrize("parallel", [False, True])
def test_flag_leaves_an_illegal_env_as_it_was_and_flags_it(enforced, parallel):
    eng = near_the_wall(enforced, "flag", parallel)
    illegal = ~eng.masks[:, 2]
    x, elapsed = eng.state.x.copy(), eng.elapsed.copy()
    result = eng.step_no_reset(np.full(N, 2))
    column = eng.event_names.index("invalid_action")
    np.testing.assert_array_equal(result.events[:, column], illegal.astype(np.int64))
    np.testing.assert_array_equal(eng.state.x[illegal], x[illegal])  # not stepped
    assert (result.rewards[illegal] == 0).all() and not result.terminals[illegal].any()
    np.testing.assert_array_equal(eng.elapsed, elapsed + 1)  # every step counts towards truncation
    assert (eng.state.x[~illegal] != x[~illegal]).all()  # the others were stepped


def test_flag_steps_the_legal_envs_exactly_as_raise_does(enforced):
    flagged, strict = near_the_wall(enforced, "flag"), near_the_wall(enforced, "raise")
    illegal = ~flagged.masks[:, 2]
    flagged.step_no_reset(np.full(N, 2))
    strict.step_no_reset(np.where(illegal, 1, 2))  # legal everywhere; each env draws from its own stream
    legal = ~illegal
    np.testing.assert_array_equal(flagged.state.x[legal], strict.state.x[legal])
    np.testing.assert_array_equal(flagged.rewards[legal], strict.rewards[legal])
    assert not strict.events[:, strict.event_names.index("invalid_action")].any()


def test_the_vector_env_reports_flagged_actions_in_its_info(enforced):
    import gymnasium as gym

    envs = gym.make_vec(enforced, num_envs=N, vectorization_mode="vector_entry_point", invalid_action="flag")
    _, info = envs.reset(seed=9)
    done = np.zeros(N, dtype=bool)
    flagged = 0
    for _ in range(6):
        illegal = ~info["action_mask"][:, 2] & ~done  # envs due for reset only reset (NEXT_STEP)
        _, _, terminated, truncated, info = envs.step(np.full(N, 2))
        np.testing.assert_array_equal(info["invalid_action"], illegal.astype(np.int64))
        flagged += int(illegal.sum())
        done = terminated | truncated
    assert flagged > 0
    envs.close()


def test_flag_is_refused_for_a_game_whose_mask_is_advisory(walk):
    with pytest.raises(ValueError, match="invalid_action='flag' applies to games whose action mask is binding"):
        vecsim.make(walk, 4, invalid_action="flag")
    with pytest.raises(ValueError, match="invalid_action must be one of .* but got invalid_action='skip'"):
        vecsim.make(walk, 4, invalid_action="skip")


def test_an_engine_owned_event_name_is_reserved():
    import types

    import masked_walk_game
    from vecsim.core.jit import exact
    from vecsim.engine.game import load_game

    module = types.ModuleType("clashing_game")
    module.__dict__.update({k: v for k, v in vars(masked_walk_game).items() if not k.startswith("__")})
    module.EVENTS = ("invalid_action",)
    module.enforce_mask = exact(lambda p, i: True)
    with pytest.raises(TypeError, match="'invalid_action' is the engine's"):
        load_game(module)


def test_a_mask_over_continuous_actions_is_refused(monkeypatch):
    import sys
    import types

    import masked_walk_game
    import vecsim.games.pendulum as pendulum

    module = types.ModuleType("masked_pendulum")
    module.__dict__.update({k: v for k, v in vars(pendulum).items() if not k.startswith("__")})
    module.NAME, module.ENV_ID, module.write_mask = "MaskedPendulum", "MaskedPendulum-v0", masked_walk_game.write_mask
    monkeypatch.setitem(sys.modules, "masked_pendulum", module)
    game_id = vecsim.register("masked_pendulum")
    try:
        with pytest.raises(TypeError, match="writes an action mask, which needs a Discrete action space"):
            vecsim.make(game_id, 2)
    finally:
        vecsim.unregister(game_id)


def test_fresh_masks_are_refused_where_the_kernels_read_the_mask_back(enforced):
    eng = near_the_wall(enforced, "raise")
    assert not eng.fresh_masks_ok
    with pytest.raises(ValueError, match=r"step_mode_fresh\(masks=True\).*action_legal"):
        eng.step_mode_fresh(NEXT_STEP, np.ones(N, np.int64), masks=True)
    with pytest.raises(TypeError, match="masks must be a bool, but got masks='yes'"):
        eng.step_mode_fresh(NEXT_STEP, np.ones(N, np.int64), masks="yes")
