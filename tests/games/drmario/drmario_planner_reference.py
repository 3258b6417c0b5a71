"""The planner's first search, kept as the reference its successor must equal: a plain
breadth-first search over the pill's whole control state with all 16 inputs of every frame
through ``rules.pill_frame`` (no pruning), keyed by the packed state and the frame parity."""

import numpy as np

from vecsim.core.jit import exact
from vecsim.games.drmario import BUTTONS, rules
from vecsim.games.drmario.tables import BASE_SPEED, BTN_LEFT, BTN_RIGHT, SPEED_TABLE
from vecsim.planners.drmario import N_ACTIONS, UNREACHABLE, class_held, pose_action

#: Last-frame controller classes: Left/Right bits (none, L, R) x A/B bits.
N_HELD = 12


@exact(inline="always")
def held_class(held):
    lr = 1 if held & BTN_LEFT else (2 if held & BTN_RIGHT else 0)
    return lr * 4 + ((held >> 6) & 3)


@exact
def search(board, i, threshold, x0, y0, rot0, sc0, hv0, held0, fc0, buttons,
           cost, lock_node, lock_button, parent, button, node_key, visited):
    """The breadth-first search. ``fc0`` is the frame counter before the first frame.
    ``visited`` (K,) int64 holds stamps; the node arrays must hold every visited node.
    Returns the number of visited nodes (0 is the root), or -1 when they overflow the node
    arrays (``visited`` is then left marked: clear it with ``clear_visited``)."""
    t1 = threshold + 1
    for a in range(N_ACTIONS):
        cost[a] = UNREACHABLE
        lock_node[a] = -1
        lock_button[a] = 0
    n = 1
    parent[0] = -1
    button[0] = 0
    node_key[0] = -1
    head = 0
    # The root's state travels in the queue as its key; the root itself is decoded apart.
    while head < n:
        if head == 0:
            x, y, rot, sc, hv, held_prev, depth = x0, y0, rot0, sc0, hv0, held0, 0
        else:
            k = node_key[head]
            x = k % 8
            k //= 8
            y = k % 16
            k //= 16
            rot = k % 4
            k //= 4
            sc = k % t1
            k //= t1
            hv = k % 16
            k //= 16
            held_prev = class_held(k % N_HELD)
            k //= N_HELD
            depth = k  # the frame count to reach this node
        fc = (fc0 + depth + 1) & 255
        for b in range(buttons.shape[0]):
            held = buttons[b]
            nx, ny, nrot, nsc, nhv, locked = rules.pill_frame(board, i, x, y, rot, sc, hv, fc, held_prev, held,
                                                              threshold)
            if locked:
                a = pose_action(x, y, rot)
                if a >= 0 and cost[a] == UNREACHABLE:
                    cost[a] = depth + 1
                    lock_node[a] = head
                    lock_button[a] = held
                continue
            key = ((((held_class(held) * 16 + nhv) * t1 + nsc) * 4 + nrot) * 16 + ny) * 8 + nx
            slot = key + ((depth + 1) & 1) * (N_HELD * 16 * t1 * 512)
            if visited[slot] == 1:
                continue
            if n == parent.shape[0]:
                return -n
            visited[slot] = 1
            parent[n] = head
            button[n] = held
            node_key[n] = key + (depth + 1) * (N_HELD * 16 * t1 * 512)
            n += 1
        head += 1
    return n


@exact
def _clear(visited, node_key, n, threshold):
    span = N_HELD * 16 * (threshold + 1) * 512
    for k in range(1, n):
        key = node_key[k]
        visited[key % span + ((key // span) & 1) * span] = 0


class Planner:
    """Reusable scratch, as the first planner kept it: the visited stamps and a node capacity."""

    def __init__(self):
        self.visited = np.zeros(0, np.int8)
        self.capacity = 1 << 15


def plan(state, i, planner):
    """``((512,) uint16 cost_to_lock, visited node count)`` of env ``i`` at its decision point."""
    threshold = int(SPEED_TABLE[BASE_SPEED[state.speed[i]] + state.speed_ups[i]])
    slots = 2 * N_HELD * 16 * (threshold + 1) * 512
    if planner.visited.shape[0] < slots:
        planner.visited = np.zeros(slots, np.int8)
    cost = np.empty(N_ACTIONS, np.uint16)
    lock_node = np.empty(N_ACTIONS, np.int64)
    lock_button = np.empty(N_ACTIONS, np.uint8)
    while True:
        parent = np.empty(planner.capacity, np.int64)
        button = np.empty(planner.capacity, np.uint8)
        node_key = np.empty(planner.capacity, np.int64)
        n = search(state.board, i, threshold, state.x[i], state.y[i], state.rot[i], state.speed_counter[i],
                   state.hor_velocity[i], state.held[i], state.fc[i], BUTTONS, cost, lock_node, lock_button,
                   parent, button, node_key, planner.visited)
        _clear(planner.visited, node_key, abs(n), threshold)
        if n > 0:
            return cost, n
        planner.capacity *= 2


_PLANNER = Planner()


def reference_costs(state, i):
    """``plan`` with a shared scratch."""
    return plan(state, i, _PLANNER)
