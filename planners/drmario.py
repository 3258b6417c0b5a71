"""Frame-exact placement planner for Dr. Mario (``vecsim.games.drmario``).

From a decision point (the falling pill just spawned and controllable on the next frame) a
breadth-first search, one frame layer at a time, over the pill's whole control state runs
every frame with each of the 16 frame-mode controller bytes (``vecsim.games.drmario.BUTTONS``)
through the stages of the game's falling-pill pass (``rules.pill_frame``), here read from a
fit table of the bottle. A search node is

    (x, y, rotation, gravity counter, sideways charge, last frame's Left/Right/A/B bits,
     frame-counter parity)

so two input histories merge only when every later frame plays out the same. The first time
the search locks a pose is its fewest frames to lock. It runs first by lag, the drop
attempts a path is behind Down held on every soft-drop frame (``greedy_fall``): the run
without lag settles most placements at the fewest frames their row allows, and a run of one
or two skipped soft drops the rest. Nodes that cannot lock any pose sooner than another node
are not expanded, and the search ends by a horizon of frames past a lower bound on the last
lock, where counters that cannot fire before it merge (``search`` and ``search_within``
give the rules); the tests hold the costs equal to those of the unpruned search over
``rules.pill_frame``. ``plan_envs`` searches many envs in
one call on Numba's threads (masks and costs; ``plan`` keeps the tree for ``script``).

Placements are encoded as ``action = o * 128 + row * 8 + col`` (512 actions): ``(row, col)``
is the cell of the pill's **1st-color half** (row 0 at the top) and ``o`` where the 2nd-color
half sits: 0 right, 1 below, 2 left, 3 above. A lock pose (x, y counted from the bottom,
rotation r) maps to: r 0 -> (0, 15 - y, x); r 1 -> (3, 15 - y, x); r 2 -> (2, 15 - y, x + 1);
r 3 -> (1, 14 - y, x). A lock with a half above the bottle has no action.

``cost_to_lock[a]`` counts the frames from the decision point up to and including the lock
frame (a lock on the first controllable frame costs 1), 0xFFFF when unreachable;
``script(plan, a)`` is the controller byte of each of those frames.
"""

from typing import NamedTuple

import numpy as np
from numba import prange
from numba.cpython.unsafe.numbers import trailing_zeros

from vecsim.core.jit import exact
from vecsim.core.scratch import numba_threads
from vecsim.core.symbol_call import by_symbol
from vecsim.games.drmario import BUTTONS, rules
from vecsim.games.drmario.state import REACH_OPEN, REACH_SIZE
from vecsim.games.drmario.tables import BASE_SPEED, BTN_A, BTN_B, BTN_DOWN, BTN_LEFT, BTN_RIGHT, SPEED_TABLE

N_ACTIONS = 512
UNREACHABLE = 0xFFFF
#: (4,) int64: the d-pad part of ``BUTTONS`` (no d-pad, Left, Right, Down), each with 4 A/B variants.
DPAD = BUTTONS[::4] & 15


class Plan(NamedTuple):
    feasible_mask: np.ndarray  # (512,) bool
    cost_to_lock: np.ndarray  # (512,) uint16: frames to lock, 0xFFFF unreachable
    parent: np.ndarray  # (M,) int64: search tree, the parent node of each visited node
    button: np.ndarray  # (M,) uint8: the controller byte that led to each node
    lock_node: np.ndarray  # (512,) int64: the node before the locking frame, -1 for the root
    lock_button: np.ndarray  # (512,) uint8: the controller byte of the locking frame


@exact(inline="always")
def class_held(c):
    lr = c // 4
    return (BTN_LEFT if lr == 1 else (BTN_RIGHT if lr == 2 else 0)) | ((c % 4) << 6)


@exact(inline="always")
def pose_action(x, y, rot):
    """The 512-action index of lock pose (x, y from the bottom, rot), -1 if a half is outside."""
    row = 15 - y
    if rot == 0:
        return row * 8 + x
    if rot == 1:
        return 3 * 128 + row * 8 + x if row >= 1 else -1
    if rot == 2:
        return 2 * 128 + row * 8 + x + 1
    return 128 + (row - 1) * 8 + x if row >= 1 else -1


@exact
def fit_table(board, i, fit):
    """``fit[r, y + 1, x + 1]`` (2, 17, 10) bool: the fit test of a pill with rotation parity
    ``r`` at (x, y) for x in -1..8, y in -1..15 on the bottle as it is (no just-locked pill)."""
    for r in range(2):
        for y in range(-1, 16):
            for x in range(-1, 9):
                fit[r, y + 1, x + 1] = rules.fits(board, i, x, y, r)


@exact(inline="always")
def fits_at(fit, x, y, rot):
    return fit[rot & 1, y + 1, x + 1]


@exact(inline="always")
def rotate_fit(fit, x, y, rot, held):
    """``rules.rotate_to`` on a fit table: ``(ok, x)``."""
    if rot & 1:
        return fits_at(fit, x, y, rot), x
    if fits_at(fit, x, y, rot):
        if (held & BTN_LEFT) and fits_at(fit, x - 1, y, rot):
            return True, x - 1
        return True, x
    if fits_at(fit, x - 1, y, rot):
        return True, x - 1
    return False, x


#: Columns of a pose's row of ``pose_moves``: the turns (``TURN + 4 * left_held + ab``), a
#: drop, a step left or right, the pose's action, its lock bit (``lock_reach``).
TURN, DROP, LEFT, RIGHT, ACTION, LOCK = 0, 8, 9, 10, 11, 12
#: ``pose_moves``'s row length and the codes of a blocked step: by a tile (the charge goes to
#: 15) or by the wall (the charge is kept).
MOVES_ROW, BLOCKED, WALL = 16, -1, -2


