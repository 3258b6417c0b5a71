"""The bit-parallel reach search (``plan``) against the node-by-node search (``plan_simple``).

On many random boards, for every piece, gravity 0-3 and both rotation systems, ``plan`` must
give exactly ``plan_simple``'s costs, searching with parent links (the search ``path`` runs)
and without them (the search of every reach-mode step); every path its links spell out must
be as long as its cost. A reach engine's hold half is its own search, or the current piece's
costs plus one when hold brings the same piece: both must equal ``plan`` on that half.

The search without links starts from the empty board's search (``open_air_tables``) for the
levels that stay above the stack; with links it starts from spawn. On random and played boards,
every gravity the game allows and both rotation systems, it must still give ``plan_simple``'s
costs.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

import vecsim
import vecsim.games.tetris  # noqa: F401  (the game package before its planner: import order)
from vecsim.games.tetris.pieces import H, N_POSES, W
from vecsim.games.tetris.tools import set_board
from vecsim.planners.tetris import SCRATCH, open_air_tables, path_to, plan, plan_simple, search_with_links

VARIANTS = [(gravity, kicks) for gravity in (0, 1, 2, 3) for kicks in (1, 5)]


def random_boards(n, seed):
    """(n, H) uint16 bit rows: stacks of random height (some up into the spawn rows), rough
    tops, holes and overhangs, a few near-empty; no full row."""
    rng = np.random.default_rng(seed)
    rows = np.zeros((n, H), np.uint16)
    for k in range(n):
        top = int(rng.integers(2, H))
        heights = rng.integers(0, H - top + 1, W)
        fill = rng.uniform(0.5, 1.0)
        for x in range(W):
            for y in range(H - int(heights[x]), H):
                if rng.random() < fill:
                    rows[k, y] |= 1 << x
        # overhangs: a few cells floating over the stack
        for _ in range(int(rng.integers(0, 4))):
            rows[k, int(rng.integers(top, H))] |= 1 << int(rng.integers(W))
        for y in range(H):
            if rows[k, y] == (1 << W) - 1:
                rows[k, y] ^= 1 << int(rng.integers(W))  # a full row: open one cell
    return rows


@njit(cache=False)
def _search_all(rows, gravity, kicks, simple, links):
    """Costs of every piece on every board: (n, 7, N_POSES) int16, and the lock parents and
    inputs and live parents and inputs of ``plan`` when ``links``. ``plan`` is called with
    the argument types of its callers in the package (reach mode's ``plan_decision`` without
    links, ``search_with_links`` with them), so it compiles nothing they do not."""
    n = rows.shape[0]
    out = np.full((n, 7, N_POSES), -1, np.int16)
    cost = np.full((1, N_POSES), -1, np.int16)
    lp = np.zeros((n * 7 if links else 1, N_POSES), np.int16)
    li = np.zeros((n * 7 if links else 1, N_POSES), np.int8)
    kp = np.zeros((n * 7 if links else 1, N_POSES), np.int16)
    ki = np.zeros((n * 7 if links else 1, N_POSES), np.int8)
    one = np.zeros((4, 1, N_POSES), np.int16)  # live_parent, live_input, lock_parent, lock_input
    dist = np.zeros((1, N_POSES), np.int16)
    queue = np.zeros((1, N_POSES), np.int16)
    bits = np.zeros((1, SCRATCH), np.int16)
    ymm = np.zeros((1, 2), np.int64)
    board = np.zeros((1, H), np.uint16)
    no_links = cost[:, :0]
    for k in range(n):
        board[0, :] = rows[k]
        for t in range(7):
            j = k * 7 + t
            if simple:
                plan_simple(board, 0, t, gravity, kicks, 0, 0, cost, dist, queue, lp[:1], li[:1], kp[:1], ki[:1])
            elif links:
                one[:] = 0  # as the fresh rows of lp, li, kp, ki
                plan(board, np.int64(0), t, gravity, kicks, 0, 0, cost, bits, ymm, one[0][:, :N_POSES],
                     one[1][:, :N_POSES], one[2][:, :N_POSES], one[3][:, :N_POSES])
                lp[j] = one[0, 0]
                li[j] = one[1, 0]
                kp[j] = one[2, 0]
                ki[j] = one[3, 0]
            else:
                plan(board, np.int64(0), t, gravity, kicks, 0, 0, cost, bits, ymm, no_links, no_links, no_links, no_links)
            out[k, t] = cost[0]
    return out, lp, li, kp, ki


@pytest.fixture(scope="module")
def boards():
    return random_boards(240, seed=27)


@pytest.mark.parametrize("gravity, kicks", VARIANTS)
def test_plan_costs_equal_plan_simple(boards, gravity, kicks):
    expected, *_ = _search_all(boards, gravity, kicks, True, False)
    with_links, lp, li, kp, ki = _search_all(boards, gravity, kicks, False, True)
    without_links, *_ = _search_all(boards, gravity, kicks, False, False)
    assert (expected >= 0).sum() > 1000  # the boards leave many placements
    assert (expected < 0).all(axis=2).sum() > 0  # and some where the piece cannot spawn
    for got in (with_links, without_links):
        bad = np.argwhere(got != expected)
        assert not len(bad), [(int(k), int(t), int(a), int(got[k, t, a]), int(expected[k, t, a]))
                              for k, t, a in bad[:5]]
    # every reachable pose's links spell a path as long as its cost (a sample per board)
    rng = np.random.default_rng(gravity * 10 + kicks)
    for k in range(0, len(boards), 4):
        for t in range(7):
            legal = np.flatnonzero(expected[k, t] >= 0)
            j = k * 7 + t
            for a in rng.choice(legal, min(6, len(legal)), replace=False):
                inputs = path_to(lp, li, kp, ki, j, int(a))
                assert len(inputs) == expected[k, t, a], (k, t, int(a), inputs)


def test_search_with_links_matches_the_engine(boards):
    """``path``'s own search (one board, on demand) has the engine's costs and spells paths of
    those lengths, in both halves."""
    eng = vecsim.make("vecsim/Tetris-v0", 1, action_mode="reach", parallel=False)
    eng.reset(seed=0)
    checked = 0
    for k in range(0, 40):
        board = np.array([[(int(r) >> x) & 1 for x in range(W)] for r in boards[k]], np.uint8) * 8
        t, held = k % 7, "IOTSZJL"[(k * 3) % 7]
        try:
            set_board(eng, 0, board, piece=t, hold=held, queue="TSZJLI", can_hold=True)
        except ValueError:
            continue  # a board where the piece cannot spawn
        for half in (0, 1):
            piece = t if half == 0 else (k * 3) % 7
            links = search_with_links(eng.state.rows[0], piece, 1, 5, half)
            legal = np.flatnonzero(eng.state.cost[0, half * N_POSES:(half + 1) * N_POSES] >= 0) + half * N_POSES
            for a in legal[::7]:
                inputs = path_to(*links, 0, int(a))
                assert len(inputs) == eng.state.cost[0, a]
                checked += 1
    assert checked > 100


def test_search_with_links_validates_its_arguments():
    rows = np.zeros(H, np.uint16)
    with pytest.raises(ValueError, match="rows must be 24 bit rows"):
        search_with_links(np.zeros(H + 1, np.uint16), 0, 1, 5)
    with pytest.raises(ValueError, match="rows must be 24 bit rows"):
        search_with_links(np.full(H, 1 << W, np.int64), 0, 1, 5)
    with pytest.raises(ValueError, match="t must be in"):
        search_with_links(rows, 7, 1, 5)
    with pytest.raises(TypeError, match="gravity must be an int"):
        search_with_links(rows, 0, 1.0, 5)
    with pytest.raises(ValueError, match="kicks must be in"):
        search_with_links(rows, 0, 1, 0)
    with pytest.raises(ValueError, match="half must be in"):
        search_with_links(rows, 0, 1, 5, 2)


def played_boards(n, seed):
    """(n, H) uint16 bit rows of boards met in random reach-mode play (low and tall stacks)."""
    eng = vecsim.make("vecsim/Tetris-v0", 8, action_mode="reach", parallel=False)
    eng.reset(seed=seed)
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        masks = eng.action_masks()
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        res = eng.step_no_reset(actions)
        out.extend(eng.state.rows[k].copy() for k in range(8) if rng.random() < 0.3)
        done = res.terminals | res.truncations
        if done.any():
            eng.reset_envs(done, seed=int(rng.integers(1 << 30)))
    return np.array(out[:n], np.uint16)


@pytest.fixture(scope="module")
def open_air_boards(boards):
    return np.concatenate([boards[:120], played_boards(40, seed=5), np.zeros((1, H), np.uint16)])


@pytest.mark.parametrize("kicks", (1, 5))
def test_plan_from_open_air_equals_plan_simple_at_every_gravity(open_air_boards, kicks):
    levels, *_ = open_air_tables()
    for gravity in range(H + 1):
        expected, *_ = _search_all(open_air_boards, gravity, kicks, True, False)
        got, *_ = _search_all(open_air_boards, gravity, kicks, False, False)
        bad = np.argwhere(got != expected)
        assert not len(bad), [(gravity, int(k), int(t), int(a), int(got[k, t, a]), int(expected[k, t, a]))
                              for k, t, a in bad[:5]]
    # the boards exercise the open-air start: most of them start some levels down
    tops = [int(np.flatnonzero(np.append(b, 1))[0]) for b in open_air_boards]
    started = sum(levels[(t * 2 + (kicks > 1)) * (H + 1) + 1, top] > 0 for top in tops for t in range(7))
    assert started > 0.5 * 7 * len(tops)


def test_open_air_tables_reach_down_to_the_stack():
    """On the empty board under gravity 1 the search takes its first levels from the table down
    to the floor; a stack reaching the spawn rows takes none."""
    levels, start, visited, first = open_air_tables()
    for t in range(7):
        for kick_set in range(2):
            c = (t * 2 + kick_set) * (H + 1) + 1
            assert levels[c, H] >= H - 8  # the piece falls a row a level
            assert levels[c, 4] == 0
            assert (np.diff(levels[c]) >= 0).all()
    assert visited.dtype == np.int16 and first.min() >= -1


def test_primitive_mode_builds_no_open_air_tables():
    """Only compiling ``plan`` builds the tables: a primitive-mode batch never does."""
    import os
    import subprocess
    import sys

    code = ("import vecsim, numpy as np, vecsim.games.tetris; import vecsim.planners.tetris as P; "
            "e = vecsim.make('vecsim/Tetris-v0', 4, action_mode='primitive'); e.reset(seed=0); "
            "e.step_no_reset(np.zeros(4, np.int64)); print(P._open_air_tables is None)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ),
                         check=True)
    assert out.stdout.strip().endswith("True"), out.stdout + out.stderr
