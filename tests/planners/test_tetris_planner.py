"""The reach-mode planner (``planners/tetris``) against the primitive rules of SPEC.md.

1. Paths replay: on random boards, for every piece type and every variant (hold on/off,
   rotation srs/none, gravity 0/1/2), a sample of reachable poses is turned into primitive
   inputs with ``vecsim.planners.tetris.path`` and played by a *primitive*-mode engine holding
   the same board and pieces: the piece must lock after exactly ``len(path)`` steps, at
   exactly that pose, and ``len(path)`` must be the reported cost.
2. Drop placements are reach placements when gravity is 0 (and not in general otherwise).
3. Masks and costs equal those of an independent breadth-first search written here from
   SPEC.md alone (its own piece tables, kicks and step rule; nothing from ``vecsim.games.tetris``).
"""

from __future__ import annotations

import functools
from collections import deque

import numpy as np
import pytest

import vecsim
from vecsim.games.tetris.tools import piece_cells, set_board
from vecsim.planners.tetris import path as plan_path

H, W = 24, 10
N_POSES = 4 * H * W
I, O, T, S, Z, J, L = range(7)
NOOP, LEFT, RIGHT, SOFT, HARD, CW, CCW, HOLD = range(8)
NAMES = "IOTSZJL"
LINE_SCORES = (0, 100, 300, 500, 800)
VARIANTS = [(hold, rotation, gravity) for hold in (True, False) for rotation in ("srs", "none")
            for gravity in (0, 1, 2)]


# ====================================================== an independent model of SPEC.md

# Spawn-state cells (row, col) in the piece's box, and the box size (SPEC "Pieces").
SPAWN = {I: (4, [(1, 0), (1, 1), (1, 2), (1, 3)]), O: (4, [(0, 1), (0, 2), (1, 1), (1, 2)]),
         T: (3, [(0, 1), (1, 0), (1, 1), (1, 2)]), S: (3, [(0, 1), (0, 2), (1, 0), (1, 1)]),
         Z: (3, [(0, 0), (0, 1), (1, 1), (1, 2)]), J: (3, [(0, 0), (1, 0), (1, 1), (1, 2)]),
         L: (3, [(0, 2), (1, 0), (1, 1), (1, 2)])}
# SRS tests (dx, dy), y up, per (from, to) (SPEC "Rotation and kicks").
KICKS_JLSTZ = {(0, 1): [(0, 0), (-1, 0), (-1, 1), (0, -2), (-1, -2)],
               (1, 0): [(0, 0), (1, 0), (1, -1), (0, 2), (1, 2)],
               (1, 2): [(0, 0), (1, 0), (1, -1), (0, 2), (1, 2)],
               (2, 1): [(0, 0), (-1, 0), (-1, 1), (0, -2), (-1, -2)],
               (2, 3): [(0, 0), (1, 0), (1, 1), (0, -2), (1, -2)],
               (3, 2): [(0, 0), (-1, 0), (-1, -1), (0, 2), (-1, 2)],
               (3, 0): [(0, 0), (-1, 0), (-1, -1), (0, 2), (-1, 2)],
               (0, 3): [(0, 0), (1, 0), (1, 1), (0, -2), (1, -2)]}
KICKS_I = {(0, 1): [(0, 0), (-2, 0), (1, 0), (-2, -1), (1, 2)],
           (1, 0): [(0, 0), (2, 0), (-1, 0), (2, 1), (-1, -2)],
           (1, 2): [(0, 0), (-1, 0), (2, 0), (-1, 2), (2, -1)],
           (2, 1): [(0, 0), (1, 0), (-2, 0), (1, -2), (-2, 1)],
           (2, 3): [(0, 0), (2, 0), (-1, 0), (2, 1), (-1, -2)],
           (3, 2): [(0, 0), (-2, 0), (1, 0), (-2, -1), (1, 2)],
           (3, 0): [(0, 0), (1, 0), (-2, 0), (1, -2), (-2, 1)],
           (0, 3): [(0, 0), (-1, 0), (2, 0), (-1, 2), (2, -1)]}


def box_cells(t):
    """Cells of states 0-3 in the box: each state is the previous one turned clockwise."""
    b, cells = SPAWN[t]
    out = []
    for _ in range(4):
        out.append(sorted(cells))
        if t != O:
            cells = [(c, b - 1 - row) for row, c in cells]
    return out


