"""Tetris scenarios on ASCII boards, each checked against ``games/tetris/SPEC.md``.

Every expected value here is worked out by hand from SPEC.md (cells, kick tables, gravity,
scoring, features), not read back from the kernels. Boards are written with
``vecsim.games.tetris.tools.set_board``; ASCII rows are the *bottom* rows of the 24-row board
(row 23 is the floor row), ``#`` filled, ``.`` empty.

Engines are cached per configuration for the whole module (Numba compiles once per process).
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import vecsim
from vecsim.games.tetris.tools import board_text, parse_board, piece_cells, set_board

H, W = 24, 10
I, O, T, S, Z, J, L = range(7)
NOOP, LEFT, RIGHT, SOFT, HARD, CW, CCW, HOLD = range(8)
NONE = 7

# Flat observation layout: active(4), board(240), features(17), hold(1) if hold, queue(q).
OBS_ACTIVE = slice(0, 4)
OBS_BOARD = slice(4, 4 + H * W)
F0 = 4 + H * W
OBS_FEATURES = slice(F0, F0 + 17)
F_HOLES, F_BUMP, F_ROW_T, F_COL_T, F_WELLS, F_LANDING, F_ERODED = range(10, 17)
OBS_HOLD = F0 + 17
GUIDELINE = {0: 0, 1: 100, 2: 300, 3: 500, 4: 800}


def drop_action(r, x, h=0):
    return h * 40 + r * 10 + x


def reach_action(r, y, x, h=0):
    return h * 4 * H * W + (r * H + y) * W + x


_ENGINES: dict = {}


def engine(num_envs=1, **kwargs):
    """A cached engine per configuration (reset once; every test sets its own board)."""
    key = (num_envs, tuple(sorted(kwargs.items())))
    if key not in _ENGINES:
        eng = vecsim.make("vecsim/Tetris-v0", num_envs, **kwargs)
        eng.reset(seed=0)
        _ENGINES[key] = eng
    eng = _ENGINES[key]
    if eng.needs_reset.any():
        eng.reset(seed=0)
    return eng


def step(eng, *actions):
    return eng.step_no_reset(np.array(actions, np.int64))


def ev(eng, name, i=0):
    return int(eng.events[i, eng.event_names.index(name)])


def pose(eng, i=0):
    s = eng.state
    return int(s.rot[i]), int(s.y[i]), int(s.x[i])


def filled(eng, i=0):
    """The set of filled (row, col) cells of env ``i``'s board."""
    return {(int(y), int(x)) for y, x in zip(*np.nonzero(eng.state.cells[i]))}


def board_set(ascii_rows: str):
    b = parse_board(ascii_rows)
    return {(int(y), int(x)) for y, x in zip(*np.nonzero(b))}


# ================================================================ T-spins through SRS kicks

# T-spin double: a T in state L resting in the slot's mouth, rotated counter-clockwise
# (L -> 2). SPEC 3->2 tests: (0,0) blocked by (21,4); (-1,0) blocked by the overhang (21,1);
# (-1,-1) (one column left, one row *down*) fits: the T lands pointing down in the slot.
TSD_BOARD = """
##..#.....
#...######
##.#######
"""
TSD_START = (3, 20, 2)  # anchor of state L with its box at row 20, column 2
TSD_END = (2, 22, 1)  # state 2, box (21, 1): cells (22,1) (22,2) (22,3) (23,2)

# T-spin triple: a T in state 0 under the overhang (19,2), rotated counter-clockwise (0 -> L).
# SPEC 0->3 tests: (0,0) hits (21,1), (+1,0) and (+1,+1) hit (19,2), (0,-2) hits (21,1);
# the fifth, (+1,-2) (one column right, two rows down), fits: three rows fill.
TST_BOARD = """
..##......
...#######
##.#######
#..#######
##.#######
"""
TST_START = (0, 19, 0)  # box (19, 0): cells (19,1) (20,0) (20,1) (20,2)
TST_END = (3, 21, 1)  # state L, box (21, 1): cells (21,2) (22,1) (22,2) (23,2)


@pytest.mark.parametrize("board, start, end, lines", [(TSD_BOARD, TSD_START, TSD_END, 2),
                                                     (TST_BOARD, TST_START, TST_END, 3)],
                         ids=["double", "triple"])
def test_t_spin_needs_a_kick(board, start, end, lines):
    # gravity 0: the rotated pose can be read before anything locks
    eng = engine(action_mode="primitive", gravity=0)
    set_board(eng, 0, board, piece="T", pose=start)
    before = filled(eng)
    step(eng, CCW)
    assert pose(eng) == end
    assert ev(eng, "pieces") == 0 and filled(eng) == before
    step(eng, SOFT)  # resting: soft drop locks
    assert ev(eng, "pieces") == 1 and ev(eng, "lines") == lines
    assert eng.rewards[0] == GUIDELINE[lines]
    # what is left: the rows above the cleared bottom rows, moved down by `lines`
    cleared = {H - 1 - k for k in range(lines)}
    assert filled(eng) == {(y + lines, x) for y, x in before if y not in cleared}


@pytest.mark.parametrize("board, start, end, lines", [(TSD_BOARD, TSD_START, TSD_END, 2),
                                                     (TST_BOARD, TST_START, TST_END, 3)],
                         ids=["double", "triple"])
