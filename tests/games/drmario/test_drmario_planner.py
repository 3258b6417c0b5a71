"""The Dr. Mario placement planner: every sampled reachable placement's script, run on the
per-frame kernel, locks exactly that placement after exactly its cost, over random levels,
speeds, seeds, frame-counter phases and carried-over controller states; unreachable
placements, the action encoding and input checks."""

import numpy as np
import pytest

from vecsim.games.drmario import rules
from vecsim.games.drmario.replay import frames, take
from vecsim.games.drmario.state import allocate
from vecsim.planners import drmario as planner_mod


def _step(s, b):
    frames(s, np.array([b], np.int64))


def _to_decision(s):
    while s.next_action[0] != rules.FALLING and s.outcome[0] == rules.PLAYING:
        _step(s, 0)


@pytest.fixture(scope="module")
def planner():
    return planner_mod.Planner()


def test_encoding_of_lock_poses():
    assert planner_mod.pose_action(3, 15, 0) == 0 * 128 + 0 * 8 + 3
    assert planner_mod.pose_action(3, 10, 1) == 3 * 128 + 5 * 8 + 3
    assert planner_mod.pose_action(3, 10, 2) == 2 * 128 + 5 * 8 + 4
    assert planner_mod.pose_action(3, 10, 3) == 1 * 128 + 4 * 8 + 3
    assert planner_mod.pose_action(3, 15, 1) == -1 and planner_mod.pose_action(3, 15, 3) == -1


@pytest.mark.parametrize("game", range(4))
def test_scripts_lock_their_pose_after_their_cost(planner, game):
    rng = np.random.default_rng(game)
    s = allocate(1)
    rules.start_level(s, 0, int(rng.integers(0, 25)), game % 3, int(rng.integers(1, 65536)), int(rng.integers(0, 256)))
    s.held[0] = int(rng.choice([0, 1, 2, 4, 64, 128, 66, 129]))
    s.hor_velocity[0] = int(rng.integers(0, 16))
    _to_decision(s)
    checked = 0
    for _ in range(6):
        if s.outcome[0] != rules.PLAYING:
            break
        plan = planner_mod.plan(s, 0, planner)
        actions = np.flatnonzero(plan.feasible_mask)
        assert actions.size > 0
        assert np.all(plan.cost_to_lock[~plan.feasible_mask] == planner_mod.UNREACHABLE)
        for a in rng.choice(actions, size=min(10, actions.size), replace=False):
            script = planner_mod.script(plan, a)
            assert script.shape == (plan.cost_to_lock[a],)
            c = take(s, np.zeros(1, np.int64))
            locks = int(s.frame_events[0, rules.EV_LOCKS])
            for k, b in enumerate(script):
                assert c.frame_events[0, rules.EV_LOCKS] == locks, f"locked early, frame {k}"
                _step(c, b)
            assert c.frame_events[0, rules.EV_LOCKS] == locks + 1
            assert planner_mod.pose_action(c.lock_x[0], c.lock_y[0], c.lock_rot[0]) == a
            checked += 1
        for b in planner_mod.script(plan, rng.choice(actions)):
            _step(s, b)
        _to_decision(s)
    assert checked >= 10


def test_unreachable_pose_and_errors(planner):
    s = allocate(1)
    rules.start_level(s, 0, 0, 1, 0x8988, 0)
    with pytest.raises(ValueError, match="falling pill"):
        planner_mod.plan(s, 0, planner)
    _to_decision(s)
    # A wall of viruses in row 2 across columns 0..7 except the spawn's: nothing passes it.
    s.board[0, 16:24] = 0xD0
    plan = planner_mod.plan(s, 0, planner)
    rows = (np.flatnonzero(plan.feasible_mask) % 128) // 8
    assert rows.max() <= 1
    with pytest.raises(ValueError, match="not reachable"):
        planner_mod.script(plan, 0 * 128 + 15 * 8 + 0)
    with pytest.raises(ValueError, match="plan env index"):
        planner_mod.plan(s, 3, planner)


def _earliest_attempts(threshold, sc0, fc0, count):
    """The earliest frame of each of the first ``count`` drop attempts over every schedule of
    Down presses (``rules.pill_frame``'s Y stage), by dynamic programming over the gravity
    counter: the most attempts each counter value can have made by each frame."""
    best, first = {sc0: 0}, [None] * count
    frame = 0
    while first[-1] is None:
        frame += 1
        soft_frame = (fc0 + frame) & 1 == 1
        reached = {}
        for sc, made in best.items():
            choices = [(0, made + 1) if sc + 1 > threshold else (sc + 1, made)]
            if soft_frame:
                choices.append((0, made + 1))  # Down held
            for nsc, n in choices:
                reached[nsc] = max(reached.get(nsc, -1), n)
                if 1 <= n <= count and first[n - 1] is None:
                    first[n - 1] = frame
        best = reached
    return first


@pytest.mark.parametrize("threshold", [0, 1, 2, 3, 7, 19, 39])
def test_greedy_fall_is_the_earliest_drop_attempt_of_any_schedule(threshold):
    """The greedy run's costs are final because no Down schedule makes any drop attempt
    sooner than Down on every soft-drop frame (gravity on the others) does."""
    for sc0 in range(threshold + 1):
        for fc0 in (0, 1):
            want = _earliest_attempts(threshold, sc0, fc0, 16)
            got = [planner_mod.greedy_fall(threshold, sc0, fc0, rows) for rows in range(16)]
            assert got == want, (threshold, sc0, fc0)


@pytest.mark.parametrize("threshold", [1, 2, 3, 7, 19, 39])
def test_lag_falls_only_past_the_bound_the_runs_by_lag_stay_below(threshold):
    """``search``'s runs by lag are exact while lag never falls below their bound: over every
    Down schedule, once gravity fires where the greedy schedule makes no drop attempt, the lag
    (the greedy schedule's drop attempts less the path's) is at least (T - sc0) // 2 - 1."""
    frames = 2 * threshold + 40
    for sc0 in range(threshold + 1):
        for fc0 in (0, 1):
            greedy = {planner_mod.greedy_fall(threshold, sc0, fc0, rows) for rows in range(frames)}
            states, lowest = {(sc0, 0, False)}, None
            for frame in range(1, frames + 1):
                soft_frame = (fc0 + frame) & 1 == 1
                reached = set()
                for sc, lag, fell in states:
                    for down in (False, True) if soft_frame else (False,):
                        attempt = down or sc + 1 > threshold
                        new_lag = lag + (frame in greedy) - attempt
                        new_fell = fell or new_lag < lag
                        if new_fell:
                            lowest = new_lag if lowest is None else min(lowest, new_lag)
                        if new_lag <= threshold + 3:
                            reached.add((0 if attempt else sc + 1, new_lag, new_fell))
                states = reached
            assert lowest is None or lowest >= (threshold - sc0) // 2 - 1, (threshold, sc0, fc0, lowest)
