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
with links on the one board it is asked about (``search_with_links``). The step's search also
skips the levels that stay above the stack: it starts from the empty board's search after those
levels (``open_air_tables``, built in plain Python when a kernel calling ``plan`` compiles, so a
batch without the planner never builds them).
"""

from __future__ import annotations

import numpy as np

from numba.extending import overload

from vecsim.games.tetris.pieces import (
    CELLS, HEIGHT, H, KICK_COUNT, KICK_DELTAS, N_POSES, N_TYPES, NONE, SPAWN_X, SPAWN_Y, W, WIDTH,
)
from vecsim.games.tetris.rules import blocked, drop_row, rotate
from vecsim.core.jit import exact
from vecsim.core.symbol_call import by_symbol

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


# -- the open-air start -------------------------------------------------------------------
# Rows above the stack's highest filled cell are empty, so while every row a level of the search
# reads lies above the stack, the level does what it does on the empty board. Those levels are
# tabulated once per piece, gravity and kick count; the step's search starts after them.
_KICK_SETS = 2  # one kick (no rotation system) or all the piece's kicks (SRS)
_open_air_tables = None  # built by open_air_tables() the first time a kernel calling plan compiles


@exact(inline="always")
def _config(t, kick_set, gravity):
    return (t * _KICK_SETS + kick_set) * (H + 1) + gravity


def _slot_py(r: int, y: int) -> int:
    return r * _ROWS + y + 1


def _open_air_levels(t: int, n_kicks: int, gravity: int):
    """The empty board's search of piece ``t``, level by level while some stack leaves the
    level's reads above it. Returns the visited words before each level (``_VISITED`` layout),
    the lowest board row each level reads (hard drops aside) and the first level whose frontier
    holds each (rotation, column)."""
    height = [int(HEIGHT[t, r]) for r in range(4)]
    fits = [(1 << (W - int(WIDTH[t, r]) + 1)) - 1 for r in range(4)]

    def free(r, y):
        return fits[r] if 0 <= y <= H - height[r] else 0

    visited = [0] * (4 * _ROWS)
    y0, x0 = int(SPAWN_Y[t]), int(SPAWN_X[t])
    visited[_slot_py(0, y0)] = 1 << x0
    front = {(0, y0): 1 << x0}
    levels, reaches = [list(visited)], []
    first = np.full((4, W), -1, np.int16)
    while front:
        reach = 0
        for (r, y), f in front.items():
            reach = max(reach, y + max(1, gravity) + height[r] - 1)
            for d in range(2):
                r2 = (r + 1) % 4 if d == 0 else (r + 3) % 4
                for kk in range(n_kicks):
                    reach = max(reach, y + int(KICK_DELTAS[t, r, d, kk, 0]) + gravity + height[r2] - 1)
        reaches.append(reach)
        if reach >= H:
            break  # no stack leaves this level in open air
        nxt = {}

        def live(v, r, y):
            new = v & ~visited[_slot_py(r, y)]
            if new:
                visited[_slot_py(r, y)] |= new
                nxt[r, y] = nxt.get((r, y), 0) | new

        for (r, y), f in front.items():
            for x in range(W):
                if (f >> x) & 1 and first[r, x] < 0:
                    first[r, x] = len(reaches) - 1
            # in open air every input's pose falls its full gravity and none rests
            live(f, r, y + gravity)
            for dx in (-1, 1):
                live((f << 1 if dx > 0 else f >> 1) & free(r, y), r, y + gravity)
            if gravity != 1:
                live(f, r, y + 1)
            for d in range(2):
                r2 = (r + 1) % 4 if d == 0 else (r + 3) % 4
                remaining = f
                for kk in range(n_kicks):
                    dy, dx = int(KICK_DELTAS[t, r, d, kk, 0]), int(KICK_DELTAS[t, r, d, kk, 1])
                    ok = (remaining << dx if dx >= 0 else remaining >> -dx) & free(r2, y + dy)
                    remaining &= ~(ok >> dx if dx >= 0 else ok << -dx)
                    live(ok, r2, y + dy + gravity)
        levels.append(list(visited))
        front = nxt
    return levels, reaches, first


def open_air_tables():
    """The tables of the open-air start, built on first call (from plain Python, well under a
    second): ``levels (configs, H + 1) int16``, how many levels of the search a board whose
    first filled row is ``top`` can take from the empty board's; ``start (configs,) int64``, the
    row of ``visited`` holding the config's level 0; ``visited (rows, 4 * (H + 2)) int16``, the
    empty board's visited words before each level; ``first (configs, 4, W) int16``, the first
    level whose frontier holds each (rotation, column). A config is ``_config(t, kick_set,
    gravity)``."""
    global _open_air_tables
    if _open_air_tables is None:
        n_configs = N_TYPES * _KICK_SETS * (H + 1)
        levels = np.zeros((n_configs, H + 1), np.int16)
        start = np.zeros(n_configs, np.int64)
        first = np.full((n_configs, 4, W), -1, np.int16)
        rows = []
        for t in range(N_TYPES):
            for kick_set in range(_KICK_SETS):
                n_kicks = 1 if kick_set == 0 else int(KICK_COUNT[t])
                for gravity in range(H + 1):
                    c = (t * _KICK_SETS + kick_set) * (H + 1) + gravity
                    visited, reaches, first[c] = _open_air_levels(t, n_kicks, gravity)
                    for top in range(H + 1):
                        k = 0
                        while k < len(visited) - 1 and reaches[k] < top:
                            k += 1
                        levels[c, top] = k
                    start[c] = len(rows)
                    rows.extend(visited[:levels[c, H] + 1])
        _open_air_tables = (levels, start, np.array(rows, np.int16), first)
    return _open_air_tables


def _open_air():
    """``open_air_tables()``, as constants of the kernel that calls it (built when it compiles)."""


@overload(_open_air, inline="always")
def _open_air_constants():
    levels, start, visited, first = open_air_tables()
    return lambda: (levels, start, visited, first)


@exact(inline="always")
def _start_in_open_air(bits, i, t, top, gravity, n_kicks, base, extra, cost, ymm):
    """Set env ``i``'s search state to the empty board's after as many levels as the stack (its
    first filled row ``top``) leaves in open air, the hard drops of those levels locked where
    they land on this board; returns that number of levels (0: start from spawn) and puts the
    frontier's rows into ``ymm``."""
    kick_set = 0 if n_kicks == 1 else (1 if n_kicks == KICK_COUNT[t] else -1)
    if kick_set < 0 or gravity < 0 or gravity > H:
        return 0
    levels, start, visited, first = _open_air()
    c = _config(t, kick_set, gravity)
    k = np.int64(levels[c, top])
    if k == 0:
        return 0
    now = start[c] + k
    ymm[0] = H
    ymm[1] = -1
    for r in range(4):
        for y in range(-1, H + 1):
            s = _slot(r, y)
            v = np.int64(visited[now, s])
            bits[i, _VISITED + s] = v
            f = v & ~np.int64(visited[now - 1, s])
            bits[i, _FRONT + s] = f
            if f:
                ymm[0] = min(ymm[0], y)
                ymm[1] = max(ymm[1], y)
        # the columns earlier levels dropped from: marked from their highest start (in open air)
        # down to where they land on this board, locked there at their first level's cost
        open_rows = max(0, min(top - HEIGHT[t, r] + 1, H - HEIGHT[t, r] + 1))
        falling = np.int64(0)
        for y in range(open_rows):
            falling |= np.int64(visited[now - 1, _slot(r, y)])
            bits[i, _DROPPED + _slot(r, y)] = falling
        yy = open_rows - 1
        while falling:
            under = _free(bits, i, r, yy + 1)
            stuck = falling & ~under
            if stuck:
                bits[i, _LOCKED + _slot(r, yy)] = stuck
                rest = stuck
                while rest:
                    x = LOWEST_BIT[rest]
                    rest &= rest - 1
                    cost[i, base + (r * H + yy) * W + x] = first[c, r, x] + 1 + extra
            falling &= under
            yy += 1
            if falling:
                bits[i, _DROPPED + _slot(r, yy)] = falling
    return k


