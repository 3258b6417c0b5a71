"""vecsim/DrMario-v0 in decision mode (the default): a step is the planner's script for the
chosen placement played on the per-frame kernel, then the game to the next decision point.
Serial and parallel kernels, one and two threads: tests/test_determinism.py, with every game."""

import numpy as np
import pytest

import vecsim
from vecsim.games.drmario import rules
from vecsim.games.drmario.replay import frames, take
from vecsim.planners import drmario as planner

GAME = "vecsim/DrMario-v0"
#: A fast setting for the tests: high gravity keeps the searches small.
FAST = dict(level=15, speed="high")
CORE_FIELDS = ("board", "reserve", "lfsr", "speed_ups", "speed_counter", "hor_velocity", "x", "y", "rot", "falling",
               "next_pill", "reserve_index", "pills_sent", "fc", "held", "next_action", "placed_step", "status",
               "thrown", "match_flag", "score_multiplier", "virus_left", "score", "outcome", "frame_count", "lock_x",
               "lock_y", "lock_rot")


@pytest.fixture(scope="module")
def engine():
    eng = vecsim.make(GAME, 3, parallel=False, seed=0x1234, **FAST)
    yield eng
    eng.close()


def _play_on_frame_kernel(one, action):
    """Env 0 of the one-env ``State`` ``one``: the planner's script of ``action``, then no input
    until the next decision point; returns (frames played, the plan)."""
    plan = planner.plan(one, 0)
    script = planner.script(plan, action)
    for b in script:
        frames(one, np.array([b], np.int64))
    played = len(script)
    while one.outcome[0] == rules.PLAYING and one.next_action[0] != rules.FALLING:
        frames(one, np.zeros(1, np.int64))
        played += 1
    return played, plan


def test_a_step_is_the_planners_script_on_the_frame_kernel(engine):
    rng = np.random.default_rng(0)
    engine.reset(seed=0)
    info = engine.info_arrays
    steps = 0
    while steps < 40:
        rows = [take(engine.state, np.array([i])) for i in range(engine.num_envs)]
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in engine.masks])
        for i, one in enumerate(rows):  # the mask and costs are the planner's
            plan = planner.plan(one, 0)
            assert np.array_equal(info["cost_to_lock"][i], plan.cost_to_lock)
            assert np.array_equal(engine.masks[i], plan.feasible_mask)
        result = engine.step_no_reset(actions)
        steps += 1
        for i, one in enumerate(rows):
            played, plan = _play_on_frame_kernel(one, actions[i])
            assert info["tau"][i] == played > plan.cost_to_lock[actions[i]]
            for name in CORE_FIELDS:
                assert np.array_equal(getattr(engine.state, name)[i], getattr(one, name)[0]), (steps, i, name)
            assert info["terminal_reason"][i] == one.outcome[0]
            assert result.terminals[i] == (one.outcome[0] != rules.PLAYING)
        done = result.terminals | result.truncations
        if done.any():
            engine.reset_envs(done, seed=steps)


