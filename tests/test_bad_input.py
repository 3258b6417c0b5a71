"""Bad input at every public call: a clear ValueError/TypeError/RuntimeError, never a crash.

Each message must name the bad value (and the env index where there is one), and a
rejected call must leave the engine exactly as it was.
"""

from __future__ import annotations

import re

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import vecsim
from vecsim import ResetMask
from vecsim.core.rng import MAX_SEED
from vecsim.gym.vector import VecsimVectorEnv

from conftest import first_legal_actions, lenient, start_of

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _first_field(game_id):
    """The first numeric constant of a game (fields with named choices take strings), or its
    first constant when every one is a named choice (they take numbers too)."""
    game = vecsim.resolve(game_id)
    named = getattr(game.module, "CHOICES", {})
    return next((f for f in game.params_cls._fields if f not in named), game.params_cls._fields[0])


# -- construction ------------------------------------------------------------------------
@pytest.mark.parametrize("num_envs", [0, -1])
def test_num_envs_below_one(game_id, num_envs):
    with pytest.raises(ValueError, match=f"num_envs={num_envs}"):
        vecsim.make(game_id, num_envs)


@pytest.mark.parametrize("num_envs", [2.0, True, "4", None])
def test_num_envs_not_an_int(game_id, num_envs):
    with pytest.raises(ValueError, match=f"num_envs={num_envs!r}"):
        vecsim.make(game_id, num_envs)


def test_a_batch_beyond_the_memory_available_is_refused_before_any_allocation(monkeypatch):
    from vecsim.cli.demo import _envs_that_fit
    from vecsim.core import buffers
    from vecsim.engine.engine import build_params

    game = vecsim.resolve("vecsim/DrMario-v0")  # decision mode: a planner's scratch per thread
    one = game.allocate_state(1, np.float64, build_params(game, 1, np.float64, {})[2])
    per_env = buffers.state_bytes_per_env(one, game.scratch_state)
    shared = buffers.state_bytes_shared(one, game.scratch_state)
    assert shared > 1000 * per_env > 0  # the thread scratch is counted once, not per env
    monkeypatch.setattr(buffers, "available_memory", lambda: shared + 100 * per_env)
    with pytest.raises(MemoryError, match=r"DrMario .* MB of state per env and .* MB of thread scratch: "
                                          r"num_envs=101 needs .* \(at most 100\)"):
        vecsim.make("DrMario-v0", 101)
    assert vecsim.make("DrMario-v0", 1000, mode="frame").num_envs == 1000
    # vecsim demo plays such a game with fewer envs rather than fail
    monkeypatch.setattr(buffers, "available_memory", lambda: 4 * (shared + 100 * per_env))
    assert _envs_that_fit("vecsim/DrMario-v0", 4096) == 100
    monkeypatch.setattr(buffers, "available_memory", lambda: 10_000_000)  # 10 MB
    assert _envs_that_fit("vecsim/DrMario-v0", 4096) == 1
    assert _envs_that_fit("vecsim/CartPole-v1", 4096) == 4096
    monkeypatch.setattr(buffers, "available_memory", lambda: None)  # not known: no limit
    assert _envs_that_fit("vecsim/DrMario-v0", 4096) == 4096


def test_unknown_game_id():
    with pytest.raises(ValueError, match="'Pong-v5'.*CartPole-v1"):
        vecsim.make("Pong-v5")
    with pytest.raises(TypeError, match="42"):
        vecsim.make(42)


def test_unknown_params_are_named_with_the_valid_ones(game_id):
    with pytest.raises(TypeError, match=r"unknown parameter\(s\) \['bogus', 'zzz'\].*" + _first_field(game_id)):
        vecsim.make(game_id, 2, bogus=1.0, zzz=2)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_scalar_param(game_id, value):
    name = _first_field(game_id)
    with pytest.raises(ValueError, match=f"{name} must be finite, but got {name}={value}"):
        vecsim.make(game_id, 3, **{name: value})


def test_non_finite_per_env_param_names_the_env(game_id):
    name = _first_field(game_id)
    default = vecsim.resolve(game_id).params_cls._field_defaults[name]
    values = [default, default, float("nan"), default]
    with pytest.raises(ValueError, match=f"{name} must be finite.*nan at env 2"):
        vecsim.make(game_id, 4, **{name: values})


def test_per_env_param_of_the_wrong_length(game_id):
    name = _first_field(game_id)
    with pytest.raises(ValueError, match=rf"{name} per env must have shape \(4,\), but got shape \(3,\)"):
        vecsim.make(game_id, 4, **{name: [1.0, 1.0, 1.0]})