def test_t_spin_locks_in_one_step_with_gravity(board, start, end, lines):
    # gravity 1: the T rests where it starts, so the rotation is its last input: it locks
    # where the kick put it (the rotated pose cannot fall: zero rows moved, was resting)
    eng = engine(action_mode="primitive", gravity=1, scoring="lines")
    set_board(eng, 0, board, piece="T", pose=start)
    before = filled(eng)
    step(eng, CCW)
    assert ev(eng, "pieces") == 1 and ev(eng, "lines") == lines and eng.rewards[0] == lines
    cleared = {H - 1 - k for k in range(lines)}
    moved = {(y + lines, x) for y, x in before if y not in cleared}
    assert filled(eng) == moved


@pytest.mark.parametrize("board, start", [(TSD_BOARD, TSD_START), (TST_BOARD, TST_START)],
                         ids=["double", "triple"])
def test_t_spin_rotation_fails_without_kicks(board, start):
    eng = engine(action_mode="primitive", gravity=0, rotation="none")
    set_board(eng, 0, board, piece="T", pose=start)
    before = filled(eng)
    step(eng, CCW)
    assert pose(eng) == start  # only the (0, 0) test, which is blocked
    assert ev(eng, "pieces") == 0 and filled(eng) == before
    step(eng, CW)  # the other way is blocked at (0, 0) too in both setups
    assert pose(eng) == start


def test_t_spin_poses_in_reach_mode():
    """The kicked T-spin poses as reach actions."""
    # T-spin double, gravity 1: fall in state L to anchor (20, 2) (18 steps, one row each;
    # the ccw rotation and one slide left happen on the way), then the kicked ccw rotation
    # locks in the slot: 19 steps. Without kicks the slot is still reachable, by dropping the
    # T in state R through the two free cells (21, 2) (21, 3) and turning it at (0, 0), one
    # step later.
    srs = engine(action_mode="reach")
    none = engine(action_mode="reach", rotation="none")
    for eng in (srs, none):
        set_board(eng, 0, TSD_BOARD, piece="T")
    a = reach_action(*TSD_END)
    assert srs.masks[0, a] and srs.state.cost[0, a] == 19
    assert none.masks[0, a] and none.state.cost[0, a] == 20
    step(srs, a)
    assert ev(srs, "lines") == 2 and srs.rewards[0] == 300
    # T-spin triple: the cells under (19, 2) and (21, 1) can only be entered by kicks.
    a = reach_action(*TST_END)
    for gravity, rotation, reachable in [(0, "srs", True), (0, "none", False), (1, "none", False),
                                         (1, "srs", False)]:
        # gravity 1: the T gets to the start pose only by a kick from a resting pose (state R
        # against the left wall), after which it cannot fall and locks there at once, so the
        # second kick into the triple slot never happens; gravity 0 never locks by itself.
        eng = engine(action_mode="reach", gravity=gravity, rotation=rotation)
        set_board(eng, 0, TST_BOARD, piece="T")
        assert eng.masks[0, a] == reachable, (gravity, rotation)
        assert (eng.state.cost[0, a] >= 0) == reachable
        assert eng.masks[0, reach_action(*TST_START)] == (rotation == "srs")
    eng = engine(action_mode="reach", gravity=0, rotation="srs")
    set_board(eng, 0, TST_BOARD, piece="T")
    step(eng, a)
    assert ev(eng, "lines") == 3 and eng.rewards[0] == 500


def test_a_reach_engine_compiles_the_planner_once():
    """Its step and reset kernels and refresh (``set_board``'s) pass the env index as different
    integer types; the reach mask hands the planner an int64 one: one compile of the planner
    (about 20 s), not one per index type."""
    from numba import types
    from vecsim.planners.tetris import plan_decision

    eng = engine(action_mode="reach")
    set_board(eng, 0, TSD_BOARD, piece="T")
    step(eng, reach_action(*TSD_END))
    eng.reset(seed=1)
    assert {signature[1] for signature in plan_decision.dispatcher.overloads} == {types.int64}


# ================================================================ tuck under an overhang

TUCK_BOARD = """
####......
#.........
#.........
"""
# The overhang (21, 1..3) covers (22..23, 1..3). An O falling at its spawn columns 4-5 lands
# on the floor at anchor (22, 4); one slide left then moves it under the overhang.
TUCK_POSE = (0, 22, 3)


def test_tuck_in_primitive_mode():
    eng = engine(action_mode="primitive", gravity=1)
    set_board(eng, 0, TUCK_BOARD, piece="O")
    assert pose(eng) == (0, 2, 4)
    for k in range(20):  # 20 rows to fall, one per step
        step(eng, NOOP)
        assert ev(eng, "pieces") == 0
    assert pose(eng) == (0, 22, 4)  # at rest on the floor, not locked yet
    step(eng, LEFT)  # the tuck: moved, cannot fall, was resting -> locks there
    assert ev(eng, "pieces") == 1 and ev(eng, "lines") == 0
    assert filled(eng) == board_set(TUCK_BOARD) | set(piece_cells(O, *TUCK_POSE))
    assert (22, 3) in filled(eng) and (21, 3) in board_set(TUCK_BOARD)  # really under it