def test_outputs_describe_the_decision(engine):
    engine.reset(seed=3)
    rng = np.random.default_rng(1)
    for _ in range(5):
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in engine.masks])
        result = engine.step_no_reset(actions)
        if (result.terminals | result.truncations).any():
            break
    s, info = engine.state, engine.info_arrays
    board = s.board
    for i in range(engine.num_envs):
        assert list(info["pill_colors"][i]) == [s.falling[i] // 3, s.falling[i] % 3]
        assert list(info["preview_colors"][i]) == [s.next_pill[i] // 3, s.next_pill[i] % 3]
        viruses = board[i][(board[i] & 0xF0) == 0xD0] & 15
        assert list(info["viruses_by_color"][i]) == [int(np.sum(viruses == c)) for c in range(3)]
        assert info["viruses_left"][i] == len(viruses)
        filled = (board[i] != 0xFF).reshape(16, 8)
        heights = [16 - int(np.argmax(filled[:, c])) if filled[:, c].any() else 0 for c in range(8)]
        assert list(info["column_heights"][i]) == heights and info["max_height"][i] == max(heights)
        assert info["level"][i] == 15 and info["speed"][i] == 2
        cleared = info["tiles_cleared"][i]
        assert cleared[0] == result.events[i, engine.event_names.index("viruses_cleared")]
        assert cleared[2] == result.events[i, engine.event_names.index("tiles_cleared")] == cleared[0] + cleared[1]
        pose = planner.pose_action(int(info["lock_x"][i]), int(info["lock_y"][i]), int(info["lock_rot"][i]))
        assert pose == actions[i]


def test_infeasible_placement_is_refused_or_flagged():
    eng = vecsim.make(GAME, 2, parallel=False, seed=0x1234, **FAST)
    eng.reset(seed=0)
    bad = np.array([int(np.flatnonzero(~eng.masks[0])[0]), int(np.flatnonzero(eng.masks[1])[0])])
    with pytest.raises(ValueError, match="env 0"):
        eng.step_no_reset(bad)
    flag = vecsim.make(GAME, 2, parallel=False, seed=0x1234, invalid_action="flag", **FAST)
    flag.reset(seed=0)
    flag.step_no_reset(np.array([int(np.flatnonzero(m)[0]) for m in flag.masks]))  # a step that played frames
    assert (flag.info_arrays["tau"] > 0).all()
    bad = np.array([int(np.flatnonzero(~flag.masks[0])[0]), int(np.flatnonzero(flag.masks[1])[0])])
    before = {name: getattr(flag.state, name)[0].copy() for name in CORE_FIELDS}
    costs = flag.info_arrays["cost_to_lock"][0].copy()
    result = flag.step_no_reset(bad)
    column = flag.event_names.index("invalid_action")
    assert result.events[0, column] == 1 and result.events[1, column] == 0
    assert result.rewards[0] == 0 and not result.terminals[0]
    for name, value in before.items():  # the same decision
        assert np.array_equal(getattr(flag.state, name)[0], value), name
    assert np.array_equal(flag.info_arrays["cost_to_lock"][0], costs)
    assert flag.info_arrays["tau"][0] == 0 and list(flag.info_arrays["tiles_cleared"][0]) == [0, 0, 0]
    assert flag.info_arrays["tau"][1] > 0


def test_the_frame_cap_ends_the_episode_with_a_timeout():
    eng = vecsim.make(GAME, 1, parallel=False, seed=0x1234, max_frames=150, **FAST)
    eng.reset(seed=0)
    frames = [int(eng.state.frame_count[0])]
    for _ in range(10):
        result = eng.step_no_reset(np.array([int(np.flatnonzero(eng.masks[0])[0])]))
        frames.append(int(eng.state.frame_count[0]))
        if result.terminals[0]:
            break
    assert result.terminals[0] and eng.info_arrays["terminal_reason"][0] == rules.TIMEOUT
    assert frames[-2] < 150 <= frames[-1]  # the first decision point at or past the cap
    eng.close()


def test_the_search_scratch_is_the_threads_and_the_env_keeps_a_small_tree(engine):
    from vecsim.core.buffers import state_bytes_per_env
    from vecsim.core.scratch import thread_rows
    from vecsim.games.drmario.state import SCRATCH_FIELDS

    assert engine.game.scratch_state == SCRATCH_FIELDS
    for name in SCRATCH_FIELDS:
        assert getattr(engine.state, name).shape[0] == thread_rows()
    assert state_bytes_per_env(engine.state, SCRATCH_FIELDS) < 20_000
    assert not set(SCRATCH_FIELDS) & set(engine.env_values(0))


def test_a_step_searches_again_where_its_tree_was_not_kept():
    twins = [vecsim.make(GAME, 4, parallel=False, seed=0x1234, **FAST) for _ in range(2)]
    rng = np.random.default_rng(2)
    for e in twins:
        e.reset(seed=5)
    for _ in range(12):
        twins[1].state.plan_kept[:] = 0  # as a search that outgrew the kept tree leaves it
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in twins[0].masks])
        results = [e.step(actions) for e in twins]
        assert np.array_equal(results[0][0], results[1][0])
        for key in ("tau", "cost_to_lock", "frame_count"):
            assert np.array_equal(twins[0].info_arrays[key], twins[1].info_arrays[key]), key
    for e in twins:
        e.close()


