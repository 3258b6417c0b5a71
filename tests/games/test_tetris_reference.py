"""Tetris: the plain-Python reference checked against SPEC facts, then against the kernels.

Part (a) checks ``tests/tetris_reference.py`` against facts stated in
``games/tetris/SPEC.md`` (and published SRS tables), worked out by hand here.
Part (b) is the differential test: the Numba engine and one reference per env are stepped
with the same actions and every output is compared, for each variant in ``VARIANTS``.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from vecsim.core.rng import randint, seed_env

from tetris_reference import (CELLS, FEATURE_NAMES, GUIDELINE_POINTS, H, NONE, TYPE_NAMES, W,
                              ReferenceTetris, decode_obs, min_col, width)

I, O, T, S, Z, J, L = range(7)
NOOP, LEFT, RIGHT, SOFT, HARD, CW, CCW, HOLD = range(8)


def drop_action(r, x, h=0):
    return h * 40 + r * 10 + x


def reach_action(r, y, x, h=0):
    return h * 4 * H * W + (r * H + y) * W + x


# ============================================================================ (a) unit checks

# Published SRS shapes (Tetris Guideline), drawn in their boxes; states 0, R, 2, L.
SRS_PICTURES = {
    I: ["....|####|....|....", "..#.|..#.|..#.|..#.", "....|....|####|....", ".#..|.#..|.#..|.#.."],
    O: [".##.|.##.|....|...."] * 4,
    T: [".#.|###|...", ".#.|.##|.#.", "...|###|.#.", ".#.|##.|.#."],
    S: [".##|##.|...", ".#.|.##|..#", "...|.##|##.", "#..|##.|.#."],
    Z: ["##.|.##|...", "..#|.##|.#.", "...|##.|.##", ".#.|##.|#.."],
    J: ["#..|###|...", ".##|.#.|.#.", "...|###|..#", ".#.|.#.|##."],
    L: ["..#|###|...", ".#.|.#.|.##", "...|###|#..", "##.|.#.|.#."],
}


def picture_cells(picture):
    return sorted((row, col) for row, line in enumerate(picture.split("|"))
                  for col, ch in enumerate(line) if ch == "#")


@pytest.mark.parametrize("t", range(7), ids=list(TYPE_NAMES))
def test_srs_cells_by_rotation(t):
    for r in range(4):
        assert sorted(CELLS[t][r]) == picture_cells(SRS_PICTURES[t][r]), (TYPE_NAMES[t], r)


def test_spawn_positions():
    ref = ReferenceTetris()
    ref.reset(0)
    expected = {I: [(3, 3), (3, 4), (3, 5), (3, 6)], O: [(2, 4), (2, 5), (3, 4), (3, 5)]}
    for t in range(7):
        ref.piece = t
        assert ref.spawn()
        cells = sorted(ref.cells_at(t, ref.rot, ref.box_row, ref.box_col))
        if t in expected:
            assert cells == expected[t]
        else:
            assert {r for r, _ in cells} == {2, 3} and {c for _, c in cells} == {3, 4, 5}
        y, x = ref.anchor()
        assert (y, x) == (min(r for r, _ in cells), min(c for _, c in cells))
        obs = decode_obs(ref.obs())
        assert obs["active"].tolist() == [t, 0, y, x]


def test_wall_kick_moves_box_right():
    ref = ReferenceTetris(action_mode="primitive", gravity=0)
    ref.reset(0)
    # T in state R with its cells in columns 0-1 (box column -1); rotating to 0 needs (+1, 0).
    ref.piece, ref.rot, ref.box_row, ref.box_col = T, 1, 10, -1
    assert not ref.blocked(T, 1, 10, -1)
    ref.step(CCW)
    assert (ref.rot, ref.box_row, ref.box_col) == (0, 10, 0)


def test_kick_dy_is_up():
    """SRS offsets have y up: (-1, +1) moves the box one column left and one row up."""
    ref = ReferenceTetris(action_mode="primitive", gravity=0)
    ref.reset(0)
    ref.board[23, 4] = ref.board[23, 5] = 8
    ref.piece, ref.rot, ref.box_row, ref.box_col = T, 0, 21, 4
    assert not ref.blocked(T, 0, 21, 4)
    ref.step(CW)  # (0,0) and (-1,0) are blocked by row 23; (-1,+1) fits
    assert (ref.rot, ref.box_row, ref.box_col) == (1, 20, 3)


def test_i_floor_kick():
    ref = ReferenceTetris(action_mode="primitive", gravity=0)
    ref.reset(0)
    ref.piece, ref.rot, ref.box_row, ref.box_col = I, 0, 22, 3  # lying on the floor, row 23
    ref.step(CW)  # (0,0) (-2,0) (+1,0) (-2,-1) stick out of the floor; (+1,+2) fits
    assert (ref.rot, ref.box_row, ref.box_col) == (1, 20, 4)
    assert sorted(ref.cells_at(I, 1, 20, 4)) == [(20, 6), (21, 6), (22, 6), (23, 6)]


# SRS as published by its offset tables (x right, y up): the kick of a -> b is
# offset[a][k] - offset[b][k], up to one translation per transition for I (its box turns about
# a different centre than the offset tables' true rotation); none for J, L, S, T, Z.
SRS_OFFSETS_JLSTZ = [[(0, 0)] * 5, [(0, 0), (1, 0), (1, -1), (0, 2), (1, 2)],
                     [(0, 0)] * 5, [(0, 0), (-1, 0), (-1, -1), (0, 2), (-1, 2)]]
SRS_OFFSETS_I = [[(0, 0), (-1, 0), (2, 0), (-1, 0), (2, 0)], [(-1, 0), (0, 0), (0, 0), (0, 1), (0, -2)],
                 [(-1, 1), (1, 1), (-2, 1), (1, 0), (-2, 0)], [(0, 1), (0, 1), (0, 1), (0, -1), (0, 2)]]


@pytest.mark.parametrize("kind", ["JLSTZ", "I"])
def test_kick_tables_follow_srs_offsets(kind):
    from tetris_reference import KICKS_I, KICKS_JLSTZ

    kicks, offsets = (KICKS_I, SRS_OFFSETS_I) if kind == "I" else (KICKS_JLSTZ, SRS_OFFSETS_JLSTZ)
    assert len(kicks) == 8
    for (a, b), tests in kicks.items():
        assert (b - a) % 4 in (1, 3) and len(tests) == 5 and tests[0] == (0, 0)
        derived = [(oa[0] - ob[0], oa[1] - ob[1]) for oa, ob in zip(offsets[a], offsets[b])]
        shifts = {(k[0] - d[0], k[1] - d[1]) for k, d in zip(tests, derived)}
        assert len(shifts) == 1, (kind, a, b, tests, derived)
        if kind == "JLSTZ":
            assert shifts == {(0, 0)}
        assert kicks[(b, a)] == [(-dx, -dy) for dx, dy in tests]


def test_rotation_none_has_no_kicks():
    ref = ReferenceTetris(action_mode="primitive", gravity=0, rotation="none")
    ref.reset(0)
    ref.piece, ref.rot, ref.box_row, ref.box_col = T, 1, 10, -1
    ref.step(CCW)
    assert (ref.rot, ref.box_row, ref.box_col) == (1, 10, -1)
    ref.box_col = 3
    ref.step(CCW)
    assert (ref.rot, ref.box_row, ref.box_col) == (0, 10, 3)


def test_o_rotation_changes_state_only():
    ref = ReferenceTetris(action_mode="primitive", gravity=0)
    ref.reset(0)
    ref.piece, ref.rot, ref.box_row, ref.box_col = O, 0, 10, 3
    ref.step(CW)
    assert (ref.rot, ref.box_row, ref.box_col) == (1, 10, 3)
    assert decode_obs(ref.obs())["active"].tolist() == [O, 1, 10, 4]


def test_seven_bag_blocks_are_permutations():
    for seed in range(5):
        ref = ReferenceTetris(randomizer="bag")
        ref.reset(seed)
        for _ in range(693):
            ref.draw()
        draws = ref.draws
        assert len(draws) == 700
        for k in range(0, 700, 7):
            assert sorted(draws[k:k + 7]) == list(range(7)), (seed, k)
    # current piece then queue[0..5] are the first seven draws: one whole bag
    ref = ReferenceTetris()
    ref.reset(11)
    assert sorted([ref.piece] + ref.queue) == list(range(7))


def test_bag_uses_the_stated_shuffle():
    ref = ReferenceTetris()
    ref.reset(5)
    rng = np.zeros((1, 2), np.uint64)
    seed_env(rng, 0, 5)
    bag = list(range(7))
    for k in range(6, 0, -1):
        j = int(randint(rng, 0, k + 1))
        bag[k], bag[j] = bag[j], bag[k]
    assert [ref.piece] + ref.queue == bag


def test_uniform_draws_are_randint_7():
    ref = ReferenceTetris(randomizer="uniform")
    ref.reset(9)
    rng = np.zeros((1, 2), np.uint64)
    seed_env(rng, 0, 9)
    assert [ref.piece] + ref.queue == [int(randint(rng, 0, 7)) for _ in range(7)]


def test_reset_state():
    ref = ReferenceTetris()
    obs = decode_obs(ref.reset(3))
    assert not obs["board"].any()
    # the features of the empty board: each empty column meets the floor once
    assert obs["features"].tolist() == [0] * 13 + [10] + [0] * 3
    assert FEATURE_NAMES[13] == "col_transitions"
    assert obs["hold"].tolist() == [NONE]
    assert obs["queue"].tolist() == ref.queue[:5]
    assert len(ref.queue) == 6 and ref.can_hold


def test_observation_layout_matches_gymnasium_flatten():
    from gymnasium import spaces

    for hold, queue in [(True, 5), (False, 0), (False, 3), (True, 6)]:
        ref = ReferenceTetris(hold=hold, queue=queue)
        ref.reset(1)
        d = decode_obs(ref.obs(), hold=hold, queue=queue)
        parts = {"active": spaces.Box(0, 255, (4,), np.uint8),
                 "board": spaces.Box(0, 255, (H, W), np.uint8),
                 "features": spaces.Box(0, 255, (17,), np.uint8)}
        if hold:
            parts["hold"] = spaces.Box(0, 255, (1,), np.uint8)
        if queue:
            parts["queue"] = spaces.Box(0, 255, (queue,), np.uint8)
        space = spaces.Dict(parts)
        flat = spaces.flatten(space, {k: d[k] for k in parts})
        np.testing.assert_array_equal(flat, ref.obs())
        assert flat.dtype == np.uint8


def test_single_line_clear_drop():
    ref = ReferenceTetris(action_mode="drop")
    ref.reset(0)
    ref.set_board_from_ascii(["....######"])
    ref.piece = I
    assert ref.spawn()
    reward, terminated, events = ref.step(drop_action(0, 0))
    assert reward == 100.0 and not terminated
    assert events == {"lines": 1, "pieces": 1, "holds": 0, "invalid_action": 0}
    assert not ref.board.any()
    f = dict(zip(FEATURE_NAMES, ref.features))
    assert f["landing_height"] == 0 and f["eroded_cells"] == 4
    # the features of the empty board after the clear (as after a reset)
    assert f["col_transitions"] == 10 and f["row_transitions"] == 0
    assert sum(ref.features[:10]) == 0 and f["holes"] == 0 and f["cumulative_wells"] == 0


@pytest.mark.parametrize("scoring, expected", [("guideline", GUIDELINE_POINTS), ("lines", [0, 1, 2, 3, 4])])
def test_multi_line_clear_scoring(scoring, expected):
    for lines in range(1, 5):
        ref = ReferenceTetris(action_mode="drop", scoring=scoring)
        ref.reset(0)
        rows = ["#########."] * lines
        ref.set_board_from_ascii(["###.......", "###......."] + rows)
        ref.piece = I
        assert ref.spawn()
        reward, terminated, events = ref.step(drop_action(1, 9))  # vertical I in column 9
        assert events["lines"] == lines and reward == expected[lines]
        f = dict(zip(FEATURE_NAMES, ref.features))
        assert f["eroded_cells"] == lines * lines
        assert f["landing_height"] == 0
        # the two rows of 3 cells end at the bottom, with what is left of the I above them
        assert ref.board[H - 2:, :3].all() and not ref.board[:H - 2, :3].any()
        assert not ref.board[:, 3:9].any() and np.count_nonzero(ref.board[:, 9]) == 4 - lines


def test_features_by_hand():
    ref = ReferenceTetris()
    ref.reset(0)
    ref.set_board_from_ascii(["##........",
                              "#.#.#.....",
                              "###.######"])
    ref.refresh_features(landing=5, eroded=7)
    f = dict(zip(FEATURE_NAMES, ref.features))
    assert ref.features[:10] == [3, 3, 2, 0, 2, 1, 1, 1, 1, 1]
    assert f["holes"] == 1
    assert f["bumpiness"] == 6
    assert f["row_transitions"] == 10
    assert f["col_transitions"] == 12
    assert f["cumulative_wells"] == 1 + 3  # column 1: one well cell; column 3: a well of 2
    assert (f["landing_height"], f["eroded_cells"]) == (5, 7)


def test_features_saturate():
    ref = ReferenceTetris()
    ref.reset(0)
    ref.set_board_from_ascii(["#.#.#.#.#."] * H)  # five full-height wells of 24: 5 * 300
    ref.refresh_features()
    f = dict(zip(FEATURE_NAMES, ref.features))
    assert f["cumulative_wells"] == 255
    assert f["row_transitions"] == 240 and f["col_transitions"] == 5 and f["bumpiness"] == 9 * 24
    assert all(v <= 255 for v in ref.obs())


def test_spawn_failure_terminates():
    ref = ReferenceTetris(action_mode="drop")
    ref.reset(0)
    ref.board[3, 4] = 8  # every spawn covers (3, 4)
    ref.piece = T
    assert ref.mask()[drop_action(0, 0)]
    reward, terminated, events = ref.step(drop_action(0, 0))
    assert terminated and reward == 0.0 and events["pieces"] == 1


def test_spawn_failure_after_clear_still_scores():
    ref = ReferenceTetris(action_mode="drop")
    ref.reset(0)
    ref.set_board_from_ascii(["....######"])
    ref.board[2, 4] = ref.board[3, 4] = 8  # (3, 4) is still filled after the row moves down one
    ref.piece = I
    ref.spawn()  # the current piece's own pose does not matter to a drop action
    mask = ref.mask()
    assert mask[drop_action(0, 0)]
    reward, terminated, events = ref.step(drop_action(0, 0))
    assert events["lines"] == 1 and reward == 100.0 and terminated


def test_hold():
    ref = ReferenceTetris(action_mode="primitive")
    ref.reset(4)
    first, q = ref.piece, list(ref.queue)
    assert ref.mask()[HOLD]
    reward, terminated, events = ref.step(HOLD)
    assert events["holds"] == 1 and not terminated
    assert ref.held == first and ref.piece == q[0] and ref.queue[:5] == q[1:]
    assert (ref.rot, ref.box_row, ref.box_col) == (0, 2, 3)  # at spawn, gravity skipped
    assert not ref.mask()[HOLD]
    before = (ref.piece, ref.box_row)
    _, _, events = ref.step(HOLD)  # impossible: a noop with gravity
    assert events["holds"] == 0 and ref.piece == before[0] and ref.box_row == before[1] + 1
    ref.step(HARD)
    assert ref.mask()[HOLD]
    current = ref.piece
    ref.step(HOLD)  # swap
    assert ref.piece == first and ref.held == current


def test_hold_in_drop_mode_places_the_held_piece():
    ref = ReferenceTetris(action_mode="drop")
    ref.reset(2)
    first, q0 = ref.piece, ref.queue[0]
    mask = ref.mask()
    assert mask.shape == (80,)
    a = drop_action(0, 0, h=1)
    assert mask[a]
    _, _, events = ref.step(a)
    assert events == {"lines": 0, "pieces": 1, "holds": 1, "invalid_action": 0}
    assert ref.held == first and ref.board[H - 2:].sum() > 0
    assert (ref.board == q0 + 1).sum() == 4  # the queue's first piece was placed
    assert ref.can_hold and ref.mask()[40:].any()  # can hold again after the lock


def test_drop_hold_half_illegal_when_the_held_piece_cannot_spawn():
    ref = ReferenceTetris(action_mode="drop")
    ref.reset(0)
    ref.piece, ref.held = T, NONE
    ref.queue[0] = O
    ref.board[2, 5] = 8  # blocks O's spawn cells (rows 2-3, columns 4-5), not T at x = 0
    mask = ref.mask()
    assert mask[drop_action(0, 0)] and not mask[40:].any()
    ref.held = I  # I spawns in row 3 only: the hold half is legal again
    mask = ref.mask()
    assert mask[drop_action(0, 0, h=1)] and not mask[drop_action(1, 5, h=1)]  # vertical I hits (2, 5)


def test_primitive_gravity_locks_after_a_rest_step():
    for gravity, steps in [(1, 21), (2, 11)]:
        ref = ReferenceTetris(action_mode="primitive", gravity=gravity)
        ref.reset(0)
        ref.piece = I
        ref.spawn()
        n = 0
        while True:
            n += 1
            _, _, events = ref.step(NOOP)
            if events["pieces"]:
                break
        # I starts in row 3: 20 rows to fall, then one more step at rest before it locks
        assert n == steps, (gravity, n)
        assert ref.board[H - 1, 3:7].all()


def test_gravity_zero_never_locks_by_itself():
    ref = ReferenceTetris(action_mode="primitive", gravity=0)
    ref.reset(0)
    for _ in range(50):
        _, _, events = ref.step(NOOP)
        assert events["pieces"] == 0
    assert (ref.box_row, ref.box_col) == (2, 3)
    for _ in range(30):
        _, _, events = ref.step(SOFT)
        if events["pieces"]:
            break
    assert events["pieces"] == 1


def test_resting_piece_gets_one_more_input():
    # an I lying on the floor next to a one-row overhang slides under it, then locks there
    ref = ReferenceTetris(action_mode="primitive", gravity=1)
    ref.reset(0)
    ref.set_board_from_ascii(["###.......", ".........."])
    ref.piece, ref.rot, ref.box_row, ref.box_col = I, 0, 22, 3  # row 23, columns 3-6
    _, _, events = ref.step(LEFT)  # a tuck: moves to columns 2-5, still resting: locks
    assert events["pieces"] == 1
    assert ref.board[23, 2:6].tolist() == [I + 1] * 4 and ref.board[23, 6] == 0
    # an O resting on a one-column ledge slides off it: gravity moves it, so it does not lock
    ref = ReferenceTetris(action_mode="primitive", gravity=1)
    ref.reset(0)
    ref.set_board_from_ascii(["#........."])
    ref.piece, ref.rot, ref.box_row, ref.box_col = O, 0, 21, -1  # rows 21-22, columns 0-1
    assert ref.blocked(O, 0, 22, -1)
    _, _, events = ref.step(RIGHT)
    assert events["pieces"] == 0 and (ref.box_row, ref.box_col) == (22, 0)
    _, _, events = ref.step(NOOP)  # at rest, could not fall: locks
    assert events["pieces"] == 1 and ref.board[22:, 1:3].tolist() == [[O + 1] * 2] * 2


def test_reach_costs_on_empty_board():
    ref = ReferenceTetris(action_mode="reach")
    ref.reset(0)
    ref.piece, ref.held = O, NONE
    ref.queue[0] = I
    ref.spawn()
    costs = ref.costs()
    assert costs.dtype == np.int16 and costs.shape == (1920,)
    # O at its spawn columns 4-5: a hard drop (cost 1) locks at the floor, anchor (22, 4)
    assert costs[reach_action(0, 22, 4)] == 1
    # one slide left then a hard drop
    assert costs[reach_action(0, 22, 3)] == 2
    # O in state 1 (same cells): a rotation then a hard drop
    assert costs[reach_action(1, 22, 4)] == 2
    # the hold half: I (queue[0]) after the hold, +1 for the hold input
    assert costs[reach_action(0, 23, 3, h=1)] == 2
    # no pose in the air is a lock pose on an empty board with gravity 1
    assert not (costs[reach_action(0, 0, 0):reach_action(0, 21, 0)] >= 0).any()
    assert (ref.mask() == (costs >= 0)).all()


def test_reach_o_on_empty_board_locks_only_on_the_floor():
    ref = ReferenceTetris(action_mode="reach", hold=False)
    ref.reset(0)
    ref.piece = O
    ref.spawn()
    costs = ref.costs()
    assert costs.shape == (960,)
    # nothing but hard drops: every floor position of O in 4 states, x 0..8
    legal = np.flatnonzero(costs >= 0)
    assert len(legal) == 4 * 9
    for a in legal:
        r, y, x = a // (H * W), (a // W) % H, a % W
        assert y == 22


def test_invalid_action_flag_and_raise():
    ref = ReferenceTetris(action_mode="drop", invalid_action="flag")
    ref.reset(0)
    ref.piece = I
    ref.spawn()
    bad = drop_action(0, 8)  # I is 4 wide: x + 4 > 10
    assert not ref.mask()[bad]
    before = (ref.board.copy(), ref.piece, list(ref.queue), ref.obs())
    reward, terminated, events = ref.step(bad)
    assert (reward, terminated) == (0.0, False) and events["invalid_action"] == 1
    np.testing.assert_array_equal(ref.obs(), before[3])
    ref2 = ReferenceTetris(action_mode="drop", invalid_action="raise")
    ref2.reset(0)
    ref2.piece = I
    ref2.spawn()
    with pytest.raises(ValueError):
        ref2.step(bad)
    with pytest.raises(ValueError):
        ref2.step(80)


def test_presets():
    ref = ReferenceTetris(preset="classic")
    assert (ref.rotation, ref.randomizer, ref.hold_on, ref.queue_len, ref.scoring) == (
        "none", "uniform", False, 0, "lines")
    assert ref.n_actions == 40 and ref.obs_size == 261
    ref = ReferenceTetris(preset="classic", queue=2, action_mode="reach")
    assert ref.queue_len == 2 and ref.n_actions == 960
    ref = ReferenceTetris(preset="guideline")
    assert (ref.rotation, ref.randomizer, ref.hold_on, ref.queue_len, ref.scoring) == (
        "srs", "bag", True, 5, "guideline")


def test_drop_mask_geometry():
    ref = ReferenceTetris(action_mode="drop", hold=False)
    ref.reset(0)
    for t in range(7):
        ref.piece = t
        ref.spawn()
        mask = ref.mask()
        for r in range(4):
            for x in range(W):
                assert mask[drop_action(r, x)] == (x + width(t, r) <= W), (t, r, x)


# ============================================================================ (b) differential

GAME_ID = "vecsim/Tetris-v0"
N_ENVS = 4

# (name, kwargs, steps); the extra variants run as `slow` (they still run in CI)
_BASE = [
    ("default", {}),
    ("classic", {"preset": "classic"}),
    ("none-uniform-nohold-q0", {"rotation": "none", "randomizer": "uniform", "hold": False, "queue": 0}),
    ("none-uniform-nohold-q3", {"rotation": "none", "randomizer": "uniform", "hold": False, "queue": 3}),
    ("lines", {"scoring": "lines"}),
]
VARIANTS = []
for _mode, _steps in [("primitive", 800), ("drop", 150), ("reach", 50)]:
    for _name, _kw in _BASE:
        VARIANTS.append((f"{_mode}-{_name}", dict(_kw, action_mode=_mode), _steps))
VARIANTS += [
    ("primitive-gravity0", {"action_mode": "primitive", "gravity": 0}, 800),
    ("primitive-gravity2", {"action_mode": "primitive", "gravity": 2}, 800),
    ("primitive-flag", {"action_mode": "primitive", "invalid_action": "flag"}, 300),
    ("drop-flag", {"action_mode": "drop", "invalid_action": "flag"}, 150),
    ("reach-flag", {"action_mode": "reach", "invalid_action": "flag"}, 50),
]
SLOW_VARIANTS = [
    ("classic-drop-hold", {"preset": "classic", "hold": True, "queue": 6}, 200),
    ("reach-gravity0", {"action_mode": "reach", "gravity": 0}, 50),
    ("reach-gravity2-uniform-q6",
     {"action_mode": "reach", "gravity": 2, "randomizer": "uniform", "queue": 6}, 50),
    ("primitive-srs-classic-q1",
     {"action_mode": "primitive", "preset": "classic", "rotation": "srs", "queue": 1}, 800),
]
ALL_VARIANTS = ([pytest.param(*v, id=v[0]) for v in VARIANTS]
                + [pytest.param(*v, marks=pytest.mark.slow, id=v[0]) for v in SLOW_VARIANTS])

# primitive input weights: noop, left, right, soft, hard, cw, ccw, hold (sent even when masked)
PRIMITIVE_P = np.array([0.13, 0.16, 0.16, 0.16, 0.04, 0.13, 0.13, 0.09])


def kernel_available() -> bool:
    """Whether the game is registered (a registered game that fails to load fails the tests)."""
    import vecsim

    return GAME_ID in vecsim.game_ids()


def lowest_drop(ref, legal, gen):
    """Among legal drop-style actions (h, r, x), one whose piece lands lowest."""
    depth = []
    for a in legal:
        h, rest = divmod(int(a), 40)
        r, x = divmod(rest, 10)
        t = ref.piece if h == 0 else ref.piece_after_hold()
        br = ref.drop_row(t, r, 2, x - min_col(t, r))
        depth.append(br + max(row for row, _ in CELLS[t][r]))
    best = np.flatnonzero(np.array(depth) == max(depth))
    return int(legal[gen.choice(best)])


class Policy:
    """Random actions for one reference env, partly steered to low placements.

    ``greedy_p``: chance that a placement (drop/reach) or, in primitive mode, a whole piece
    is steered to the lowest drop placement (so lines get cleared). ``illegal_p``: chance of
    an action outside the mask (drop/reach; for ``invalid_action="flag"``).
    """

    def __init__(self, gen, greedy_p, illegal_p):
        self.gen, self.greedy_p, self.illegal_p = gen, greedy_p, illegal_p
        self.target = None  # primitive: (r, anchor x) the current piece is steered to
        self.fresh = True   # primitive: a new piece since the last choice

    def observe(self, events):
        if events["pieces"] or events["holds"]:
            self.fresh = True

    def reset(self):
        self.fresh = True

    def __call__(self, ref):
        gen = self.gen
        if ref.action_mode == "primitive":
            return self._primitive(ref)
        mask = ref.mask()
        legal = np.flatnonzero(mask)
        illegal = np.flatnonzero(~mask)
        if illegal.size and gen.random() < self.illegal_p:
            return int(gen.choice(illegal))
        if gen.random() < self.greedy_p:
            if ref.action_mode == "reach":
                depth = np.array([(a % (4 * H * W)) // W % H for a in legal])
                return int(legal[gen.choice(np.flatnonzero(depth == depth.max()))])
            return lowest_drop(ref, legal, gen)
        return int(gen.choice(legal))

    def _primitive(self, ref):
        gen = self.gen
        if self.fresh:
            self.fresh = False
            self.target = None
            if gen.random() < self.greedy_p:
                t = ref.piece
                legal = [r * 10 + x for r in range(4) for x in range(W)
                         if x + width(t, r) <= W and not ref.blocked(t, r, 2, x - min_col(t, r))]
                if legal:
                    a = lowest_drop(ref, np.array(legal), gen)
                    self.target = divmod(a, 10)
        if ref.gravity == 0 and ref.blocked(ref.piece, ref.rot, ref.box_row + 1, ref.box_col):
            # resting without gravity: wiggle and spin against the stack (floor and wall kicks)
            if gen.random() < 0.85:
                return int(gen.choice([LEFT, RIGHT, CW, CCW, CW, CCW]))
        if self.target is None or gen.random() < 0.2:
            return int(gen.choice(8, p=PRIMITIVE_P))
        r, x = self.target
        if ref.rot != r:
            return CCW if (r - ref.rot) % 4 == 3 else CW
        ax = ref.anchor()[1]
        if ax < x:
            return RIGHT
        if ax > x:
            return LEFT
        return HARD if gen.random() < 0.5 else SOFT


def describe_obs_diff(got, want, ref):
    parts_got = decode_obs(got, ref.hold_on, ref.queue_len)
    parts_want = decode_obs(want, ref.hold_on, ref.queue_len)
    lines = []
    for key in parts_want:
        g, w = parts_got[key], parts_want[key]
        if not np.array_equal(g, w):
            if key == "board":
                rows = sorted(set(np.nonzero(g != w)[0].tolist()))
                lines.append(f"  board differs in rows {rows}")
                for row in rows[:6]:
                    lines.append(f"    row {row}: kernel {''.join('#' if v else '.' for v in g[row])}"
                                 f"  ref {''.join('#' if v else '.' for v in w[row])}")
            elif key == "features":
                diffs = [f"{FEATURE_NAMES[k]}: kernel {int(g[k])} ref {int(w[k])}"
                         for k in range(17) if g[k] != w[k]]
                lines.append("  features: " + "; ".join(diffs))
            else:
                lines.append(f"  {key}: kernel {g.tolist()} ref {w.tolist()}")
    return "\n".join(lines)


def action_text(ref, a):
    if a is None:
        return "(reset)"
    if ref.action_mode == "primitive":
        return f"{a} ({['noop', 'left', 'right', 'soft', 'hard', 'cw', 'ccw', 'hold'][a]})"
    if ref.action_mode == "drop":
        h, rest = divmod(a, 40)
        return f"{a} (h={h} r={rest // 10} x={rest % 10})"
    h, rest = divmod(a, 4 * H * W)
    return f"{a} (h={h} r={rest // (H * W)} y={rest // W % H} x={rest % W})"


def compare_env(eng, ref, i, expected=None, strict_terminal=True):
    """Compare env ``i`` of ``eng`` with ``ref``; return a list of mismatch descriptions."""
    problems = []
    want_obs = ref.obs()
    got_obs = np.asarray(eng.obs[i])
    if got_obs.shape != want_obs.shape:
        problems.append(f"obs shape: kernel {got_obs.shape} ref {want_obs.shape}")
    elif not np.array_equal(got_obs, want_obs):
        problems.append("obs:\n" + describe_obs_diff(got_obs, want_obs, ref))
    terminal = False
    if expected is not None:
        reward, terminal, events = expected
        if float(eng.rewards[i]) != reward:
            problems.append(f"reward: kernel {float(eng.rewards[i])} ref {reward}")
        if bool(eng.terminals[i]) != terminal:
            problems.append(f"terminated: kernel {bool(eng.terminals[i])} ref {terminal}")
        for k, name in enumerate(eng.event_names):
            if name in events and int(eng.events[i, k]) != events[name]:
                problems.append(f"event {name}: kernel {int(eng.events[i, k])} ref {events[name]}")
        missing = set(events) - set(eng.event_names)
        if missing:
            problems.append(f"kernel lacks events {sorted(missing)}")
    if terminal and not strict_terminal:
        return problems  # masks and costs of a state whose piece could not spawn
    want_mask = ref.mask()
    got_mask = np.asarray(eng.masks[i])
    if got_mask.shape != want_mask.shape:
        problems.append(f"mask shape: kernel {got_mask.shape} ref {want_mask.shape}")
    elif not np.array_equal(got_mask, want_mask):
        only_k = np.flatnonzero(got_mask & ~want_mask)[:8].tolist()
        only_r = np.flatnonzero(~got_mask & want_mask)[:8].tolist()
        problems.append(f"mask: legal only in kernel {[action_text(ref, a) for a in only_k]}, "
                        f"only in ref {[action_text(ref, a) for a in only_r]}")
    if ref.action_mode == "reach":
        want_cost = ref.costs()
        got_cost = np.asarray(eng.state.cost[i]).reshape(-1)
        if got_cost.shape != want_cost.shape:
            problems.append(f"cost shape: kernel {got_cost.shape} ref {want_cost.shape}")
        elif not np.array_equal(got_cost, want_cost):
            bad = np.flatnonzero(got_cost != want_cost)
            problems.append(f"cost differs at {bad.size} actions, e.g. " + "; ".join(
                f"{action_text(ref, a)}: kernel {int(got_cost[a])} ref {int(want_cost[a])}" for a in bad[:6]))
    return problems


def run_differential(name, kwargs, steps, n_envs=N_ENVS, seed=1000, strict_terminal=True):
    """Step kernel and reference side by side; return (mismatch report or None, stats).

    ``strict_terminal``: also compare masks and costs of terminal states.
    """
    import vecsim

    eng = vecsim.make(GAME_ID, num_envs=n_envs, max_episode_steps=None, **kwargs)
    try:
        return _run(eng, name, kwargs, steps, n_envs, seed, strict_terminal)
    finally:
        eng.close()


def _run(eng, name, kwargs, steps, n_envs, seed, strict_terminal):
    refs = [ReferenceTetris(**kwargs) for _ in range(n_envs)]
    gen = np.random.default_rng([seed, zlib.crc32(name.encode())])
    illegal_p = 0.15 if kwargs.get("invalid_action") == "flag" else 0.0
    # env 0 plays uniformly at random (short games, many game overs); the others mostly
    # place pieces low (long games, line clears)
    policies = [Policy(gen, 0.0 if i == 0 else 0.7, illegal_p) for i in range(n_envs)]
    eng.reset(seed=seed)
    ref_seeds = [seed + i for i in range(n_envs)]
    for i, ref in enumerate(refs):
        ref.reset(ref_seeds[i])
    stats = {"lines": 0, "pieces": 0, "holds": 0, "invalid_action": 0, "episodes": 0}
    history = [[] for _ in range(n_envs)]

    def fail(step, i, problems, action):
        ref = refs[i]
        recent = ", ".join(action_text(ref, a) for a in history[i][-8:])
        return (f"variant {name} {kwargs}: env {i} (seed {ref_seeds[i]}) at step {step} after action "
                f"{action_text(ref, action)}:\n" + "\n".join(problems) +
                f"\nrecent actions of env {i}: {recent}\nreference board after the step "
                f"(active piece in lower case):\n" + ref.board_text())

    for i, ref in enumerate(refs):
        problems = compare_env(eng, ref, i)
        if problems:
            return fail(0, i, problems, None), stats
    reset_seed = seed + 100
    for step in range(1, steps + 1):
        actions = np.array([policy(ref) for policy, ref in zip(policies, refs)], dtype=np.int64)
        expected = [ref.step(int(a)) for ref, a in zip(refs, actions)]
        for policy, e in zip(policies, expected):
            policy.observe(e[2])
        eng.step_no_reset(actions)
        for i, ref in enumerate(refs):
            history[i].append(int(actions[i]))
            for k in stats:
                if k != "episodes":
                    stats[k] += expected[i][2][k]
            problems = compare_env(eng, ref, i, expected[i], strict_terminal)
            if problems:
                return fail(step, i, problems, int(actions[i])), stats
        done = np.array([e[1] for e in expected], dtype=bool)
        if done.any():
            stats["episodes"] += int(done.sum())
            eng.reset_envs(done, seed=reset_seed)  # env i of the mask gets reset_seed + i
            for i in np.flatnonzero(done):
                i = int(i)
                ref_seeds[i] = reset_seed + i
                refs[i].reset(ref_seeds[i])
                policies[i].reset()
                history[i].append(None)
                problems = compare_env(eng, refs[i], i)
                if problems:
                    return fail(step, i, problems, None), stats
            reset_seed += 100
    return None, stats


needs_kernel = pytest.mark.skipif(not kernel_available(), reason=f"{GAME_ID} is not registered yet")


@needs_kernel
@pytest.mark.parametrize("name, kwargs, steps", ALL_VARIANTS)
def test_kernel_matches_reference(name, kwargs, steps):
    report, stats = run_differential(name, kwargs, steps)
    assert report is None, report
    # the run exercised what it should (guards against a policy that tests nothing)
    assert stats["lines"] > 0 and stats["episodes"] > 0, (name, stats)
    if ReferenceTetris(**kwargs).hold_on:
        assert stats["holds"] > 0, (name, stats)
    if kwargs.get("invalid_action") == "flag" and kwargs.get("action_mode") != "primitive":
        assert stats["invalid_action"] > 0, (name, stats)


@needs_kernel
@pytest.mark.parametrize("mode, bad", [("drop", drop_action(0, 9)), ("reach", reach_action(0, 0, 0))])
def test_kernel_raises_on_illegal_action(mode, bad):
    import vecsim

    eng = vecsim.make(GAME_ID, num_envs=2, max_episode_steps=None, action_mode=mode)
    eng.reset(seed=7)
    refs = [ReferenceTetris(action_mode=mode) for _ in range(2)]
    for i, ref in enumerate(refs):
        ref.reset(7 + i)
    assert not refs[1].mask()[bad]
    obs_before = eng.obs.copy()
    good = int(np.flatnonzero(refs[0].mask())[0])
    with pytest.raises(ValueError, match="env 1"):
        eng.step_no_reset(np.array([good, bad], dtype=np.int64))
    np.testing.assert_array_equal(eng.obs, obs_before)
    # nothing changed: the same actions as the reference keep matching
    policy = Policy(np.random.default_rng(3), 0.5, 0.0)
    for _ in range(20):
        actions = np.array([policy(ref) for ref in refs], dtype=np.int64)
        expected = [ref.step(int(a)) for ref, a in zip(refs, actions)]
        if any(e[1] for e in expected):
            break
        eng.step_no_reset(actions)
        for i, ref in enumerate(refs):
            assert compare_env(eng, ref, i, expected[i]) == []
    eng.close()


@needs_kernel
@pytest.mark.parametrize("kwargs, n", [
    ({"action_mode": "primitive"}, 8),
    ({"action_mode": "drop", "invalid_action": "flag"}, 80),
    ({"action_mode": "reach", "invalid_action": "flag", "hold": False}, 960),
])
def test_kernel_malformed_action_raises(kwargs, n):
    import vecsim

    eng = vecsim.make(GAME_ID, num_envs=2, max_episode_steps=None, **kwargs)
    eng.reset(seed=1)
    assert eng.masks.shape == (2, n)
    obs_before = eng.obs.copy()
    for bad in (n, -1):
        with pytest.raises(ValueError):
            eng.step_no_reset(np.array([0, bad], dtype=np.int64))
    np.testing.assert_array_equal(eng.obs, obs_before)
    eng.close()