def test_tuck_without_the_last_input_locks_in_the_open():
    eng = engine(action_mode="primitive", gravity=1)
    set_board(eng, 0, TUCK_BOARD, piece="O")
    for _ in range(20):
        step(eng, NOOP)
    step(eng, NOOP)
    assert ev(eng, "pieces") == 1
    assert filled(eng) == board_set(TUCK_BOARD) | set(piece_cells(O, 0, 22, 4))


def test_tuck_pose_in_reach_mode():
    eng = engine(action_mode="reach")
    set_board(eng, 0, TUCK_BOARD, piece="O", hold="-", queue="OITSZJ")
    a = reach_action(*TUCK_POSE)
    # 20 steps down to the floor, then the slide that locks: 21 (nothing is faster: every
    # step moves the piece at most one row down, and the slide under must come after)
    assert eng.masks[0, a] and eng.state.cost[0, a] == 21
    assert eng.state.cost[0, reach_action(0, 22, 4)] == 1  # hard drop in the open
    # with the O of queue[0] after a hold input: one more step
    assert eng.masks[0, a + 960] and eng.state.cost[0, a + 960] == 22
    # stepping the reach action locks it there
    step(eng, a)
    assert ev(eng, "pieces") == 1
    assert filled(eng) == board_set(TUCK_BOARD) | set(piece_cells(O, *TUCK_POSE))


def test_tuck_pose_not_reachable_in_drop_mode():
    eng = engine(action_mode="drop", hold=False)
    set_board(eng, 0, TUCK_BOARD, piece="O")
    legal = np.flatnonzero(eng.masks[0])
    assert len(legal) == 4 * 9  # O: 4 states x columns 0..8
    tuck = set(piece_cells(O, *TUCK_POSE))
    for a in legal:
        set_board(eng, 0, TUCK_BOARD, piece="O")
        step(eng, int(a))
        assert ev(eng, "pieces") == 1
        placed = filled(eng) - board_set(TUCK_BOARD)
        assert len(placed) == 4 and placed != tuck
        assert (23, 3) not in placed and (22, 3) not in placed
        # a hard drop from the spawn rows lands the O on the overhang at columns 1..3
        x = int(a) % 10
        if 0 <= x <= 3:
            assert max(y for y, _ in placed) == 20


# ================================================================ line clears


def _line_board(n):
    """n rows with a gap in column 9 on top of a bottom row with a gap in column 0."""
    return "\n".join(["#########."] * n + [".#########"])


@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("scoring", ["guideline", "lines"])
def test_line_clears(n, scoring):
    eng = engine(action_mode="drop", scoring=scoring)
    set_board(eng, 0, _line_board(n), piece="I")
    res = step(eng, drop_action(1, 9))  # vertical I in column 9: rows 19-22, on (23, 9)
    assert ev(eng, "lines") == n and ev(eng, "pieces") == 1 and ev(eng, "holds") == 0
    assert res.rewards[0] == (GUIDELINE[n] if scoring == "guideline" else n)
    assert not res.terminals[0]
    # the n gap rows are gone; the bottom row stays; 4 - n cells of the I remain above it
    expected = {(23, c) for c in range(1, 10)} | {(22 - k, 9) for k in range(4 - n)}
    assert filled(eng) == expected
    obs = eng.obs[0]
    f = obs[OBS_FEATURES]
    assert f[F_LANDING] == 1  # lowest I cell in row 22: one row below it
    assert f[F_ERODED] == n * n  # n rows x n cells of the I in them
    heights = [1] * 9 + [1 + 4 - n]
    heights[0] = 0
    assert f[:10].tolist() == heights
    assert f[F_HOLES] == 0
    assert obs[OBS_BOARD].reshape(H, W)[23].tolist() == [0] + [1] * 9


def test_no_clear_resets_eroded_and_reports_landing():
    eng = engine(action_mode="drop")
    set_board(eng, 0, _line_board(1), piece="O")
    step(eng, drop_action(0, 0))  # O on the (22, 0) gap row: columns 0-1, lands on row 22's cells
    assert ev(eng, "lines") == 0 and eng.rewards[0] == 0
    f = eng.obs[0][OBS_FEATURES]
    assert f[F_ERODED] == 0
    assert f[F_LANDING] == 2  # O's lowest cell in row 21 (row 22 is full at columns 0-1)


def test_reset_features_are_those_of_the_empty_board():
    eng = engine(2, action_mode="drop")
    eng.reset(seed=11)
    for i in range(2):
        f = eng.obs[i][OBS_FEATURES]
        assert f.tolist() == [0] * 13 + [10] + [0] * 3  # col_transitions: 10 floors
        assert not eng.obs[i][OBS_BOARD].any()
        s = eng.state
        assert eng.obs[i][OBS_ACTIVE].tolist() == [int(s.piece[i]), 0, int(s.y[i]), int(s.x[i])]
        assert eng.obs[i][OBS_HOLD] == NONE
        assert eng.obs[i][OBS_HOLD + 1:].tolist() == s.queue[i, :5].tolist()


# ================================================================ top-out

def _tower_board(top_row, bottom=".........."):
    """Column 4 filled from ``top_row`` to the floor (every spawn covers (3, 4))."""
    b = np.zeros((H, W), np.uint8)
    b[top_row:, 4] = 8
    b[H - 1] = [0 if ch == "." else 8 for ch in bottom]
    b[H - 1, 4] = 8
    return b