def test_param_that_is_not_a_number(game_id):
    name = _first_field(game_id)
    if name in getattr(vecsim.resolve(game_id).module, "CHOICES", {}):
        pytest.skip("every constant of this game is a named choice (a string is a name)")
    with pytest.raises(TypeError, match=f"{name}='fast'"):
        vecsim.make(game_id, 2, **{name: "fast"})


@pytest.mark.parametrize("kwargs, error, text", [
    ({"precision": "float16"}, ValueError, "precision='float16'"),
    ({"max_episode_steps": 0}, ValueError, "max_episode_steps=0"),
    ({"max_episode_steps": 2.5}, ValueError, "max_episode_steps=2.5"),
    ({"max_episode_steps": 2**31}, ValueError, r"\[1, 2147483647\].*max_episode_steps=2147483648"),
    ({"parallel": "yes"}, ValueError, "parallel='yes'"),
])
def test_bad_engine_options(game_id, kwargs, error, text):
    with pytest.raises(error, match=text):
        vecsim.make(game_id, 2, **kwargs)


def test_bad_buffers(game_id):
    eng = vecsim.make(game_id, 3)
    obs = np.zeros((3, eng.obs_dim), eng.obs_dtype)
    with pytest.raises(TypeError, match=r"unknown buffer name\(s\) \['obz'\]"):
        vecsim.make(game_id, 3, buffers={"obz": obs})
    with pytest.raises(ValueError, match=r"buffer obs must have shape \(3, \d+\).*got shape \(4, \d+\)"):
        vecsim.make(game_id, 3, buffers={"obs": np.zeros((4, eng.obs_dim), eng.obs_dtype)})
    with pytest.raises(ValueError, match="buffer rewards .* dtype float64.*dtype float32"):
        vecsim.make(game_id, 3, buffers={"rewards": np.zeros(3, np.float32)})
    with pytest.raises(TypeError, match="buffer terminals must be a numpy array, but got list"):
        vecsim.make(game_id, 3, buffers={"terminals": [False] * 3})
    readonly = np.zeros(3)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="buffer rewards is read-only"):
        vecsim.make(game_id, 3, buffers={"rewards": readonly})
    with pytest.raises(ValueError, match="buffer rewards must be contiguous"):
        vecsim.make(game_id, 3, buffers={"rewards": np.zeros(6)[::2]})
    shared = np.zeros(3, bool)
    with pytest.raises(ValueError, match="buffers terminals and truncations overlap"):
        vecsim.make(game_id, 3, buffers={"terminals": shared, "truncations": shared})


# -- seeds -------------------------------------------------------------------------------
BAD_SEEDS = [
    (-1, ValueError, "seed=-1"),
    (1.5, TypeError, "seed=1.5"),
    ("7", TypeError, "seed='7'"),
    (2**63, ValueError, f"seed={2**63}"),
    (True, TypeError, "seed=True"),
]


@pytest.mark.parametrize("seed, error, text", BAD_SEEDS)
def test_bad_seed_on_reset_and_reset_envs(engine, engine_snapshot, assert_unchanged, seed, error, text):
    engine.reset(seed=1)
    before = engine_snapshot(engine)
    with pytest.raises(error, match=text):
        engine.reset(seed=seed)
    with pytest.raises(error, match=text):
        engine.reset_envs(np.ones(engine.num_envs, bool), seed=seed)
    assert_unchanged(engine, before)


def test_seed_whose_last_env_overflows(engine):
    n = engine.num_envs
    with pytest.raises(ValueError, match=f"\\[0, {MAX_SEED - n + 1}\\], but got seed={MAX_SEED - n + 2}"):
        engine.reset(seed=MAX_SEED - n + 2)
    engine.reset(seed=MAX_SEED - n + 1)  # the largest valid batch seed


def test_bad_seed_lists_name_the_index(engine):
    n = engine.num_envs
    with pytest.raises(ValueError, match=f"length num_envs={n}, but got length {n - 1}"):
        engine.reset(seed=list(range(n - 1)))
    seeds = list(range(n))
    seeds[3] = -4
    with pytest.raises(ValueError, match=r"seed\[3\]=-4"):
        engine.reset(seed=seeds)
    seeds[3] = 2.0
    with pytest.raises(TypeError, match=r"seed\[3\]=2.0"):
        engine.reset(seed=seeds)


