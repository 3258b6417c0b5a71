"""Tetris placement planner: every pose a piece can lock at, its cost, and an input path to it.

``plan_decision`` is a per-env ``@njit`` function that runs inside the batched step kernel
(reach mode calls it after every decision): ``plan`` for the current piece and for the piece
hold would bring, costs only. ``plan`` is a breadth-first search over the piece's live
poses at step starts, from the spawn pose, under exactly the primitive-mode rules of
``games/tetris`` (one input per step, then gravity; a piece resting at the start of a step
that does not move down locks; soft drop on a resting piece and hard drop lock at once):
the transitions call the same ``blocked``/``rotate``/``drop_row`` functions the game uses,
so a path the planner returns, played with primitive actions, locks the piece at exactly
that pose (``tests/planners/test_tetris_planner.py`` checks this on many random boards).

Poses are indexed by anchor: ``(r * H + y) * W + x`` (see ``vecsim.games.tetris.pieces``). All
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

The step's search writes no parent links (``(N, 0)`` arrays): ``path`` runs the same search
with links on the one board it is asked about (``search_with_links``).
"""

from __future__ import annotations

import numpy as np

from vecsim.games.tetris.pieces import CELLS, HEIGHT, H, KICK_COUNT, KICK_DELTAS, N_POSES, NONE, SPAWN_X, SPAWN_Y, W, WIDTH
from vecsim.games.tetris.rules import blocked, drop_row, rotate
from vecsim.core.jit import exact

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
    if u == SOFT_DROP:
        if blocked(rows, i, t, r, y + 1, x):
            return r, y, x, True
        return r, y + 1, x, False
    if u == HARD_DROP:
        return r, drop_row(rows, i, t, r, y, x), x, True
    r0, y0, x0 = r, y, x
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
    if gravity == 0:
        return r, y, x, False
    if blocked(rows, i, t, r, y + 1, x):
        # Resting after the input: it locks if it rested before it too (the same test where
        # the input left it in place). Only here is the resting test before the input needed.
        unmoved = r == r0 and y == y0 and x == x0
        return r, y, x, unmoved or blocked(rows, i, t, r0, y0 + 1, x0)
    moved = 0
    resting = False
    while not resting:
        y += 1
        moved += 1
        if moved == gravity:
            break
        resting = blocked(rows, i, t, r, y + 1, x)
    return r, y, x, False


