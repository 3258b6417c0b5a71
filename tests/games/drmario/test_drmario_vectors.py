"""Dr. Mario rules against every vector of the spec's ``vectors.json``."""

import json
from pathlib import Path

import numpy as np
import pytest
from numba import njit

from vecsim.games.drmario import rules, tables
from vecsim.games.drmario.replay import demo_start, frames
from vecsim.games.drmario.state import allocate

# A copy of the reference (shared/reference/drmario), kept with the tests.
REFERENCE = Path(__file__).resolve().parents[2] / "data" / "drmario"


def _load(name):
    return json.loads((REFERENCE / name).read_text())


@pytest.fixture(scope="module")
def vectors():
    return _load("vectors.json")


def test_lfsr_steps_and_cycle(vectors):
    v = vectors["lfsr"]
    s = int(v["seed"], 16)
    got = []
    for _ in range(20):
        s = rules.lfsr_step(s)
        got.append(f"{s:04X}")
    assert got == [x.upper() for x in v["states_after_step_1_to_20"]]
    cycle = tables.POWER_ON_CYCLE
    assert len(np.unique(cycle)) == v["cycle_length_from_seed"]
    assert tables.lfsr_next(int(cycle[-1])) == tables.POWER_ON_SEED


def test_reserve_from_power_on_seed(vectors):
    v = vectors["pill_reserve_from_power_on_seed"]
    s = allocate(1)
    after = rules.generate_reserve(s.reserve, 0, int(v["rng_at_initData_entry"], 16))
    assert s.reserve[0].tolist() == v["all_128_ids"]
    assert f"{after:04X}" == v["rng_after_reserve"].upper()
    assert s.reserve[0, 1:17].tolist() == v["first_16_controllable_pills_ids"]


@pytest.mark.parametrize("level", [0, 10, 20])
def test_virus_board(vectors, level):
    v = vectors["virus_boards"][f"level_{level}"]
    s = allocate(1)
    end = rules.start_level(s, 0, level, 1, int(v["rng_at_initData_entry"], 16), 0)
    assert bytes(s.board[0]).hex() == v["board_hex"]
    assert f"{end:04X}" == v["rng_after_all_viruses"].upper()
    assert s.virus_left[0] == v["virus_count"]
    # The placement order, one addVirus call at a time from the state after the reserve.
    board = np.full((1, 128), 0xFF, np.uint8)
    state, to_add, order = int(v["rng_at_first_addVirus"], 16), 4 * (min(level, 20) + 1), []
    while to_add:
        before = board.copy()
        state, placed = rules.add_virus(board, 0, state, level, to_add)
        to_add -= placed
        if placed:
            (pos,) = np.flatnonzero(board[0] != before[0])
            order.append([int(pos), int(board[0, pos] & 15)])
    assert order == v["placement_order_pos_color"]


def test_demo_tables(vectors):
    v = vectors["demo_table_reproduction"]
    capture = _load("nes_demo.json")
    s = allocate(1)
    rules.place_viruses(s.board, 0, int(v["demo_field_equals_level10_viruses_from"], 16), 10)
    assert bytes(s.board[0]).hex() == capture["initial_board"]
    demo = demo_start(s.board[0])
    assert rules.lfsr_step(tables.POWER_ON_CYCLE[v["4204_is_power_on_seed_plus_steps"] - 1]) == 0x4204
    spawns = vectors["nes_demo_capture_replay"]["spawns"]
    letters = "YRB"
    got = [letters[p // 3] + letters[p % 3] for p in demo.reserve[0, 1:1 + len(spawns)]]
    assert got == [sp["colors"] for sp in spawns]


def test_speed_counter_table(vectors):
    assert tables.SPEED_TABLE.tolist() == vectors["speed_counter_table_81"]


def _controllable(speed, speed_ups=0, fc=0):
    """One env with a fresh pill at the spawn on an empty bottle, one virus far off the
    pill's path so that the level never ends."""
    s = allocate(1)
    s.speed[0], s.speed_ups[0], s.fc[0] = speed, speed_ups, fc
    s.board[0, 127] = tables.VIRUS | 0
    s.virus_left[0] = 1
    s.falling[0], s.next_pill[0], s.reserve_index[0], s.pills_sent[0] = 0, 1, 2, 1
    s.next_action[0], s.status[0] = rules.FALLING, 0xFF
    s.x[0], s.y[0] = 0, 15
    return s


@pytest.mark.parametrize("speed,name", [(0, "low"), (1, "med"), (2, "hi")])
def test_gravity_periods(vectors, speed, name):
    expected = vectors["gravity_frames_per_row_by_speedups_0_to_49"][name]
    got = []
    for ups in range(50):
        s = _controllable(speed, ups)
        n = 0
        while s.y[0] == 15:
            frames(s, np.zeros(1, np.int64))
            n += 1
        got.append(n)
    assert got == expected


def _lock_to_control(speed, r, fc):
    """Frames from the lock of a pill in row ``r`` (no clear) to the next controllable pass."""
    s = _controllable(speed, fc=fc)
    s.y[0] = 15 - r
    if r < 15:
        s.board[0, (r + 1) * 8 + 0] = tables.VIRUS | 1  # a support under the anchor
        s.virus_left[0] = 2
    s.speed_counter[0] = 200  # gravity fires on the first pass
    frames(s, np.zeros(1, np.int64))
    assert s.lock_y[0] == 15 - r and s.next_action[0] == rules.PLACED
    n = 0
    while True:
        n += 1
        if s.next_action[0] == rules.FALLING:
            return n, s
        frames(s, np.zeros(1, np.int64))


def test_lock_to_control(vectors):
    table = vectors["lock_to_control_no_clear"]["by_r"]
    for r in range(16):
        want = table[str(r)]
        assert _lock_to_control(1, r, 0)[0] == want["med_hi"]
        assert _lock_to_control(2, r, 1)[0] == want["med_hi"]
        got = {}
        for fc in range(2):
            n, s = _lock_to_control(0, r, fc)
            # the lock pass sees fc + 1; the first throw pass is 8 after the idle checkDrop pass
            first_throw_fc = (fc + 1 + max(4, r + 1) + 8) & 1
            got[first_throw_fc] = n
        assert got[1] == want["low_if_fc_odd_at_first_throw_pass"]
        assert got[0] == want["low_if_fc_even_at_first_throw_pass"]


@njit
def _most_add_virus_calls(cycle, levels, cap):
    """Per level, the most ``addVirus`` calls any LFSR state of ``cycle`` needs to place the
    level's viruses on an empty bottle (``cap`` where one needed more)."""
    board = np.empty((1, 128), np.uint8)
    most = np.zeros(levels, np.int64)
    for level in range(levels):
        for k in range(cycle.shape[0]):
            board[0, :] = rules.EMPTY
            state, to_add, calls = cycle[k], 4 * (min(level, 20) + 1), 0
            while to_add > 0 and calls < cap:
                state, placed = rules.add_virus(board, 0, state, level, to_add)
                to_add -= placed
                calls += 1
            most[level] = max(most[level], calls)
    return most


def test_every_accepted_seed_and_level_places_its_viruses():
    """The level intro loops until every virus is placed, and how long depends on the LFSR:
    off the power-on cycle (seed 1 goes to 0 and stays there) it never ends. Every state on
    the cycle, at every level: the reserve's draws only move the state along the cycle, so
    these are all the states the intro can start from."""
    most = _most_add_virus_calls(tables.POWER_ON_CYCLE, 25, 10_000)
    assert most.max() < 10_000
    assert (most >= 4 * (np.minimum(np.arange(25), 20) + 1)).all()  # one call per virus at least
