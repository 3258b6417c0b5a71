"""Dr. Mario rules the capture does not exercise: sideways charge timing, a horizontal match
with its score, top-out."""

import numpy as np

from vecsim.games.drmario import rules
from vecsim.games.drmario.replay import frames
from vecsim.games.drmario.state import allocate
from vecsim.games.drmario.tables import BTN_DOWN, BTN_RIGHT, VIRUS


def _fresh(speed=1):
    """A controllable pill at the spawn over an empty bottle with one far virus."""
    s = allocate(1)
    s.speed[0] = speed
    s.board[0, 127] = VIRUS | 2
    s.virus_left[0] = 1
    s.falling[0], s.next_pill[0], s.reserve_index[0], s.pills_sent[0] = 0, 1, 2, 1
    s.next_action[0], s.status[0] = rules.FALLING, 0xFF
    s.x[0], s.y[0] = 3, 15
    return s


def _step(s, b):
    frames(s, np.array([b], np.int64))


def test_held_right_moves_at_once_then_after_16_then_every_6_frames():
    s = _fresh(speed=0)
    moves = []
    for f in range(1, 30):
        x = s.x[0]
        _step(s, BTN_RIGHT)
        if s.x[0] != x:
            moves.append(f)
    assert moves == [1, 17, 23]  # x 3 -> 6: then the wall stops it silently
    assert s.x[0] == 6 and s.hor_velocity[0] < 15


def test_horizontal_match_clears_viruses_and_scores_the_multiplier():
    s = _fresh(speed=1)
    s.board[0, 127] = 0xFF
    s.board[0, 120:123] = VIRUS | 0  # three yellow viruses, bottom row, columns 0..2
    s.virus_left[0] = 3
    s.falling[0] = 0  # yellow-yellow, lands at columns 3..4
    for _ in range(200):
        _step(s, BTN_DOWN)
        if s.outcome[0] != rules.PLAYING:
            break
    assert s.outcome[0] == rules.CLEARED
    assert s.frame_events[0, rules.EV_MATCH_GROUPS] == 1 and s.frame_events[0, rules.EV_TILES] == 5
    assert s.score[0] * 10 == (100 + 200 + 400) * 2  # med: 200 x 1, 2, 4


def test_top_out_when_the_spawn_cells_are_taken():
    s = _fresh()
    s.next_action[0], s.thrown[0] = rules.SEND_PILL, 0
    s.board[0, 4] = VIRUS | 1
    s.virus_left[0] = 2
    for _ in range(22):
        _step(s, 0)
    assert s.outcome[0] == rules.TOPPED_OUT
    assert s.board[0, 3] != 0xFF  # the pill is written over the spawn cells