@exact(per_constant=True)  # specialised for its callers' constant base and extra: faster searches
def plan(rows, i, t, gravity, kicks, base, extra, cost, bits, ymin_ymax, live_parent, live_input, lock_parent,
         lock_input):
    """Search every lock pose of piece ``t`` from its spawn pose on env ``i``'s board.

    Level-synchronous breadth-first search over sets of poses: the live poses of one
    rotation and row that share a distance are one 10-bit word, and each input moves a whole
    word with a few shifts and ANDs against the FREE table. Writes ``cost[i, base:base +
    N_POSES]`` (``extra`` added to every reachable cost, e.g. 1 for a hold input before the
    search) and the parent links at the same offsets, these only where ``live_parent`` has
    columns (the game's step passes ``(N, 0)`` arrays: ``path`` searches again for the one env
    it is asked about). Without links the search starts from the empty board's after the levels
    whose reads all lie above the stack (``_start_in_open_air``): the same costs. ``bits`` is
    ``(N, SCRATCH)`` int16 scratch, ``ymin_ymax`` ``(N, 2)`` int64 scratch. Returns the number
    of lock poses.
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
    cur = _FRONT
    nxt = _FRONT + 4 * _ROWS
    n_kicks = min(kicks, KICK_COUNT[t])
    ymm = ymin_ymax[i]
    level = 0
    if live_parent.shape[1] == 0:  # path's search, with links, starts at spawn
        level = _start_in_open_air(bits, i, t, top, gravity, n_kicks, base, extra, cost, ymm)
    if level > 0:
        lo = ymm[0]
        hi = ymm[1]
    else:
        start = y0 * W + x0
        if live_parent.shape[1] > 0:
            live_parent[i, base + start] = -1
            live_input[i, base + start] = -1
        bits[i, _VISITED + _slot(0, y0)] = 1 << x0
        bits[i, cur + _slot(0, y0)] = 1 << x0
        lo = np.int64(y0)
        hi = np.int64(y0)
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


@by_symbol
@exact
def plan_decision(rows, i, current, held, hold_ok, halves, gravity, kicks, cost, bits, ymin_ymax):
    """The costs of a reach decision on env ``i``: ``cost[i, :N_POSES]`` for the current piece
    and, when ``halves`` is 2, ``cost[i, N_POSES:]`` for the piece ``held`` a hold brings (all
    -1 unless ``hold_ok``), without parent links. When hold brings the same piece, its half is
    the first one's costs plus one."""
    no_links = cost[:, :0]
    # Both searches write the first half with nothing added (the held piece's first, then
    # copied one input dearer): one compilation of plan, specialised for base 0 and extra 0.
    other = halves == 2 and hold_ok and held != current
    if other:
        plan(rows, i, held, gravity, kicks, 0, 0, cost, bits, ymin_ymax, no_links, no_links, no_links, no_links)
        _hold_half_from_first(cost, i)
    plan(rows, i, current, gravity, kicks, 0, 0, cost, bits, ymin_ymax, no_links, no_links, no_links, no_links)
    if halves < 2 or other:
        return
    if not hold_ok:
        for k in range(N_POSES):
            cost[i, N_POSES + k] = -1
    else:  # hold brings the same piece
        _hold_half_from_first(cost, i)


