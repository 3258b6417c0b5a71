"""Dr. Mario's decision mode: a step is one placement, played out frame by frame on
``rules.frame`` from one decision point to the next, with the exact planner
(``vecsim.planners.drmario``) run inside the step for the new decision's costs.

A decision point is a falling pill that is controllable on the next frame (``next_action`` is
``FALLING``), as ``planners/drmario.py`` defines it. The search runs on the scratch rows of
the thread that steps the env (``vecsim.core.scratch``); the env keeps the paths of its tree
to the locks (``games/drmario/state.py``), from which the step reads the chosen placement's
script.
"""

import numpy as np

# A module alias: vecsim.planners.drmario imports this package, and its names are looked up
# when the kernels compile, after both modules finished importing.
import vecsim.planners.drmario as _planner
from vecsim.core.jit import exact
from vecsim.core.scratch import thread_row
from vecsim.core.symbol_call import by_symbol
from vecsim.games.drmario import rules
from vecsim.games.drmario.tables import EMPTY, VIRUS

UNREACHABLE = 0xFFFF
#: Frames one step may play before the episode ends with ``rules.TIMEOUT``: a placement and
#: the settling after it take a few hundred at the slowest gravity.
STEP_FRAME_CAP = 1 << 16


@exact
def search_env(s, i, r):
    """The planner's search from env ``i``'s decision point on thread scratch row ``r``:
    costs into ``s.cost_to_lock[i]``, each placement's lock node and input into the env's
    ``plan_lock_node`` and ``plan_lock_button``, the tree into the row. Returns the number of
    visited nodes (a search never outgrows ``NODE_CAPACITY``)."""
    n = _planner.search(s.board, i, rules.gravity_threshold(s, i), s.x[i], s.y[i], s.rot[i], s.speed_counter[i],
                        s.hor_velocity[i], s.held[i], s.fc[i], s.cost_to_lock[i], s.plan_lock_node[i],
                        s.plan_lock_button[i], s.search_parent[r], s.search_button[r], s.search_nodes[r],
                        s.search_visited[r], s.search_fit[r].reshape((2, 17, 10)), s.search_locks[r],
                        s.search_reach[r], s.search_moves[r], s.search_seen[r], s.search_queue[r])
    _planner.clear_visited(s.search_visited[r], s.search_nodes[r], abs(n))
    return n


@exact
def plan_env(s, i):
    """``search_env`` on this thread's scratch, then the paths of its tree to the locks kept
    in the env's ``plan_parent`` and ``plan_button`` for the step (``plan_kept``), renumbered
    in the order a walk from each lock up to the root first meets them, the lock nodes to
    match: work in the kept nodes, not in the tree's."""
    r = thread_row()
    n = search_env(s, i, r)
    # Once the visited bitmap is clear, a node's slot entry (>= 0) is free: a kept node's
    # becomes -2 - its new index.
    parent, button, mark = s.search_parent[r], s.search_button[r], s.search_nodes[r]
    capacity = s.plan_parent.shape[1]
    lock_node = s.plan_lock_node[i]
    m = 1  # the root keeps index 0
    if n > 0:
        for a in range(lock_node.shape[0]):
            k = lock_node[a]
            while k > 0 and mark[k] >= 0:
                new = m
                m += 1
                mark[k] = -2 - new
                up = parent[k]
                # The parent's index: the root's, its own if kept already, else the next one.
                up_new = 0 if up == 0 else (-2 - mark[up] if mark[up] < 0 else m)
                if new < capacity:
                    s.plan_parent[i, new] = up_new
                    s.plan_button[i, new] = button[k]
                k = up
    kept = n > 0 and m <= capacity
    if kept:
        s.plan_parent[i, 0] = -1
        s.plan_button[i, 0] = 0
        for a in range(lock_node.shape[0]):
            if lock_node[a] > 0:
                lock_node[a] = -2 - mark[lock_node[a]]
    s.plan_kept[i] = 1 if kept else 0
    return n


@exact
def script_from_tree(parent, button, node, lock_button, script):
    """The controller bytes of the path to tree node ``node``, then ``lock_button``, into
    ``script``; returns their count."""
    length = 1
    k = node
    while k > 0:
        length += 1
        k = parent[k]
    script[length - 1] = lock_button
    k, f = node, length - 2
    while k > 0:
        script[f] = button[k]
        k = parent[k]
        f -= 1
    return length


