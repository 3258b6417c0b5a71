"""``plan_envs``: the masks and costs of ``plan`` for a batch of envs in one call, whichever
thread run holds each env, on envs of mixed levels, speeds and controller states; its input
checks."""

import numpy as np
import pytest

from vecsim.games.drmario import rules
from vecsim.games.drmario.replay import frames
from vecsim.games.drmario.state import State, allocate
from vecsim.planners import drmario as planner_mod


def _decision_state(seed):
    rng = np.random.default_rng(seed)
    s = allocate(1)
    rules.start_level(s, 0, int(rng.integers(0, 25)), seed % 3, int(rng.integers(1, 65536)), int(rng.integers(0, 256)))
    s.speed_ups[0] = int(rng.integers(0, 50)) if seed % 4 == 3 else 0
    for _ in range(int(rng.integers(0, 3))):  # a few placements in, by random scripts
        while s.next_action[0] != rules.FALLING and s.outcome[0] == rules.PLAYING:
            frames(s, np.zeros(1, np.int64))
        if s.outcome[0] != rules.PLAYING:
            break
        plan = planner_mod.plan(s, 0)
        for b in planner_mod.script(plan, rng.choice(np.flatnonzero(plan.feasible_mask))):
            frames(s, np.array([b], np.int64))
    while s.next_action[0] != rules.FALLING and s.outcome[0] == rules.PLAYING:
        frames(s, np.zeros(1, np.int64))
    s.held[0] = int(rng.choice([0, 1, 2, 4, 64, 128, 65, 130]))
    s.hor_velocity[0] = int(rng.integers(0, 16))
    return s


@pytest.fixture(scope="module")
def batch():
    rows = [s for s in map(_decision_state, range(12)) if s.outcome[0] == rules.PLAYING]
    return State(*(np.concatenate(fields) for fields in zip(*rows)))


def test_plan_envs_equals_plan_for_every_env(batch):
    n = batch.x.shape[0]
    envs = np.array([*range(n), 0, n - 1])[::-1]  # out of order, with repeats
    feasible, cost = planner_mod.plan_envs(batch, envs)
    assert feasible.shape == cost.shape == (envs.size, planner_mod.N_ACTIONS)
    assert cost.dtype == np.uint16 and feasible.dtype == np.bool_
    for j, i in enumerate(envs):
        plan = planner_mod.plan(batch, int(i))
        np.testing.assert_array_equal(cost[j], plan.cost_to_lock)
        np.testing.assert_array_equal(feasible[j], plan.feasible_mask)


def test_plan_envs_grows_its_node_arrays(batch):
    planner = planner_mod.EnvsPlanner()
    planner._capacity = 8  # every search overflows at first
    envs = np.arange(batch.x.shape[0])
    _, cost = planner_mod.plan_envs(batch, envs, planner)
    _, again = planner_mod.plan_envs(batch, envs)
    np.testing.assert_array_equal(cost, again)
    assert planner._capacity > 8


def test_plan_envs_errors(batch):
    with pytest.raises(ValueError, match="env indices must be in"):
        planner_mod.plan_envs(batch, [0, batch.x.shape[0]])
    with pytest.raises(TypeError, match="1-D array of env indices"):
        planner_mod.plan_envs(batch, [[0]])
    with pytest.raises(TypeError, match="1-D array of env indices"):
        planner_mod.plan_envs(batch, [0.5])
    waiting = State(*(a.copy() for a in batch))
    waiting.next_action[1] = rules.SEND_PILL
    with pytest.raises(ValueError, match="env 1 has next_action"):
        planner_mod.plan_envs(waiting, [0, 1])
    feasible, cost = planner_mod.plan_envs(batch, np.zeros(0, np.int64))
    assert feasible.shape == cost.shape == (0, planner_mod.N_ACTIONS)
