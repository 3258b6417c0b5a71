"""The step path's shortcuts (a kernel's compiled function called directly, actions taken
as they are when they already fit) give what the checked path gives, and check as much."""

from __future__ import annotations

import numpy as np
import pytest

import vecsim
from vecsim.engine.engine import compiled_entry


@pytest.fixture(scope="module")
def pair():
    """Two CartPole engines of 5 envs reset with the same seed."""
    engines = [vecsim.make("CartPole-v1", 5) for _ in range(2)]
    for eng in engines:
        eng.reset(seed=3)
    yield engines
    for eng in engines:
        eng.close()


def test_compiled_entry_is_the_dispatcher_until_the_signature_is_compiled():
    import numba

    @numba.njit
    def add(x, y):
        return x + y

    assert compiled_entry(add, 1, 2) is add
    add(1, 2)
    entry = compiled_entry(add, 1, 2)
    assert entry is not add and entry(3, 4) == 7
    assert compiled_entry(add, 1.0, 2.0) is add  # another signature: not compiled


def test_the_compiled_step_is_bound_after_the_first_steps_and_steps_as_the_dispatcher(pair):
    a, b = pair
    rng = np.random.default_rng(0)
    for t in range(40):
        actions = rng.integers(0, 2, 5)
        a.step(actions)
        b._step_entry = None  # b always goes through the dispatcher
        b._bind_step = lambda b=b: b._step_kernel
        b.step(actions)
        assert np.array_equal(a.obs, b.obs) and np.array_equal(a.rewards, b.rewards)
        assert np.array_equal(a.terminals, b.terminals) and np.array_equal(a.truncations, b.truncations)
    assert a._step_entry is not None and a._step_entry is not a._step_kernel


def unaligned(x):
    """A copy of int64 ``x`` one byte off alignment."""
    out = np.ndarray(x.shape, dtype=np.int64, buffer=np.zeros(x.nbytes + 1, np.uint8), offset=1)
    out[:] = x
    assert not out.flags.aligned
    return out


@pytest.mark.parametrize("make", [
    lambda x: x.astype(np.int32),                                      # another dtype: converted
    lambda x: np.repeat(x, 2)[::2],                                    # not contiguous: copied
    lambda x: x.tolist(),                                              # a list
    lambda x: unaligned(x),                                            # not aligned
])
def test_actions_off_the_fast_path_step_the_same(make):
    ref, eng = vecsim.make("CartPole-v1", 5), vecsim.make("CartPole-v1", 5)
    ref.reset(seed=1)
    eng.reset(seed=1)
    rng = np.random.default_rng(1)
    for _ in range(5):
        actions = rng.integers(0, 2, 5)
        given = make(actions)
        if isinstance(given, np.ndarray) and given.dtype == np.int64:
            assert not given.flags.carray
        ref.step(actions)
        eng.step(given)
        assert np.array_equal(ref.obs, eng.obs)
    ref.close()
    eng.close()


def test_read_only_actions_are_accepted_and_still_checked():
    eng = vecsim.make("CartPole-v1", 3)
    eng.reset(seed=0)
    actions = np.array([0, 1, 1])
    actions.flags.writeable = False
    eng.step(actions)
    eng.step_no_reset(actions)
    bad = np.array([0, 2, 1])
    bad.flags.writeable = False
    with pytest.raises(ValueError, match=r"actions\[1\] = 2 is out of range"):
        eng.step(bad)
    eng.close()


def test_the_fast_path_still_refuses_out_of_range_actions_and_closed_or_unstarted_engines():
    eng = vecsim.make("CartPole-v1", 3)
    with pytest.raises(RuntimeError, match="reset"):
        eng.step(np.zeros(3, np.int64))
    eng.reset(seed=0)
    eng.step(np.zeros(3, np.int64))
    eng.step(np.zeros(3, np.int64))  # bound to the compiled function from here
    with pytest.raises(ValueError, match=r"actions\[2\] = -1 is out of range"):
        eng.step(np.array([0, 1, -1]))
    with pytest.raises(ValueError, match=r"actions\[0\] = 5 is out of range"):
        eng.step_no_reset(np.array([5, 1, 0]))
    with pytest.raises(ValueError, match="shape"):
        eng.step(np.zeros(4, np.int64))
    eng.close()
    with pytest.raises(RuntimeError, match="closed"):
        eng.step(np.zeros(3, np.int64))
    with pytest.raises(RuntimeError, match="closed"):
        eng.step_no_reset(np.zeros(3, np.int64))
