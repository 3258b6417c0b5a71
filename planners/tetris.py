"""Tetris placement planner: every pose a piece can lock at, its cost, and an input path to it.

``plan`` is a per-env ``@njit`` function that runs inside the batched step kernel (reach
mode calls it after every decision). It is a breadth-first search over the piece's live
poses at step starts, from the spawn pose, under exactly the primitive-mode rules of
``games/tetris`` (one input per step, then gravity; a piece resting at the start of a step
that does not move down locks; soft drop on a resting piece and hard drop lock at once):
the transitions call the same ``blocked``/``rotate``/``drop_row`` functions the game uses,
so a path the planner returns, played with primitive actions, locks the piece at exactly
that pose (``tests/test_tetris_planner.py`` checks this on many random boards).

Poses are indexed by anchor: ``(r * H + y) * W + x`` (see ``games.tetris.pieces``). All
arrays are env-indexed scratch owned by the caller's state (kernels do not allocate):

``cost (N, A) int16``
    Least number of primitive steps to lock at each pose, ``-1`` if the piece cannot lock
    there; written at ``cost[i, base + pose]``.
``dist, queue (N, n_poses) int16``
    BFS scratch (distance of each live pose, and the FIFO of poses).
``live_parent (N, A) int16``, ``live_input (N, A) int8``
    For each live pose, the pose it was first reached from and the input that did it.
``lock_parent (N, A) int16``, ``lock_input (N, A) int8``
    For each lock pose, the live pose and the input of its cheapest lock.
"""

from __future__ import annotations

import numpy as np

from games.tetris.pieces import H, N_POSES, SPAWN_X, SPAWN_Y, W
from games.tetris.rules import blocked, drop_row, rotate
from vecsim.jit import exact

NOOP, LEFT, RIGHT, SOFT_DROP, HARD_DROP, ROTATE_CW, ROTATE_CCW, HOLD = range(8)
N_INPUTS = 7  # the planner's moves: every primitive action but hold
INPUT_NAMES = ("noop", "left", "right", "soft_drop", "hard_drop", "rotate_cw", "rotate_ccw", "hold")


@exact
def apply_input(rows, i, t, r, y, x, u, gravity, kicks):
    """One primitive step of piece ``t`` from anchor ``(r, y, x)`` with input ``u`` (not hold).

    Returns ``(r, y, x, locked)``: the pose after the input and gravity, and whether the
    piece locks there. This is the single definition of the movement model: the game's
    primitive step and the planner both call it.
    """
    was_resting = blocked(rows, i, t, r, y + 1, x)
    if u == SOFT_DROP:
        if was_resting:
            return r, y, x, True
        return r, y + 1, x, False
    if u == HARD_DROP:
        return r, drop_row(rows, i, t, r, y, x), x, True
    if u == LEFT:
        if not blocked(rows, i, t, r, y, x - 1):
            x -= 1
    elif u == RIGHT:
        if not blocked(rows, i, t, r, y, x + 1):
            x += 1
    elif u == ROTATE_CW:
        r, y, x = rotate(rows, i, t, r, y, x, 0, kicks)
    elif u == ROTATE_CCW:
        r, y, x = rotate(rows, i, t, r, y, x, 1, kicks)
    moved = 0
    while moved < gravity and not blocked(rows, i, t, r, y + 1, x):
        y += 1
        moved += 1
    return r, y, x, gravity > 0 and moved == 0 and was_resting


@exact
def plan(rows, i, t, gravity, kicks, base, extra, cost, dist, queue, live_parent, live_input, lock_parent,
         lock_input):
    """Search every lock pose of piece ``t`` from its spawn pose on env ``i``'s board.

    Writes ``cost[i, base:base + N_POSES]`` (``extra`` is added to every reachable cost, e.g.
    1 for a hold input before the search) and the parent links at the same offsets. Returns
    the number of lock poses found (0 if the piece cannot spawn).
    """
    for k in range(N_POSES):
        dist[i, k] = -1
        cost[i, base + k] = -1
    y0, x0 = SPAWN_Y[t], SPAWN_X[t]
    if blocked(rows, i, t, 0, y0, x0):
        return 0
    start = y0 * W + x0
    dist[i, start] = 0
    live_parent[i, base + start] = -1
    live_input[i, base + start] = -1
    queue[i, 0] = start
    head, tail, found = 0, 1, 0
    while head < tail:
        pid = np.int64(queue[i, head])
        head += 1
        d = np.int64(dist[i, pid])
        r = pid // (H * W)
        y = (pid // W) % H
        x = pid % W
        for u in range(N_INPUTS):
            r2, y2, x2, locked = apply_input(rows, i, t, r, y, x, u, gravity, kicks)
            nid = (r2 * H + y2) * W + x2
            if locked:
                if cost[i, base + nid] < 0:
                    cost[i, base + nid] = d + 1 + extra
                    lock_parent[i, base + nid] = pid
                    lock_input[i, base + nid] = u
                    found += 1
            elif dist[i, nid] < 0:
                dist[i, nid] = d + 1
                live_parent[i, base + nid] = pid
                live_input[i, base + nid] = u
                queue[i, tail] = nid
                tail += 1
    return found


def path_to(live_parent, live_input, lock_parent, lock_input, i: int, action: int) -> list[int]:
    """The primitive inputs (``HOLD`` first for the hold half) that lock env ``i``'s piece at
    reach action ``action``, from the arrays ``plan`` filled. The pose must be reachable."""
    base = (action // N_POSES) * N_POSES
    pose = action - base
    inputs = [int(lock_input[i, action])]
    pid = int(lock_parent[i, action])
    while live_parent[i, base + pid] >= 0:
        inputs.append(int(live_input[i, base + pid]))
        pid = int(live_parent[i, base + pid])
    if base:
        inputs.append(HOLD)
    inputs.reverse()
    assert len(inputs) > 0 and pose >= 0
    return inputs