BOX_CELLS = [box_cells(t) for t in range(7)]


class Model:
    """One piece on one board under the primitive rules; poses are (r, box_row, box_col)."""

    def __init__(self, board, t, gravity, rotation):
        self.filled = [[bool(v) for v in row] for row in board]
        self.t, self.gravity, self.srs = t, gravity, rotation == "srs"

    def blocked(self, r, br, bc):
        for dy, dx in BOX_CELLS[self.t][r]:
            y, x = br + dy, bc + dx
            if y < 0 or y >= H or x < 0 or x >= W or self.filled[y][x]:
                return True
        return False

    def rotate(self, r, br, bc, r2):
        if self.srs and self.t != O:
            tests = (KICKS_I if self.t == I else KICKS_JLSTZ)[(r, r2)]
        else:
            tests = [(0, 0)]
        for dx, dy in tests:
            if not self.blocked(r2, br - dy, bc + dx):
                return r2, br - dy, bc + dx
        return r, br, bc

    def step(self, pose, u):
        """SPEC "primitive": returns (pose after the step, locked)."""
        r, br, bc = pose
        was_resting = self.blocked(r, br + 1, bc)
        if u == SOFT:
            return (pose, True) if was_resting else ((r, br + 1, bc), False)
        if u == HARD:
            while not self.blocked(r, br + 1, bc):
                br += 1
            return (r, br, bc), True
        if u in (LEFT, RIGHT):
            d = -1 if u == LEFT else 1
            if not self.blocked(r, br, bc + d):
                bc += d
        elif u in (CW, CCW):
            r, br, bc = self.rotate(r, br, bc, (r + 1) % 4 if u == CW else (r + 3) % 4)
        moved = 0
        while moved < self.gravity and not self.blocked(r, br + 1, bc):
            br += 1
            moved += 1
        return (r, br, bc), self.gravity > 0 and moved == 0 and was_resting

    def anchor(self, pose):
        r, br, bc = pose
        cells = BOX_CELLS[self.t][r]
        return r, br + min(c[0] for c in cells), bc + min(c[1] for c in cells)

    def cells(self, pose):
        r, br, bc = pose
        return sorted((br + dy, bc + dx) for dy, dx in BOX_CELLS[self.t][r])


SPAWN_POSE = (0, 2, 3)


def bfs_costs(board, t, gravity, rotation):
    """{reach action (no hold half): least steps to lock there}, by breadth-first search."""
    m = Model(board, t, gravity, rotation)
    if m.blocked(*SPAWN_POSE):
        return {}
    dist = {SPAWN_POSE: 0}
    todo = deque([SPAWN_POSE])
    locks = {}
    while todo:
        pose = todo.popleft()
        for u in (NOOP, LEFT, RIGHT, SOFT, HARD, CW, CCW):
            nxt, locked = m.step(pose, u)
            if locked:
                r, y, x = m.anchor(nxt)
                locks.setdefault((r * H + y) * W + x, dist[pose] + 1)
            elif nxt not in dist:
                dist[nxt] = dist[pose] + 1
                todo.append(nxt)
    return locks


# ====================================================== boards and engines


def random_board(rng, kind, max_height=12):
    """A random board whose rows 0..H-1-max_height (the spawn rows among them) stay free,
    with no full row. ``kind`` 0: rough, random column heights with random holes under each
    column's top cell (overhangs to tuck under, slots to spin into). ``kind`` 1: a flat-ish
    stack (each column h or h + 1) with few holes and a well, so many placements clear lines.
    ``kind`` 2: the same on top of a few bottom rows with one gap each (often in the same
    column), with the top gap left open."""
    b = np.zeros((H, W), np.uint8)
    base = H
    well = rng.integers(W)
    if kind == 2:
        garbage = rng.integers(2, 6)
        for y in range(H - garbage, H):
            if rng.random() < 0.4:
                well = rng.integers(W)
            b[y] = 8
            b[y, well] = 0
        base = H - garbage
        max_height -= garbage
    if kind == 0:
        heights = rng.integers(0, max_height + 1, W)
        if rng.random() < 0.5:
            heights[well] = 0
        p_hole = rng.uniform(0.05, 0.35)
    else:
        h = rng.integers(1, max_height)
        heights = h + rng.integers(0, 2, W)
        heights[well] = rng.integers(0, h)
        p_hole = 0.05
    for c, h in enumerate(heights):
        if h:
            b[base - h:base, c] = 8
            holes = rng.random(h - 1) < p_hole
            b[base - h + 1:base, c][holes] = 0
    for y in range(H):
        if b[y].all():
            b[y, rng.integers(W)] = 0
    return b