def test_a_rejected_seed_does_not_count_as_seeding(game_id):
    """A first reset(seed=None) after a rejected seed still draws a random base seed."""
    a, b = vecsim.make(game_id, 3), vecsim.make(game_id, 3)
    for eng in (a, b):
        with pytest.raises(ValueError):
            eng.reset(seed=-1)
    a.reset(), b.reset()
    assert not np.array_equal(start_of(a), start_of(b))


def test_bad_seed_on_the_single_env(game_id):
    env = gymnasium.make(game_id)
    for seed, error, text in BAD_SEEDS:
        with pytest.raises(error, match=text):
            env.reset(seed=seed)
    env.reset(seed=np.int64(3))  # NumPy integers are ints too
    env.close()


# -- reset masks -------------------------------------------------------------------------
def test_bad_reset_masks_for_reset_envs(engine, engine_snapshot, assert_unchanged):
    n = engine.num_envs
    engine.reset(seed=2)
    before = engine_snapshot(engine)
    with pytest.raises(TypeError, match="ResetMask or a numpy bool array, but got list"):
        engine.reset_envs([True] * n)
    with pytest.raises(TypeError, match="dtype bool, but got dtype int64"):
        engine.reset_envs(np.ones(n, dtype=np.int64))
    with pytest.raises(ValueError, match=rf"shape \({n},\), but got shape \({n + 1},\)"):
        engine.reset_envs(np.ones(n + 1, dtype=bool))
    with pytest.raises(ValueError, match=rf"shape \({n},\), but got shape \({n}, 1\)"):
        engine.reset_envs(np.ones((n, 1), dtype=bool))
    with pytest.raises(ValueError, match=f"covers {n + 1} envs, but num_envs={n}"):
        engine.reset_envs(ResetMask.all(n + 1))
    assert_unchanged(engine, before)


# -- actions -----------------------------------------------------------------------------
def _bad_actions(engine):
    """(actions, error, regex) triples for this engine's action space."""
    space, n = engine.single_action_space, engine.num_envs
    good = engine.zero_actions()
    cases = [
        (good[:-1], ValueError, rf"shape {good.shape}".replace("(", r"\(").replace(")", r"\)")),
        (good[..., None], ValueError, "but got shape"),
        (np.full(good.shape, "x"), TypeError, "dtype <U1"),
        (np.zeros(good.shape, dtype=complex), TypeError, "complex128"),
        (None, ValueError, r"but got shape \(\)"),
    ]
    if isinstance(space, spaces.Discrete):
        hi, lo = good.copy(), good.copy()
        hi[n - 1] = space.n
        lo[2] = -3
        big = np.zeros(n, np.uint64)
        big[1] = np.uint64(2**63 + 5)
        cases += [
            (hi, ValueError, rf"actions\[{n - 1}\] = {space.n} is out of range.*env {n - 1}"),
            (lo, ValueError, r"actions\[2\] = -3 is out of range"),
            (big, ValueError, rf"actions\[1\] = {2**63 + 5} is out of range"),
            (good.astype(np.float32), TypeError, "must be integers, but got dtype float32"),
            (good.astype(bool), TypeError, "dtype bool"),
        ]
    else:
        for dtype in (np.float32, np.float64):
            for value in ("nan", "inf", "-inf"):
                bad = good.astype(dtype)
                bad[n - 2, 0] = float(value)
                cases.append((bad, ValueError, rf"actions\[{n - 2}\] = .*{value.lstrip('-')}"))
        huge = good.astype(np.float64)
        huge[1, 0] = 1e300
        cases.append((huge, ValueError, r"actions\[1\] overflows float32"))
    return cases


@pytest.mark.parametrize("method", ["step", "step_no_reset"])
def test_bad_actions_are_named_and_change_nothing(engine, engine_snapshot, assert_unchanged, method):
    engine.reset(seed=4)
    before = engine_snapshot(engine)
    for actions, error, pattern in _bad_actions(engine):
        with pytest.raises(error, match=pattern):
            getattr(engine, method)(actions)
        assert_unchanged(engine, before, f"{method}({actions!r})")


def test_step_before_reset(game_id):
    eng = vecsim.make(game_id, 2)
    for call in (eng.step, eng.step_no_reset):
        with pytest.raises(RuntimeError, match=r"call reset\(\) before stepping"):
            call(eng.zero_actions())


def test_step_no_reset_on_a_finished_env_names_it(game_id, engine_snapshot, assert_unchanged):
    eng = vecsim.make(game_id, 4, max_episode_steps=1)
    eng.reset(seed=0)
    eng.step_no_reset(first_legal_actions(eng))
    eng.reset_envs(np.array([True, True, False, True]))
    before = engine_snapshot(eng)
    with pytest.raises(ValueError, match=r"env 2 finished its episode \(terminated=\w+, truncated=True\)"):
        eng.step_no_reset(first_legal_actions(eng))
    assert_unchanged(eng, before)


