"""The ``Engine`` API: reset/step/step_no_reset/reset_envs, StepResult, buffers, params, precision."""

from __future__ import annotations

import math
import os
import pathlib
import subprocess
import sys
import types

import numba
import numpy as np
import pytest
from gymnasium import spaces

import vecsim
import vecsim.engine.views
from vecsim import Engine, ResetMask, StepResult
from vecsim.core.scratch import thread_rows
from vecsim.engine.engine import parallel_min_envs

from conftest import FIXED_START, first_legal_actions, game_precisions, lenient, start_of

#: A constant per game that changes the dynamics, for the per-env parameter test.
DYNAMIC_PARAM = {"CartPole": "force_mag", "MountainCar": "force", "MountainCarContinuous": "power",
                 "Pendulum": "g", "Acrobot": "g"}
#: Games whose constants are choices, not magnitudes: (parameter, the other value to try).
CHOICE_PARAM = {"Tetris": ("scoring", 0.0), "Blokus": ("opponent", 1.0), "BlokusDuo": ("opponent", 1.0),
                "DrMario": ("speed", 2.0)}


def _flat_dtype(space):
    return space.dtype if isinstance(space, spaces.Box) else spaces.flatten_space(space).dtype


def _done(eng):
    return eng.terminals | eng.truncations


# -- construction ------------------------------------------------------------------------
def test_make_accepts_namespaced_plain_and_short_ids(game_id):
    env_id = game_id.split("/", 1)[1]
    short = env_id.rsplit("-v", 1)[0]
    for name in (game_id, env_id, short):
        eng = vecsim.make(name, 2)
        assert eng.game.env_id == env_id
        eng.close()


def test_make_uses_the_registered_episode_limit(game_id):
    eng = vecsim.make(game_id, 2)
    assert eng.max_episode_steps == vecsim.resolve(game_id).module.MAX_EPISODE_STEPS
    assert vecsim.make(game_id, 2, max_episode_steps=None).max_episode_steps is None


def test_buffers_have_documented_shapes_and_dtypes(engine):
    n = engine.num_envs
    assert engine.obs.shape == (n, engine.obs_dim)
    assert engine.obs.dtype == _flat_dtype(engine.single_observation_space)
    assert engine.rewards.shape == (n,) and engine.rewards.dtype == np.float64
    assert engine.terminals.dtype == np.bool_ and engine.truncations.dtype == np.bool_
    assert engine.events.shape == (n, len(engine.event_names)) and engine.events.dtype == np.int64
    assert engine.masks.shape[0] == n and engine.masks.dtype == np.bool_
    assert engine.rng.shape == (n, 2) and engine.rng.dtype == np.uint64
    for name, field in zip(engine.state._fields, engine.state):  # a thread's scratch has a row per thread
        assert field.shape[0] == (thread_rows() if name in engine.game.scratch_state else n), name


def test_parallel_auto_picks_serial_below_the_threshold(game_id):
    assert vecsim.make(game_id, 4).parallel is False
    threshold = parallel_min_envs(vecsim.resolve(game_id), threads=numba.get_num_threads())
    if threshold is not None:
        assert vecsim.make(game_id, threshold - 1).parallel is False
        assert vecsim.make(game_id, threshold).parallel is True
    assert vecsim.make(game_id, 4, parallel=True).parallel is True


@pytest.fixture
def no_threshold_override(monkeypatch):
    """The games' own thresholds, whatever ``VECSIM_PARALLEL_THRESHOLD`` the run was given."""
    monkeypatch.delenv("VECSIM_PARALLEL_THRESHOLD", raising=False)


def _game_in_table(monkeypatch, sizes: dict):
    """A stand-in game listed in the shipped tuning table with ``sizes`` ({kind: {precision: n}})."""
    from vecsim.engine import tuning

    tuning.shipped("vecsim.games.cartpole", "float64")  # the table loaded
    monkeypatch.setitem(tuning._SHIPPED, "stand_in_game", sizes)
    return types.SimpleNamespace(module=types.SimpleNamespace(__name__="stand_in_game"))


def test_parallel_thresholds_are_per_precision_and_thread_count(no_threshold_override):
    cartpole, pendulum, mountain_car = (vecsim.resolve(g) for g in ("CartPole-v1", "Pendulum-v1", "MountainCar-v0"))
    assert parallel_min_envs(pendulum, 1, "float64", threads=2) == 64
    assert parallel_min_envs(pendulum, 1, "float32", threads=2) == 16384
    assert parallel_min_envs(cartpole, 1, "float32", threads=2) == 8192
    # One thread: the serial kernel, whose step loop vectorises as the parallel one's does.
    for game in (cartpole, pendulum, mountain_car):
        for precision in ("float64", "float32"):
            assert parallel_min_envs(game, 1, precision, threads=1) is None


def test_the_collector_has_its_own_thresholds_where_a_game_declares_them(no_threshold_override):
    cartpole, tetris = vecsim.resolve("CartPole-v1"), vecsim.resolve("Tetris-v0")
    assert parallel_min_envs(cartpole, 1, "float64", threads=2, collect=True) == 256
    assert parallel_min_envs(cartpole, 1, "float32", threads=2, collect=True) == 384
    assert parallel_min_envs(cartpole, 1, "float64", threads=2) == 8192
    assert parallel_min_envs(tetris, 1, "float64", threads=2, collect=True) == 64  # none declared: the engine's
    assert parallel_min_envs(cartpole, 1, "float64", threads=1, collect=True) is None


def test_a_game_or_precision_left_out_of_the_tuning_table_gets_the_default(no_threshold_override, monkeypatch):
    game = _game_in_table(monkeypatch, {"engine": {"float64": 100}, "one_thread": {"float64": 200}})
    assert parallel_min_envs(game, 1, "float64", threads=2) == 100
    assert parallel_min_envs(game, 1, "float32", threads=2) == vecsim.engine.engine.DEFAULT_PARALLEL_MIN_ENVS
    assert parallel_min_envs(game, 1, "float64", threads=1) == 200
    assert parallel_min_envs(game, 1, "float32", threads=1) is None
    assert parallel_min_envs(game, 1, "float64", threads=2, collect=True) == 100  # the engine's
    unlisted = types.SimpleNamespace(module=types.SimpleNamespace(__name__="a_users_own_game"))
    assert parallel_min_envs(unlisted, 1, "float64", threads=2) == vecsim.engine.engine.DEFAULT_PARALLEL_MIN_ENVS


def test_the_tuning_table_refuses_an_unknown_kind():
    from vecsim.engine import tuning

    with pytest.raises(ValueError, match="kind must be one of .*'threads'"):
        tuning.shipped("vecsim.games.cartpole", "float64", "threads")


def test_no_game_module_declares_thread_thresholds(game_id):
    # Machine-measured sizes live in the tuning table, not in the rules.
    module = vecsim.resolve(game_id).module
    assert not [name for name in vars(module) if name.endswith("PARALLEL_MIN_ENVS")]


def test_one_thread_picks_the_serial_kernel_at_every_size():
    # On one thread the parallel kernel runs on the calling thread: it used to win where only
    # its step loop vectorised (CartPole float32, 5x at 16384 envs); now the serial one's does
    # too, and it has no launch to pay.
    code = ("import numba, vecsim; print(numba.get_num_threads(), "
            "vecsim.make('CartPole-v1', 65536, precision='float32').parallel, "
            "vecsim.make('Pendulum-v1', 65536, precision='float32').parallel, "
            "vecsim.make('Tetris-v0', 4096).parallel)")
    env = {k: v for k, v in os.environ.items() if k != "VECSIM_PARALLEL_THRESHOLD"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=pathlib.Path(__file__).resolve().parents[2],
                          env={**env, "NUMBA_NUM_THREADS": "1"}, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "False", "False", "False"], proc.stdout


