"""The pruned planner against the reference search (``drmario_planner_reference``): the same
feasibility mask and the same cost of every placement, at decision points of games played
with random placements, on random junk bottles, on bottles with tiles around the spawn and
on a hand-built one, over levels, speeds, speed-ups (T = 0 included), frame-counter phases
and carried-over controller states."""

import numpy as np
import pytest
from drmario_planner_reference import reference_costs

from vecsim.games.drmario import rules
from vecsim.games.drmario.replay import frames
from vecsim.games.drmario.state import allocate
from vecsim.games.drmario.tables import EMPTY, VIRUS
from vecsim.planners import drmario as planner_mod


@pytest.fixture(scope="module")
def planner():
    return planner_mod.Planner()


def _to_decision(s):
    while s.next_action[0] != rules.FALLING and s.outcome[0] == rules.PLAYING:
        frames(s, np.zeros(1, np.int64))


def _perturb(s, rng):
    """A carried-over controller state, charge and gravity counter as a real game can leave them."""
    s.held[0] = int(rng.choice([0, 1, 2, 4, 64, 128, 192, 65, 130, 66, 129, 4 | 64]))
    s.hor_velocity[0] = int(rng.integers(0, 16))
    s.fc[0] = int(rng.integers(0, 256))


def _assert_equal(s, planner):
    ref, _ = reference_costs(s, 0)
    plan = planner_mod.plan(s, 0, planner)
    np.testing.assert_array_equal(plan.cost_to_lock, ref)
    np.testing.assert_array_equal(plan.feasible_mask, ref != planner_mod.UNREACHABLE)
    return plan


def _games(seed, decisions, speed_ups):
    rng = np.random.default_rng(seed)
    s = allocate(1)
    rules.start_level(s, 0, int(rng.integers(0, 25)), int(rng.integers(0, 3)), int(rng.integers(1, 65536)),
                      int(rng.integers(0, 256)))
    s.speed_ups[0] = speed_ups
    _to_decision(s)
    for _ in range(decisions):
        if s.outcome[0] != rules.PLAYING:
            return
        _perturb(s, rng)
        yield s, rng
        _to_decision(s)


def _play_checked(seed, decisions, speed_ups, planner):
    checked = 0
    for s, rng in _games(seed, decisions, speed_ups):
        plan = _assert_equal(s, planner)
        checked += 1
        for b in planner_mod.script(plan, rng.choice(np.flatnonzero(plan.feasible_mask))):
            frames(s, np.array([b], np.int64))
    assert checked >= 1


@pytest.mark.parametrize("seed,speed_ups", [(0, 49), (1, 45), (2, 30)])
def test_same_costs_as_reference_fast_gravity(planner, seed, speed_ups):
    _play_checked(seed, 3, speed_ups, planner)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
def test_same_costs_as_reference_in_games(planner, seed):
    _play_checked(100 + seed, 3, int(np.random.default_rng(seed).integers(0, 50)), planner)


@pytest.mark.parametrize("seed", [*range(6), *(pytest.param(k, marks=pytest.mark.slow) for k in range(6, 30))])
def test_same_costs_as_reference_on_junk_bottles(planner, seed):
    rng = np.random.default_rng(1000 + seed)
    s = allocate(1)
    rules.start_level(s, 0, 0, 2, 0x8988, 0)
    s.speed_ups[0] = int(rng.integers(20, 50))
    _to_decision(s)
    occupied = rng.random(128) < np.linspace(0.0, 0.6, 128)
    occupied[:16] = False
    s.board[0] = np.where(occupied, VIRUS | rng.integers(0, 3, 128), EMPTY).astype(s.board.dtype)
    s.x[0], s.y[0], s.rot[0] = int(rng.integers(0, 7)), 15, int(rng.integers(0, 4))
    if s.rot[0] & 1 == 0:
        s.x[0] = min(int(s.x[0]), 6)
    s.speed_counter[0] = int(rng.integers(0, rules.gravity_threshold(s, 0) + 1))
    _perturb(s, rng)
    _assert_equal(s, planner)


def test_search_input_order_is_the_frame_mode_buttons():
    from vecsim.games.drmario import BUTTONS
    from vecsim.games.drmario.tables import BTN_A, BTN_B
    for d in range(4):
        assert sorted(BUTTONS[4 * d:4 * d + 4]) == sorted(planner_mod.DPAD[d] | r for r in (0, BTN_A, BTN_B, BTN_A | BTN_B))


