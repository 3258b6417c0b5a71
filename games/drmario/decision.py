"""Dr. Mario's decision mode: a step is one placement, played out frame by frame on
``rules.frame`` from one decision point to the next, with the exact planner
(``vecsim.planners.drmario``) run inside the step for the new decision's costs.

A decision point is a falling pill that is controllable on the next frame (``next_action`` is
``FALLING``), as ``planners/drmario.py`` defines it. The planner's scratch is the env's own
rows of the ``State`` (``games/drmario/state.py``): the search that gave a decision its costs
leaves its tree there, and the step reads the chosen placement's script from it.
"""

import numpy as np

# A module alias: vecsim.planners.drmario imports this package, and its names are looked up
# when the kernels compile, after both modules finished importing.
import vecsim.planners.drmario as _planner
from vecsim.core.jit import exact
from vecsim.games.drmario import rules
from vecsim.games.drmario.tables import EMPTY, VIRUS

UNREACHABLE = 0xFFFF
#: Frames one step may play before the episode ends with ``rules.TIMEOUT``: a placement and
#: the settling after it take a few hundred at the slowest gravity.
STEP_FRAME_CAP = 1 << 16


@exact
def plan_env(s, i):
    """The planner's search from env ``i``'s decision point: costs into ``s.cost_to_lock[i]``,
    the search tree into its scratch rows. Returns the number of visited nodes, or a negative
    number when the search outgrew ``NODE_CAPACITY``."""
    n = _planner.search(s.board, i, rules.gravity_threshold(s, i), s.x[i], s.y[i], s.rot[i], s.speed_counter[i],
                        s.hor_velocity[i], s.held[i], s.fc[i], s.cost_to_lock[i], s.plan_lock_node[i],
                        s.plan_lock_button[i], s.plan_parent[i], s.plan_button[i], s.plan_nodes[i],
                        s.plan_visited[i], s.plan_fit[i].reshape((2, 17, 10)), s.plan_pred_start[i], s.plan_pred[i], s.plan_useful[i],
                        s.plan_queue[i])
    _planner.clear_visited(s.plan_visited[i], s.plan_nodes[i], abs(n))
    return n


@exact
def write_script(s, i, a):
    """Placement ``a``'s controller bytes into ``s.plan_script[i]``, read off the search tree
    that the env's last search left in its scratch rows (the one its costs and mask come
    from); returns their count, its cost to lock, or 0 when that search locked no ``a``."""
    node = s.plan_lock_node[i, a]
    if node < 0:
        return 0
    length = 1
    while node > 0:
        length += 1
        node = s.plan_parent[i, node]
    script = s.plan_script[i]
    script[length - 1] = s.plan_lock_button[i, a]
    node = s.plan_lock_node[i, a]
    k = length - 2
    while node > 0:
        script[k] = s.plan_button[i, node]
        node = s.plan_parent[i, node]
        k -= 1
    return length


@exact
def play_to_decision(s, i, length, telemetry=None):
    """Play ``s.plan_script[i, :length]``, then frames with no input until the next decision
    point or the game's end (at most ``STEP_FRAME_CAP`` frames). Returns the frames played."""
    f = 0
    script = s.plan_script[i]
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


@exact
def next_decision(s, i, max_frames):
    """At a decision point (or the game's end): the episode's frame cap, the new plan (no
    feasible placement ends the episode), and the outputs. ``max_frames`` 0: no cap."""
    if s.outcome[i] == rules.PLAYING and max_frames > 0 and s.frame_count[i] >= max_frames:
        s.outcome[i] = rules.TIMEOUT
    feasible = False
    if s.outcome[i] == rules.PLAYING:
        n = plan_env(s, i)
        if n > 0:
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


@exact
def reset_to_decision(s, i):
    """After ``rules.start_level``: the first throw, up to the first decision point and its
    plan; nothing of it counts as a step's events (nor against the frame cap)."""
    s.tau[i] = 0
    play_to_decision(s, i, 0)
    for k in range(rules.N_FRAME_EVENTS):
        s.frame_events[i, k] = 0
    next_decision(s, i, 0)


@exact
def step_decision(s, i, a, max_frames, telemetry=None):
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