@pytest.mark.parametrize("mode", ["drop", "primitive"])
def test_top_out_when_next_piece_cannot_spawn(mode):
    eng = engine(action_mode=mode)
    # the current I stands in column 0 away from the spawn; every next piece covers (3, 4)
    set_board(eng, 0, _tower_board(3), piece="I", pose=(1, 10, 0), queue="OTSZJL")
    a = {"drop": drop_action(1, 0), "primitive": HARD}[mode]
    assert eng.masks[0, a]
    res = step(eng, a)
    assert ev(eng, "pieces") == 1 and ev(eng, "lines") == 0
    assert res.terminals[0] and not res.truncations[0] and res.rewards[0] == 0
    assert {(y, 0) for y in range(20, 24)} <= filled(eng)
    eng.reset(seed=0)


@pytest.mark.parametrize("mode", ["drop", "primitive", "reach"])
@pytest.mark.parametrize("next_piece, over", [("O", True), ("S", True), ("L", True), ("T", False),
                                              ("Z", False), ("J", False), ("I", False)])
def test_top_out_depends_on_the_next_spawn(mode, next_piece, over):
    """(2, 5) is filled: O, S and L cannot spawn (their spawn cells cover it); I (row 3 only),
    T ((2, 4)), Z ((2, 3) (2, 4)) and J ((2, 3)) can. The current I hard-drops from spawn."""
    eng = engine(action_mode=mode)
    b = np.zeros((H, W), np.uint8)
    b[2, 5] = 8
    set_board(eng, 0, b, piece="I", hold="-", queue=next_piece + "TTTTT")
    a = {"drop": drop_action(0, 3), "primitive": HARD, "reach": reach_action(0, 23, 3)}[mode]
    assert eng.masks[0, a]
    if mode == "reach":
        assert eng.state.cost[0, a] == 1
    res = step(eng, a)
    assert ev(eng, "pieces") == 1 and res.rewards[0] == 0
    assert bool(res.terminals[0]) == over
    assert {(23, c) for c in range(3, 7)} <= filled(eng)
    if over:
        eng.reset(seed=0)


def test_top_out_after_a_clear_still_scores():
    eng = engine(action_mode="drop")
    # the bottom row clears: the tower (from row 2) moves down one and still covers (3, 4)
    set_board(eng, 0, _tower_board(2, ".#########"), piece="I", pose=(1, 10, 0), queue="TTTTTT")
    res = step(eng, drop_action(1, 0))
    assert ev(eng, "lines") == 1 and res.rewards[0] == 100 and res.terminals[0]
    eng.reset(seed=0)


def test_no_top_out_when_the_clear_opens_the_spawn():
    eng = engine(action_mode="drop")
    # same, with the tower from row 3: after the clear (3, 4) is empty again
    set_board(eng, 0, _tower_board(3, ".#########"), piece="I", pose=(1, 10, 0), queue="TTTTTT")
    res = step(eng, drop_action(1, 0))
    assert ev(eng, "lines") == 1 and not res.terminals[0]
    assert pose(eng) == (0, 2, 3) and int(eng.state.piece[0]) == T


def test_top_out_by_hold():
    eng = engine(action_mode="primitive")
    # the held S cannot spawn at (2, 4) (2, 5) (3, 3) (3, 4); the current I can at row 3
    b = np.zeros((H, W), np.uint8)
    b[2, 5] = 8
    set_board(eng, 0, b, piece="I", hold="S")
    res = step(eng, HOLD)
    assert ev(eng, "holds") == 1 and res.terminals[0]
    eng.reset(seed=0)


# ================================================================ randomizers


def _sequences(eng, seeds, steps, rng):
    """Each env's piece sequence per episode, read from the state: current + queue at reset
    (the first 7 draws), then queue[5] after each lock (hold off: one draw per step). Random
    legal drops; an env is followed until it tops out."""
    out = []
    s = eng.state
    for seed in seeds:
        eng.reset(seed=seed)
        seqs = [[int(s.piece[i])] + s.queue[i].tolist() for i in range(eng.num_envs)]
        live = np.ones(eng.num_envs, bool)
        for _ in range(steps):
            acts = np.zeros(eng.num_envs, np.int64)
            for i in range(eng.num_envs):
                legal = np.flatnonzero(eng.masks[i])  # empty only for an env due for reset
                if len(legal):
                    acts[i] = rng.choice(legal) if live[i] else legal[0]
            prev_queue = s.queue.copy()
            # step (not step_no_reset): an env that topped out is reset by the next call, and
            # is no longer followed
            _, _, terminals, _ = eng.step(acts)
            for i in np.flatnonzero(live):
                # advance: current = old queue[0], the queue shifts, one new draw at its end
                assert int(s.piece[i]) == prev_queue[i, 0] or terminals[i]
                assert s.queue[i, :5].tolist() == prev_queue[i, 1:].tolist()
                if terminals[i]:
                    live[i] = False  # the draw of the topping-out step is not kept
                else:
                    seqs[i].append(int(s.queue[i, 5]))
            if not live.any():
                break
        out.extend(seqs)
    return out


def test_seven_bag_blocks_are_permutations():
    eng = vecsim.make("vecsim/Tetris-v0", 8, action_mode="drop", hold=False)
    rng = np.random.default_rng(0)
    total = 0
    for seq in _sequences(eng, seeds=[0, 100, 200], steps=60, rng=rng):
        for k in range(0, len(seq) - 6, 7):
            assert sorted(seq[k:k + 7]) == list(range(7)), (k, seq)
            total += 7
    assert total >= 500