def test_reset_specs_per_env(engine):
    engine.reset(seed=0)
    mask = np.array([True, False, True])
    engine.reset_envs(mask, seed=7, level=np.array([3, 0, 20]), speed=np.array([2, 0, 1]))
    s = engine.state
    assert list(s.level) == [3, 15, 20] and list(s.speed) == [2, 2, 1]
    assert list(s.virus_left) == [16, 64, 84]
    assert (engine.masks.sum(axis=1) > 0).all()
    engine.reset_envs(np.ones(3, bool), seed=0, **{k: v for k, v in FAST.items()})


def test_buffers_are_caller_owned_and_checked():
    ref = vecsim.make(GAME, 2, parallel=False, **FAST)
    spec = ref.buffer_spec
    for name, shape, dtype in (("cost_to_lock", (512,), np.uint16), ("tau", (), np.int64),
                               ("tiles_cleared", (3,), np.int64), ("column_heights", (8,), np.int64)):
        assert tuple(spec[name].shape) == shape and spec[name].dtype == dtype, name
    bufs = spec.allocate(2)
    eng = vecsim.make(GAME, 2, parallel=False, buffers=bufs, **FAST)
    eng.reset(seed=4)
    ref.reset(seed=4)
    assert np.array_equal(bufs["cost_to_lock"], ref.info_arrays["cost_to_lock"])
    a = np.array([int(np.flatnonzero(m)[0]) for m in ref.masks])
    eng.step_no_reset(a)
    ref.step_no_reset(a)
    assert np.array_equal(bufs["tau"], ref.info_arrays["tau"]) and (bufs["tau"] > 0).all()
    with pytest.raises((ValueError, TypeError), match="cost_to_lock"):
        vecsim.make(GAME, 2, parallel=False, buffers={"cost_to_lock": np.zeros((2, 512), np.int64)}, **FAST)
    with pytest.raises((ValueError, TypeError), match="cost_to_lock"):
        vecsim.make(GAME, 2, parallel=False, buffers={"cost_to_lock": np.zeros((2, 511), np.uint16)}, **FAST)
    eng.close()
    ref.close()


def test_telemetry_events_match_the_event_counters():
    eng = vecsim.make(GAME, 2, parallel=False, seed=0x1234, telemetry=4096, **FAST)
    eng.reset(seed=0)
    rng = np.random.default_rng(2)
    totals = np.zeros((2, len(eng.event_names)), np.int64)
    ended = np.zeros(2, np.int64)
    for _ in range(60):
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in eng.masks])
        result = eng.step_no_reset(actions)
        totals += result.events
        done = result.terminals | result.truncations
        ended += done & (eng.info_arrays["terminal_reason"] == rules.TOPPED_OUT)
        if done.any():
            eng.reset_envs(done, seed=5)
    events = eng.telemetry.read()
    assert (events.dropped == 0).all()
    names = dict(spawn="spawns", lock="locks", match="match_groups", clear="match_rounds",
                 virus_cleared="viruses_cleared", cascade="drop_passes")
    for env in range(2):
        mine = events.kind[events.env == env]
        for kind, counter in names.items():
            got = int(np.sum(mine == rules.TELEMETRY.index(kind)))
            assert got == totals[env, eng.event_names.index(counter)], (env, kind)
        assert int(np.sum(mine == rules.TM_TOP_OUT)) == ended[env]
        stamps = events.stamp[events.env == env]
        assert (stamps >= 0).all()
    eng.close()


def test_render_in_decision_mode(engine):
    engine.reset(seed=0)
    img = engine.render_rgb(0)
    assert img.dtype == np.uint8 and img.shape == (152, 80, 3)
    text = engine.render_text(1)
    assert "@" in text and "level 15" in text


@pytest.mark.slow
def test_checkers_pass_in_decision_mode():
    """Frame mode passes them in tests/test_testing_checker.py (its ``CHECK_PARAMS``)."""
    from vecsim.testing import check_engine, check_vector_env

    check_vector_env(GAME, num_envs=2, seed=3, steps=30, **FAST)
    check_engine(GAME, num_envs=3, seed=5, steps=30, **FAST)