@exact
def plan_simple(rows, i, t, gravity, kicks, base, extra, cost, dist, queue, live_parent, live_input, lock_parent,
                lock_input):
    """The plain breadth-first search, one pose at a time: the specification ``plan`` (the
    bit-parallel search the game uses) is tested against; same outputs, same arguments.

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


# -- the bit-parallel search --------------------------------------------------------------
# Poses of one rotation and row are a 10-bit set over x. The scratch array ``bits`` of env i
# holds, at these offsets, per (r, y): FREE (x where the piece fits; y = -1 .. H, the rows
# outside the board empty), the live poses VISITED, the poses LOCKED, two frontiers and the
# poses DROPPED through.
_ROWS = H + 2  # y = -1 .. H
_FREE = 0
_VISITED = 4 * _ROWS
_LOCKED = 8 * _ROWS
_FRONT = 12 * _ROWS  # two frontiers of 4 * _ROWS each
_DROPPED = 20 * _ROWS  # poses a hard drop has fallen through: their landing is locked
SCRATCH = 24 * _ROWS  # int16 entries of scratch per env (<= N_POSES)
#: Index of the lowest set bit of every 10-bit value (10 for 0).
LOWEST_BIT = np.array([((v & -v).bit_length() - 1) if v else W for v in range(1 << W)], dtype=np.int64)


@exact(inline="always")
def _slot(r, y):
    return r * _ROWS + y + 1


@exact(inline="always")
def _free(bits, i, r, y):
    if y < -1 or y > H:
        return np.int64(0)
    return np.int64(bits[i, _FREE + _slot(r, y)])


@exact(inline="always")
def _shift(v, dx):
    return (v << dx) if dx >= 0 else (v >> -dx)


@exact(inline="always")
def _record(set_off, bits, i, v, r, y, src_r, src_y, dx, u, base, value, out_value, out_parent, out_input):
    """Add poses ``v`` (x bits) of (r, y) to the set at ``set_off``; for each new one write
    ``value``, its parent pose and input (each where its array has columns). Returns the new
    bits."""
    k = set_off + _slot(r, y)
    new = v & ~np.int64(bits[i, k])
    if new:
        bits[i, k] = np.int64(bits[i, k]) | new
        if out_value.shape[1] == 0 and out_parent.shape[1] == 0:
            return new
        rest = new
        while rest:
            x = LOWEST_BIT[rest]
            rest &= rest - 1
            pose = base + (r * H + y) * W + x
            if out_value.shape[1] > 0:
                out_value[i, pose] = value
            if out_parent.shape[1] > 0:
                out_parent[i, pose] = (src_r * H + src_y) * W + x - dx
                out_input[i, pose] = u
    return new


@exact(inline="always")
def _live(bits, i, v, r, y, src_r, src_y, dx, u, base, front, live_parent, live_input, ymin_ymax):
    new = _record(_VISITED, bits, i, v, r, y, src_r, src_y, dx, u, base, 0, live_parent[:, :0], live_parent,
                  live_input)
    if new:
        k = front + _slot(r, y)
        bits[i, k] = np.int64(bits[i, k]) | new
        if y < ymin_ymax[0]:
            ymin_ymax[0] = y
        if y > ymin_ymax[1]:
            ymin_ymax[1] = y


@exact(inline="always")
def _after_input(bits, i, d, rest, r, y, src_r, src_y, dx, u, gravity, base, front, level, extra, cost,
                 live_parent, live_input, lock_parent, lock_input, ymin_ymax):
    """Gravity for the poses ``d`` of (r, y) just after an input; ``rest``: those whose
    pose at the step's start was resting (they lock if they do not move down)."""
    if d == 0:
        return
    if gravity == 0:
        _live(bits, i, d, r, y, src_r, src_y, dx, u, base, front, live_parent, live_input, ymin_ymax)
        return
    below = _free(bits, i, r, y + 1)
    stuck = d & ~below
    _record(_LOCKED, bits, i, stuck & rest, r, y, src_r, src_y, dx, u, base, level + 1 + extra, cost, lock_parent,
            lock_input)
    _live(bits, i, stuck & ~rest, r, y, src_r, src_y, dx, u, base, front, live_parent, live_input, ymin_ymax)
    fall = d & below
    yy = y + 1
    g = 1
    while fall and g < gravity:
        below = _free(bits, i, r, yy + 1)
        _live(bits, i, fall & ~below, r, yy, src_r, src_y, dx, u, base, front, live_parent, live_input, ymin_ymax)
        fall &= below
        yy += 1
        g += 1
    _live(bits, i, fall, r, yy, src_r, src_y, dx, u, base, front, live_parent, live_input, ymin_ymax)