@exact(inline="always")
def _hold_half_from_first(cost, i):
    """``cost[i, N_POSES:]`` = the first half's costs one input (the hold) dearer."""
    for k in range(N_POSES):
        c = cost[i, k]
        cost[i, N_POSES + k] = c + 1 if c >= 0 else -1


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
    links = np.zeros((4, 1, 2 * N_POSES), np.int16)
    _plan_first_half(np.ascontiguousarray(board, np.uint16).reshape(1, H), int(t), int(gravity), int(kicks),
                     np.full((1, 2 * N_POSES), -1, np.int16), np.zeros((1, SCRATCH), np.int16), np.zeros((1, 2), np.int64),
                     links)
    if half:  # the hold half: the same poses and links (path_to puts the hold input first)
        links[:, :, N_POSES:] = links[:, :, :N_POSES]
        links[:, :, :N_POSES] = 0
    return links[0], links[1].astype(np.int8), links[2], links[3].astype(np.int8)


@exact
def _plan_first_half(rows, t, gravity, kicks, cost, bits, ymin_ymax, links):
    """``plan`` of piece ``t`` on board 0 into the first reach half, with its parent links
    (``links``: (4, 1, 2 * N_POSES) int16: live_parent, live_input, lock_parent, lock_input):
    with the argument types ``plan_decision`` passes (base and extra the constant 0, the links
    int16 slices as its empty ones), so that ``path`` uses the search reach mode compiled."""
    a = cost.shape[1]
    plan(rows, np.int64(0), t, gravity, kicks, 0, 0, cost, bits, ymin_ymax, links[0][:, :a], links[1][:, :a],
         links[2][:, :a], links[3][:, :a])


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
