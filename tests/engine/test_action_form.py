"""The fast paths check only an action array's type, dtype and ndim in Python; the step kernel
checks its row count, contiguity and alignment before writing anything. Every malformed
action still gets the checked path's error, or its conversion, with the state untouched."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import vecsim
from vecsim.engine.step_status import BAD_SHAPE, NOT_CARRAY, split_status

N = 3


def snapshot(eng) -> list:
    """Copies of everything a step writes."""
    arrays = [eng.obs, eng.rewards, eng.terminals, eng.truncations, eng.needs_reset, eng.elapsed, eng.rng, eng.events,
              eng.masks, *eng.state]
    return [a.copy() for a in arrays]


def same(a: list, b: list) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b))


def step_of(path: str, game: str = "CartPole-v1"):
    """``(make, step, engine_of)`` of a call path on ``N`` envs of ``game``, its fast path armed."""
    if path in ("step", "step_no_reset"):
        def make():
            eng = vecsim.make(game, N)
            eng.reset(seed=0)
            return eng
        return make, (lambda eng, a: getattr(eng, path)(a)), (lambda eng: eng)

    def make_env():
        env = gymnasium.make_vec(f"vecsim/{game}", N, vectorization_mode="vector_entry_point",
                                 copy=path == "vector_copy")
        env.reset(seed=0)
        return env
    return make_env, (lambda env, a: env.step(a)), (lambda env: env.unwrapped.engine)


PATHS = ("step", "step_no_reset", "vector_copy", "vector_no_copy")


def unaligned(values) -> np.ndarray:
    out = np.ndarray((len(values),), dtype=np.int64, buffer=np.zeros(8 * len(values) + 1, np.uint8), offset=1)
    out[:] = values
    return out


BAD = [
    (lambda: np.zeros(N + 1, np.int64), ValueError, r"actions must have shape \(3,\).*got shape \(4,\)"),
    (lambda: np.zeros(N - 1, np.int64), ValueError, r"actions must have shape \(3,\).*got shape \(2,\)"),
    (lambda: np.zeros((N, 1), np.int64), ValueError, r"actions must have shape \(3,\).*got shape \(3, 1\)"),
    (lambda: np.zeros(2 * N, np.int64)[::3], ValueError, r"actions must have shape \(3,\).*got shape \(2,\)"),
    (lambda: np.zeros(N, np.float64), TypeError, r"must be integers, but got dtype float64"),
    (lambda: np.array([0, 2, 1]), ValueError, r"actions\[1\] = 2 is out of range"),
    (lambda: np.array([0, 1, -1])[::-1], ValueError, r"actions\[0\] = -1 is out of range"),  # not contiguous
    (lambda: unaligned([0, 1, 7]), ValueError, r"actions\[2\] = 7 is out of range"),
]


@pytest.mark.parametrize("path", PATHS)
def test_every_malformed_action_array_raises_the_checked_paths_error_and_steps_nothing(path):
    make, step, engine_of = step_of(path)
    env = make()
    good = np.zeros(N, np.int64)
    step(env, good)
    step(env, good)  # the fast path is armed from here
    eng = engine_of(env)
    for build, error, message in BAD:
        before = snapshot(eng)
        with pytest.raises(error, match=message):
            step(env, build())
        assert same(before, snapshot(eng)), build
    step(env, good)  # and the engine steps on
    env.close()


@pytest.mark.parametrize("path", PATHS)
def test_arrays_the_kernel_refuses_for_their_form_are_converted_and_step_the_same(path):
    make, step, engine_of = step_of(path)
    ref, env = make(), make()
    rng = np.random.default_rng(5)
    forms = [lambda a: np.repeat(a, 2)[::2], unaligned, lambda a: a.astype(np.int32), lambda a: a.tolist(),
             lambda a: a.copy(), lambda a: np.asfortranarray(a)]
    for t in range(24):
        actions = rng.integers(0, 2, N)
        given = forms[t % len(forms)](actions)
        ref_out, out = step(ref, actions), step(env, given)
        if path == "step_no_reset":
            ref_out, out = (ref_out.observations, ref_out.rewards), (out.observations, out.rewards)
            for e in (ref, env):
                if e.result.num_done:
                    e.reset_envs(e.result.to_reset_mask())
        for a, b in zip(ref_out[:2], out[:2]):
            assert np.array_equal(a, b)
    ref.close()
    env.close()


@pytest.mark.parametrize("game, good, refused", [
    ("CartPole-v1", np.zeros(N, np.int64),
     [(np.zeros(N + 1, np.int64), BAD_SHAPE), (np.zeros(2 * N, np.int64)[::2], NOT_CARRAY),
      (unaligned([0, 1, 0]), NOT_CARRAY)]),
    ("Pendulum-v1", np.zeros((N, 1), np.float32),  # a Box game's kernel checks the width too
     [(np.zeros((N, 0), np.float32), BAD_SHAPE), (np.zeros((N, 2), np.float32), BAD_SHAPE),
      (np.zeros((N + 1, 1), np.float32), BAD_SHAPE), (np.zeros((2 * N, 1), np.float32)[::2], NOT_CARRAY)]),
])
def test_the_step_kernel_refuses_another_shape_or_a_non_contiguous_array_before_writing(game, good, refused):
    eng = vecsim.make(game, N)
    eng.reset(seed=0)
    eng.step(good)
    entry = eng._step_entry
    before = snapshot(eng)
    for actions, status in refused:
        value = entry(0, 0, actions, eng._step_table_at)
        assert value < 0 and split_status(value)[0] == status, (actions.shape, status)
        assert same(before, snapshot(eng))
    assert entry(0, 0, good, eng._step_table_at) == 0
    eng.close()


def test_read_only_and_length_one_strided_actions_take_the_fast_path():
    eng = vecsim.make("CartPole-v1", 1)
    ref = vecsim.make("CartPole-v1", 1)
    for e in (eng, ref):
        e.reset(seed=2)
        e.step(np.zeros(1, np.int64))
        e.step(np.zeros(1, np.int64))
    frozen = np.array([1])
    frozen.flags.writeable = False
    strided = np.array([1, 0])[::2]
    for given in (frozen, strided):
        assert eng._step_entry(0, 0, given, eng._step_table_at) >= 0  # accepted as it is
        ref.step(np.array([1]))
    assert np.array_equal(eng.obs, ref.obs)
    eng.close()
    ref.close()


BOX_BAD = [
    (lambda: np.zeros((N + 1, 1), np.float32), ValueError, r"actions must have shape \(3, 1\).*got shape \(4, 1\)"),
    (lambda: np.zeros((N, 2), np.float32), ValueError, r"actions must have shape \(3, 1\).*got shape \(3, 2\)"),
    (lambda: np.zeros((N, 0), np.float32), ValueError, r"actions must have shape \(3, 1\).*got shape \(3, 0\)"),
    (lambda: np.zeros(N, np.float32), ValueError, r"actions must have shape \(3, 1\).*got shape \(3,\)"),
    (lambda: np.zeros((2 * N, 2), np.float32)[::2], ValueError, r"got shape \(3, 2\)"),  # not contiguous
    (lambda: np.array([[0.0], [np.nan], [0.0]], np.float32), ValueError, r"actions\[1\]"),
]


@pytest.mark.parametrize("path", PATHS)
def test_box_actions_of_another_width_are_refused_by_name_and_step_nothing(path):
    """A Box engine's arrays of its dtype and ndim go to the kernel as they are: it checks their width."""
    make, step, engine_of = step_of(path, "Pendulum-v1")
    env = make()
    good = np.zeros((N, 1), np.float32)
    step(env, good)
    step(env, good)
    eng = engine_of(env)
    for build, error, message in BOX_BAD:
        before = snapshot(eng)
        with pytest.raises(error, match=message):
            step(env, build())
        assert same(before, snapshot(eng)), build
    step(env, good)
    env.close()


@pytest.mark.parametrize("path", PATHS)
def test_box_arrays_the_kernel_refuses_for_their_form_are_converted_and_step_the_same(path):
    make, step, engine_of = step_of(path, "Pendulum-v1")
    ref, env = make(), make()
    rng = np.random.default_rng(7)
    forms = [lambda a: np.repeat(a, 2, axis=0)[::2], lambda a: a.astype(np.float64), lambda a: a.tolist(),
             lambda a: a.copy()]
    for t in range(16):
        actions = rng.uniform(-2, 2, (N, 1)).astype(np.float32)
        given = forms[t % len(forms)](actions)
        ref_out, out = step(ref, actions), step(env, given)
        if path == "step_no_reset":
            ref_out, out = (ref_out.observations, ref_out.rewards), (out.observations, out.rewards)
        for a, b in zip(ref_out[:2], out[:2]):
            assert np.array_equal(a, b)
    ref.close()
    env.close()