# -- hypothesis fuzzing of actions -------------------------------------------------------
DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64,
          np.float16, np.float32, np.float64, np.complex64]


@st.composite
def action_inputs(draw, shape, n):
    kind = draw(st.sampled_from(["array", "array", "array", "list", "scalar", "other"]))
    if kind == "other":
        return draw(st.sampled_from([None, "left", {"a": 1}, object(), [[0], [0, 1]], (), b"\x00"]))
    if kind == "scalar":
        return draw(st.one_of(st.integers(-2**70, 2**70), st.floats(allow_nan=True), st.booleans()))
    shapes = st.sampled_from([shape, shape, (n - 1,) + shape[1:], (n + 1,) + shape[1:], shape + (1,), (1,) + shape,
                              (n, 2), (n, 0), ()])
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    arr = draw(hnp.arrays(dtype, draw(shapes)))
    if kind == "list":
        return arr.tolist()
    return arr


def _fuzz(target_step, eng, data, engine_snapshot):
    shape = eng.zero_actions().shape
    actions = data.draw(action_inputs(shape, eng.num_envs))
    before = engine_snapshot(eng)
    try:
        target_step(actions)
    except (ValueError, TypeError) as exc:
        assert str(exc), "an error without a message"
        after = engine_snapshot(eng)
        for name, old in before.items():
            assert np.array_equal(after[name], old, equal_nan=True), f"{name} changed after {exc!r}"
        return
    # Accepted: the input was a valid batch (right shape, in range, finite).
    arr = np.asarray(actions)
    assert arr.shape == shape
    if isinstance(eng.single_action_space, spaces.Discrete):
        assert ((arr >= 0) & (arr < eng.single_action_space.n)).all()
    else:
        assert np.isfinite(arr.astype(np.float64)).all()


@FUZZ
@given(data=st.data())
def test_fuzzed_actions_to_the_engine(engine, engine_snapshot, data):
    if not engine.has_reset:
        engine.reset(seed=0)
    _fuzz(engine.step, engine, data, engine_snapshot)


@pytest.fixture(scope="module")
def vector_env(game_id):
    env = gymnasium.make_vec(game_id, 5, vectorization_mode="vector_entry_point")
    env.reset(seed=0)
    yield env
    env.close()


@FUZZ
@given(data=st.data())
def test_fuzzed_actions_to_the_vector_env(vector_env, engine_snapshot, data):
    _fuzz(vector_env.step, vector_env.unwrapped.engine, data, engine_snapshot)


@settings(max_examples=80, deadline=None)
@given(seed=st.one_of(st.none(), st.integers(-2**70, 2**70), st.floats(), st.text(max_size=3),
                      st.lists(st.one_of(st.none(), st.integers(-2**64, 2**64)), min_size=0, max_size=10)))
def test_fuzzed_seeds_to_the_engine(engine, engine_snapshot, seed):
    engine.reset(seed=1)
    before = engine_snapshot(engine)
    try:
        engine.reset(seed=seed)
    except (ValueError, TypeError) as exc:
        assert "seed" in str(exc)
        after = engine_snapshot(engine)
        for name, old in before.items():
            assert np.array_equal(after[name], old), name


# -- the Gymnasium front ends ------------------------------------------------------------
@pytest.mark.parametrize("kwargs, error, text", [
    ({"autoreset_mode": "sometimes"}, ValueError, "autoreset_mode='sometimes'"),
    ({"copy": "yes"}, TypeError, "copy='yes'"),
    ({"render_mode": "human"}, ValueError, "render_mode='human'"),
    ({"num_envs": 0}, ValueError, "num_envs=0"),
])
def test_bad_vector_env_options(game_id, kwargs, error, text):
    kwargs = {"num_envs": 2, **kwargs}
    with pytest.raises(error, match=text):
        VecsimVectorEnv(game_id, **kwargs)