@exact
def pose_moves(fit, moves):
    """``moves`` (512 * 16,) int16: row ``p`` (the pose ``x + 8 * y + 128 * rot``) holds each
    stage of the falling-pill pass from that pose on the fit table ``fit``, so a search frame
    is table reads. ``TURN + 4 * left_held + ab``: the pose after pressing the A/B bits ``ab`` (a
    controller byte's bits 6-7: 1 B, 2 A; A turns before B, a rejected B undoing A; the pose
    itself when nothing turns); ``DROP``: the
    pose a row below, ``BLOCKED`` when the pill locks; ``LEFT``, ``RIGHT``: the pose a column
    over, ``BLOCKED`` or ``WALL``; ``ACTION``: ``pose_action``; ``LOCK``: -1 (``lock_reach``
    numbers the lock poses). Rows of poses that do not fit are left as they are."""
    for p in range(512):
        x, y, rot = p % 8, (p // 8) % 16, p // 128
        if not fits_at(fit, x, y, rot):
            continue
        row = p * MOVES_ROW
        for lh in range(2):
            held = BTN_LEFT if lh else 0
            for ab in range(4):
                nx, nrot = x, rot
                if ab & (BTN_A >> 6):
                    ok, nx = rotate_fit(fit, nx, y, (nrot - 1) & 3, held)
                    if ok:
                        nrot = (nrot - 1) & 3
                    else:
                        nx = x
                if ab & (BTN_B >> 6):
                    ok, nx = rotate_fit(fit, nx, y, (nrot + 1) & 3, held)
                    if ok:
                        nrot = (nrot + 1) & 3
                    else:
                        nx, nrot = x, rot
                moves[row + TURN + 4 * lh + ab] = nx + 8 * y + 128 * nrot
        moves[row + DROP] = p - 8 if y > 0 and fits_at(fit, x, y - 1, rot) else BLOCKED
        moves[row + LEFT] = WALL if x == 0 else (p - 1 if fits_at(fit, x - 1, y, rot) else BLOCKED)
        moves[row + RIGHT] = WALL if x == 6 + (rot & 1) else (p + 1 if fits_at(fit, x + 1, y, rot) else BLOCKED)
        moves[row + ACTION] = pose_action(x, y, rot)
        moves[row + LOCK] = -1


@exact(inline="always")
def pose_move(moves, p, m):
    """The pose after move ``m`` of the pose graph from pose ``p`` (a row of ``pose_moves``),
    -1 when the move is blocked: 0 a drop, 1 left, 2 right, 3-6 a rotation (3, 4 A; 5, 6 B;
    3 and 5 with Left held)."""
    row = p * MOVES_ROW
    if m < 3:
        q = moves[row + (DROP, LEFT, RIGHT)[m]]
        return q if q >= 0 else -1
    q = moves[row + TURN + (4 if m % 2 == 1 else 0) + ((BTN_A if m < 5 else BTN_B) >> 6)]
    return q if q != p else -1


@exact(inline="always")
def is_lock_pose(fit, x, y, rot):
    return fits_at(fit, x, y, rot) and (y == 0 or not fits_at(fit, x, y - 1, rot))


#: The pose graph: the pill's moves with timing left out over the 512 poses
#: ``x + 8 * y + 128 * rot`` (``pose_move``): a drop, a step left or right, a rotation A or B
#: with or without Left held (its extra left). Every frame of the game is a path of it, so a
#: pose with no path to a lock pose has none in the game.
POSE_MOVES = 7


@exact
def lock_reach(fit, moves, seen, locks, reach):
    """Number the lock poses among the poses ``seen`` (512,) marks (``reachable_locks``) by row,
    the highest first (``locks`` (512,) int64: ``locks[k]`` is the pose of bit ``k``; ``moves[p *
    MOVES_ROW + LOCK]`` the bit of lock pose ``p``), and set ``reach[p * words:(p + 1) * words]``
    (``reach`` (``REACH_SIZE``,) uint64) to the bits of the lock poses each marked pose ``p`` has
    a path to. Returns the number of lock poses; ``words`` is ``max(1, ceil(count / 64))``.

    A drop is the only move between rows, so rows go bottom up: a pose reaches its own lock
    bit and what the pose below it reaches, then steps and rotations within its row pass bits
    on until none changes."""
    count = 0
    for y in range(15, -1, -1):
        for p in range(8 * y, 512, 128):
            for x in range(8):
                q = p + x
                if seen[q] and is_lock_pose(fit, x, y, q >> 7) and moves[q * MOVES_ROW + ACTION] >= 0:
                    moves[q * MOVES_ROW + LOCK] = count
                    locks[count] = q
                    count += 1
    words = max(1, (count + 63) >> 6)
    if words == 1:
        pass_lock_bits(moves, seen, reach, 1)  # the common case, its word loops compiled away
    else:
        pass_lock_bits(moves, seen, reach, words)
    return count


@exact(inline="always")
def pass_lock_bits(moves, seen, reach, words):
    """``lock_reach``'s bits of each pose, row by row from the bottom, on its lock numbering."""
    for y in range(16):
        for p in range(8 * y, 512, 128):
            for q in range(p, p + 8):
                if not seen[q]:
                    continue
                below = moves[q * MOVES_ROW + DROP]
                for w in range(words):
                    reach[q * words + w] = 0
                    if below >= 0:  # (a conditional expression would pass the bits through float64)
                        reach[q * words + w] = reach[below * words + w]
                k = moves[q * MOVES_ROW + LOCK]
                if k >= 0:
                    reach[q * words + (k >> 6)] |= np.uint64(1) << np.uint64(k & 63)
            spread_steps(moves, seen, reach, p, words)
        while True:
            changed = False
            for p in range(8 * y, 512, 128):
                for q in range(p, p + 8):
                    if not seen[q]:
                        continue
                    for turn in (1, 2, 5, 6):  # A or B, with Left held or not
                        t = moves[q * MOVES_ROW + TURN + turn]
                        if t == q:
                            continue
                        for w in range(words):
                            bits = reach[q * words + w] | reach[t * words + w]
                            if bits != reach[q * words + w]:
                                reach[q * words + w] = bits
                                changed = True
            if not changed:
                break
            for p in range(8 * y, 512, 128):
                spread_steps(moves, seen, reach, p, words)


@exact(inline="always")
def spread_steps(moves, seen, reach, p, words):
    """The lock bits of the poses ``p..p + 7`` (a row of one rotation) passed on by steps left
    and right: a run of poses the pill steps between shares them."""
    for q in range(p + 1, p + 8):
        if seen[q] and moves[q * MOVES_ROW + LEFT] == q - 1:
            for w in range(words):
                reach[q * words + w] |= reach[(q - 1) * words + w]
    for q in range(p + 6, p - 1, -1):
        if seen[q] and moves[q * MOVES_ROW + RIGHT] == q + 1:
            for w in range(words):
                reach[q * words + w] |= reach[(q + 1) * words + w]


@exact(inline="always")
def highest_open_row(reach, locks, p, words):
    """The highest row of a lock pose still without a cost that pose ``p`` has a path to
    (``lock_reach``), -1 when it has none."""
    for w in range(words):
        bits = reach[p * words + w] & reach[REACH_OPEN + w]
        if bits != 0:
            return (locks[64 * w + trailing_zeros(bits)] >> 3) & 15
    return -1


@exact
def reachable_locks(fit, moves, x0, y0, rot0, threshold, cost, seen, queue):
    """``(count, bound)``: the number of actions whose lock pose the pose graph reaches from
    the pose (x0, y0, rot0), and the largest lower bound on frames to lock of those still
    without a cost in ``cost`` (``frames_to_lock`` for the rows; two frames a column to the
    right, as rotations move the pill only left and a Right press or repeat comes at most
    every other frame), on ``pose_moves``'s table ``moves``. ``seen`` and ``queue`` (512,) are
    scratch."""
    for p in range(512):
        seen[p] = 0
    p0 = x0 + 8 * y0 + 128 * rot0
    seen[p0] = 1
    queue[0] = p0
    head, tail = 0, 1
    count = bound = 0
    while head < tail:
        p = queue[head]
        head += 1
        x, y, rot = p % 8, (p // 8) % 16, p // 128
        if is_lock_pose(fit, x, y, rot) and pose_action(x, y, rot) >= 0:
            count += 1
            if cost[pose_action(x, y, rot)] == UNREACHABLE:
                bound = max(bound, frames_to_lock(y0 - y, threshold), 2 * (x - x0))
        for m in range(7):
            q = pose_move(moves, p, m)
            if q >= 0 and seen[q] == 0:
                seen[q] = 1
                queue[tail] = q
                tail += 1
    return count, bound


@exact(inline="always")
def frames_to_lock(rows, threshold):
    """A lower bound on the frames from a node to a lock ``rows`` rows below it: a row falls
    every frame at T = 0; else soft drops come on odd frames and gravity every T + 1 frames,
    so only the first fall can follow another by one frame."""
    if threshold == 0:
        return rows + 1
    return max(1, 2 * rows)


@exact(inline="always")
def node_slot(x, y, rot, sc, hv, lr, ab, parity):
    """The packed search node, its bit in the visited bitmap: bits 0-1 A/B held, 2-3 direction
    held (0 none, 1 Left, 2 Right), 4-6 x, 7-10 y, 11-12 rot, 13-16 sideways charge, 17 frame
    parity, 18 on the gravity counter. A pose's held buttons share one 16-bit word of the
    bitmap, so the dominance tests read one word (two for Right held with a charge). The
    charge is dropped (0) where no future reads it: no direction held last frame (the next
    press resets it), or Left held at column 0 (every Left repeat hits the wall, Right is a
    fresh press, a rotation cannot move the pill right)."""
    if lr == 0 or (lr == 1 and x == 0):
        hv = 0
    return (((((((sc * 2 + parity) * 16 + hv) * 4 + rot) * 16 + y) * 8 + x) * 4 + lr) * 4) + ab


#: The units of the direction and charge fields in ``node_slot``.
LR_BIT, HV_BIT = 1 << 2, 1 << 13
#: ``node_slot`` less its direction and charge: the slot of a node's idle twin
#: (``search_within``), whose visited word marks the twins expanded in its unused nibble.
TWIN_KEY = ~(3 * LR_BIT | 15 * HV_BIT)
#: The unused nibble of a visited word (direction 3).
TWIN_NIBBLE = 12
#: Nibble ``ab`` of this: the A/B bit sets that are subsets of ``ab`` (bit ``ab'`` for set ``ab'``).
AB_SUBSETS = 0xF531


@exact(inline="always")
def dominated(visited, slot, ab, lr, itself):
    """Whether a visited node (of the same parity, so reached no later) dominates node
    ``slot`` (A/B bits ``ab``, direction ``lr`` held), the node itself counted when ``itself``:
    the same with a subset of its A/B bits held, or, where it held Right, also with no
    direction held. Right held without a repeat does nothing a frame without it does not, and
    a repeat moves as a fresh press does: each input from the node has a counterpart from the
    other with the same presses and pose, Right left out of the frames without a repeat.
    ``visited`` is a bitmap of ``node_slot`` in uint16 words."""
    subsets = (AB_SUBSETS >> (4 * ab)) & 15
    own = subsets if itself else subsets & ~(1 << ab)
    if (visited[slot >> 4] >> (4 * lr)) & own:
        return True
    if lr == 2:
        idle = slot - 2 * LR_BIT - ((slot >> 13) & 15) * HV_BIT
        return (visited[idle >> 4] & subsets) != 0
    return False


@exact
def clear_twin_marks(visited, node_slots, lo, hi):
    """Clear the twin marks (``TWIN_KEY``) of nodes ``lo..hi-1``; node 0, the root, sets none."""
    for k in range(max(lo, 1), hi):
        visited[(node_slots[k] & TWIN_KEY) >> 4] &= np.uint16(~(15 << TWIN_NIBBLE) & 0xFFFF)


@exact
def greedy_fall(threshold, sc0, fc0, rows):
    """The frame of the earliest drop attempt that can end a fall of ``rows`` rows: Down
    held on every soft-drop frame, gravity firing on the others, is the schedule that makes
    every drop attempt its earliest (no schedule makes its j-th attempt sooner)."""
    sc, d, k = sc0, 0, 0
    while True:
        k += 1
        sc += 1
        if (((fc0 + k) & 1) == 1 and threshold > 0) or sc > threshold:
            sc = 0
            if d == rows:
                return k
            d += 1


#: Frames added to ``reachable_locks``'s bound for the horizons of ``search``'s runs after the
#: runs by lag, tried in turn.
HORIZON_SLACKS = (2, 6)
#: Greedy runs by lag (``search``): the first holds Down on every soft-drop frame, each next
#: one starts from the frames the one before skipped a soft drop on.
LAG_RUNS = 4
#: A seed's depth sits above its slot (``node_slot`` < 2**25 for T < 128).
SEED_DEPTH = 25
SEED_SLOT = (1 << SEED_DEPTH) - 1


@exact(inline="always")
def steps_in_time(reach, locks, p, words, fall, depth):
    """Whether pose ``p``, on frame layer ``depth`` of a run by lag, has a path to a lock pose
    still without a cost at most as many columns right of it as one step every other frame
    allows before ``fall[row]``, the last run's frame of a lock on that row (``search_within``)."""
    for w in range(words):
        bits = reach[p * words + w] & reach[REACH_OPEN + w]
        while bits != 0:
            q = locks[64 * w + trailing_zeros(bits)]
            if 2 * ((q & 7) - (p & 7)) <= fall[(q >> 3) & 15] - depth:
                return True
            bits &= bits - np.uint64(1)
    return False


@by_symbol
@exact
def search(board, i, threshold, x0, y0, rot0, sc0, hv0, held0, fc0,
           cost, lock_node, lock_button, parent, button, node_slots, visited, fit, locks, reach, moves, seen,
           queue):
    """The breadth-first search, by frame layers. ``fc0`` is the frame counter before the
    first frame. ``visited`` ((T + 1) << 14,) uint16 is a bitmap of ``node_slot``, all 0 on
    entry; the node arrays (``parent``, ``button``, ``node_slots``) must hold every visited
    node; ``fit`` (2, 17, 10), ``locks`` (512,), ``reach`` (``REACH_SIZE``,) uint64, ``moves``
    (512 * 16,) int16, ``seen`` and ``queue`` (512,) are scratch. Returns the number of
    visited nodes (0 is the root), or -n when they overflow the node arrays (``visited`` is
    then left marked: clear it with ``clear_visited``).

    Runs by lag first. A node's lag is the number of drop attempts the greedy schedule (Down
    held on every soft-drop frame, ``greedy_fall``) has made by its frame and it has not; a
    lock's lag orders its frame (for one pose, more lag is a later lock). Lag grows by one on a
    soft-drop frame without a drop attempt and falls only when gravity fires on another frame,
    which takes T + 1 frames without one: after that it is at least (T - sc0) // 2 - 1. So
    below that bound a path's lag never falls, and runs by lag in turn (``LAG_RUNS`` at most),
    each by frame layers, find every pose at its fewest frames: run 0 holds Down on every
    soft-drop frame; a frame that skips a soft drop is the next run's seed; a pose locked in
    any run is final. The runs share the visited bitmap (a node first met in a run of less
    lag, or earlier in the same run, was reached no later), so no node is met twice.

    Then, while a lock pose of the pose graph (``reachable_locks``) is still without a cost,
    runs with horizons a little past the lower bound of ``reachable_locks`` on those left
    (``HORIZON_SLACKS``), then one no lock can pass: a row falls at least every T + 1 frames,
    so the pill locks within (y0 + 1) * (T + 1) frames. Every run's nodes stay in the tree
    (their scripts), each later one after those of the runs before; seeds wait at the top of
    the node arrays, their depth above their slot (``SEED_DEPTH``)."""
    for a in range(N_ACTIONS):
        cost[a] = UNREACHABLE
        lock_node[a] = -1
        lock_button[a] = 0
    fit_table(board, i, fit)
    pose_moves(fit, moves)
    # The count and ``seen`` only: no cost is known yet.
    targets, _ = reachable_locks(fit, moves, x0, y0, rot0, threshold, cost, seen, queue)
    n_locks = lock_reach(fit, moves, seen, locks, reach)
    latest = (y0 + 1) * (threshold + 1)
    runs = max(1, min(LAG_RUNS, (threshold - sc0) // 2 - 1))
    horizon = min(greedy_fall(threshold, sc0, fc0, y0) + 2 * runs, latest)
    cap = parent.shape[0]
    seed_read = top = cap
    for r in range(y0 + 1):  # the lock frames of the last run (``search_within``'s steps-right rule)
        queue[r] = greedy_fall(threshold, sc0, fc0, y0 - r + runs - 1)
    n, left = np.int64(1), targets  # not a constant: the runs below then share one search_within
    for lag in range(runs):
        n, left, new_top = search_within(threshold, x0, y0, rot0, sc0, hv0, held0, fc0, targets, horizon,
                                         n, lag == 0, lag, runs, seed_read, top, cost, lock_node,
                                         lock_button, parent, button, node_slots, visited, locks, reach, n_locks,
                                         moves, queue)
        seed_read, top = top, new_top
        if n < 0 or left == 0:
            break
    for k in range(top, cap):  # seeds left over, and the copies of those taken
        visited[(node_slots[k] & SEED_SLOT) >> 4] = 0
    if n < 0 or left == 0 or threshold == 0:
        return n  # at T = 0 every frame drops, so the greedy run held nothing back
    first = n
    _, bound = reachable_locks(fit, moves, x0, y0, rot0, threshold, cost, seen, queue)
    for tier in range(len(HORIZON_SLACKS) + 1):
        horizon = min(bound + HORIZON_SLACKS[tier], latest) if tier < len(HORIZON_SLACKS) else latest
        clear_visited(visited, node_slots, n)
        n, left, _ = search_within(threshold, x0, y0, rot0, sc0, hv0, held0, fc0, targets, horizon, first, True,
                                   -1, 0, cap, cap, cost, lock_node, lock_button, parent, button,
                                   node_slots, visited, locks, reach, n_locks, moves, queue)
        if n < 0 or left == 0 or horizon == latest:
            break
    return n


@exact(per_constant=True)  # specialised for the horizon runs' constant root, lag and runs
def search_within(threshold, x0, y0, rot0, sc0, hv0, held0, fc0, targets, horizon, first, root, lag, runs,
                  seed_read, seed_top, cost, lock_node, lock_button, parent, button, node_slots, visited, locks,
                  reach, n_locks, moves, fall):
    """``search`` up to ``horizon`` frames on the fit table and pose graph ``search`` built,
    stopping once ``targets`` actions have a cost. Nodes ``1..first-1`` are earlier runs', whose
    costs ``cost`` holds (``search`` resets it first) and keeps; this run's nodes follow them,
    from the root when ``root``, and from the seeds ``seed_read - 1`` down to ``seed_top`` of
    the node arrays, which join their frame layer. ``lag`` >= 0: the run of that lag of
    ``runs`` (``search``), Down held on every soft-drop frame; its inputs that skip a soft drop
    become the next run's seeds below ``seed_top`` when one follows, else are dropped; ``lag``
    -1: a horizon run. ``fall`` (16,) int64: the frame of a lock on each row in the last run
    by lag. Returns ``(n, left, top)``: the
    visited node count (``search``'s, -n on overflow), how many of the ``targets`` have no
    cost, and the lowest seed written. Every cost up to ``horizon`` is exact (a greedy run's
    as ``search`` says), and with ``left == 0`` every cost is.

    The unpruned search's costs with fewer nodes and inputs, each rule exact:

    * a node is not expanded when a node of the same parity, pose, counters and held
      direction was reached no later with a subset of its A/B bits held (every input from it
      has a counterpart, the same input less those bits, with the same presses), nor one
      that held Right when one that held no direction was (``dominated``);
    * an input holding an A/B bit already held gives the successor of the same input without
      it, less the bit: skipped;
    * the sideways charge is canonical where nothing reads it (``node_slot``);
    * a counter that cannot fire before the horizon (the gravity counter reaching T + 1, the
      charge reaching 16) is stored as 0, which cannot either: within the horizon both
      nodes play out the same; so are both in a run by lag while neither can fire before the
      path's next drop: a path there skips at most ``runs - 1 - lag`` more soft drops (the last
      run keeps no seeds), so within ``2 * (runs - lag)`` frames it presses Down on a
      soft-drop frame, which drops the pill (resetting the gravity counter) and releases the
      direction held;
    * Down alone on an even frame (or at T = 0) gives the no-d-pad input's successors;
    * a locking frame's X and rotate stages are not run (the lock pose is the one before);
    * twins, nodes of one layer alike but for holding no direction or Left and the charge,
      give the same successors for no d-pad, Down and Right (a fresh press for both): a twin
      expanded after another skips those inputs, whose nodes are then all visited (the
      expanded twins are marked in the unused nibble of the idle twin's visited word, cleared
      at the layer's end);
    * a node whose pose has no path to a lock pose still without a cost is not expanded (the
      lock bits of ``lock_reach`` against those of the ``n_locks`` lock poses without one):
      costs found are final, and every frame is a path of the pose graph; nor one that
      cannot fall to the highest of them before the horizon (``frames_to_lock``);
    * in a run by lag, a path makes its drop attempts on the greedy schedule's frames, ``lag``
      attempts behind it (the lag neither grows, which makes a seed, nor falls), so it locks
      a pose on row r on frame ``greedy_fall(T, sc0, fc0, y0 - r + lag)``, and its seeds'
      paths in later runs lock it later, by the last run's frame ``fall[r]`` at the latest; a
      step right comes at most every other frame (rotations move the pill only left) and
      not on the locking frame: from the second run on, a node is not expanded when every
      lock pose still without a cost it has a path to lies further right than the frames to
      ``fall`` allow;
    * the search ends when every action with a lock pose in the pose graph has a cost.
    """
    left = targets
    for a in range(N_ACTIONS):
        if cost[a] != UNREACHABLE:
            left -= 1  # found by an earlier run (a lock from the root too), final
    if left == 0:
        return first, 0, seed_top
    words = max(1, (n_locks + 63) >> 6)
    greedy = lag >= 0
    seeding = lag + 1 < runs
    for w in range(words):
        reach[REACH_OPEN + w] = 0
    for k in range(n_locks):
        if cost[moves[locks[k] * MOVES_ROW + ACTION]] == UNREACHABLE:
            reach[REACH_OPEN + (k >> 6)] |= np.uint64(1) << np.uint64(k & 63)
    n = first
    parent[0] = -1
    button[0] = 0
    node_slots[0] = -1
    head = 0 if root else first
    depth = -1
    layer_start = layer_end = head  # this frame layer's first node, the next one's
    seeds_end = seed_top  # this run's seeds are seed_read - 1 down to seeds_end, by depth
    top = seed_top  # the next run's seeds go below it
    while True:
        if head == layer_end:
            clear_twin_marks(visited, node_slots, layer_start, layer_end)
            layer_start = layer_end
            if head == n and seed_read == seeds_end:
                break
            depth += 1
            if depth == horizon:
                break
            while seed_read > seeds_end and node_slots[seed_read - 1] >> SEED_DEPTH == depth:
                if n == top:
                    return -n, left, top
                seed_read -= 1  # the seeds of this depth join the layer
                parent[n] = parent[seed_read]
                button[n] = button[seed_read]
                node_slots[n] = node_slots[seed_read] & SEED_SLOT
                n += 1
            layer_end = n
            if head == layer_end:
                continue
        skip_shared = False
        if head == 0:
            p, sc, hv, held_prev = x0 + 8 * y0 + 128 * rot0, sc0, hv0, held0
            y = y0
        else:
            k = node_slots[head]
            ab = k & 3
            lr = (k >> 2) & 3
            p = (k >> 4) & 511
            y = (p >> 3) & 15
            hv = (k >> 13) & 15
            sc = k >> 18
            held_prev = class_held(lr * 4 + ab)
            highest = highest_open_row(reach, locks, p, words)
            if highest < 0 or depth + frames_to_lock(y - highest, threshold) > horizon:
                head += 1
                continue
            if lag >= 1 and not steps_in_time(reach, locks, p, words, fall, depth):
                head += 1
                continue
            # Its layer is complete now: skip it if a node that dominates it joined it.
            if dominated(visited, k, ab, lr, False):
                head += 1
                continue
            if lr != 2:
                w = (k & TWIN_KEY) >> 4
                mark = np.uint16(1 << (TWIN_NIBBLE + ab))
                skip_shared = np.int64(visited[w] & mark) != 0  # an int64 test (uint64 against 0 compares in float64)
                visited[w] |= mark
        held_ab = (held_prev >> 6) & 3
        fc = (fc0 + depth + 1) & 255
        parity = (depth + 1) & 1
        soft_frame = (fc & 1) == 1 and threshold > 0
        # Y stage without a soft drop (shared by every input but Down alone).
        g_sc = sc + 1
        g_drop = g_sc > threshold
        for d in range(4):
            dpad = DPAD[d]
            soft = dpad == BTN_DOWN
            if soft and not soft_frame:
                continue  # the same successors as no d-pad
            # On a soft-drop frame an input without a drop attempt is a greedy run's skip:
            # its successors are the next run's seeds, or dropped when there is none.
            skip = greedy and soft_frame and not soft and not g_drop
            if skip and not seeding:
                continue
            if skip_shared and d != 1:
                continue  # a twin expanded before gave these successors
            p1 = p
            if soft or g_drop:
                nsc = 0
                q = moves[p * MOVES_ROW + DROP]
                if q < 0:
                    a = moves[p * MOVES_ROW + ACTION]  # every A/B variant locks the same pose
                    if a >= 0 and cost[a] == UNREACHABLE:
                        cost[a] = depth + 1
                        k = moves[p * MOVES_ROW + LOCK]
                        reach[REACH_OPEN + (k >> 6)] &= ~(np.uint64(1) << np.uint64(k & 63))
                        lock_node[a] = head
                        lock_button[a] = dpad
                        left -= 1
                        if left == 0:
                            clear_twin_marks(visited, node_slots, layer_start, head + 1)
                            return n, 0, top
                    continue
                p1 = q
            else:
                nsc = g_sc
            # A run by lag's node with no gravity before its next drop: its counters are canonical.
            calm = greedy and nsc + 2 * (runs - lag) <= threshold
            if calm or depth + 1 + threshold + 1 - nsc > horizon:
                nsc = 0
            # X stage, shared by the four A/B variants.
            p2, mhv = p1, hv
            lr = 0
            if dpad == BTN_LEFT or dpad == BTN_RIGHT:
                lr = 1 if dpad == BTN_LEFT else 2
                move = False
                if dpad & ~held_prev:
                    mhv = 0
                    move = True
                else:
                    mhv += 1
                    if mhv >= 16:
                        mhv = 10
                        move = True
                if move:
                    q = moves[p1 * MOVES_ROW + (LEFT if lr == 1 else RIGHT)]
                    if q >= 0:
                        p2 = q
                    elif q == BLOCKED:
                        mhv = 15
                if lr == 2 and p2 == p1:
                    continue  # dominated by the no-d-pad input's successors (``dominated``)
                if depth + 1 + 16 - mhv > horizon or (calm and mhv + 2 * (runs - lag) <= 16):
                    mhv = 0
            turns = p2 * MOVES_ROW + TURN + (4 if lr == 1 else 0)
            for ab in range(4):
                if ab & held_ab:
                    continue  # the same successor as without the A/B bits already held
                q = moves[turns + ab]
                if ab != 0 and q == p2:
                    continue  # the A/B-free input's successor with more bits held: dominated
                slot = node_slot(q & 7, (q >> 3) & 15, q >> 7, nsc, mhv, lr, ab, parity)
                if dominated(visited, slot, ab, lr, True):
                    continue
                if n == top:
                    clear_twin_marks(visited, node_slots, layer_start, head + 1)
                    return -n, left, top
                visited[slot >> 4] |= np.uint16(1 << (slot & 15))
                k = n
                if skip:
                    top -= 1
                    k = top
                    slot |= (depth + 1) << SEED_DEPTH
                else:
                    n += 1
                parent[k] = head
                button[k] = dpad | (ab << 6)
                node_slots[k] = slot
        head = first if head == 0 else head + 1
    clear_twin_marks(visited, node_slots, layer_start, head)
    return n, left, top


@exact
def clear_visited(visited, node_slots, n):
    """Unmark the visited slots of nodes ``1..n-1``."""
    for k in range(1, n):
        visited[node_slots[k] >> 4] = 0


class Planner:
    """Reusable scratch for ``plan``: the visited bitmap, the fit table and the search tree's
    node arrays (their capacity doubles when a search overflows it)."""

    def __init__(self):
        self._visited = np.zeros(0, np.uint16)
        self._fit = np.zeros((2, 17, 10), np.bool_)
        self._locks = np.zeros(512, np.int64)
        self._reach = np.zeros(REACH_SIZE, np.uint64)
        self._moves = np.zeros(512 * MOVES_ROW, np.int16)
        self._seen = np.zeros(512, np.uint8)
        self._queue = np.zeros(512, np.int64)
        self._grow(1 << 15)

    def _grow(self, capacity: int):
        self._parent = np.empty(capacity, np.int64)
        self._button = np.empty(capacity, np.uint8)
        self._keys = np.empty(capacity, np.int64)

    def _scratch(self, threshold: int):
        size = (threshold + 1) << 14
        if self._visited.shape[0] < size:
            self._visited = np.zeros(size, np.uint16)
        return self._visited


def plan(state, i: int, planner: Planner | None = None) -> Plan:
    """Plan env ``i`` of a Dr. Mario ``State`` at its decision point.

    Raises ``ValueError`` when env ``i`` is not at a decision point (its pill is not falling)."""
    if not 0 <= int(i) < state.x.shape[0]:
        raise ValueError(f"plan env index must be in [0, {state.x.shape[0]}), but got i={i}")
    if state.next_action[i] != rules.FALLING or state.outcome[i] != rules.PLAYING:
        raise ValueError(f"plan needs env {i} with a falling pill, but its next_action is "
                         f"{int(state.next_action[i])} and its outcome {int(state.outcome[i])}")
    planner = planner or Planner()
    threshold = int(SPEED_TABLE[BASE_SPEED[state.speed[i]] + state.speed_ups[i]])
    visited = planner._scratch(threshold)
    cost = np.empty(N_ACTIONS, np.uint16)
    lock_node = np.empty(N_ACTIONS, np.int64)
    lock_button = np.empty(N_ACTIONS, np.uint8)
    while True:
        parent, button, keys = planner._parent, planner._button, planner._keys
        n = search(state.board, i, threshold, state.x[i], state.y[i], state.rot[i], state.speed_counter[i],
                   state.hor_velocity[i], state.held[i], state.fc[i], cost, lock_node, lock_button,
                   parent, button, keys, visited, planner._fit, planner._locks, planner._reach,
                   planner._moves, planner._seen, planner._queue)
        clear_visited(visited, keys, abs(n))
        if n > 0:
            break
        planner._grow(2 * parent.shape[0])
    return Plan(cost != UNREACHABLE, cost, parent[:n].copy(), button[:n].copy(), lock_node, lock_button)


def script(p: Plan, action: int) -> np.ndarray:
    """``(cost_to_lock[action],) uint8``: the controller byte of each frame to lock ``action``."""
    if not 0 <= int(action) < N_ACTIONS:
        raise ValueError(f"script action must be in [0, {N_ACTIONS}), but got action={action}")
    if not p.feasible_mask[action]:
        raise ValueError(f"script action {action} is not reachable (its cost_to_lock is 0xFFFF)")
    out = [int(p.lock_button[action])]
    node = int(p.lock_node[action])
    while node > 0:
        out.append(int(p.button[node]))
        node = int(p.parent[node])
    return np.array(out[::-1], np.uint8)


@exact
def search_run(board, envs, lo, hi, thresholds, x, y, rot, sc, hv, held, fc, cost, lock_node, lock_button,
               overflow, parent, button, node_slots, visited, fit, locks, reach, moves, seen, queue):
    """``search`` for envs ``envs[lo:hi]`` in turn on one set of scratch arrays, costs into
    ``cost[j]`` (512,); ``overflow[j]`` set when env ``envs[j]``'s nodes overflow the node
    arrays (its costs are then not final)."""
    for j in range(lo, hi):
        i = envs[j]
        n = search(board, i, thresholds[j], x[i], y[i], rot[i], sc[i], hv[i], held[i], fc[i], cost[j], lock_node,
                   lock_button, parent, button, node_slots, visited, fit, locks, reach, moves, seen, queue)
        clear_visited(visited, node_slots, abs(n))
        overflow[j] = n < 0


@exact(parallel=True)
def search_envs(board, envs, thresholds, x, y, rot, sc, hv, held, fc, cost, lock_node, lock_button, overflow,
                parent, button, node_slots, visited, fit, locks, reach, moves, seen, queue):
    """``search_run`` over ``envs`` (M,) in ``C`` contiguous runs on Numba's threads, run ``c``
    on row ``c`` of every scratch array (``parent``, ``button``, ``node_slots`` (C, K);
    ``visited`` (C, (T + 1) << 14) uint16 for the largest T; ``fit`` (C, 2, 17, 10); ``reach``
    (C, ``REACH_SIZE``) uint64; ``moves`` (C, 512 * 16) int16; ``locks``, ``seen``, ``queue``,
    ``lock_button``, ``lock_node`` (C, 512)). Each env's search is the same whichever run holds it."""
    m, runs = envs.shape[0], parent.shape[0]
    for c in prange(runs):
        search_run(board, envs, c * m // runs, (c + 1) * m // runs, thresholds, x, y, rot, sc, hv, held, fc, cost,
                   lock_node[c], lock_button[c], overflow, parent[c], button[c], node_slots[c], visited[c], fit[c],
                   locks[c], reach[c], moves[c], seen[c], queue[c])


class EnvsPlanner:
    """Reusable scratch for ``plan_envs``: one set of ``Planner`` arrays per thread run."""

    def __init__(self):
        self._runs = 0
        self._capacity = 1 << 15
        self._visited = np.zeros((0, 0), np.uint16)

    def _scratch(self, runs: int, threshold: int):
        size = (threshold + 1) << 14
        if self._runs != runs or self._visited.shape[1] < size:
            self._visited = np.zeros((runs, max(size, self._visited.shape[1])), np.uint16)
        if self._runs != runs:
            self._runs = runs
            self._fit = np.zeros((runs, 2, 17, 10), np.bool_)
            self._locks = np.zeros((runs, 512), np.int64)
            self._reach = np.zeros((runs, REACH_SIZE), np.uint64)
            self._moves = np.zeros((runs, 512 * MOVES_ROW), np.int16)
            self._seen = np.zeros((runs, 512), np.uint8)
            self._queue = np.zeros((runs, 512), np.int64)
            self._lock_node = np.zeros((runs, 512), np.int64)
            self._lock_button = np.zeros((runs, 512), np.uint8)
            self._grow(self._capacity)

    def _grow(self, capacity: int):
        self._capacity = capacity
        self._parent = np.empty((self._runs, capacity), np.int64)
        self._button = np.empty((self._runs, capacity), np.uint8)
        self._keys = np.empty((self._runs, capacity), np.int64)


def plan_envs(state, envs, planner: EnvsPlanner | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The feasibility masks and costs of ``plan`` for many envs of a Dr. Mario ``State`` in one
    call, the searches split over Numba's threads (the same results for any thread count).

    ``envs``: (M,) integer env indices, each at a decision point. Returns ``(feasible_mask,
    cost_to_lock)``: (M, 512) bool and (M, 512) uint16 (0xFFFF unreachable), row ``j`` for env
    ``envs[j]``. Raises ``ValueError`` for an index out of range or an env not at a decision
    point; scripts come from ``plan`` of one env."""
    envs = np.asarray(envs)
    num_envs = state.x.shape[0]
    if envs.ndim != 1 or not (envs.size == 0 or np.issubdtype(envs.dtype, np.integer)):
        raise TypeError(f"plan_envs envs must be a 1-D array of env indices, but got shape {envs.shape} "
                        f"and dtype {envs.dtype}")
    envs = envs.astype(np.int64)
    bad = (envs < 0) | (envs >= num_envs)
    if bad.any():
        raise ValueError(f"plan_envs env indices must be in [0, {num_envs}), but got {int(envs[bad][0])}")
    waiting = (state.next_action[envs] != rules.FALLING) | (state.outcome[envs] != rules.PLAYING)
    if waiting.any():
        i = int(envs[waiting][0])
        raise ValueError(f"plan_envs needs every env with a falling pill, but env {i} has next_action "
                         f"{int(state.next_action[i])} and outcome {int(state.outcome[i])}")
    planner = planner or EnvsPlanner()
    thresholds = SPEED_TABLE[BASE_SPEED[state.speed[envs]] + state.speed_ups[envs]].astype(np.int64)
    cost = np.empty((envs.size, N_ACTIONS), np.uint16)
    if envs.size == 0:
        return cost != UNREACHABLE, cost
    todo = np.arange(envs.size)
    while todo.size:
        runs = max(1, min(numba_threads(), todo.size))
        planner._scratch(runs, int(thresholds[todo].max()))
        part = np.empty((todo.size, N_ACTIONS), np.uint16)
        overflow = np.zeros(todo.size, np.bool_)
        p = planner
        search_envs(state.board, envs[todo], thresholds[todo], state.x, state.y, state.rot, state.speed_counter,
                    state.hor_velocity, state.held, state.fc, part, p._lock_node, p._lock_button, overflow, p._parent,
                    p._button, p._keys, p._visited, p._fit, p._locks, p._reach, p._moves, p._seen,
                    p._queue)
        cost[todo] = part
        todo = todo[overflow]
        if todo.size:
            planner._grow(2 * planner._capacity)
    return cost != UNREACHABLE, cost
