"""A step kernel of runs writes only what each env's step changed of its observation
(``write_obs_changes``: Tetris writes the piece's pose after a move, the pieces after a hold,
the piece's board rows and the features after a lock without a line clear) while the
engine's observation buffer holds the last step's observations, and whole observations where
it may not: into ``step_mode_fresh``'s new arrays, into the engine's buffer after such a step,
into a caller's buffers. Every observation must equal the whole write's, step after step."""

from __future__ import annotations

import numpy as np
import pytest

import vecsim
from vecsim.engine import NEXT_STEP, SAME_STEP

N = 37  # three runs of 16 envs, the last one partial
STEPS = 250


def _pair(parallel=False, **kwargs):
    """Two Tetris batches in primitive mode on the same seed: the one under test and a twin
    stepped only through ``step_mode_fresh`` (whole observations into new arrays)."""
    made = [vecsim.make("Tetris-v0", N, action_mode="primitive", parallel=parallel, **kwargs),
            vecsim.make("Tetris-v0", N, action_mode="primitive", parallel=parallel)]
    for eng in made:
        eng.reset(seed=11)
    return made


def _actions(step):
    return np.random.default_rng(step).integers(0, 8, N).astype(np.int64)


@pytest.mark.parametrize("parallel", [False, True])
def test_steps_write_the_observations_a_whole_write_gives(parallel):
    eng, twin = _pair(parallel)
    changes = np.zeros(4, np.int64)  # steps by what they changed: pose, pieces, lock, all
    for t in range(STEPS):
        obs, _, _, _ = eng.step(_actions(t))
        want, _, _, _ = twin.step_mode_fresh(NEXT_STEP, _actions(t))
        np.testing.assert_array_equal(obs, want, err_msg=f"step {t}")
        changes += np.bincount(eng.state.obs_change, minlength=4)
    assert changes[0] > STEPS * N // 2 and changes[1:].min() > 0  # most steps wrote the pose only
    before = eng.obs.copy()
    eng.refresh()  # every observation rewritten whole from the state
    np.testing.assert_array_equal(eng.obs, before)


def test_same_step_mode_and_final_observations():
    eng, twin = _pair()
    ended = 0
    for t in range(STEPS):
        eng.step_mode(SAME_STEP, _actions(t))
        want, _, _, _ = twin.step_mode_fresh(SAME_STEP, _actions(t))
        np.testing.assert_array_equal(eng.obs, want, err_msg=f"step {t}")
        np.testing.assert_array_equal(eng.has_final, twin.has_final)
        np.testing.assert_array_equal(eng.final_obs[eng.has_final], twin.final_obs[twin.has_final])
        ended += int(eng.has_final.sum())
    assert ended > 0


def test_steps_after_fresh_arrays_write_the_engines_buffer_whole():
    """A ``step_mode_fresh`` step leaves the engine's buffer a step behind: the next ``step``
    must not build on it."""
    eng, twin = _pair()
    rng = np.random.default_rng(3)
    fresh_then_step = 0
    was_fresh = False
    for t in range(STEPS):
        if rng.random() < 0.3:
            obs, _, _, _ = eng.step_mode_fresh(NEXT_STEP, _actions(t))
            was_fresh = True
        else:
            obs, _, _, _ = eng.step(_actions(t))
            fresh_then_step += was_fresh
            was_fresh = False
        want, _, _, _ = twin.step_mode_fresh(NEXT_STEP, _actions(t))
        np.testing.assert_array_equal(obs, want, err_msg=f"step {t}")
    assert fresh_then_step > 10


def test_a_callers_buffer_is_written_whole_every_step():
    """The caller owns its buffers and may write into them: the step rewrites every byte."""
    own = np.zeros((N, vecsim.make("Tetris-v0", 1, action_mode="primitive").obs_dim), np.uint8)
    eng, twin = _pair(buffers={"obs": own})
    for t in range(60):
        own[:, 4:] = 255  # scribbled over by the caller between steps
        eng.step(_actions(t))
        want, _, _, _ = twin.step_mode_fresh(NEXT_STEP, _actions(t))
        np.testing.assert_array_equal(own, want, err_msg=f"step {t}")


def test_writes_into_the_returned_observations_need_refresh():
    """The returned observations are the engine's buffer, which the next step updates in place:
    a caller that wrote into it calls ``refresh`` first (as after writing the state)."""
    eng, twin = _pair()
    for t in range(60):
        obs, _, _, _ = eng.step(_actions(t))
        want, _, _, _ = twin.step_mode_fresh(NEXT_STEP, _actions(t))
        np.testing.assert_array_equal(obs, want, err_msg=f"step {t}")
        obs[:, 4:] = 255
        eng.refresh()
        np.testing.assert_array_equal(eng.obs, want, err_msg=f"refresh after step {t}")


def test_telemetry_batches_write_the_same_observations():
    eng, twin = _pair(telemetry=64)
    for t in range(120):
        obs, _, _, _ = eng.step(_actions(t))
        want, _, _, _ = twin.step_mode_fresh(NEXT_STEP, _actions(t))
        np.testing.assert_array_equal(obs, want, err_msg=f"step {t}")


def test_state_written_outside_a_step_makes_the_next_step_write_whole():
    """After a kernel of the caller's (or the episode collector's) changed the state,
    ``state_written`` makes the next step rewrite every observation from it."""
    eng = vecsim.make("Tetris-v0", N, action_mode="primitive")
    eng.reset(seed=11)
    for t in range(5):
        eng.step(_actions(t))
    eng.state.rows[:, -1] |= 0b1  # a filled cell in every bottom row, written directly
    eng.state.cells[:, -1, 0] = 1
    eng.state_written()
    obs, _, _, _ = eng.step(np.zeros(N, np.int64))  # noop: most envs only move their piece
    got = obs.copy()
    eng.refresh()
    np.testing.assert_array_equal(got, eng.obs)
    assert (got[:, 4 + 23 * 10] == 1).all()