def test_bad_reset_masks_for_the_vector_env(game_id):
    env = VecsimVectorEnv(game_id, 3, autoreset_mode=AutoresetMode.DISABLED)
    with pytest.raises(RuntimeError, match="without a reset_mask"):
        env.reset(options={"reset_mask": np.array([True, False, False])})
    env.reset(seed=0)
    cases = [
        ([True, False, True], TypeError, "numpy array, got <class 'list'>"),
        (np.ones(4, bool), ValueError, r"shape `\(3,\)`, got \(4,\)"),
        (np.ones(3, np.int8), TypeError, "dtype=np.bool_`, got int8"),
        (np.zeros(3, bool), ValueError, "at least one True value"),
    ]
    for mask, error, text in cases:
        with pytest.raises(error, match=text):
            env.reset(options={"reset_mask": mask})
    with pytest.raises(TypeError, match="options must be a dict or None, but got list"):
        env.reset(options=[("reset_mask", None)])
    env.close()


def test_disabled_mode_rejects_stepping_a_finished_env(game_id):
    env = VecsimVectorEnv(game_id, 3, autoreset_mode=AutoresetMode.DISABLED, max_episode_steps=1, **lenient(game_id))
    env.reset(seed=0)
    actions = env.action_space.sample()
    env.step(actions)
    env.reset(options={"reset_mask": np.array([True, False, True])})
    with pytest.raises(ValueError, match="env 1 finished its episode"):
        env.step(actions)
    env.close()


def test_vector_env_after_close(game_id):
    env = gymnasium.make_vec(game_id, 2, vectorization_mode="vector_entry_point")
    env.reset(seed=0)
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.step(env.action_space.sample())
    with pytest.raises(RuntimeError, match="closed"):
        env.reset(seed=0)


def test_single_env_bad_calls(game_id):
    env = gymnasium.make(game_id).unwrapped
    with pytest.raises(RuntimeError, match=r"call reset\(\) before step\(\)"):
        env.step(env.action_space.sample())
    env.reset(seed=0)
    n_fields = len(env.state)
    with pytest.raises(ValueError, match=rf"state must have shape \({n_fields},\).*shape \({n_fields + 1},\)"):
        env.state = np.zeros(n_fields + 1)
    if n_fields:  # a game without a physical state vector (Tetris) has nothing to corrupt
        with pytest.raises(ValueError, match="state must be finite"):
            env.state = np.full(n_fields, np.nan)
    with pytest.raises(ValueError, match="render_mode='human'"):
        type(env)(game_id, render_mode="human")
    # In the words of the one-env API: "action", never "actions[0]", "env 0" or num_envs=1.
    space = env.action_space
    if isinstance(space, gymnasium.spaces.Discrete):
        wrong_shape, out_of_range = np.array([0]), space.n
        range_error = rf"^action {space.n} is out of range for Discrete\({space.n}\)$"
    else:
        wrong_shape, out_of_range = np.zeros(space.shape + (1,), space.dtype), np.full(space.shape, np.nan, space.dtype)
        range_error = r"^action \[nan\] is (not finite|out of range for Box.*)$"
    with pytest.raises(ValueError, match=rf"^action must be .* for {re.escape(str(space))}, but got .* of shape "
                                         rf"{re.escape(str(wrong_shape.shape))}$"):
        env.step(wrong_shape)
    with pytest.raises(ValueError, match=range_error):
        env.step(out_of_range)
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.step(env.action_space.sample())


def test_warmup_rejects_bad_arguments():
    with pytest.raises(ValueError, match="parallel="):
        vecsim.warmup("CartPole-v1", parallel="yes")
    with pytest.raises(ValueError, match="precision="):
        vecsim.warmup("CartPole-v1", precision="float16")
    with pytest.raises(ValueError, match="unknown game id"):
        vecsim.warmup("NoSuchGame-v0")
    with pytest.raises(ValueError, match=r"game parameters \['action_mode'\] need a game_id"):
        vecsim.warmup(action_mode="reach")
    with pytest.raises(TypeError, match="unknown parameter"):
        vecsim.warmup("CartPole-v1", action_mode="reach")


def test_warmup_steps_with_legal_actions():
    """Where action 0 is outside the mask (Tetris's reach mode) warmup steps each env's first
    legal action instead (the engine would refuse zeros)."""
    from types import SimpleNamespace

    from vecsim import _first_legal

    masks = np.array([[0, 0, 1, 0], [1, 0, 0, 0], [0, 1, 1, 1]], dtype=bool)
    eng = SimpleNamespace(zero_actions=lambda: np.zeros(3, np.int64), n_mask=4, masks=masks)
    assert _first_legal(eng).tolist() == [2, 0, 1]
    eng = SimpleNamespace(zero_actions=lambda: np.zeros((3, 1), np.float32), n_mask=0, masks=np.ones((3, 0), bool))
    assert _first_legal(eng).tolist() == [[0.0]] * 3