def _junk_bottle(seed):
    """One env whose bottle holds viruses thickening toward the floor, and its fit table."""
    rng = np.random.default_rng(seed)
    s = allocate(1)
    occupied = rng.random(128) < np.linspace(0.0, 0.7, 128)
    s.board[0] = np.where(occupied, VIRUS | rng.integers(0, 3, 128), EMPTY).astype(s.board.dtype)
    fit = np.zeros((2, 17, 10), np.bool_)
    planner_mod.fit_table(s.board, 0, fit)
    return s, fit


def _pose_graph(fit):
    """The move table of ``fit`` and each pose's successors in the pose graph (``pose_move``)."""
    moves = np.zeros(512 * planner_mod.MOVES_ROW, np.int16)
    planner_mod.pose_moves(fit, moves)
    succ = [[] for _ in range(512)]
    for p in range(512):
        if planner_mod.fits_at(fit, p % 8, (p // 8) % 16, p // 128):
            succ[p] = [q for m in range(planner_mod.POSE_MOVES) if (q := planner_mod.pose_move(moves, p, m)) >= 0]
    return moves, succ


def _closure(succ, p):
    reach, todo = {p}, [p]
    while todo:
        for q in succ[todo.pop()]:
            if q not in reach:
                reach.add(q)
                todo.append(q)
    return reach


@pytest.mark.parametrize("seed", range(2))
def test_every_frame_is_a_path_of_the_pose_graph(seed):
    """Each pill pass of the game (every input, held state, charge and gravity phase) moves
    the pill to a pose that the pose graph (``pose_move``) reaches from its pose: the graph
    the search prunes with leaves no frame out."""
    from vecsim.games.drmario import BUTTONS
    s, fit = _junk_bottle(2000 + seed)
    _, succ = _pose_graph(fit)
    moves = 0
    for p in range(512):
        x, y, rot = p % 8, (p // 8) % 16, p // 128
        if not rules.fits(s.board, 0, x, y, rot):
            continue
        reach = _closure(succ, p)
        for held_prev in (0, 1, 2, 64, 128, 192, 65, 130):
            for held in BUTTONS:
                for sc, hv, fc in ((0, 15, 1), (0, 15, 0), (5, 0, 0)):
                    nx, ny, nrot, _, _, locked = rules.pill_frame(s.board, 0, x, y, rot, sc, hv, fc, held_prev,
                                                                  held, 5)
                    if locked:
                        assert y == 0 or not rules.fits(s.board, 0, x, y - 1, rot)
                    else:
                        assert nx + 8 * ny + 128 * nrot in reach, (p, held_prev, held, sc, hv, fc)
                        moves += (nx, ny, nrot) != (x, y, rot)
    assert moves > 1000


@pytest.mark.parametrize("density, many", [(0.0, False), (0.12, True), (0.3, True)])
def test_lock_bits_are_the_lock_poses_each_pose_has_a_path_to(density, many):
    """``lock_reach`` against a closure over the pose graph: its lock poses are those the
    spawn reaches, numbered by row from the top, and each reachable pose's bits are the lock
    poses it has a path to. A bottle of scattered viruses has over 64 lock poses, so more than
    one word a pose."""
    rng = np.random.default_rng(41)
    s = allocate(1)
    occupied = (rng.random(128) < density) & (np.arange(128) >= 24)  # the top three rows clear
    s.board[0] = np.where(occupied, VIRUS | rng.integers(0, 3, 128), EMPTY).astype(s.board.dtype)
    fit = np.zeros((2, 17, 10), np.bool_)
    planner_mod.fit_table(s.board, 0, fit)
    moves, succ = _pose_graph(fit)
    seen, queue = np.zeros(512, np.uint8), np.zeros(512, np.int64)
    cost = np.full(512, planner_mod.UNREACHABLE, np.uint16)
    targets, _ = planner_mod.reachable_locks(fit, moves, 3, 15, 0, 20, cost, seen, queue)
    locks, reach = np.zeros(512, np.int64), np.zeros(planner_mod.REACH_SIZE, np.uint64)
    count = planner_mod.lock_reach(fit, moves, seen, locks, reach)
    spawn = _closure(succ, 3 + 8 * 15)
    expected = [q for q in spawn if planner_mod.is_lock_pose(fit, q % 8, (q // 8) % 16, q // 128)
                and planner_mod.pose_action(q % 8, (q // 8) % 16, q // 128) >= 0]
    assert count == targets == len(expected)
    assert (count > 64) == many
    assert sorted(locks[:count]) == sorted(expected)
    rows = (locks[:count] >> 3) & 15
    assert np.all(np.diff(rows) <= 0)
    words = max(1, (count + 63) // 64)
    assert sorted(np.flatnonzero(seen)) == sorted(spawn)
    for p in spawn:
        bits = {64 * w + b for w in range(words) for b in range(64) if (int(reach[p * words + w]) >> b) & 1}
        assert bits == {k for k in range(count) if locks[k] in _closure(succ, p)}, p


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(12))
def test_same_costs_as_reference_over_levels_and_speeds(planner, seed):
    """Longer games at random levels and speeds, half of them with speed-ups: the search's
    horizons (the first, the wider one, the latest lock) each meet decisions here."""
    _play_checked(300 + seed, 6, int(np.random.default_rng(seed).integers(0, 50)) if seed % 2 else 0, planner)


def test_same_costs_as_reference_where_twins_skip_inputs(planner):
    """Level-5 decision points (a low bottle, so long falls), where many nodes of a layer differ
    only in holding Left or nothing and in the charge, and later twins skip the inputs they
    share: the same costs as the reference, and the twin marks cleared with the bitmap."""
    from vecsim.bench.drmario import decision_states
    twins = 0
    for s in decision_states(5, 1, 8):
        plan = _assert_equal(s, planner)
        assert not planner._visited.any()
        n = plan.parent.shape[0]
        depth = np.zeros(n, np.int64)
        for k in range(1, n):
            depth[k] = depth[plan.parent[k]] + 1
        slots = planner._keys[1:n]
        idle_or_left = ((slots >> 2) & 3) != 2
        groups = set(zip(depth[1:][idle_or_left], slots[idle_or_left] & planner_mod.TWIN_KEY))
        twins += int(idle_or_left.sum()) - len(groups)
    assert twins > 1000


@pytest.mark.parametrize("seed", range(2))
def test_pose_moves_are_the_falling_pill_pass(seed):
    """Each entry of the search's move table is what ``rules.pill_frame`` does from that pose:
    the turns of every A/B press with and without Left held, the drop or lock, the steps left
    and right (a tile sets the charge to 15, the wall leaves it), the pose's action."""
    from vecsim.games.drmario.tables import BTN_LEFT, BTN_RIGHT
    s, fit = _junk_bottle(3000 + seed)
    moves = np.zeros(512 * planner_mod.MOVES_ROW, np.int16)
    planner_mod.pose_moves(fit, moves)
    slow = 255  # no gravity within the frame
    checked = 0
    for p in range(512):
        x, y, rot = p % 8, (p // 8) % 16, p // 128
        if not rules.fits(s.board, 0, x, y, rot):
            continue
        row = moves[p * planner_mod.MOVES_ROW:(p + 1) * planner_mod.MOVES_ROW]
        for left_held in range(2):
            prev = BTN_LEFT if left_held else 0
            for ab in range(4):
                nx, ny, nrot, _, _, locked = rules.pill_frame(s.board, 0, x, y, rot, 0, 0, 0, prev, prev | (ab << 6),
                                                              slow)
                assert not locked and ny == y
                assert row[planner_mod.TURN + 4 * left_held + ab] == nx + 8 * ny + 128 * nrot, (p, left_held, ab)
        _, ny, _, _, _, locked = rules.pill_frame(s.board, 0, x, y, rot, 0, 0, 0, 0, 0, 0)
        assert row[planner_mod.DROP] == (planner_mod.BLOCKED if locked else p - 8), p
        for col, button, step in ((planner_mod.LEFT, BTN_LEFT, -1), (planner_mod.RIGHT, BTN_RIGHT, 1)):
            nx, _, _, _, nhv, _ = rules.pill_frame(s.board, 0, x, y, rot, 0, 0, 0, 0, button, slow)
            expected = p + step if nx == x + step else (planner_mod.BLOCKED if nhv == 15 else planner_mod.WALL)
            assert row[col] == expected, (p, button)
        assert row[planner_mod.ACTION] == planner_mod.pose_action(x, y, rot)
        checked += 1
    assert checked > 100


@pytest.mark.parametrize("level,speed", [(10, 1), (15, 0)])
def test_same_costs_as_reference_in_runs_by_lag(planner, level, speed):
    """Slow gravity, so several runs by lag, whose nodes store the gravity counter and the
    charge as 0 while neither can fire before the path's next drop, from spawns with
    carried-over controller states and frame-counter phases; among them a pill that locks on
    its first frame, from the root, a cost every later run keeps."""
    from vecsim.bench.drmario import decision_states
    rng = np.random.default_rng(level)
    most_runs = 0
    for s in decision_states(level, speed, 10):
        _perturb(s, rng)
        _assert_equal(s, planner)
        most_runs = max(most_runs, (rules.gravity_threshold(s, 0) - int(s.speed_counter[0])) // 2 - 1)
    assert most_runs >= planner_mod.LAG_RUNS


def _bottle(rows):
    """A bottle drawn as text, one string a row from the top, ``#`` a virus."""
    board = np.full(128, EMPTY, np.uint8)
    for r, line in enumerate(rows):
        for c, ch in enumerate(line):
            if ch == "#":
                board[8 * r + c] = VIRUS
    return board


def test_a_blocked_step_charges_the_next_frame_repeat(planner):
    """A Left step blocked by a tile sets the charge to 15 (``rules.pill_frame``), and the turn
    of that frame, Left held, takes the pill a column left anyway: Left still held on the next
    frame then fires at once. Level 10 medium, so the frame is in a run by lag, far from any
    gravity, where the search stores a charge as 0 only when it cannot fire before the path's
    next drop; a charge stored as 0 here would lock ``(row 1, col 2, 2nd half left)`` two
    frames late. The script: Down+B (drop, turn upright), nothing, Left+B (blocked by the tile
    at row 0, col 2; turning flat with Left held moves the pill left), Left (the repeat), Down
    (the lock on row 2's tile)."""
    from vecsim.games.drmario.tables import BTN_B, BTN_DOWN, BTN_LEFT
    s = allocate(1)
    rules.start_level(s, 0, 10, 1, 0x8988, 0)
    _to_decision(s)
    s.board[0] = _bottle(["..#.....", "........", ".#......"])
    s.x[0], s.y[0], s.rot[0] = 3, 15, 0
    s.speed_counter[0], s.hor_velocity[0], s.held[0] = 0, 0, 0
    s.fc[0] = 2  # the first frame is a soft-drop frame
    plan = _assert_equal(s, planner)
    action = 2 * 128 + 1 * 8 + 2
    assert plan.cost_to_lock[action] == 5
    script = planner_mod.script(plan, action)
    assert script.tolist() == [BTN_DOWN | BTN_B, 0, BTN_LEFT | BTN_B, BTN_LEFT, BTN_DOWN]
    for b in script[:3]:
        frames(s, np.array([b], np.int64))
    assert (s.x[0], s.y[0], s.rot[0], s.hor_velocity[0]) == (2, 14, 2, 15)
    for b in script[3:]:
        frames(s, np.array([b], np.int64))
    assert planner_mod.pose_action(s.lock_x[0], s.lock_y[0], s.lock_rot[0]) == action


@pytest.mark.parametrize("seed", [*range(6), *(pytest.param(k, marks=pytest.mark.slow) for k in range(6, 24))])
def test_same_costs_as_reference_with_tiles_by_the_spawn(planner, seed):
    """Bottles with tiles in the top rows as well, around a pill at its spawn or a few rows
    below in any rotation, at slow gravity: steps blocked by tiles (the charge at 15) and turns
    that kick or move the pill left, next to the root."""
    rng = np.random.default_rng(seed)
    s = allocate(1)
    rules.start_level(s, 0, int(rng.integers(0, 25)), int(rng.integers(0, 2)), 0x8988, 0)
    _to_decision(s)
    density = np.zeros(128)
    density[:48] = rng.uniform(0.05, 0.4)
    density[48:] = np.linspace(0.0, rng.uniform(0.2, 0.8), 80)
    occupied = rng.random(128) < density
    occupied[3:5] = False  # the spawn cells
    s.board[0] = np.where(occupied, VIRUS | rng.integers(0, 3, 128), EMPTY).astype(s.board.dtype)
    while True:
        x, y, rot = int(rng.integers(0, 8)), int(rng.integers(10, 16)), int(rng.integers(0, 4))
        if (x < 7 or rot & 1) and rules.fits(s.board, 0, x, y, rot & 1):
            break
    s.x[0], s.y[0], s.rot[0] = x, y, rot
    s.speed_counter[0] = int(rng.integers(0, 4))
    _perturb(s, rng)
    _assert_equal(s, planner)
