"""The emulator capture of the attract demo (``nes_demo.json``) replayed frame by frame.

The capture holds no inputs (the demo reads its own ROM table), so the replay searches them:
every frame, every surviving candidate state is stepped with each of the 16 frame-mode
controller bytes and only the states whose pill x, y, rotation and whole bottle equal the
capture's after that frame survive (duplicates merged). The held buttons and the sideways
charge at the demo's start are unknown, so the search starts from all their combinations.
The model passes when some input sequence reproduces all 5,700 frames; the lock poses and
frames, spawn frames and colors, match frames and the event totals then come from the model
and are compared with the vectors.
"""

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from vecsim.games.drmario import BUTTONS, rules
from vecsim.games.drmario.replay import demo_start, frames, take

# A copy of the reference (shared/reference/drmario), kept with the tests.
REFERENCE = Path(__file__).resolve().parents[2] / "data" / "drmario"
FIRST_PASS = 129  # capture frame of the first main-loop pass


@pytest.fixture(scope="module")
def replay():
    capture = json.loads((REFERENCE / "nes_demo.json").read_text())
    vectors = json.loads((REFERENCE / "vectors.json").read_text())["nes_demo_capture_replay"]
    board = np.frombuffer(bytes.fromhex(capture["initial_board"]), np.uint8).copy()
    s = demo_start(board)
    n_buttons = len(BUTTONS)
    s = take(s, np.zeros(n_buttons * 16, np.int64))
    s.held[:] = np.repeat(BUTTONS, 16)
    s.hor_velocity[:] = np.tile(np.arange(16), n_buttons)
    scalar = [k for k, a in enumerate(s) if a.ndim == 1]
    weights = (np.random.default_rng(0).integers(1, 2**62, size=len(scalar)) * 2 + 1).astype(np.uint64)
    x, y, rot = 3, 15, 0
    events = {"locks": [], "spawns": [], "matches": Counter(), "widest": 0, "snapshots": {}}
    for record in capture["frames"]:
        f = record["f"]
        y, x, rot = record.get("pr", y), record.get("pc", x), record.get("po", rot)
        for index, old, new in record.get("bc", []):
            assert board[index] == old
            board[index] = new
        if f < FIRST_PASS:
            assert "bc" not in record and "pr" not in record
            continue
        before = s.frame_events[0].copy()
        n = len(s.x)
        s = take(s, np.repeat(np.arange(n), n_buttons))
        frames(s, np.tile(BUTTONS, n))
        ok = (s.x == x) & (s.y == y) & (s.rot == rot) & np.all(s.board == board, axis=1)
        assert ok.any(), f"no input reproduces capture frame {f}"
        rows = np.flatnonzero(ok)
        key = np.zeros(len(rows), np.uint64)
        for w, k in zip(weights, scalar):
            key += s[k][rows].astype(np.uint64) * w
        s = take(s, rows[np.sort(np.unique(key, return_index=True)[1])])
        events["widest"] = max(events["widest"], len(s.x))
        delta = s.frame_events[0] - before
        if delta[rules.EV_LOCKS]:
            events["locks"].append({"f": f, "x": int(s.lock_x[0]), "y": int(s.lock_y[0]), "rot": int(s.lock_rot[0])})
        if delta[rules.EV_SPAWNS]:
            p = int(s.falling[0])
            events["spawns"].append({"f": f, "colors": "YRB"[p // 3] + "YRB"[p % 3]})
        if delta[rules.EV_MATCH_GROUPS]:
            events["matches"][f] += int(delta[rules.EV_MATCH_GROUPS])
        if f in (1700, 5700):
            events["snapshots"][f] = bytes(s.board[0]).hex()
    return s, vectors, events


@pytest.mark.slow
def test_capture_every_frame_reproduced(replay):
    s, vectors, events = replay
    assert len(s.x) >= 1


@pytest.mark.slow
def test_capture_locks_spawns_matches(replay):
    s, vectors, events = replay
    assert events["locks"] == vectors["locks"]
    assert events["spawns"] == vectors["spawns"]
    assert events["matches"] == Counter(m["f"] for m in vectors["matches"])
    assert events["snapshots"][1700] == vectors["board_after_frame_1700_hex"]
    assert events["snapshots"][5700] == vectors["board_after_frame_5700_hex"]


@pytest.mark.slow
def test_capture_totals(replay):
    s, vectors, events = replay
    c = vectors["counts"]
    totals = s.frame_events[0]
    assert totals[rules.EV_LOCKS] == c["locks"]
    assert totals[rules.EV_SPAWNS] == c["spawns"]
    assert totals[rules.EV_MATCH_GROUPS] == c["match_groups"]
    assert totals[rules.EV_MATCH_ROUNDS] == c["match_rounds"]
    assert totals[rules.EV_VIRUSES] == c["viruses_cleared"]
    assert totals[rules.EV_DROP_PASSES] == c["drop_passes"]
    assert totals[rules.EV_SPEED_UPS] == c["speed_ups_at_end"] == s.speed_ups[0]
    assert f"{s.virus_left[0]}" == c["virus_left_bcd_at_end"]
    assert s.score[0] * 10 == c["score_display_at_end"]