def test_address_tables_hold_addresses_and_shapes_of_contiguous_arrays():
    from vecsim.engine.codegen import address_table, table_specs

    f_order, ints = np.zeros((3, 4), order="F"), np.arange(5, dtype=np.int32)
    table = address_table([f_order, ints])
    assert table.tolist() == [[f_order.ctypes.data, 3, 4, 0], [ints.ctypes.data, 5, 0, 0]]
    assert table_specs([f_order, ints]) == (("float64", 2, "F", True), ("int32", 1, "C", True))
    # An array is distinct only if it shares no memory with another of the table or with the
    # kernel's fixed arguments (``others``).
    pad = np.zeros(64, dtype=np.bool_)
    assert [spec[3] for spec in table_specs([pad[:5], ints, pad.view(np.uint64)])] == [False, True, False]
    assert [spec[3] for spec in table_specs([f_order, ints], others=[ints[2:]])] == [True, False]
    with pytest.raises(ValueError, match="address table array 0 must be contiguous.*shape \\(4, 2\\)"):
        address_table([np.zeros((4, 4))[:, ::2]])
    with pytest.raises(ValueError, match="address table array 1 .* at most 3 dimensions"):
        address_table([ints, np.zeros((1, 1, 1, 1))])


def test_table_views_rebuild_arrays_of_every_layout_and_rank():
    # What the step and reset kernels do with their address tables, on arrays of each layout,
    # rank and a few dtypes: the views must read and write the caller's memory in place.
    from numba import njit
    from vecsim.engine.codegen import address_table, render_table_views, table_specs

    arrays = (np.arange(6, dtype=np.float32), np.zeros((3, 4), dtype=np.int32, order="F"),
              np.zeros((2, 3, 4), dtype=np.bool_), np.arange(24, dtype=np.uint64).reshape(2, 3, 4, order="F"))
    source = render_table_views(
        "def touch(t):\n    # VIEWS OF t: a, b, c, d\n    b[2, 1] = 7\n    c[1, 2, 3] = True\n"
        "    return a[5] + a.shape[0], b.strides, c.strides, d[1, 2, 3], d.strides\n", {"t": table_specs(arrays)})
    assert "c_distinct_array_at(t[0, 0], (t[0, 1],), np.float32)" in source
    assert "f_distinct_array_at(t[1, 0], (t[1, 1], t[1, 2]), np.int32)" in source
    scope = {"np": np, **{name: getattr(vecsim.engine.views, name) for name in (
        "c_array_at", "f_array_at", "c_distinct_array_at", "f_distinct_array_at")}}
    exec(source, scope)
    last, b_strides, c_strides, d_value, d_strides = njit(_nrt=False)(scope["touch"])(address_table(arrays))
    assert last == 11.0 and arrays[1][2, 1] == 7 and arrays[2][1, 2, 3] and arrays[2].sum() == 1
    assert (b_strides, c_strides, d_strides) == (arrays[1].strides, arrays[2].strides, arrays[3].strides)
    assert d_value == arrays[3][1, 2, 3]
    # Arrays that share memory get plain views, which LLVM must assume may overlap; so does
    # every array of a PLAIN VIEWS line (the parallel kernels', whose prange bodies Numba marks).
    pad = np.zeros(16, dtype=np.bool_)
    shared = render_table_views("    # VIEWS OF t: a, b\n    return a, b\n",
                                {"t": table_specs([pad[:3], pad.view(np.uint64)])})
    assert "distinct" not in shared and shared.count("c_array_at(") == 2
    plain = render_table_views("    # PLAIN VIEWS OF t: a, b, c, d\n    # hit = FIRST VIEW OF t OVERLAPPING x\n"
                               "    return a, b, c, d\n", {"t": table_specs(arrays)})
    assert "distinct_array_at" not in plain and "c_array_at(" in plain
    # Still checked: Numba marks a prange body's arrays noalias without seeing into the views.
    assert "if overlaps_span(x, t[0, 0], t[0, 1] * 4):" in plain
    # A view the function never reads is not rendered (it would cost compile time), up to the
    # function's end; the overlap check reads the table's rows, not views.
    two = render_table_views("def f(t, x):\n    # VIEWS OF t: a, b, c, d\n    # hit = FIRST VIEW OF t OVERLAPPING x\n"
                             "    return hit, b\n\n\ndef g(a):\n    return a\n", {"t": table_specs(arrays)})
    assert "b = f_distinct_array_at(" in two and " a = " not in two and " c = " not in two
    assert two.count("if overlaps_span(x, t[") == 4
    with pytest.raises(ValueError, match="table 't' has \\['a', 'b'\\] \\(2 arrays\\) but specs for 4"):
        render_table_views("    # VIEWS OF t: a, b\n", {"t": table_specs(arrays)})


def test_overlap_checks_find_the_first_distinct_view_sharing_memory_with_an_argument():
    from numba import njit
    from vecsim.engine.codegen import address_table, render_table_views, table_specs

    pad, big, small = np.zeros(16, dtype=np.bool_), np.zeros(10), np.zeros(3, dtype=np.int32)
    arrays = (pad[:4], pad.view(np.uint64), big, small)
    source = render_table_views(
        "def first(t, arg):\n    # VIEWS OF t: a, b, c, d\n    # hit = FIRST VIEW OF t OVERLAPPING arg\n"
        "    return hit\n", {"t": table_specs(arrays)})
    scope = {"np": np, **{name: getattr(vecsim.engine.views, name) for name in (
        "c_array_at", "f_array_at", "c_distinct_array_at", "f_distinct_array_at", "overlaps_span")}}
    exec(source, scope)
    first = njit(_nrt=False)(scope["first"])
    table = address_table(arrays)
    assert first(table, np.zeros(10)) == -1  # another allocation
    assert first(table, big[9:]) == 2 and first(table, big[:1]) == 2  # either end
    assert first(table, small[1:]) == 3
    assert first(table, big[:0]) == -1  # no bytes, no overlap
    # Only distinct views are checked: the shared ones were never promised to LLVM as apart.
    assert first(table, pad[2:6]) == -1
    with pytest.raises(ValueError, match="overlap check of 'arg' comes before the views of table 't'"):
        render_table_views("    # hit = FIRST VIEW OF t OVERLAPPING arg\n", {"t": table_specs(arrays)})


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_actions_sharing_memory_with_the_engine_are_refused_before_any_step(precision, parallel):
    # The kernels promise LLVM that the engine's arrays share no memory with anything else:
    # the serial one through its distinct views (so its step loop runs on SIMD lanes), the
    # parallel one through Numba's noalias marking of a prange body's arrays. Actions that are
    # a view of one of them must be refused, not stepped.
    eng = vecsim.make("Pendulum-v1", 8, precision=precision, parallel=parallel)
    eng.reset(seed=3)
    before = [a.copy() for a in eng.state]
    aliased = eng.state.last_u.reshape(-1, 1)
    if aliased.dtype == eng.zero_actions().dtype:  # passed to the kernel as it is
        with pytest.raises(ValueError, match="actions share memory with this engine's own state.last_u array"):
            eng.step(aliased)
        assert all(np.array_equal(a, b) for a, b in zip(eng.state, before))
    else:  # float64 state, float32 actions: converted into the engine's own buffer first
        eng.step(aliased)
    eng.step(eng.zero_actions())  # the engine still works