def test_seven_bag_state_tracks_the_bag():
    eng = engine(4, action_mode="drop", hold=False)
    eng.reset(seed=7)
    s = eng.state
    for i in range(4):
        # reset drew 7 pieces: exactly one whole bag
        assert s.bag_pos[i] == 7
        assert [int(s.piece[i])] + s.queue[i].tolist() == s.bag[i].tolist()
    eng.reset(seed=0)


def test_uniform_randomizer_repeats():
    eng = vecsim.make("vecsim/Tetris-v0", 8, action_mode="drop", hold=False, randomizer="uniform")
    rng = np.random.default_rng(1)
    blocks = repeats = 0
    counts = np.zeros(7, int)
    for seq in _sequences(eng, seeds=[0, 50], steps=40, rng=rng):
        counts += np.bincount(seq, minlength=7)
        for k in range(0, len(seq) - 6, 7):
            blocks += 1
            repeats += len(set(seq[k:k + 7])) < 7
    # a block of 7 uniform draws is a permutation with probability 7!/7^7 = 0.6 %
    assert blocks >= 30 and repeats >= blocks - 3
    assert counts.min() > 0


# ================================================================ hold


def test_hold_primitive_swaps_and_blocks():
    eng = engine(action_mode="primitive")
    eng.reset(seed=4)
    s = eng.state
    first, q = int(s.piece[0]), s.queue[0].tolist()
    assert eng.masks[0, HOLD] and s.hold[0] == NONE and s.can_hold[0]
    step(eng, HOLD)  # empty hold: the piece goes to hold, the queue advances
    assert ev(eng, "holds") == 1 and ev(eng, "pieces") == 0
    assert int(s.hold[0]) == first and int(s.piece[0]) == q[0] and s.queue[0, :5].tolist() == q[1:]
    assert pose(eng) == (0, 2, 3)  # at spawn; gravity skipped for the hold
    assert not s.can_hold[0] and not eng.masks[0, HOLD]
    assert eng.masks[0, :HOLD].all()
    assert eng.obs[0, OBS_HOLD] == first
    # a second hold before any lock: a noop (gravity applies), never an error
    before = (int(s.piece[0]), int(s.hold[0]), s.queue[0].tolist())
    step(eng, HOLD)
    assert ev(eng, "holds") == 0
    assert (int(s.piece[0]), int(s.hold[0]), s.queue[0].tolist()) == before
    assert pose(eng) == (0, 3, 3)
    step(eng, HARD)
    assert ev(eng, "pieces") == 1 and s.can_hold[0] and eng.masks[0, HOLD]
    current, queue_before = int(s.piece[0]), s.queue[0].tolist()
    step(eng, HOLD)  # swap with the held piece: no draw
    assert ev(eng, "holds") == 1
    assert int(s.piece[0]) == first and int(s.hold[0]) == current
    assert s.queue[0].tolist() == queue_before
    assert pose(eng) == (0, 2, 3) and not eng.masks[0, HOLD]


def test_hold_mask_in_drop_mode():
    eng = engine(action_mode="drop")
    set_board(eng, 0, "", piece="I", hold="-", queue="OTSZJL")
    m = eng.masks[0]
    assert m.shape == (80,)
    # I horizontal (width 4) fits at x <= 6; the hold half places the O of queue[0] (x <= 8)
    assert m[drop_action(0, 6)] and not m[drop_action(0, 7)]
    assert m[drop_action(0, 8, h=1)] and not m[drop_action(0, 9, h=1)]
    assert m[drop_action(1, 9)]  # vertical I
    # with a held T, the hold half places the T (width 3: x <= 7)
    set_board(eng, 0, "", piece="I", hold="T", queue="OTSZJL")
    m = eng.masks[0]
    assert m[drop_action(0, 7, h=1)] and not m[drop_action(0, 8, h=1)]
    # a hold action places the other piece and keeps the current one in hold
    step(eng, drop_action(0, 7, h=1))
    assert ev(eng, "holds") == 1 and ev(eng, "pieces") == 1
    assert filled(eng) == set(piece_cells(T, 0, 22, 7))
    assert int(eng.state.hold[0]) == I and int(eng.state.piece[0]) == O
    assert eng.state.can_hold[0] and eng.masks[0, 40:].any()
    # can_hold False: the whole hold half is illegal
    set_board(eng, 0, "", piece="I", hold="T", can_hold=False)
    assert not eng.masks[0, 40:].any() and eng.masks[0, :40].any()
    with pytest.raises(ValueError):
        step(eng, drop_action(0, 0, h=1))


def test_hold_in_reach_mode():
    eng = engine(action_mode="reach")
    set_board(eng, 0, "", piece="I", hold="O", queue="TSZJLI")
    c = eng.state.cost[0]
    assert c[reach_action(0, 22, 4, h=1)] == 2  # hold, then hard drop the O
    assert c[reach_action(0, 23, 3)] == 1  # hard drop the I
    set_board(eng, 0, "", piece="I", hold="O", can_hold=False)
    assert not eng.masks[0, 960:].any() and (eng.state.cost[0, 960:] == -1).all()


