"""The structure-of-arrays state of a batch of Dr. Mario games (one row per env).

The fields after ``frame_events`` are decision mode's (``decision=True``; zero columns in
frame mode): its per-step outputs, what the step keeps of the last search (the tree to each
placement's lock), then the search's scratch (``SCRATCH_FIELDS``): ``R`` rows, one for each
of Numba's threads (``vecsim.core.scratch``), not one an env."""

from typing import NamedTuple

import numpy as np

from vecsim.core import buffers as placed
from vecsim.core import scratch
from vecsim.games.drmario.rules import N_FRAME_EVENTS
from vecsim.games.drmario.tables import SPEED_TABLE

N_PLACEMENTS = 512
#: A search's lock bits (``planners/drmario.lock_reach``): a pose's words (512 lock poses at
#: most), then after the 512 poses' the words of the lock poses still without a cost.
REACH_WORDS = N_PLACEMENTS // 64
REACH_OPEN = N_PLACEMENTS * REACH_WORDS
REACH_SIZE = REACH_OPEN + REACH_WORDS
#: 16-bit words of the search's visited bitmap at the slowest gravity (``(T + 1) << 14``).
VISITED_WORDS = (int(SPEED_TABLE.max()) + 1) << 14
#: Nodes a search may keep: one a bit of the visited bitmap twice over, so no search outgrows
#: it (the planner's runs by lag share one bitmap, but a seed waits at the top of the arrays
#: before it joins them; the run after them starts the bitmap anew). Its pages are mapped only
#: as far as a search reaches.
NODE_CAPACITY = 2 * VISITED_WORDS * 16
#: Frames a placement's script may take: the pill locks within 16 rows of gravity.
SCRIPT_CAPACITY = 16 * (int(SPEED_TABLE.max()) + 1)
#: Nodes of a search's tree kept per env for the step (the paths to its locks, int16 parents);
#: a search that needs more is run again by the step (``decision.write_script``).
TREE_CAPACITY = 1 << 12
#: Decision mode's fields that are the thread's scratch, not the env's (``SCRATCH_STATE``).
SCRATCH_FIELDS = ("search_visited", "search_parent", "search_button", "search_nodes", "search_script", "search_fit",
                  "search_locks", "search_reach", "search_moves", "search_seen", "search_queue")


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
    cost_to_lock: np.ndarray  # (N, 512) uint16: frames to lock each placement, 0xFFFF unreachable
    tau: np.ndarray  # (N,) int64: frames the last step played
    pill_colors: np.ndarray  # (N, 2) int64: the falling pill's 1st and 2nd color (0 Y, 1 R, 2 B)
    preview_colors: np.ndarray  # (N, 2) int64: the preview pill's colors
    tiles_cleared: np.ndarray  # (N, 3) int64: tiles cleared in the last step: viruses, others, all
    viruses_by_color: np.ndarray  # (N, 3) int64: viruses left, yellow, red, blue
    column_heights: np.ndarray  # (N, 8) int64: rows filled up to the highest tile of each column
    max_height: np.ndarray  # (N,) int64: the highest column
    plan_kept: np.ndarray  # (N,) int64: 1 when plan_parent and plan_button hold the last search's paths, else 0
    plan_parent: np.ndarray  # (N, TREE_CAPACITY) int16: the last search's paths to its locks, each node's parent
    plan_button: np.ndarray  # (N, TREE_CAPACITY) uint8: the controller byte into each of those nodes
    plan_lock_node: np.ndarray  # (N, 512) int32: the node before each placement's lock frame, -1 unreachable
    plan_lock_button: np.ndarray  # (N, 512) uint8: each placement's locking input
    search_visited: np.ndarray  # (R, VISITED_WORDS) uint16 thread scratch: visited bitmap, 0 between searches
    search_parent: np.ndarray  # (R, NODE_CAPACITY) int32 thread scratch: the search tree's parents
    search_button: np.ndarray  # (R, NODE_CAPACITY) uint8 thread scratch: the controller byte into each node
    search_nodes: np.ndarray  # (R, NODE_CAPACITY) int32 thread scratch: each node's packed slot
    search_script: np.ndarray  # (R, SCRIPT_CAPACITY) uint8 thread scratch: the chosen placement's inputs
    search_fit: np.ndarray  # (R, 340) bool thread scratch: fit table, (2, 17, 10)
    search_locks: np.ndarray  # (R, 512) int64 thread scratch: the pose of each lock bit (``lock_reach``)
    search_reach: np.ndarray  # (R, 4104) uint64 thread scratch: each pose's lock bits (``lock_reach``)
    search_moves: np.ndarray  # (R, 8192) int16 thread scratch: each pose's moves (``pose_moves``)
    search_seen: np.ndarray  # (R, 512) uint8 thread scratch: the poses the pill can reach
    search_queue: np.ndarray  # (R, 512) int64 thread scratch

def allocate(num_envs: int, decision: bool = False) -> State:
    """A zeroed ``State`` of ``num_envs`` rows (every board empty), with decision mode's
    fields when ``decision`` (else they have no columns)."""
    n = num_envs
    d = 1 if decision else 0
    wide = {  # field -> (per-env shape, dtype)
        "board": ((128,), np.uint8), "reserve": ((128,), np.uint8), "frame_events": ((N_FRAME_EVENTS,), np.int64),
        "cost_to_lock": ((N_PLACEMENTS * d,), np.uint16), "pill_colors": ((2 * d,), np.int64),
        "preview_colors": ((2 * d,), np.int64), "tiles_cleared": ((3 * d,), np.int64),
        "viruses_by_color": ((3 * d,), np.int64), "column_heights": ((8 * d,), np.int64),
        "plan_parent": ((TREE_CAPACITY * d,), np.int16), "plan_button": ((TREE_CAPACITY * d,), np.uint8),
        "plan_lock_node": ((N_PLACEMENTS * d,), np.int32), "plan_lock_button": ((N_PLACEMENTS * d,), np.uint8),
    }
    per_thread = {  # field -> (a thread's shape, dtype)
        "search_visited": ((VISITED_WORDS * d,), np.uint16), "search_parent": ((NODE_CAPACITY * d,), np.int32),
        "search_button": ((NODE_CAPACITY * d,), np.uint8), "search_nodes": ((NODE_CAPACITY * d,), np.int32),
        "search_script": ((SCRIPT_CAPACITY * d,), np.uint8), "search_fit": ((2 * 17 * 10 * d,), np.bool_),
        "search_locks": ((N_PLACEMENTS * d,), np.int64), "search_reach": ((REACH_SIZE * d,), np.uint64),
        "search_moves": ((N_PLACEMENTS * 16 * d,), np.int16),
        "search_seen": ((N_PLACEMENTS * d,), np.uint8), "search_queue": ((N_PLACEMENTS * d,), np.int64),
    }
    fields = {}
    for name in State._fields:
        shape, dtype = wide.get(name, ((), np.int64))
        if name in per_thread:
            fields[name] = scratch.zeros(*per_thread[name])
        elif name in ("board", "reserve"):
            fields[name] = placed.full((n,) + shape, 0xFF, dtype)
        else:
            fields[name] = placed.zeros((n,) + shape, dtype)
    return State(**fields)