@pytest.mark.parametrize("game", ["CartPole-v1", "Tetris-v0"])
def test_reset_masks_sharing_memory_with_the_engine_are_refused_by_parallel_kernels(game):
    # The parallel reset kernel's prange body gets the mask's words and the views noalias from
    # Numba; the serial one promises LLVM nothing (plain views) and needs no check.
    eng = vecsim.make(game, 8, parallel=True)
    eng._min_parallel_resets = 0  # the parallel kernel even for a few envs (else the serial one resets them)
    eng.reset(seed=3)
    obs = eng.obs.copy()
    mask = vecsim.ResetMask(8)
    mask.words = eng.rng[:1, 0]  # a mask whose words are the engine's RNG keys
    with pytest.raises(ValueError, match="reset mask's words share memory with this engine's own rng array"):
        eng.reset_envs(mask)
    assert np.array_equal(eng.obs, obs)
    eng.reset_envs(np.ones(8, dtype=bool))


def test_only_step_loops_that_vectorise_get_distinct_views():
    # Distinct views cost compile time (Tetris 3.5 s): only where a step loop over envs can
    # vectorise (the _step_share of a game stepped one env a call, which both step kernels
    # run), never in the kernels themselves (Numba marks prange bodies noalias; the reset
    # kernels visit a few random envs a call).
    import inspect

    cartpole, tetris = vecsim.make("CartPole-v1", 4), vecsim.make("Tetris-v0", 4)
    for eng, want in ((cartpole, True), (tetris, False)):
        module = sys.modules[eng._step_kernel.py_func.__module__]
        share = inspect.getsource(module._step_share.dispatcher.py_func)
        assert ("distinct_array_at(" in share) == want and "array_at(" in share, eng.game.name
        for kind in ("serial", "parallel"):
            for kernel in ("step", "reset"):
                src = inspect.getsource(getattr(module, f"{kernel}_{kind}"))
                assert "distinct_array_at(" not in src, (eng.game.name, kernel, kind)


def test_engine_kernels_release_the_gil():
    # Threads that step engines (actors beside a learner) overlap only if no kernel on the way
    # holds the GIL.
    eng = vecsim.make("CartPole-v1", 4)
    for kernel in (eng._step_kernel, eng._reset_kernel, eng._reset_sparse_kernel, eng._observe_kernel):
        assert kernel.targetoptions["nogil"] is True, kernel