def test_reach_hold_half_illegal_when_the_held_piece_cannot_spawn():
    eng = engine(action_mode="reach")
    b = np.zeros((H, W), np.uint8)
    b[2, 5] = 8  # covers the O's spawn cells, not the I's or the T's
    set_board(eng, 0, b, piece="I", hold="O")
    assert eng.masks[0, :960].any() and not eng.masks[0, 960:].any()
    assert (eng.state.cost[0, 960:] == -1).all()
    set_board(eng, 0, b, piece="I", hold="T")
    assert eng.masks[0, 960:].any()


# ================================================================ observation layout


@pytest.mark.parametrize("hold, queue", [(True, 5), (False, 0), (False, 3), (True, 6), (True, 0)])
def test_observation_layout_and_queue_length(hold, queue):
    eng = engine(2, action_mode="drop", hold=hold, queue=queue)
    eng.reset(seed=21)
    assert eng.obs.shape == (2, 4 + H * W + 17 + int(hold) + queue) and eng.obs.dtype == np.uint8
    s = eng.state
    tail = eng.obs[0, F0 + 17:]
    if hold:
        assert tail[0] == NONE
    assert tail[int(hold):].tolist() == s.queue[0, :queue].tolist()
    # the sequence does not depend on the visible queue length (6 pieces kept internally)
    ref = engine(2, action_mode="drop")
    ref.reset(seed=21)
    assert s.queue.tolist() == ref.state.queue.tolist() and s.piece.tolist() == ref.state.piece.tolist()
    ref.reset(seed=0)


def test_classic_preset():
    eng = engine(action_mode="drop", preset="classic")
    p = eng.params
    assert (p.rotation, p.randomizer, p.hold, p.queue, p.scoring) == (0, 0, 0, 0, 0)
    assert eng.obs.shape == (1, 4 + H * W + 17) and eng.masks.shape == (1, 40)
    set_board(eng, 0, _line_board(4), piece="I")
    step(eng, drop_action(1, 9))
    assert ev(eng, "lines") == 4 and eng.rewards[0] == 4  # lines, not points
    # keywords given with a preset override it
    assert engine(action_mode="drop", preset="classic", hold=True).masks.shape == (1, 80)


def test_features_saturate_in_the_observation():
    eng = engine(action_mode="primitive", gravity=0)
    # five full-height wells: cumulative wells 5 * (24 * 25 / 2) = 1500, row transitions 240
    b = np.array([[8, 0] * 5] * H, np.uint8)
    set_board(eng, 0, b, piece="I", pose=(1, 0, 1))  # a vertical I inside a well
    f = eng.obs[0][OBS_FEATURES]
    assert eng.state.feat[0, F_WELLS] == 1500 and f[F_WELLS] == 255
    assert f[F_ROW_T] == 240 and f[F_BUMP] == 216 and f[F_COL_T] == 5
    assert f[:10].tolist() == [24, 0] * 5


# ================================================================ illegal and malformed actions

GAME_FIELDS = ("cells", "rows", "piece", "rot", "y", "x", "queue", "hold", "can_hold", "bag", "bag_pos", "feat")


def _game_state(eng, i):
    s = eng.state
    out = {f: np.array(getattr(s, f)[i], copy=True) for f in GAME_FIELDS}
    out["rng"] = np.array(eng.rng[i], copy=True)
    out["obs"] = np.array(eng.obs[i], copy=True)
    out["mask"] = np.array(eng.masks[i], copy=True)
    return out


def _assert_same(a, b):
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


@pytest.mark.parametrize("mode, bad", [("drop", drop_action(0, 7)), ("reach", reach_action(0, 5, 0))])
def test_illegal_action_raises_and_changes_nothing(mode, bad, engine_snapshot, assert_unchanged):
    eng = engine(2, action_mode=mode)
    eng.reset(seed=3)
    for i in range(2):
        set_board(eng, i, "", piece="I", hold="-", queue="OTSZJL")
    good = drop_action(0, 0) if mode == "drop" else reach_action(0, 23, 0)
    assert eng.masks[0, good] and not eng.masks[1, bad]
    before = engine_snapshot(eng)
    with pytest.raises(ValueError) as info:
        step(eng, good, bad)
    msg = str(info.value)
    assert "env 1" in msg and str(bad) in msg
    assert_unchanged(eng, before)


@pytest.mark.parametrize("mode, bad", [("drop", drop_action(0, 7)), ("reach", reach_action(0, 5, 0))])
def test_illegal_action_flagged(mode, bad):
    eng = engine(2, action_mode=mode, invalid_action="flag")
    eng.reset(seed=3)
    for i in range(2):
        set_board(eng, i, "", piece="I", hold="-", queue="OTSZJL")
    good = drop_action(0, 0) if mode == "drop" else reach_action(0, 23, 0)
    before = _game_state(eng, 1)
    res = step(eng, good, bad)
    assert ev(eng, "invalid_action", 1) == 1 and ev(eng, "pieces", 1) == 0 and ev(eng, "lines", 1) == 0
    assert res.rewards[1] == 0 and not res.terminals[1]
    _assert_same(_game_state(eng, 1), before)
    # the legal env stepped as usual
    assert ev(eng, "invalid_action", 0) == 0 and ev(eng, "pieces", 0) == 1
    # an illegal hold action (can_hold False) is flagged the same way
    set_board(eng, 1, "", piece="I", hold="-", queue="OTSZJL", can_hold=False)
    before = _game_state(eng, 1)
    h = 40 if mode == "drop" else 960
    step(eng, good, good + h)
    assert ev(eng, "invalid_action", 1) == 1 and ev(eng, "holds", 1) == 0
    _assert_same(_game_state(eng, 1), before)


