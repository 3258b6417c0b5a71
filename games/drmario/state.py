"""The structure-of-arrays state of a batch of Dr. Mario games (one row per env)."""

from typing import NamedTuple

import numpy as np

from vecsim.core import buffers as placed
from vecsim.games.drmario.rules import N_FRAME_EVENTS


class State(NamedTuple):
    board: np.ndarray  # (N, 128) uint8: the bottle, index row * 8 + col, row 0 at the top; raw tile bytes
    reserve: np.ndarray  # (N, 128) uint8: the level's pill reserve, pill ids 0..8
    lfsr: np.ndarray  # (N,) int64: the 16-bit LFSR state after the level's draws (rng0 is the high byte)
    level: np.ndarray  # (N,) int64: 0..24
    speed: np.ndarray  # (N,) int64: 0 low, 1 med, 2 hi
    speed_ups: np.ndarray  # (N,) int64: 0..49
    speed_counter: np.ndarray  # (N,) int64: gravity counter
    hor_velocity: np.ndarray  # (N,) int64: the sideways (DAS) charge
    x: np.ndarray  # (N,) int64: falling pill anchor column 0..7
    y: np.ndarray  # (N,) int64: falling pill anchor row counted from the bottom 0..15
    rot: np.ndarray  # (N,) int64: rotation 0..3 (bit 0 set: vertical)
    falling: np.ndarray  # (N,) int64: falling pill id (1st color id // 3, 2nd id % 3)
    next_pill: np.ndarray  # (N,) int64: preview pill id
    reserve_index: np.ndarray  # (N,) int64: next reserve entry to load into the preview
    pills_sent: np.ndarray  # (N,) int64: the pills-sent counter (1 after level init)
    fc: np.ndarray  # (N,) int64: frame counter 0..255 as the last logic pass saw it
    held: np.ndarray  # (N,) int64: controller byte of the last frame
    next_action: np.ndarray  # (N,) int64: the ROM's nextAction (0 falling, 1 placed, 2, 3, 5, 6 throw)
    placed_step: np.ndarray  # (N,) int64: step of the lock-resolution machine 0..8
    status: np.ndarray  # (N,) int64: the NMI row countdown, 0xFF idle
    thrown: np.ndarray  # (N,) int64: active throw passes so far
    match_flag: np.ndarray  # (N,) int64: matches found in the current round
    score_multiplier: np.ndarray  # (N,) int64: viruses cleared since the last lock
    virus_left: np.ndarray  # (N,) int64
    score: np.ndarray  # (N,) int64: internal score (the display appends a 0)
    outcome: np.ndarray  # (N,) int64: 0 playing, 1 cleared, 2 topped out
    frame_count: np.ndarray  # (N,) int64: logic passes since the level's first throw pass
    lock_x: np.ndarray  # (N,) int64: pose of the last lock (x, y from the bottom, rot), -1 before
    lock_y: np.ndarray
    lock_rot: np.ndarray
    frame_events: np.ndarray  # (N, 8) int64: event counters (rules.EV_*) since last cleared


def allocate(num_envs: int, extra: dict | None = None) -> State:
    """A zeroed ``State`` of ``num_envs`` rows (every board empty)."""
    n = num_envs
    fields = {}
    for name in State._fields:
        if name in ("board", "reserve"):
            fields[name] = placed.full((n, 128), 0xFF, np.uint8)
        elif name == "frame_events":
            fields[name] = placed.zeros((n, N_FRAME_EVENTS), np.int64)
        else:
            fields[name] = placed.zeros(n, np.int64)
    return State(**fields)