BOARDS = [random_board(np.random.default_rng(1000 + k), k % 3) for k in range(10)]
# Hand-made ones: a T-spin double slot over a tuck, a T-spin triple, a tetris well, caves.
BOARDS.append(np.array([[8 if ch == "#" else 0 for ch in row] for row in
                        ["." * 10] * 19 + ["##..#.....", "#...######", "##.#######", "#...#.....",
                                           "#........."]], np.uint8))
BOARDS.append(np.array([[8 if ch == "#" else 0 for ch in row] for row in
                        ["." * 10] * 19 + ["..##......", "...#######", "##.#######", "#..#######",
                                           "##.#######"]], np.uint8))  # T-spin triple (kick 5)
BOARDS.append(np.array([[8 if ch == "#" else 0 for ch in row] for row in
                        ["." * 10] * 19 + ["###...####"] + ["#########."] * 4], np.uint8))  # a tetris
BOARDS.append(np.array([[8 if ch == "#" else 0 for ch in row] for row in
                        ["." * 10] * 14 + ["####....##", "#.......##", "#.......#.", "##.######.",
                                           "#.#######.", "###....###", "#........#", "#........#",
                                           "####..####", "#########."]], np.uint8))


@functools.lru_cache(maxsize=None)
def pieces_for(k):
    """Hold slot and queue of board k: varied, so the hold half brings different pieces."""
    rng = np.random.default_rng(k)
    hold = "-" if k % 3 == 0 else NAMES[rng.integers(7)]
    queue = "".join(NAMES[v] for v in rng.integers(0, 7, 6))
    return hold, queue


def hold_target(k):
    """The piece a hold brings on board k."""
    held, queue = pieces_for(k)
    return NAMES.index(queue[0] if held == "-" else held)


def _clears(row_counts, t, a):
    """Whether reach action ``a`` of piece ``t`` fills a row (``row_counts``: cells per row)."""
    r, y, x = (a % N_POSES) // (H * W), (a // W) % H, a % W
    rows = [cy for cy, _ in piece_cells(t, r, y, x)]
    return any(row_counts[cy] + rows.count(cy) == W for cy in set(rows))


_ENGINES: dict = {}


def make(mode, num_envs=7, **kwargs):
    key = (mode, num_envs, tuple(sorted(kwargs.items())))
    if key not in _ENGINES:
        eng = vecsim.make("vecsim/Tetris-v0", num_envs, action_mode=mode, parallel=False, **kwargs)
        eng.reset(seed=0)
        _ENGINES[key] = eng
    return _ENGINES[key]


def reach_engine(hold, rotation, gravity):
    # one env: set_board replans every env of the engine, so one board at a time is cheapest
    return make("reach", 1, hold=hold, rotation=rotation, gravity=gravity)


def each_piece(k, *engines):
    """Give env 0 of each engine board ``k`` with each piece type in turn; yields the type."""
    hold, queue = pieces_for(k)
    for t in range(7):
        for eng in engines:
            set_board(eng, 0, BOARDS[k], piece=t, hold=hold, queue=queue)
        yield t


def after_lock(board, cells):
    """The board after locking ``cells`` and removing full rows, and the lines removed."""
    b = board != 0
    for y, x in cells:
        assert not b[y, x]
        b[y, x] = True
    keep = b[~b.all(axis=1)]
    lines = H - len(keep)
    return np.vstack([np.zeros((lines, W), bool), keep]), lines


# ====================================================== 1. paths replay in primitive mode