@pytest.mark.parametrize("mode", ["primitive", "drop", "reach"])
@pytest.mark.parametrize("invalid", ["raise", "flag"])
def test_malformed_actions_always_raise(mode, invalid, engine_snapshot, assert_unchanged):
    eng = engine(2, action_mode=mode, invalid_action=invalid)
    eng.reset(seed=5)
    n = eng.single_action_space.n
    before = engine_snapshot(eng)
    for bad in ([0, n], [-1, 0], [0, 10 ** 6]):
        with pytest.raises(ValueError):
            step(eng, *bad)
        assert_unchanged(eng, before)
    with pytest.raises((TypeError, ValueError)):
        eng.step_no_reset(np.array([0.0, 1.0]))
    with pytest.raises((TypeError, ValueError)):
        eng.step_no_reset(np.array([0.5, 1.0]))
    assert_unchanged(eng, before)


def test_primitive_impossible_hold_is_not_an_error():
    eng = engine(action_mode="primitive")  # invalid_action="raise" (the default)
    set_board(eng, 0, "", piece="T", can_hold=False)
    assert not eng.masks[0, HOLD]
    step(eng, HOLD)
    assert ev(eng, "invalid_action") == 0 and ev(eng, "holds") == 0 and pose(eng) == (0, 3, 3)


# ================================================================ Gymnasium


