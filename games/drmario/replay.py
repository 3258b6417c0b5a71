"""Batch helpers over whole ``State`` rows, for replays and searches in plain numpy:
stepping many rows with their own buttons, copying rows, and the attract-demo start."""

import numpy as np

from vecsim.core.jit import exact
from vecsim.games.drmario import rules
from vecsim.games.drmario.state import SCRATCH_FIELDS, State, allocate
from vecsim.games.drmario.tables import VIRUS

#: LFSR state whose reserve is the ROM's demo pill table.
DEMO_PILLS_SEED = 0x4204


@exact
def frames(s, buttons):
    """Step every row ``i`` one frame with ``buttons[i]``."""
    for i in range(buttons.shape[0]):
        rules.frame(s, i, buttons[i])


def take(s: State, rows: np.ndarray) -> State:
    """A new ``State`` of the given rows (copies); the thread scratch (``SCRATCH_FIELDS``),
    which holds nothing between steps, shared."""
    return State(*(a if name in SCRATCH_FIELDS else a[rows] for name, a in zip(State._fields, s)))


def demo_start(board: np.ndarray, n: int = 1) -> State:
    """``n`` rows in the attract demo's state just before its first throw pass (``SPEC.md``
    §9.4): the demo field, the demo pills, level 10, med speed, frame counter such that the
    first pass sees 136."""
    s = allocate(n)
    for i in range(n):
        rules.generate_reserve(s.reserve, i, DEMO_PILLS_SEED)
    s.board[:] = np.asarray(board, np.uint8)
    s.level[:], s.speed[:] = 10, 1
    s.falling[:], s.next_pill[:] = s.reserve[:, 0], s.reserve[:, 1]
    s.reserve_index[:] = 2
    s.pills_sent[:] = 1
    s.next_action[:] = rules.SEND_PILL
    s.status[:] = 0xFF
    s.x[:], s.y[:] = 3, 15
    s.fc[:] = 135
    s.virus_left[:] = np.sum((s.board & 0xF0) == VIRUS, axis=1)
    s.lock_x[:] = s.lock_y[:] = s.lock_rot[:] = -1
    return s