def test_parallel_thresholds_grow_on_the_workqueue_threading_layer():
    # Where Numba finds no OpenMP or TBB, its workqueue layer launches threads about 50x
    # slower: "auto" keeps the serial kernels up to WORKQUEUE_FACTOR times larger batches.
    code = ("import vecsim; from vecsim.engine.engine import PARALLEL_MIN_RESETS as R, WORKQUEUE_FACTOR as F; "
            "base = vecsim.engine.tuning.shipped('vecsim.games.cartpole', 'float64'); "
            "below, at = vecsim.make('CartPole-v1', base * F - 1), vecsim.make('CartPole-v1', base * F); "
            "print(vecsim.engine.threads.threading_layer(), below.parallel, at.parallel, at._min_parallel_resets == R * F, "
            "vecsim.make('CartPole-v1', 4, parallel=True).parallel)")
    env = {k: v for k, v in os.environ.items() if k != "VECSIM_PARALLEL_THRESHOLD"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=pathlib.Path(__file__).resolve().parents[2],
                          env={**env, "NUMBA_THREADING_LAYER": "workqueue", "NUMBA_NUM_THREADS": "2"},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["workqueue", "False", "True", "True", "True"], proc.stdout


def test_supports_no_reset_means_a_finished_env_stays_finished_until_reset_envs():
    eng = vecsim.make("CartPole-v1", 2)
    assert eng.supports_no_reset() is True
    eng.reset(seed=0)
    push = np.ones(2, dtype=np.int64)  # pushing one way topples every pole
    while not eng.terminals.any():
        eng.step_no_reset(push)
    i = int(np.flatnonzero(eng.terminals)[0])
    final = eng.obs[i].copy()
    assert abs(final[2]) > 0.2095  # past the angle limit: a terminal state, not a fresh one
    with pytest.raises(ValueError):
        eng.step_no_reset(push)
    assert np.array_equal(eng.obs[i], final) and eng.terminals[i]
    eng.reset_envs(eng.terminals)
    assert not eng.terminals[i] and abs(eng.obs[i, 2]) <= 0.05  # a fresh start


def test_zero_actions_are_a_valid_batch(game_id):
    engine = vecsim.make(game_id, 4, **lenient(game_id))  # zero may be outside a binding mask
    acts = engine.zero_actions()
    assert acts.shape[0] == engine.num_envs
    engine.reset(seed=1)
    engine.step_no_reset(acts)


# -- reset -------------------------------------------------------------------------------
def test_reset_returns_a_view_of_the_observation_buffer(engine):
    obs = engine.reset(seed=7)
    assert obs is engine.obs
    assert engine.result.observations is engine.obs


def test_reset_with_the_same_seed_repeats_and_a_new_seed_differs(engine):
    engine.reset(seed=11)
    first = start_of(engine)
    engine.reset(seed=11)
    assert np.array_equal(start_of(engine), first)
    engine.reset(seed=12)
    assert not np.array_equal(start_of(engine), first)


def test_int_seed_gives_env_i_the_seed_plus_i(game_id):
    batch = vecsim.make(game_id, 5)
    obs = batch.reset(seed=40).copy()
    for i in range(5):
        single = vecsim.make(game_id, 1)
        assert np.array_equal(single.reset(seed=40 + i)[0], obs[i])


def test_reset_without_seed_continues_each_stream(game_id):
    if vecsim.resolve(game_id).name in FIXED_START:
        pytest.skip("the start draws nothing from the streams: nothing to continue")
    a, b = vecsim.make(game_id, 3), vecsim.make(game_id, 3)
    first = a.reset(seed=5).copy()
    b.reset(seed=5)
    second = a.reset().copy()
    assert np.array_equal(b.reset(), second)
    assert not np.array_equal(first, second)


def test_first_reset_without_seed_is_random(game_id):
    a, b = vecsim.make(game_id, 4), vecsim.make(game_id, 4)
    a.reset(), b.reset()
    assert not np.array_equal(start_of(a), start_of(b))


def test_reset_clears_flags_rewards_and_elapsed(engine, actions_for, rng):
    engine.reset(seed=3)
    for _ in range(5):
        engine.step(actions_for(engine, rng))
    engine.reset(seed=3)
    assert not engine.terminals.any() and not engine.truncations.any()
    assert not engine.rewards.any() and not engine.elapsed.any()


# -- step / step_no_reset ----------------------------------------------------------------
def test_step_returns_views_of_the_buffers(engine, actions_for, rng):
    engine.reset(seed=1)
    obs, rewards, terms, truncs = engine.step(actions_for(engine, rng))
    assert obs is engine.obs and rewards is engine.rewards
    assert terms is engine.terminals and truncs is engine.truncations


def test_step_no_reset_returns_the_engines_step_result(engine, actions_for, rng):
    engine.reset(seed=1)
    result = engine.step_no_reset(actions_for(engine, rng))
    assert isinstance(result, StepResult)
    assert result is engine.result
    assert result.observations is engine.obs and result.rewards is engine.rewards
    assert result.terminals is engine.terminals and result.truncations is engine.truncations
    assert result.masks is engine.masks and result.events is engine.events
    assert result.event_names == engine.event_names


def test_step_no_reset_truncates_at_the_episode_limit(game_id, actions_for, rng):
    eng = vecsim.make(game_id, 6, max_episode_steps=4)
    eng.reset(seed=2)
    truncated = 0
    for _ in range(12):
        result = eng.step_no_reset(actions_for(eng, rng))
        assert (eng.elapsed >= 1).all() and (eng.elapsed <= 4).all()
        assert np.array_equal(result.truncations, eng.elapsed == 4)
        truncated += int(result.truncations.sum())
        eng.reset_envs(result.to_reset_mask())
        assert not eng.elapsed[result.to_reset_mask().to_bools()].any()
    assert truncated > 0


def test_finished_env_keeps_its_terminal_row_until_reset_envs(game_id, actions_for, rng):
    eng = vecsim.make(game_id, 5, max_episode_steps=3)
    eng.reset(seed=9)
    for _ in range(3):
        result = eng.step_no_reset(actions_for(eng, rng))
        if result.to_reset_mask().any():
            break
    done = _done(eng)
    assert done.any()
    terminal = eng.obs.copy()
    flags = (eng.terminals.copy(), eng.truncations.copy(), eng.rewards.copy())
    with pytest.raises(ValueError, match=f"env {np.flatnonzero(done)[0]} finished"):
        eng.step_no_reset(actions_for(eng, rng))
    eng.reset_envs(np.zeros(5, dtype=bool))
    eng.refresh()
    assert np.array_equal(eng.obs, terminal)
    assert all(np.array_equal(a, b) for a, b in zip((eng.terminals, eng.truncations, eng.rewards), flags))
    eng.reset_envs(result.to_reset_mask())
    assert not _done(eng).any()
    assert np.array_equal(eng.obs[~done], terminal[~done])
    eng.step_no_reset(actions_for(eng, rng))


def test_step_autoresets_finished_envs_on_the_next_step(game_id, actions_for, rng):
    """NEXT_STEP: the step after the end returns the reset observation with reward 0."""
    eng = vecsim.make(game_id, 4, max_episode_steps=2)
    ref = vecsim.make(game_id, 4, max_episode_steps=2)
    eng.reset(seed=4)
    ref.reset(seed=4)
    for _ in range(2):
        acts = actions_for(eng, rng)
        eng.step(acts)
        ref.step_no_reset(acts)
    assert _done(eng).all()
    eng.step(actions_for(eng, rng))
    ref.reset_envs(ResetMask.all(4))
    assert np.array_equal(eng.obs, ref.obs)
    assert not eng.rewards.any() and not _done(eng).any()


def test_reset_envs_resets_only_the_masked_envs(engine, actions_for, rng):
    engine.reset(seed=21)
    engine.step(actions_for(engine, rng))
    before = engine.obs.copy()
    mask = ResetMask(engine.num_envs)
    mask.set(1)
    mask.set(6)
    obs = engine.reset_envs(mask, seed=100)
    assert obs is engine.obs
    fresh = vecsim.make(engine.game.env_id, engine.num_envs).reset(seed=100)
    assert np.array_equal(engine.obs[[1, 6]], fresh[[1, 6]])
    keep = np.ones(engine.num_envs, dtype=bool)
    keep[[1, 6]] = False
    assert np.array_equal(engine.obs[keep], before[keep])


def test_reset_envs_accepts_a_bool_array_like_a_reset_mask(game_id):
    a, b = vecsim.make(game_id, 70), vecsim.make(game_id, 70)
    a.reset(seed=1)
    b.reset(seed=1)
    flags = np.zeros(70, dtype=bool)
    flags[[0, 63, 64, 69]] = True
    a.reset_envs(flags, seed=[3 * i for i in range(70)])
    b.reset_envs(ResetMask.from_bools(flags), seed=[3 * i for i in range(70)])
    assert np.array_equal(a.obs, b.obs) and np.array_equal(a.rng, b.rng)


@pytest.mark.parametrize("kind", ["step mask", "bool array", "ResetMask"])
def test_many_resets_take_the_parallel_kernel_and_give_the_serial_results(kind):
    n = 1000
    par = vecsim.make("CartPole-v1", n, parallel=True, max_episode_steps=3)
    ser = vecsim.make("CartPole-v1", n, parallel=False, max_episode_steps=3)
    rng = np.random.default_rng(0)
    for eng in (par, ser):
        eng.reset(seed=5)
    for t in range(7):  # every env truncates at step 3 and 6, a few terminate before
        actions = rng.integers(0, 2, n)
        for eng in (par, ser):
            result = eng.step_no_reset(actions)
            done = result.terminals | result.truncations
            mask = {"step mask": result.to_reset_mask(), "bool array": done,
                    "ResetMask": ResetMask.from_bools(done)}[kind]
            if eng is par:
                many = int(done.sum()) >= vecsim.engine.engine.PARALLEL_MIN_RESETS * vecsim.engine.engine.launch_factor()
                expected = par._reset_kernel if many else par._reset_sparse_kernel
                assert par._reset_envs_kernel(mask) is expected
            eng.reset_envs(mask, seed=None if t % 2 else 100 + t)
        assert np.array_equal(par.obs, ser.obs) and np.array_equal(par.rng, ser.rng)
        assert all(np.array_equal(a, b) for a, b in zip(par.state, ser.state))
    assert par._reset_kernel is not par._reset_sparse_kernel


def test_reset_envs_before_reset_does_not_start_the_engine(game_id):
    eng = vecsim.make(game_id, 3)
    flags = np.array([True, False, True])
    eng.reset_envs(flags, seed=0)
    with pytest.raises(RuntimeError, match="reset"):
        eng.step(first_legal_actions(eng))
    eng.reset_envs(np.ones(3, dtype=bool), seed=0)
    eng.step(first_legal_actions(eng))


def test_refresh_rewrites_observations_from_written_state(game_id, actions_for, rng):
    a, b = vecsim.make(game_id, 4), vecsim.make(game_id, 4)
    a.reset(seed=1)
    for _ in range(3):
        a.step(actions_for(a, rng))
    b.reset(seed=99)
    for src, dst in zip(a.state, b.state):
        dst[:] = src
    b.refresh()
    assert np.array_equal(a.obs, b.obs)


def test_step_mode_checks_its_mode_and_actions():
    from vecsim.engine.engine import NEXT_STEP, NO_RESET

    eng = vecsim.make("CartPole-v1", 4)
    with pytest.raises(RuntimeError, match="reset"):
        eng.step_mode(NEXT_STEP, np.zeros(4, np.int64))
    eng.reset(seed=0)
    before = eng.state.x.copy()
    with pytest.raises(ValueError, match="mode"):
        eng.step_mode(7, np.zeros(4, np.int64))
    with pytest.raises(ValueError, match="shape"):
        eng.step_mode(NEXT_STEP, np.zeros(5, np.int64))
    with pytest.raises(ValueError, match=r"actions\[1\] = -1"):
        eng.step_mode(NO_RESET, np.array([0, -1, 0, 0]))
    assert np.array_equal(eng.state.x, before)
    eng.step_mode(NO_RESET, [1, 1, 0, 0])  # a list is converted like everywhere else
    assert not np.array_equal(eng.state.x, before)


def test_games_declaring_whole_observation_rows_write_every_element(game_id):
    if not vecsim.resolve(game_id).hints.write_obs_fills_row:
        pytest.skip(f"{game_id} does not declare KernelHints(write_obs_fills_row=True)")
    eng = vecsim.make(game_id, 5)
    eng.reset(seed=2)
    expected = eng.obs.copy()
    sentinel = np.nan if eng.obs.dtype.kind == "f" else np.iinfo(eng.obs.dtype).max
    eng.obs[...] = sentinel
    eng.refresh()
    assert np.array_equal(eng.obs, expected)


def test_fresh_output_steps_return_new_arrays_and_reset_envs_catches_the_engine_up(actions_for, rng):
    """Engine.step_mode_fresh (a copy=True VectorEnv's step from 512 envs): new arrays equal to
    what the buffers would hold, the buffers themselves left alone, and brought up to date by
    reset_envs, which rewrites only some envs."""
    from vecsim.engine.engine import NEXT_STEP

    fresh, plain = vecsim.make("CartPole-v1", 70), vecsim.make("CartPole-v1", 70)
    fresh.reset(seed=4)
    plain.reset(seed=4)
    before = fresh.obs.copy()
    returned = []
    for _ in range(40):
        acts = actions_for(plain, rng)
        out = fresh.step_mode_fresh(NEXT_STEP, acts)
        expected = plain.step(acts)
        for got, want in zip(out, expected):
            assert np.array_equal(got, want) and got.dtype == want.dtype
            assert got.flags.f_contiguous == want.flags.f_contiguous and got.flags.c_contiguous == want.flags.c_contiguous
        assert all(not np.shares_memory(a, b) for a in out for b in (fresh.obs, fresh.rewards, fresh.terminals))
        returned.append((out, tuple(a.copy() for a in out)))
    assert np.array_equal(fresh.obs, before), "step_mode_fresh wrote the engine's observation buffer"
    assert all(np.array_equal(a, b) for out, kept in returned for a, b in zip(out, kept))
    assert _done(plain).any(), "no episode ended: the reset below would test nothing"
    mask = _done(plain)
    fresh.reset_envs(mask)
    plain.reset_envs(mask)
    for name in ("obs", "rewards", "terminals", "truncations"):
        assert np.array_equal(getattr(fresh, name), getattr(plain, name)), name
    with pytest.raises(ValueError, match="NEXT_STEP or SAME_STEP"):
        fresh.step_mode_fresh(2, actions_for(fresh, rng))
    before = fresh.state.x.copy()
    with pytest.raises(ValueError, match="shape"):
        fresh.step_mode_fresh(NEXT_STEP, np.zeros(69, np.int64))
    with pytest.raises(ValueError, match=r"actions\[3\] = 2"):
        fresh.step_mode_fresh(NEXT_STEP, np.where(np.arange(70) == 3, 2, 0))
    assert np.array_equal(fresh.state.x, before)
    unstarted = vecsim.make("CartPole-v1", 70)
    with pytest.raises(RuntimeError, match="reset"):
        unstarted.step_mode_fresh(NEXT_STEP, np.zeros(70, np.int64))
    unstarted.close()
    with pytest.raises(RuntimeError, match="closed"):
        unstarted.step_mode_fresh(NEXT_STEP, np.zeros(70, np.int64))
    given = vecsim.make("CartPole-v1", 3, buffers={"obs": np.zeros((3, 4), np.float32)})
    assert not given.fresh_outputs_ok  # caller buffers must receive the outputs


# -- StepResult --------------------------------------------------------------------------
def _result(terms, truncs, obs_dim=2):
    n = len(terms)
    obs = np.arange(n * obs_dim, dtype=np.float32).reshape(n, obs_dim)
    return StepResult(obs, np.ones(n), np.array(terms), np.array(truncs), np.ones((n, 0), bool),
                      np.zeros((n, 0), np.int64))


def test_step_result_per_env_queries():
    r = _result([False, True, False], [False, False, True])
    assert r.num_envs == 3
    assert np.array_equal(r.obs(2), [4.0, 5.0])
    assert [r.is_terminal(i) for i in range(3)] == [False, True, False]
    assert [r.is_truncated(i) for i in range(3)] == [False, False, True]
    assert [r.is_done(i) for i in range(3)] == [False, True, True]
    assert "done=2" in repr(r)


def test_step_result_to_reset_mask_is_terminals_or_truncations():
    r = _result([False, True, False, False], [False, False, True, False])
    assert list(r.to_reset_mask().iter_set()) == [1, 2]
    assert r.to_reset_mask().num_envs == 4


def test_step_result_rejects_bad_indices():
    r = _result([False, False], [False, False])
    with pytest.raises(IndexError, match="index 2 is out of range for num_envs=2"):
        r.obs(2)
    with pytest.raises(IndexError, match="-1"):
        r.is_done(-1)
    with pytest.raises(TypeError, match="1.0"):
        r.is_terminal(1.0)
    with pytest.raises(TypeError, match="True"):
        r.is_truncated(True)


def test_step_result_of_the_engine_marks_finished_envs(game_id, actions_for, rng):
    eng = vecsim.make(game_id, 8, max_episode_steps=2)
    eng.reset(seed=0)
    eng.step_no_reset(actions_for(eng, rng))
    result = eng.step_no_reset(actions_for(eng, rng))
    assert result.to_reset_mask() == ResetMask.all(8)
    assert all(result.is_done(i) for i in range(8))


@pytest.mark.parametrize("num_envs", [1, 63, 64, 130])
def test_the_kernel_packs_the_finished_envs_of_step_no_reset(num_envs):
    # Episodes of 1 to 3 steps, so that every step finishes a different subset of envs,
    # including the partial last word of the mask.
    eng = vecsim.make("CartPole-v1", num_envs, max_episode_steps=3)
    eng.reset(seed=1)
    rng = np.random.default_rng(0)
    for _ in range(12):
        result = eng.step_no_reset(rng.integers(0, 2, num_envs))
        done = result.terminals | result.truncations
        mask = result.to_reset_mask()
        assert mask is result.done_mask and mask == ResetMask.from_bools(done)
        assert result.num_done == int(done.sum()) == mask.count()
        eng.reset_envs(mask if result.num_done else ResetMask(num_envs))
        assert result.to_reset_mask() == ResetMask.from_bools(done)  # still the step's mask
        assert not (eng.terminals | eng.truncations).any()
        for i in rng.choice(num_envs, size=min(num_envs, 3), replace=False):
            eng.state.theta[i] = 1.0  # past the threshold: env i terminates next step
    eng.step(np.zeros(num_envs, dtype=np.int64))
    assert result.done_mask is None and result.num_done == -1


# -- caller-supplied buffers -------------------------------------------------------------
#: Fortran-ordered observations make kernels of their own for a game (about as long to compile as
#: its default ones) from code that no game writes differently: a classic and a masked game.
F_ORDER_GAMES = ("vecsim/CartPole-v1", "vecsim/BlokusDuo-v0")


@pytest.mark.parametrize("game_id, order", [(g, "C") for g in vecsim.game_ids()]
                         + [(g, "F") for g in F_ORDER_GAMES if g in vecsim.game_ids()])
def test_caller_buffers_are_written_in_place(game_id, order, actions_for, rng):
    n = 6
    ref = vecsim.make(game_id, n)
    bufs = {"obs": np.zeros((n, ref.obs_dim), ref.obs_dtype, order=order), "rewards": np.zeros(n),
            "terminals": np.zeros(n, bool), "truncations": np.zeros(n, bool)}
    addresses = {k: v.ctypes.data for k, v in bufs.items()}
    eng = vecsim.make(game_id, n, buffers=bufs)
    assert eng.obs is bufs["obs"] and eng.rewards is bufs["rewards"]
    assert eng.result.observations is bufs["obs"]
    assert np.array_equal(eng.reset(seed=3), ref.reset(seed=3))
    assert np.array_equal(bufs["obs"], ref.obs)
    for _ in range(30):
        acts = actions_for(eng, rng)
        eng.step(acts)
        ref.step(acts)
        for name in bufs:
            assert np.array_equal(bufs[name], getattr(ref, name)), name
    assert {k: v.ctypes.data for k, v in bufs.items()} == addresses


def test_caller_buffers_into_rollout_storage_rows(game_id, actions_for, rng):
    """Zero-copy into a (T, N, ...) rollout tensor: each step writes a row of the storage."""
    n, steps = 4, 5
    ref = vecsim.make(game_id, n)
    storage = np.zeros((steps, n, ref.obs_dim), ref.obs_dtype)
    eng = vecsim.make(game_id, n, buffers={"obs": storage[0]})
    eng.reset(seed=1)
    ref.reset(seed=1)
    acts = actions_for(eng, rng)
    eng.step(acts)
    ref.step(acts)
    assert np.array_equal(storage[0], ref.obs)


def test_caller_buffers_only_partially_given(game_id):
    rewards = np.zeros(3)
    eng = vecsim.make(game_id, 3, buffers={"rewards": rewards})
    eng.reset(seed=0)
    eng.step(first_legal_actions(eng))
    assert eng.rewards is rewards


# -- per-env constants -------------------------------------------------------------------
def _param_and_two_values(game):
    """``(name, default, other)``: a constant of ``game`` and two valid values of it."""
    if game.name in CHOICE_PARAM:
        name, other = CHOICE_PARAM[game.name]
        return name, game.params_cls._field_defaults[name], other
    name = DYNAMIC_PARAM.get(game.name) or next(
        f for f in game.params_cls._fields if game.params_cls._field_defaults[f] != 0)
    base = game.params_cls._field_defaults[name]
    return name, base, base * 1.25


def test_per_env_params_equal_scalar_engines_env_by_env(game_id, actions_for, rng):
    game = vecsim.resolve(game_id)
    name, base, other = _param_and_two_values(game)
    n = 6
    values = np.where(np.arange(n) % 2 == 0, base, other)
    mixed = vecsim.make(game_id, n, **{name: values})
    plain = vecsim.make(game_id, n)
    changed = vecsim.make(game_id, n, **{name: other})
    assert np.array_equal(mixed.params._asdict()[name], values)
    for eng in (mixed, plain, changed):
        eng.reset(seed=8)
    differs = False
    for _ in range(60):
        acts = actions_for(mixed, rng)
        for eng in (mixed, plain, changed):
            eng.step(acts)
        assert np.array_equal(mixed.obs[0::2], plain.obs[0::2])
        assert np.array_equal(mixed.obs[1::2], changed.obs[1::2])
        assert np.array_equal(mixed.rewards[1::2], changed.rewards[1::2])
        differs |= not np.array_equal(plain.obs[1::2], changed.obs[1::2])
    if game.name in DYNAMIC_PARAM:
        assert differs, f"{name}={other} did not change {game.name}'s trajectory"


def test_params_of_reports_one_envs_constants(game_id):
    game = vecsim.resolve(game_id)
    name, base, other = _param_and_two_values(game)
    eng = vecsim.make(game_id, 2, **{name: [base, other]})
    assert [getattr(eng.params_of(i), name) for i in (0, 1)] == [base, other]
    assert isinstance(eng.params_of(0), game.params_cls)


# -- precision ---------------------------------------------------------------------------
@pytest.mark.parametrize("game_id, precision", game_precisions())
def test_precision_sets_state_and_reward_dtypes(game_id, precision):
    eng = vecsim.make(game_id, 3, precision=precision)
    eng.reset(seed=0)
    eng.step(first_legal_actions(eng))
    assert eng.rewards.dtype == np.dtype(precision)
    assert all(f.dtype == np.dtype(precision) for f in eng.state if f.dtype.kind == "f")
    assert eng.obs.dtype == _flat_dtype(eng.single_observation_space)


def test_float32_cartpole_stays_close_to_float64_for_50_steps():
    if "vecsim/CartPole-v1" not in vecsim.game_ids():
        pytest.skip("CartPole is not registered")
    n = 64
    f64 = vecsim.make("CartPole-v1", n, precision="float64")
    f32 = vecsim.make("CartPole-v1", n, precision="float32")
    f64.reset(seed=17)
    f32.reset(seed=17)
    assert np.allclose(f32.obs, f64.obs, atol=1e-7)
    worst = 0.0
    for _ in range(50):
        # A balancing policy keeps every episode running, so the trajectories stay comparable.
        acts = (f64.obs[:, 2] + 0.5 * f64.obs[:, 3] > 0).astype(np.int64)
        f64.step_no_reset(acts)
        f32.step_no_reset(acts)
        assert not (f64.terminals | f64.truncations).any()
        assert np.array_equal(f32.terminals, f64.terminals)
        assert np.array_equal(f32.rewards, f64.rewards.astype(np.float32))
        worst = max(worst, float(np.abs(f32.obs.astype(np.float64) - f64.obs).max()))
    assert worst < 1e-4, worst


def test_float32_pendulum_stays_close_to_float64_for_50_steps():
    """The float32 step's polynomial sine, floor-based angle normalisation and clipping
    follow the float64 (Gymnasium) step, from angles several turns around and torques
    beyond the bounds."""
    n = 64
    f64 = vecsim.make("Pendulum-v1", n, precision="float64")
    f32 = vecsim.make("Pendulum-v1", n, precision="float32")
    theta, theta_dot = np.linspace(-7.0, 7.0, n), np.linspace(-8.0, 8.0, n)
    for eng in (f64, f32):
        eng.reset(seed=3)
        eng.state.theta[:] = theta.astype(eng.state.theta.dtype)
        eng.state.theta_dot[:] = theta_dot.astype(eng.state.theta.dtype)
        eng.refresh()
    assert np.allclose(f32.obs, f64.obs, atol=1e-6)
    actions = np.random.default_rng(0).uniform(-3.0, 3.0, (50, n, 1)).astype(np.float32)
    worst_obs = worst_reward = 0.0
    for acts in actions:
        f64.step_no_reset(acts)
        f32.step_no_reset(acts)
        worst_obs = max(worst_obs, float(np.abs(f32.obs.astype(np.float64) - f64.obs).max()))
        worst_reward = max(worst_reward, float(np.abs(f32.rewards - f64.rewards).max()))
    assert worst_obs < 1e-3 and worst_reward < 1e-3, (worst_obs, worst_reward)
    assert np.abs(f64.state.theta).max() > 2 * np.pi  # angles beyond one turn were normalised


@pytest.mark.parametrize("env_id, push_left, coast", [
    ("MountainCar-v0", 0, 1),
    ("MountainCarContinuous-v0", [-1.7], [0.05]),  # -1.7: beyond the bound, clipped
])
def test_float32_mountain_car_stays_close_to_float64_for_100_steps(env_id, push_left, coast):
    """The float32 step (polynomial cosine, clips and the wall stop as selects) follows the
    float64 (Gymnasium) step, with the left half of the cars driven into the wall."""
    n = 64
    f64 = vecsim.make(env_id, n, precision="float64")
    f32 = vecsim.make(env_id, n, precision="float32")
    for eng in (f64, f32):
        eng.reset(seed=2)
        eng.state.position[:] = np.linspace(-1.15, -0.2, n).astype(np.float32)
        eng.state.velocity[:] = np.linspace(-0.07, 0.02, n).astype(np.float32)
        eng.refresh()
    actions = np.where((np.arange(n) < n // 2).reshape((n,) + np.shape(coast)), push_left, coast)
    actions = actions.astype(f64.single_action_space.dtype)
    worst_obs = worst_reward = 0.0
    at_wall = False
    for _ in range(100):
        f64.step_no_reset(actions)
        f32.step_no_reset(actions)
        worst_obs = max(worst_obs, float(np.abs(f32.obs.astype(np.float64) - f64.obs).max()))
        worst_reward = max(worst_reward, float(np.abs(f32.rewards - f64.rewards).max()))
        assert np.array_equal(f32.terminals, f64.terminals)
        at_wall |= bool((np.isclose(f64.state.position, -1.2, atol=1e-6) & (f64.state.velocity == 0)).any())
    assert worst_obs < 1e-3 and worst_reward < 1e-5, (worst_obs, worst_reward)
    assert at_wall  # some cars stopped at the wall


def test_float32_acrobot_stays_close_to_float64_for_20_steps():
    """The float32 RK4 step (polynomial sine and cosine, loop-free angle wrap) follows the
    float64 (Gymnasium) step over a horizon where the chaotic double pendulum has not yet
    amplified float32 rounding, from states near the wrap and the velocity bounds."""
    n = 64
    f64 = vecsim.make("Acrobot-v1", n, precision="float64")
    f32 = vecsim.make("Acrobot-v1", n, precision="float32")
    grid = np.linspace(-1.0, 1.0, n)
    start = {"theta1": 3.1 * grid, "theta2": -3.1 * grid, "dtheta1": 12.0 * grid, "dtheta2": -27.0 * grid}
    for eng in (f64, f32):
        eng.reset(seed=4)
        for name, values in start.items():
            getattr(eng.state, name)[:] = values.astype(np.float32)  # the same float32 start in both
        eng.refresh()
    actions = np.random.default_rng(1).integers(0, 3, (20, n))
    worst = 0.0
    wrapped = False
    for acts in actions:
        before = f64.state.theta1.copy()
        f64.step_no_reset(acts)
        f32.step_no_reset(acts)
        wrapped |= bool((np.abs(f64.state.theta1 - before) > np.pi).any())
        worst = max(worst, float(np.abs(f32.obs.astype(np.float64) - f64.obs).max()))
        assert np.array_equal(f32.terminals, f64.terminals)
        if f64.terminals.any():
            break
    assert worst < 1e-3, worst
    assert wrapped  # some angle went round through +-pi


# -- masks, rendering, lifecycle ---------------------------------------------------------
def test_action_masks_are_all_true_for_games_without_illegal_actions(engine):
    masks = engine.action_masks()
    assert masks.shape[0] == engine.num_envs and masks.dtype == np.bool_
    if not engine.game.has_action_mask:
        assert masks.all()


def test_render_rgb_and_text(engine):
    engine.reset(seed=0)
    img = engine.render_rgb(engine.num_envs - 1)
    assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3
    assert isinstance(engine.render_text(0), str) and engine.render_text(0)


def test_env_values_names_every_state_field(engine):
    values = engine.env_values(0)
    assert set(values) == set(engine.state._fields) - set(engine.game.scratch_state)


def test_close_is_idempotent_and_final(game_id):
    eng = vecsim.make(game_id, 2)
    eng.reset(seed=0)
    assert not eng.closed
    eng.close()
    eng.close()
    assert eng.closed
    for call in (lambda: eng.reset(seed=0), lambda: eng.step(eng.zero_actions()),
                 lambda: eng.step_no_reset(eng.zero_actions()), eng.refresh, eng.action_masks,
                 lambda: eng.reset_envs(np.ones(2, bool)), lambda: eng.render_rgb(0), lambda: eng.render_text(0)):
        with pytest.raises(RuntimeError, match="closed"):
            call()


def test_repr_names_game_size_and_kernel(engine):
    text = repr(engine)
    assert engine.game.env_id in text and f"num_envs={engine.num_envs}" in text


def test_engine_built_directly_from_a_game_spec(game_id):
    eng = Engine(vecsim.resolve(game_id), 3)
    assert eng.max_episode_steps is None
    eng.reset(seed=0)
    eng.step_no_reset(first_legal_actions(eng))


def test_registry_table_matches_game_modules(game_id):
    """The registration numbers kept in vecsim.engine.registry equal the game modules' own."""
    import gymnasium

    from vecsim.engine.registry import BUILTIN

    game = vecsim.resolve(game_id)
    module_name, max_steps, threshold = BUILTIN[game.env_id]
    assert game.module.__name__ == module_name
    assert max_steps == game.max_episode_steps
    assert threshold == game.reward_threshold
    spec = gymnasium.spec(f"vecsim/{game.env_id}")
    assert spec.max_episode_steps == game.max_episode_steps


def test_kernels_never_take_exactly_the_leaky_argument_count():
    """Numba leaks per call at 20 arguments; generated kernels are padded past it."""
    from vecsim.engine.codegen import LEAKY_ARG_COUNT, _pad_signatures

    params = ", ".join(f"a{k}" for k in range(LEAKY_ARG_COUNT))
    text = _pad_signatures(f"def step_serial({params}):\n    pass\ndef reset_serial(a, b):\n    pass\n")
    assert f"def step_serial({params}, _pad):" in text
    assert "def reset_serial(a, b):" in text
    assert "PADDED = ['step_serial']" in text


def test_envs_per_call_picks_the_step_loop_and_is_checked(monkeypatch):
    """Tetris (22 State arrays) steps runs of ``envs_per_call`` envs a call (the serial kernel
    one run of all its envs); CartPole keeps the per-env loop that vectorises; a malformed hint
    is refused when the game is read."""
    from vecsim.engine.codegen import render_collect_step_source, render_source
    from vecsim.engine.game import load_game

    def batched_step(source: str) -> str:
        """The batched step kernels' text (``step_envs``, which steps a subset of envs one by one
        for opponents played out of the kernel, comes after them)."""
        return source[:source.index("\ndef step_envs(")]

    tetris, cartpole = load_game("vecsim.games.tetris"), load_game("vecsim.games.cartpole")
    k = tetris.hints.envs_per_call
    # Both kernels call _step_share (compiled once, by symbol), the serial one for every env, the
    # parallel one through its one parallel region (_step_shares, the only code compiled with
    # Numba's parallel passes) for a thread's share of whole runs and cache lines; the share holds
    # the steps (one call of the run function, or a loop of one env a call) and the resets, before
    # the step where it draws, after it where it draws nothing: no kernel holds a reset pass or a
    # step of its own, nor a parallel loop.
    for game, precision, per_call in ((tetris, "float64", k), (cartpole, "float32", 1)):
        text = batched_step(render_source(game, precision, True))
        share = text[text.index("def _step_share("):text.index("def _step_shares(")]
        region = text[text.index("def _step_shares("):text.index("def _reset_shares(")]
        serial, parallel = text[text.index("def step_serial("):text.index("def reset_serial(")], \
            text[text.index("def step_parallel("):text.index("def reset_parallel(")]
        assert f"_SHARE_ALIGN = {math.lcm(per_call, 64)}\n" in text
        assert text.count("@njit(**OPTS_PARALLEL)") == 3  # the step's, the reset's and observe's regions
        assert region.count("prange(") == 1
        assert "_step_share(mode, max_steps, actions, step_table_at, nfinished, whole_obs, c * share," in region
        assert "_step_share(mode, max_steps, actions, step_table_at, nfinished, whole_obs, 0, n)" in serial
        assert "_step_shares(mode, max_steps, actions, step_table_at, nfinished, whole_obs, n, _thread_share(n))" \
            in parallel
        for kernel in (serial, parallel):
            assert "prange(" not in kernel
            assert "_step_and_write(" not in kernel and "_reset_and_write(" not in kernel and "_step_run(" not in kernel
        assert ("_step_run(s, p, lo, hi," in share) == (per_call > 1)
        assert ("_step_and_write(s, p, np.uint64(i)," in share) == (per_call == 1)
        assert "final_obs, np.bool_(True))" in share
        draws = game.hints.step_uses_rng
        assert ("# RESETS BEFORE STEP BEGIN" in share) == draws and ("# RESETS AFTER STEP BEGIN" in share) != draws
    # The collector: runs of k slots for Acrobot (its step inlined) and Tetris (the engine's fused
    # run, over slot ranges that skip idle slots), one slot a call for CartPole and Blokus.
    acrobot, blokus = load_game("vecsim.games.acrobot"), load_game("vecsim.games.blokus.classic")
    assert acrobot.hints.envs_per_call == k and blokus.hints.envs_per_call == 1
    slot_runs = render_collect_step_source(acrobot, "float64", True)
    assert f"prange((n_run + {k} - 1) // {k})" in slot_runs and "_step_and_write(s, p, np.uint64(w)," not in slot_runs
    fused_runs = render_collect_step_source(tetris, "float64", True)
    assert f"prange((n_slots + {k} - 1) // {k})" in fused_runs and "_fused_run(s, p, lo, hi," in fused_runs
    assert "_fused_one(" not in fused_runs.split("import", 3)[-1] and "prange((n_run +" not in fused_runs
    per_slot = render_collect_step_source(cartpole, "float64", True)
    assert "_step_and_write(s, p, np.uint64(w)," in per_slot and "prange((n_run +" not in per_slot
    fused_per_slot = render_collect_step_source(blokus, "float64", True)
    assert "_fused_one(s, p, np.uint64(w)," in fused_per_slot and "_fused_run(s" not in fused_per_slot
    for bad in (0, -3, 2.0, True, "16"):
        monkeypatch.setattr(tetris.module, "KERNEL_HINTS", tetris.hints._replace(envs_per_call=bad))
        with pytest.raises(TypeError, match=f"envs_per_call must be an int >= 1, but got {bad!r}"):
            load_game("vecsim.games.tetris")


def test_call_by_symbol_has_the_kernels_import_the_fused_step_and_reset_and_is_checked(monkeypatch):
    """A game with KernelHints.call_by_symbol gets kernels that import its fused step and reset
    from the modules fused_source renders, and a collector whose run of slots is called by
    symbol; a game without gets neither (its step loop vectorises)."""
    from vecsim.engine.codegen import fused_source, render_collect_step_source, render_source
    from vecsim.engine.game import load_game

    tetris, cartpole = vecsim.resolve("Tetris-v0"), vecsim.resolve("CartPole-v1")
    assert tetris.hints.call_by_symbol and not cartpole.hints.call_by_symbol
    functions = tetris.kernel_functions(tetris.params_cls())
    text = render_source(tetris, "float64", True, functions)
    for part in ("step", "reset"):
        assert f"from {fused_source(tetris, 'float64', functions, False, part)[0]} import" in text
    assert "vecsim_fused_" not in render_source(cartpole, "float64", True)
    collector = render_collect_step_source(tetris, "float64", True, functions)
    assert f"from {fused_source(tetris, 'float64', functions, False, 'step')[0]} import" in collector
    assert "_step_and_write" not in collector and "def _step_slots(" not in collector  # no copy of the rules
    assert "vecsim_fused_" not in render_collect_step_source(cartpole, "float64", True)
    for bad in (1, "yes", None):
        monkeypatch.setattr(tetris.module, "KERNEL_HINTS", tetris.hints._replace(call_by_symbol=bad))
        with pytest.raises(TypeError, match=f"call_by_symbol must be True or False, but got {bad!r}"):
            load_game("vecsim.games.tetris")


def test_kernel_functions_leave_the_planner_out_of_placement_free_tetris_batches():
    """A Tetris batch in drop or primitive mode gets kernels generated with a mask function
    that never calls the reach planner (half of its cold compile); a reach batch keeps the
    full write_mask. Checked on the generated sources: nothing is compiled here."""
    from vecsim.engine.codegen import fused_source, render_collect_step_source, render_source
    from vecsim.engine.game import load_game

    tetris = load_game("vecsim.games.tetris")
    Params = tetris.params_cls
    for mode, stand_in in ((0, "write_mask_without_planner"), (1, "write_mask_without_planner"), (2, None)):
        functions = tetris.kernel_functions(Params(action_mode=mode))
        assert functions == ((("write_mask", stand_in),) if stand_in else ())
        mask = stand_in or "write_mask"
        engine_text = render_source(tetris, "float64", True, functions)
        assert f'"{mask}")' in engine_text and "STEP_ENV" not in engine_text and "WRITE_MASK" not in engine_text
        # The collector starts jobs with the mask function and steps with the fused step of the same functions.
        collector_text = render_collect_step_source(tetris, "float64", True, functions)
        assert f"from {fused_source(tetris, 'float64', functions, False, 'step')[0]} import" in collector_text
        for text in (engine_text, collector_text):
            assert f"_game.{mask}(" in text
            if stand_in:
                assert '"write_mask")' not in text and "_game.write_mask(" not in text
    # The stand-in itself never reaches the planner; the full mask does.
    import inspect
    src = inspect.getsource(tetris.module.write_mask_without_planner.py_func)
    assert "_reach_mask" not in src and "_reach_mask" in inspect.getsource(tetris.module.write_mask.py_func)
    # CartPole has no kernel_functions: its sources are unchanged.
    cartpole = load_game("vecsim.games.cartpole")
    # A game without action_ok gets the check its Discrete(2) space implies, and no stand-in.
    assert cartpole.kernel_functions(cartpole.params_cls()) == (("action_ok", "below_2"),)
    assert render_source(cartpole, "float32", True) == render_source(cartpole, "float32", True, (("action_ok", "below_2"),))


def test_kernel_functions_are_checked(monkeypatch):
    from vecsim.engine.game import load_game

    tetris = load_game("vecsim.games.tetris")
    p = tetris.params_cls()
    for bad, error, match in (({"write_obs": "write_mask"}, ValueError, "may replace only"),
                              ({"write_mask": "no_such_function"}, TypeError, "'no_such_function' for 'write_mask'"),
                              ({"write_mask": "N_DROP"}, TypeError, "not an @njit function"),
                              ([("write_mask", "write_mask")], TypeError, "must return a dict")):
        monkeypatch.setattr(tetris.module, "kernel_functions", lambda params, bad=bad: bad)
        with pytest.raises(error, match=match):
            tetris.kernel_functions(p)


def test_structural_params_must_be_the_same_for_every_env():
    """Per-env values of a param that shapes the spaces or the kernels (Tetris's action_mode,
    hold, queue) are refused before anything compiles, naming the first env that differs."""
    with pytest.raises(ValueError, match=r"action_mode .* env 0 has 1.0 and env 2 has 2.0"):
        vecsim.make("Tetris-v0", 4, action_mode=np.array([1, 1, 2, 1]))
    with pytest.raises(ValueError, match=r"queue .* env 0 has 5.0 and env 1 has 3.0"):
        vecsim.make("Tetris-v0", 2, queue=[5, 3])


def test_per_env_helpers_reject_bad_indices(engine):
    for bad in (-1, engine.num_envs):
        with pytest.raises(IndexError, match=f"env index {bad} is out of range"):
            engine.render_rgb(bad)
        with pytest.raises(IndexError, match="out of range"):
            engine.render_text(bad)
    with pytest.raises(TypeError, match="env index must be an int"):
        engine.env_values(1.5)


def test_concurrent_callers_all_get_the_cache_folder_they_asked_for(tmp_path, monkeypatch):
    # `vecsim warmup --jobs 2` starts its processes at once, each probing the cache folder for
    # write access. With one probe file name for all, one caller could delete another's probe
    # and that caller moved on to the next folder (~/.cache/vecsim): its kernels went there.
    import concurrent.futures
    import threading

    from vecsim.engine.codegen import cache_dir

    monkeypatch.setenv("VECSIM_CACHE_DIR", str(tmp_path))
    start = threading.Barrier(8)

    def probe_many(_):
        start.wait()
        return {cache_dir() for _ in range(300)}

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        folders = set().union(*pool.map(probe_many, range(8)))
    assert folders == {tmp_path}
    assert not list(tmp_path.iterdir()), "a probe file was left behind"