@pytest.mark.parametrize("mode", ["primitive", "drop", "reach"])
def test_gymnasium_env_checker(mode):
    # check_env steps with unmasked ``action_space.sample()``: in drop and reach mode most
    # sampled actions are illegal, which SPEC makes a ValueError under the default
    # invalid_action="raise"; "flag" is the setting for mask-unaware callers.
    kwargs = {} if mode == "primitive" else {"invalid_action": "flag"}
    env = gym.make("vecsim/Tetris-v0", action_mode=mode, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(env.unwrapped, skip_render_check=False)
    env.close()


@pytest.mark.parametrize("mode", ["primitive", "drop", "reach"])
def test_gymnasium_single_env(mode):
    env = gym.make("vecsim/Tetris-v0", action_mode=mode)
    obs, info = env.reset(seed=0)
    assert set(obs) == {"active", "board", "features", "hold", "queue"}
    assert obs in env.observation_space
    assert obs["board"].shape == (H, W) and obs["features"].shape == (17,) and obs["queue"].shape == (5,)
    a = HARD if mode == "primitive" else int(np.flatnonzero(info["action_mask"])[0])
    obs, reward, terminated, truncated, info = env.step(a)
    assert info["pieces"] == 1 and not terminated
    # The same dict as Gymnasium's unflatten of the flat row: keys, order, dtypes, values.
    expected = gym.spaces.unflatten(env.observation_space, env.unwrapped.engine.obs[0].copy())
    assert list(obs) == list(expected) == list(env.observation_space.spaces)
    for key in expected:
        assert obs[key].dtype == expected[key].dtype and obs[key].shape == expected[key].shape, key
        np.testing.assert_array_equal(obs[key], expected[key], err_msg=key)
    if mode == "reach":
        assert info["placement_cost"].shape == (1920,) and info["placement_cost"].dtype == np.int16
    env.close()


def test_gymnasium_observation_is_not_overwritten_by_the_next_reset():
    """Gymnasium's checker (check_reset_seed_determinism) keeps the observation of
    ``reset(seed=123)`` and compares it after another reset: it must be the env's own copy."""
    env = gym.make("vecsim/Tetris-v0").unwrapped
    obs, _ = env.reset(seed=123)
    kept = {k: v.copy() for k, v in obs.items()}
    env.reset(seed=7)
    for k in kept:
        np.testing.assert_array_equal(obs[k], kept[k], err_msg=k)
    env.close()


# ================================================================ rendering


def test_render_text_shows_board_and_piece():
    eng = engine(action_mode="drop")
    set_board(eng, 0, "#.#.#.#.#.", piece="T", hold="O", queue="IJLSZT")
    text = eng.render_text(0)
    lines = text.splitlines()
    assert len(lines) == H + 2  # 24 rows, the hidden-rows separator, the piece line
    assert lines[4] == "-" * W
    board_lines = lines[:4] + lines[5:H + 1]
    assert board_lines[23] == "#.#.#.#.#."
    assert board_lines[2] == "....@....." and board_lines[3] == "...@@@...."
    assert "piece T" in lines[-1] and "hold O" in lines[-1] and "next IJLSZ" in lines[-1]
    assert board_text(eng, 0).splitlines()[23] == "#.#.#.#.#."


def _play_a_few(eng):
    eng.reset(seed=2)
    for _ in range(6):
        step(eng, int(np.flatnonzero(eng.masks[0])[0]))


def test_render_rgb_shape_and_cells():
    eng = engine(action_mode="drop")
    _play_a_few(eng)  # a board made by play: colours type + 1
    img = eng.render_rgb(0)
    assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3
    cell = img.shape[0] // H
    assert img.shape[0] == H * cell and img.shape[1] >= W * cell
    centre = lambda y, x: img[y * cell + cell // 2, x * cell + cell // 2]  # noqa: E731
    cells = eng.state.cells[0]
    full = np.argwhere(cells[4:] != 0) + (4, 0)
    empty = np.argwhere(cells[4:] == 0) + (4, 0)
    assert len(full) and len(empty)
    assert not np.array_equal(centre(*full[0]), centre(*empty[0]))
    # the active piece at spawn shows in the hidden rows
    s = eng.state
    t, r, y, x = int(s.piece[0]), int(s.rot[0]), int(s.y[0]), int(s.x[0])
    py, px = piece_cells(t, r, y, x)[0]
    assert not np.array_equal(centre(py, px), centre(0, 0))


def test_render_rgb_after_set_board():
    # SPEC: "A cell is empty (0) or holds the colour type + 1"; render_rgb must draw any
    # board written with set_board (which fills cells with the colour 8).
    eng = engine(action_mode="drop")
    set_board(eng, 0, "#.........", piece="T", hold="-", queue="IJLSZT")
    img = eng.render_rgb(0)
    cell = img.shape[0] // H
    assert not np.array_equal(img[23 * cell + cell // 2, cell // 2], img[23 * cell + cell // 2, cell + cell // 2])


def test_render_text_of_played_board():
    eng = engine(action_mode="drop")
    _play_a_few(eng)
    lines = eng.render_text(0).splitlines()
    board_lines = lines[:4] + lines[5:H + 1]
    cells = eng.state.cells[0]
    for y in range(H):
        for x in range(W):
            if cells[y, x]:
                assert board_lines[y][x] == "#"
            elif board_lines[y][x] != "@":
                assert board_lines[y][x] == "."
    assert sum(line.count("@") for line in board_lines) == 4


# -- vecsim.testing on every action mode (the registered default, drop, runs with every game) --
@pytest.mark.slow
@pytest.mark.parametrize("kwargs", [{"action_mode": "primitive"}, {"action_mode": "reach"},
                                    {"action_mode": "drop", "preset": "classic", "invalid_action": "flag"}],
                         ids=["primitive", "reach", "drop-classic-flag"])
def test_checker_passes_every_action_mode(kwargs):
    from vecsim.testing import check_engine, check_vector_env

    check_vector_env("vecsim/Tetris-v0", num_envs=3, seed=11, steps=120, **kwargs)
    check_engine("vecsim/Tetris-v0", num_envs=5, seed=13, steps=120, **kwargs)


@pytest.mark.parametrize("fresh", [False, True], ids=["copied", "kernel-written"])
@pytest.mark.parametrize("kwargs", [{}, {"preset": "classic"}, {"queue": 3, "hold": False}], ids=["guideline", "classic", "q3-nohold"])
def test_flatten_observation_of_the_single_env_equals_the_flat_vector_obs(kwargs, fresh, monkeypatch):
    """DESIGN: FlattenObservation on the single env and the flat vector observation agree,
    whether the flat batch is copied from the engine's buffer or written by the kernel into a
    new array (Engine.step_mode_fresh, which needs write_obs to fill whole rows)."""
    import gymnasium
    from gymnasium.wrappers import FlattenObservation

    n, seed = 3, 21
    if fresh:
        monkeypatch.setattr(vecsim.gym.vector, "FRESH_MIN_ENVS", 1)
    vec = gymnasium.make_vec("vecsim/Tetris-v0", n, vectorization_mode="vector_entry_point", flatten_obs=True, **kwargs)
    assert vec.unwrapped._fresh == fresh
    dict_vec = gymnasium.make_vec("vecsim/Tetris-v0", n, vectorization_mode="vector_entry_point", **kwargs)
    singles = [FlattenObservation(gymnasium.make("vecsim/Tetris-v0", **kwargs)) for _ in range(n)]
    obs, info = vec.reset(seed=seed)
    dict_obs, _ = dict_vec.reset(seed=seed)
    assert vec.single_observation_space == singles[0].observation_space
    assert obs.dtype == np.uint8 and obs.shape == (n, singles[0].observation_space.shape[0])
    rng = np.random.default_rng(0)
    pending = [False] * n
    for i, env in enumerate(singles):
        single_obs, _ = env.reset(seed=seed + i)
        np.testing.assert_array_equal(obs[i], single_obs)
    ended = 0
    for t in range(60):
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in info["action_mask"]])
        obs, _, term, trunc, info = vec.step(actions)
        dict_obs, *_ = dict_vec.step(actions)
        for i, env in enumerate(singles):
            if pending[i]:  # NEXT_STEP: the step after the end resets the env, ignoring the action
                single_obs, _ = env.reset()
                pending[i] = False
            else:
                single_obs, _, pending[i], _, _ = env.step(actions[i])
            np.testing.assert_array_equal(obs[i], single_obs, err_msg=f"step {t}, env {i}")
        # the Dict observation holds the same values, key by key in flatten order
        flat_again = np.concatenate([dict_obs[k].reshape(n, -1) for k in dict_vec.single_observation_space.spaces],
                                    axis=1)
        np.testing.assert_array_equal(flat_again, obs)
        ended += int(term.sum())
    assert ended > 0, "no episode ended: the reset path was not compared"