@by_symbol
@exact
def write_script(s, i, a):
    """Placement ``a``'s controller bytes into this thread's ``s.search_script``, read off the
    tree of the search its costs and mask come from (the env's kept tree, or the same search
    run again where it outgrew it); returns their count, its cost to lock, or 0 when that
    search locked no ``a``."""
    if s.plan_lock_node[i, a] < 0:
        return 0
    r = thread_row()
    if s.plan_kept[i] == 1:
        return script_from_tree(s.plan_parent[i], s.plan_button[i], s.plan_lock_node[i, a],
                                s.plan_lock_button[i, a], s.search_script[r])
    search_env(s, i, r)  # the same search: the same costs, its own lock nodes
    return script_from_tree(s.search_parent[r], s.search_button[r], s.plan_lock_node[i, a],
                            s.plan_lock_button[i, a], s.search_script[r])


@by_symbol
@exact
def play_to_decision(s, i, length, telemetry):
    """Play this thread's ``s.search_script[:length]`` (``write_script``), then frames with no
    input until the next decision point or the game's end (at most ``STEP_FRAME_CAP`` frames).
    Returns the frames played."""
    f = 0
    script = s.search_script[thread_row()]
    while f < STEP_FRAME_CAP:
        if f >= length and (s.outcome[i] != rules.PLAYING or s.next_action[i] == rules.FALLING):
            return f
        rules.frame(s, i, np.int64(script[f]) if f < length else np.int64(0), telemetry)
        f += 1
    if s.outcome[i] == rules.PLAYING:
        s.outcome[i] = rules.TIMEOUT
    return f


@exact
def write_outputs(s, i):
    """Decision mode's per-step outputs that are read off the state: colors, tiles cleared
    (from ``frame_events``, before they are emitted), viruses by color, column heights."""
    s.pill_colors[i, 0], s.pill_colors[i, 1] = s.falling[i] // 3, s.falling[i] % 3
    s.preview_colors[i, 0], s.preview_colors[i, 1] = s.next_pill[i] // 3, s.next_pill[i] % 3
    viruses, tiles = s.frame_events[i, rules.EV_VIRUSES], s.frame_events[i, rules.EV_TILES]
    s.tiles_cleared[i, 0], s.tiles_cleared[i, 1], s.tiles_cleared[i, 2] = viruses, tiles - viruses, tiles
    for c in range(3):
        s.viruses_by_color[i, c] = 0
    for c in range(8):
        s.column_heights[i, c] = 0
    for k in range(128):
        v = s.board[i, k]
        if v == EMPTY:
            continue
        if (v & 0xF0) == VIRUS and (v & 15) <= 2:
            s.viruses_by_color[i, v & 15] += 1
        col = k & 7
        s.column_heights[i, col] = max(s.column_heights[i, col], 16 - (k >> 3))
    top = 0
    for c in range(8):
        top = max(top, s.column_heights[i, c])
    s.max_height[i] = top


@by_symbol
@exact
def next_decision(s, i, max_frames):
    """At a decision point (or the game's end): the episode's frame cap, the new plan (no
    feasible placement ends the episode), and the outputs. ``max_frames`` 0: no cap."""
    if s.outcome[i] == rules.PLAYING and max_frames > 0 and s.frame_count[i] >= max_frames:
        s.outcome[i] = rules.TIMEOUT
    feasible = False
    if s.outcome[i] == rules.PLAYING:
        if plan_env(s, i) > 0:
            for a in range(s.cost_to_lock.shape[1]):
                if s.cost_to_lock[i, a] != UNREACHABLE:
                    feasible = True
                    break
        if not feasible:
            s.outcome[i] = rules.NO_PLACEMENT
    if not feasible:
        for a in range(s.cost_to_lock.shape[1]):
            s.cost_to_lock[i, a] = UNREACHABLE
    write_outputs(s, i)


@by_symbol
@exact
def reset_to_decision(s, i):
    """After ``rules.start_level``: the first throw, up to the first decision point and its
    plan; nothing of it counts as a step's events (nor against the frame cap)."""
    s.tau[i] = 0
    play_to_decision(s, i, 0, None)  # no telemetry given, as step_decision's call: one compile of it
    for k in range(rules.N_FRAME_EVENTS):
        s.frame_events[i, k] = 0
    next_decision(s, i, 0)


@by_symbol
@exact
def step_decision(s, i, a, max_frames, telemetry):
    """Play placement ``a`` (feasible: the engine refuses the others) and the game up to the
    next decision point; ``tau`` gets the frames played."""
    length = write_script(s, i, a)
    if length == 0:
        s.outcome[i] = rules.NO_PLACEMENT
    s.tau[i] = play_to_decision(s, i, length, telemetry) if length > 0 else 0
    next_decision(s, i, max_frames)


@exact
def write_feasible_mask(s, i, masks):
    for a in range(s.cost_to_lock.shape[1]):
        masks[i, a] = s.cost_to_lock[i, a] != UNREACHABLE


@exact
def refuse_decision(s, i):
    """A placement refused under ``invalid_action="flag"`` plays no frame and clears nothing."""
    s.tau[i] = 0
    for k in range(3):
        s.tiles_cleared[i, k] = 0