@exact
def plan(rows, i, t, gravity, kicks, base, extra, cost, bits, ymin_ymax, live_parent, live_input, lock_parent,
         lock_input):
    """Search every lock pose of piece ``t`` from its spawn pose on env ``i``'s board.

    Level-synchronous breadth-first search over sets of poses: the live poses of one
    rotation and row that share a distance are one 10-bit word, and each input moves a whole
    word with a few shifts and ANDs against the FREE table. Writes ``cost[i, base:base +
    N_POSES]`` (``extra`` added to every reachable cost, e.g. 1 for a hold input before the
    search) and the parent links at the same offsets, these only where ``live_parent`` has
    columns (the game's step passes ``(N, 0)`` arrays: ``path`` searches again for the one env
    it is asked about). ``bits`` is ``(N, SCRATCH)`` int16 scratch, ``ymin_ymax`` ``(N, 2)``
    int64 scratch. Returns the number of lock poses.
    """
    for k in range(N_POSES):
        cost[i, base + k] = -1
    for k in range(SCRATCH):
        bits[i, k] = 0
    top = 0  # the first filled row: above it the piece fits at every column
    while top < H and rows[i, top] == 0:
        top += 1
    for r in range(4):
        fits = (1 << (W - WIDTH[t, r] + 1)) - 1
        open_rows = max(0, min(top - HEIGHT[t, r] + 1, H - HEIGHT[t, r] + 1))
        for y in range(open_rows):
            bits[i, _FREE + _slot(r, y)] = fits
        for y in range(open_rows, H - HEIGHT[t, r] + 1):
            f = fits
            for c in range(4):  # a cell at (dy, dx) blocks the anchors x whose x + dx is filled
                f &= ~(np.int64(rows[i, y + CELLS[t, r, c, 0]]) >> CELLS[t, r, c, 1])
            bits[i, _FREE + _slot(r, y)] = f
    y0, x0 = SPAWN_Y[t], SPAWN_X[t]
    if not (_free(bits, i, 0, y0) >> x0) & 1:
        return 0
    start = y0 * W + x0
    if live_parent.shape[1] > 0:
        live_parent[i, base + start] = -1
        live_input[i, base + start] = -1
    bits[i, _VISITED + _slot(0, y0)] = 1 << x0
    cur = _FRONT
    nxt = _FRONT + 4 * _ROWS
    bits[i, cur + _slot(0, y0)] = 1 << x0
    lo = np.int64(y0)
    hi = np.int64(y0)
    n_kicks = min(kicks, KICK_COUNT[t])
    level = 0
    ymm = ymin_ymax[i]
    while lo <= hi:
        ymm[0] = H
        ymm[1] = -1
        for r in range(4):
            for y in range(lo, hi + 1):
                k = cur + _slot(r, y)
                f = np.int64(bits[i, k])
                if f == 0:
                    continue
                bits[i, k] = 0
                here = _free(bits, i, r, y)
                below = _free(bits, i, r, y + 1)
                rest = f & ~below
                # noop
                _after_input(bits, i, f, rest, r, y, r, y, 0, NOOP, gravity, base, nxt, level, extra, cost,
                             live_parent, live_input, lock_parent, lock_input, ymm)
                # left and right: the poses that can move (one that cannot ends as after noop)
                for u in (LEFT, RIGHT):
                    dx = -1 if u == LEFT else 1
                    moved = _shift(f, dx) & here
                    src = _shift(moved, -dx)
                    _after_input(bits, i, moved, _shift(rest & src, dx), r, y, r, y, dx, u, gravity, base, nxt,
                                 level, extra, cost, live_parent, live_input, lock_parent, lock_input, ymm)
                # soft drop: down one row without gravity (noop's move under gravity 1), or lock
                # when resting (noop's lock under any gravity)
                if gravity != 1:
                    _live(bits, i, f & below, r, y + 1, r, y, 0, SOFT_DROP, base, nxt, live_parent, live_input, ymm)
                if gravity == 0:
                    _record(_LOCKED, bits, i, rest, r, y, r, y, 0, SOFT_DROP, base, level + 1 + extra, cost,
                            lock_parent, lock_input)
                # hard drop: every pose falls to its own landing row; one that an earlier drop
                # fell through lands where that one did, already locked
                falling = f
                yy = y
                while falling:
                    k = _DROPPED + _slot(r, yy)
                    falling &= ~np.int64(bits[i, k])
                    bits[i, k] = np.int64(bits[i, k]) | falling
                    under = _free(bits, i, r, yy + 1)
                    _record(_LOCKED, bits, i, falling & ~under, r, yy, r, y, 0, HARD_DROP, base, level + 1 + extra,
                            cost, lock_parent, lock_input)
                    falling &= under
                    yy += 1
                # rotations: each pose takes the first kick that fits (one that none fits ends as
                # after noop)
                for d in range(2):
                    u = ROTATE_CW if d == 0 else ROTATE_CCW
                    r2 = (r + 1) % 4 if d == 0 else (r + 3) % 4
                    remaining = f
                    for kk in range(n_kicks):
                        if remaining == 0:
                            break
                        dy = KICK_DELTAS[t, r, d, kk, 0]
                        dx = KICK_DELTAS[t, r, d, kk, 1]
                        ok = _shift(remaining, dx) & _free(bits, i, r2, y + dy)
                        src = _shift(ok, -dx)
                        remaining &= ~src
                        _after_input(bits, i, ok, _shift(rest & src, dx), r2, y + dy, r, y, dx, u, gravity, base,
                                     nxt, level, extra, cost, live_parent, live_input, lock_parent, lock_input, ymm)
        lo = ymm[0]
        hi = ymm[1]
        cur, nxt = nxt, cur
        level += 1
    found = 0
    for k in range(N_POSES):
        found += cost[i, base + k] >= 0
    return found