def _jobs(rng, per_plan=4):
    """(variant, board k, piece, action, path, cost) for a sample of reachable poses."""
    jobs = []
    for hold, rotation, gravity in VARIANTS:
        eng = reach_engine(hold, rotation, gravity)
        s = eng.state
        for k, board in enumerate(BOARDS):
            row_counts = np.count_nonzero(board, axis=1).tolist()
            held = hold_target(k)
            for t in each_piece(k, eng):
                legal = np.flatnonzero(eng.masks[0])
                assert len(legal) > 0
                cost = s.cost[0]
                assert ((cost >= 0) == eng.masks[0]).all()
                # the costliest pose (long paths: tucks, spins), a hold-half pose, random ones
                chosen = {int(legal[np.argmax(cost[legal])])}
                if hold and (legal >= N_POSES).any():
                    chosen.add(int(rng.choice(legal[legal >= N_POSES])))
                chosen.update(int(a) for a in rng.choice(legal, min(per_plan, len(legal)), replace=False))
                clearing = [a for a in legal if _clears(row_counts, t if a < N_POSES else held, a)]
                if clearing:
                    chosen.add(int(rng.choice(clearing)))
                for a in sorted(chosen):
                    path = plan_path(eng, 0, a)
                    jobs.append(((hold, rotation, gravity), k, t, a, path, int(cost[a])))
    return jobs


@pytest.fixture(scope="module")
def jobs():
    return _jobs(np.random.default_rng(7))


def test_path_length_is_the_cost(jobs):
    assert len(jobs) > 1000
    for variant, k, t, a, path, cost in jobs:
        assert len(path) == cost, (variant, k, NAMES[t], a, path)
        assert (HOLD in path) == (a >= N_POSES)
        assert HOLD not in path[1:]
        assert all(0 <= u <= HOLD for u in path)


def _model_trajectory(variant, k, t, a, path):
    """Poses (anchors) before each step and the locked pose, played by the SPEC model."""
    hold, rotation, gravity = variant
    board = BOARDS[k]
    if path[0] == HOLD:
        held, queue = pieces_for(k)
        t = NAMES.index(queue[0]) if held == "-" else NAMES.index(held)
    m = Model(board, t, gravity, rotation)
    pose, before = SPAWN_POSE, []
    for n, u in enumerate(path):
        if u == HOLD:
            before.append(None)
            continue
        before.append(m.anchor(pose))
        pose, locked = m.step(pose, u)
        assert locked == (n == len(path) - 1), (variant, k, NAMES[t], a, path, n)
    return t, before, m.anchor(pose), m.cells(pose)


def test_paths_lock_at_their_pose_in_primitive_mode(jobs):
    """Replay every sampled path with a primitive engine: same board, pieces and rules.

    Jobs are grouped by variant and path length, so a batch of envs locks together."""
    groups: dict = {}
    for job in jobs:
        variant, _, _, _, path, _ = job
        groups.setdefault((variant[1], variant[2], len(path)), []).append(job)
    n_env = 16
    replayed = 0
    for (rotation, gravity, length), group in sorted(groups.items()):
        eng = make("primitive", n_env, hold=True, rotation=rotation, gravity=gravity)
        s = eng.state
        for start in range(0, len(group), n_env):
            batch = group[start:start + n_env]
            batch = batch + [batch[0]] * (n_env - len(batch))  # pad with copies of the first
            expect = []
            for j, (variant, k, t, a, path, cost) in enumerate(batch):
                hold, queue = pieces_for(k)
                set_board(eng, j, BOARDS[k], piece=t, hold=hold, queue=queue, can_hold=True)
                expect.append(_model_trajectory(variant, k, t, a, path))
            acts = np.array([job[4] for job in batch], np.int64).T  # (length, n_env)
            for n in range(length):
                for j in range(n_env):
                    if expect[j][1][n] is not None:  # the pose before this input
                        assert (int(s.rot[j]), int(s.y[j]), int(s.x[j])) == expect[j][1][n], batch[j][:5]
                res = eng.step_no_reset(acts[n])
                pieces = eng.events[:, eng.event_names.index("pieces")]
                if n < length - 1:
                    assert not pieces.any(), [batch[j][:5] for j in np.flatnonzero(pieces)]
            assert eng.events[:, eng.event_names.index("pieces")].all()
            lines_ev = eng.events[:, eng.event_names.index("lines")]
            for j, (variant, k, t, a, path, cost) in enumerate(batch):
                t_locked, _, anchor, model_cells = expect[j]
                r, y, x = (a % N_POSES) // (H * W), (a // W) % H, a % W
                assert anchor == (r, y, x), (batch[j][:5], anchor)  # the model locks there too
                cells = piece_cells(t_locked, r, y, x)
                assert sorted(cells) == model_cells
                board, lines = after_lock(BOARDS[k], cells)
                np.testing.assert_array_equal(s.cells[j] != 0, board, err_msg=str(batch[j][:5]))
                assert lines_ev[j] == lines and res.rewards[j] == LINE_SCORES[lines]
                assert not res.terminals[j]
                if j < len(group) - start:
                    replayed += 1
    assert replayed == len(jobs)


def test_reach_action_locks_at_its_pose():
    """Stepping a reach action writes exactly that pose's cells (a few per variant)."""
    rng = np.random.default_rng(3)
    for hold, rotation, gravity in VARIANTS[::2]:
        eng = reach_engine(hold, rotation, gravity)
        for k in (0, 1, 2, len(BOARDS) - 1):
            for t in each_piece(k, eng):
                a = int(rng.choice(np.flatnonzero(eng.masks[0])))
                res = eng.step_no_reset(np.array([a], np.int64))
                placed = t if a < N_POSES else hold_target(k)
                r, y, x = (a % N_POSES) // (H * W), (a // W) % H, a % W
                board, lines = after_lock(BOARDS[k], piece_cells(placed, r, y, x))
                np.testing.assert_array_equal(eng.state.cells[0] != 0, board)
                assert eng.events[0, eng.event_names.index("lines")] == lines
                assert res.rewards[0] == LINE_SCORES[lines]
                assert eng.events[0, eng.event_names.index("holds")] == (a >= N_POSES)


# ====================================================== 2. drop placements and reach


def _drop_landing(board, t, r, x):
    """Anchor row where piece t in state r, column x, lands from the spawn rows (SPEC drop)."""
    m = Model(board, t, 0, "none")
    cells = BOX_CELLS[t][r]
    br, bc = 2, x - min(c[1] for c in cells)
    assert not m.blocked(r, br, bc)
    while not m.blocked(r, br + 1, bc):
        br += 1
    return m.anchor((r, br, bc))[1]


@pytest.mark.parametrize("rotation", ["srs", "none"])
@pytest.mark.parametrize("hold", [True, False])
def test_drop_placements_are_reachable_with_gravity_0(hold, rotation):
    """With gravity 0 nothing moves the piece but its inputs. From spawn it can turn in place
    (the (0, 0) test: the drop mode's rotated spawn pose), slide along the spawn rows to any
    column and hard drop: so when the rows a drop pose spans (rows 2-5) are empty, every
    drop-mode placement (rotation r, column x) is a reach action, costing at most
    (turns to r) + (columns to slide) + 1 (+ 1 for a hold). This does not hold for
    gravity > 0 (the piece falls while it slides: see the next test), nor when the spawn
    rows are cluttered (a drop action teleports the piece to its column)."""
    drop = make("drop", 1, hold=hold)
    reach = reach_engine(hold, rotation, 0)
    turns = (0, 1, 2, 1)
    checked = 0
    for k, board in enumerate(BOARDS):
        assert not board[:6].any()
        for t in each_piece(k, drop, reach):
            for a in np.flatnonzero(drop.masks[0]):
                h, r, x = a // 40, (a % 40) // 10, a % 10
                placed = t if h == 0 else hold_target(k)
                y = _drop_landing(board, placed, r, x)
                ra = h * N_POSES + (r * H + y) * W + x
                assert reach.masks[0, ra], (k, NAMES[t], h, r, x)
                cells = BOX_CELLS[placed][r]
                x_spawn = 3 + min(c[1] for c in cells)  # anchor column of state r at the spawn box
                assert reach.state.cost[0, ra] <= turns[r] + abs(x - x_spawn) + 1 + h
                checked += 1
    assert checked > 500


WALL_BOARD = np.zeros((H, W), np.uint8)
WALL_BOARD[6:, 7] = 8  # column 7 filled from row 6 to the floor