@exact
def plan_decision(rows, i, current, held, hold_ok, halves, gravity, kicks, cost, bits, ymin_ymax):
    """The costs of a reach decision on env ``i``: ``cost[i, :N_POSES]`` for the current piece
    and, when ``halves`` is 2, ``cost[i, N_POSES:]`` for the piece ``held`` a hold brings (all
    -1 unless ``hold_ok``), without parent links. When hold brings the same piece, its half is
    the first one's costs plus one."""
    no_links = cost[:, :0]
    plan(rows, i, current, gravity, kicks, 0, 0, cost, bits, ymin_ymax, no_links, no_links, no_links, no_links)
    if halves < 2:
        return
    if not hold_ok:
        for k in range(N_POSES):
            cost[i, N_POSES + k] = -1
    elif held == current:
        for k in range(N_POSES):
            c = cost[i, k]
            cost[i, N_POSES + k] = c + 1 if c >= 0 else -1
    else:
        plan(rows, i, held, gravity, kicks, N_POSES, 1, cost, bits, ymin_ymax, no_links, no_links, no_links, no_links)


def path(engine, i: int, action: int) -> list[int]:
    """The primitive inputs that lock env ``i``'s current piece at reach action ``action``.

    ``engine`` is a Tetris engine in reach mode (``vecsim.make("Tetris-v0", n,
    action_mode="reach")``); the action must be legal (``engine.masks[i, action]``). Played
    with ``action_mode="primitive"`` from the same state, the inputs lock the piece there.
    """
    s = engine.state
    if engine.game.name != "Tetris" or s.cost.shape[1] == 0:
        raise ValueError(f"path needs a Tetris engine in reach mode, but got {engine!r}")
    i = engine.env_index(i)
    if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
        raise TypeError(f"action must be an int, but got action={action!r}")
    if not 0 <= action < s.cost.shape[1]:
        raise ValueError(f"action must be in [0, {s.cost.shape[1]}), but got action={action}")
    if s.cost[i, action] < 0:
        raise ValueError(f"action {action} is not reachable for env {i} (its mask is False)")
    p = engine.params_of(i)
    half = int(action) // N_POSES
    t = int(s.piece[i])
    if half:
        t = int(s.queue[i, 0]) if s.hold[i] == NONE else int(s.hold[i])
    links = search_with_links(s.rows[i], t, int(p.gravity), 5 if p.rotation > 0 else 1, half)
    return path_to(*links, 0, int(action))


def search_with_links(rows, t: int, gravity: int, kicks: int, half: int = 0):
    """``plan`` of piece ``t`` on one board (``rows``: (H,) uint16) with its parent links, into
    the reach half ``half`` (1: after a hold input). Returns ``path_to``'s four arrays, each
    ``(1, 2 * N_POSES)`` (live_parent int16, live_input int8, lock_parent int16, lock_input int8)."""
    board = np.asarray(rows)
    if board.shape != (H,) or not np.issubdtype(board.dtype, np.integer) or (board >> W).any() or (board < 0).any():
        raise ValueError(f"rows must be {H} bit rows of {W} columns, but got {board!r}")
    for name, value, lo, hi in (("t", t, 0, 6), ("gravity", gravity, 0, H), ("kicks", kicks, 1, 5), ("half", half, 0, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an int, but got {name}={value!r}")
        if not lo <= value <= hi:
            raise ValueError(f"{name} must be in [{lo}, {hi}], but got {name}={value}")
    a = 2 * N_POSES
    links = (np.zeros((1, a), np.int16), np.zeros((1, a), np.int8), np.zeros((1, a), np.int16), np.zeros((1, a), np.int8))
    plan(np.ascontiguousarray(board, np.uint16).reshape(1, H), 0, t, gravity, kicks, half * N_POSES, half,
         np.full((1, a), -1, np.int16), np.zeros((1, SCRATCH), np.int16), np.zeros((1, 2), np.int64), *links)
    return links


def path_to(live_parent, live_input, lock_parent, lock_input, i: int, action: int) -> list[int]:
    """The primitive inputs (``HOLD`` first for the hold half) that lock env ``i``'s piece at
    reach action ``action``, from the arrays ``plan`` filled. The pose must be reachable."""
    base = (action // N_POSES) * N_POSES
    inputs = [int(lock_input[i, action])]
    pid = int(lock_parent[i, action])
    while live_parent[i, base + pid] >= 0:
        inputs.append(int(live_input[i, base + pid]))
        pid = int(live_parent[i, base + pid])
    if base:
        inputs.append(HOLD)
    inputs.reverse()
    return inputs