@pytest.mark.parametrize("gravity, reachable", [(0, True), (1, False), (2, False)])
def test_drop_placement_behind_a_wall(gravity, reachable):
    """Drop mode puts an O at column 8 behind the tall column 7 (its rows 2-3 are free there).
    With gravity 1 the O, spawned at columns 4-5 in rows 2-3, falls a row per step: by the
    time it has moved right over column 7 (three steps) it rests on that column's top and
    locks there, so it never gets to column 8 (gravity 2 is worse)."""
    drop = make("drop", 1, hold=False)
    set_board(drop, 0, WALL_BOARD, piece="O")
    assert drop.masks[0, 8]
    reach = make("reach", 1, hold=False, gravity=gravity)
    set_board(reach, 0, WALL_BOARD, piece="O")
    for r in range(4):
        assert reach.masks[0, (r * H + 22) * W + 8] == reachable
    assert (reach.state.cost[0, (0 * H + 22) * W + 8] == 5) == reachable  # 4 rights, a hard drop
    costs = bfs_costs(WALL_BOARD, O, gravity, "srs")
    assert ((0 * H + 22) * W + 8 in costs) == reachable


# ====================================================== 3. minimal costs: an independent BFS


@pytest.mark.parametrize("hold, rotation, gravity", VARIANTS)
def test_masks_and_costs_equal_an_independent_bfs(hold, rotation, gravity):
    eng = reach_engine(hold, rotation, gravity)
    v = VARIANTS.index((hold, rotation, gravity))
    for k in (v % 10, 10 + v % 4, 12 - v % 3):  # a random board and two hand-made ones
        board = BOARDS[k]
        target_costs = bfs_costs(board, hold_target(k), gravity, rotation)
        for t in each_piece(k, eng):
            expected = np.full(N_POSES * (2 if hold else 1), -1, np.int16)
            for a, c in bfs_costs(board, t, gravity, rotation).items():
                expected[a] = c
            if hold:
                for a, c in target_costs.items():
                    expected[N_POSES + a] = c + 1
            got = eng.state.cost[0]
            bad = np.flatnonzero(got != expected)
            assert not len(bad), (k, NAMES[t], [(int(a), int(got[a]), int(expected[a])) for a in bad[:5]])
            np.testing.assert_array_equal(eng.masks[0], expected >= 0)


def test_bfs_model_agrees_with_spec_examples():
    """The test's own model on facts stated in SPEC.md (spawn cells, kick direction)."""
    empty = np.zeros((H, W), np.uint8)
    m = Model(empty, I, 1, "srs")
    assert m.cells(SPAWN_POSE) == [(3, 3), (3, 4), (3, 5), (3, 6)]
    assert Model(empty, O, 1, "srs").cells(SPAWN_POSE) == [(2, 4), (2, 5), (3, 4), (3, 5)]
    # I lying on the floor turns cw through the fifth test (+1, +2): one right, two up
    m = Model(empty, I, 0, "srs")
    pose, locked = m.step((0, 22, 3), CW)
    assert pose == (1, 20, 4) and not locked
    assert m.cells(pose) == [(20, 6), (21, 6), (22, 6), (23, 6)]
    # on an empty board with gravity 1: O hard-dropped at once costs 1, nothing locks mid-air
    costs = bfs_costs(empty, O, 1, "srs")
    assert costs[(0 * H + 22) * W + 4] == 1
    assert all((a % (H * W)) // W == 22 for a in costs)


def test_path_validates_its_arguments_and_replays():
    import vecsim
    from vecsim.planners.tetris import HARD_DROP, path, plan

    eng = vecsim.make("vecsim/Tetris-v0", 2, action_mode="reach")
    eng.reset(seed=4)
    searches = len(plan.signatures)
    legal = int(np.flatnonzero(eng.masks[0])[0])
    inputs = path(eng, 0, legal)
    assert len(inputs) == eng.state.cost[0, legal] and inputs[-1] in range(8)
    assert len(plan.signatures) == searches  # path searches with reach mode's compiled plan
    spawn_drop = path(eng, 0, int(np.argmin(np.where(eng.state.cost[0] >= 0, eng.state.cost[0], 99))))
    assert spawn_drop == [HARD_DROP]
    illegal = int(np.flatnonzero(~eng.masks[0])[0])
    with pytest.raises(ValueError, match=f"action {illegal} is not reachable for env 0"):
        path(eng, 0, illegal)
    with pytest.raises(ValueError, match="action must be in"):
        path(eng, 0, 5000)
    with pytest.raises(TypeError, match="action must be an int"):
        path(eng, 0, 1.5)
    with pytest.raises(IndexError, match="env index 2"):
        path(eng, 2, legal)
    drop = vecsim.make("vecsim/Tetris-v0", 1, action_mode="drop")
    with pytest.raises(ValueError, match="reach mode"):
        path(drop, 0, 0)
