"""A plain-Python reference implementation of vecsim Tetris (``games/tetris/SPEC.md``).

This module is the independent check the differential tests compare the Numba kernels
against. It is written from the SPEC alone, for clarity rather than speed: lists, small
numpy arrays and explicit loops, one env per object. It shares nothing with
``games/tetris`` or ``planners/tetris`` except vecsim's random stream (``vecsim.core.rng``),
which the SPEC names as the source of every draw.

Readings of the SPEC where it leaves a choice:

* When a new piece cannot spawn (after a lock or a hold) the failed piece is the current
  piece at its spawn pose, and the observation shows it there; masks and costs of that
  terminal state come from the usual formulas (``reach``: a half whose piece cannot spawn
  is all illegal).
* The ``reach`` planner's primitive steps use the env's ``gravity`` (with ``gravity = 0``
  a piece locks only by soft or hard drop).

The constructor's keyword defaults are ``None`` so that explicit arguments override a
preset; the effective defaults are the SPEC's (``DEFAULTS``).
"""

from __future__ import annotations

from collections import deque

import numpy as np

from vecsim.core.rng import randint, seed_env

W = 10
H = 24
NONE = 7
TYPE_NAMES = "IOTSZJL"

# Spawn-state cells (row, col) inside the piece's box, and the box sizes, from the SPEC.
SPAWN_CELLS = {
    0: [(1, 0), (1, 1), (1, 2), (1, 3)],  # I
    1: [(0, 1), (0, 2), (1, 1), (1, 2)],  # O
    2: [(0, 1), (1, 0), (1, 1), (1, 2)],  # T
    3: [(0, 1), (0, 2), (1, 0), (1, 1)],  # S
    4: [(0, 0), (0, 1), (1, 1), (1, 2)],  # Z
    5: [(0, 0), (1, 0), (1, 1), (1, 2)],  # J
    6: [(0, 2), (1, 0), (1, 1), (1, 2)],  # L
}
BOX = {0: 4, 1: 4, 2: 3, 3: 3, 4: 3, 5: 3, 6: 3}


def _make_cells():
    """cells[t][r]: sorted list of (row, col) of piece t in rotation state r."""
    cells = {}
    for t in range(7):
        b = BOX[t]
        states = [sorted(SPAWN_CELLS[t])]
        for r in range(1, 4):
            if t == 1:  # O: the same cells in every state
                states.append(list(states[0]))
            else:
                states.append(sorted((col, b - 1 - row) for row, col in states[r - 1]))
        cells[t] = states
    return cells


CELLS = _make_cells()


def min_row(t, r):
    return min(row for row, _ in CELLS[t][r])


def min_col(t, r):
    return min(col for _, col in CELLS[t][r])


def width(t, r):
    return max(col for _, col in CELLS[t][r]) - min_col(t, r) + 1


def height(t, r):
    return max(row for row, _ in CELLS[t][r]) - min_row(t, r) + 1


# SRS kick tests in (x right, y up) form, keyed by (from, to).
KICKS_JLSTZ = {
    (0, 1): [(0, 0), (-1, 0), (-1, +1), (0, -2), (-1, -2)],
    (1, 0): [(0, 0), (+1, 0), (+1, -1), (0, +2), (+1, +2)],
    (1, 2): [(0, 0), (+1, 0), (+1, -1), (0, +2), (+1, +2)],
    (2, 1): [(0, 0), (-1, 0), (-1, +1), (0, -2), (-1, -2)],
    (2, 3): [(0, 0), (+1, 0), (+1, +1), (0, -2), (+1, -2)],
    (3, 2): [(0, 0), (-1, 0), (-1, -1), (0, +2), (-1, +2)],
    (3, 0): [(0, 0), (-1, 0), (-1, -1), (0, +2), (-1, +2)],
    (0, 3): [(0, 0), (+1, 0), (+1, +1), (0, -2), (+1, -2)],
}
KICKS_I = {
    (0, 1): [(0, 0), (-2, 0), (+1, 0), (-2, -1), (+1, +2)],
    (1, 0): [(0, 0), (+2, 0), (-1, 0), (+2, +1), (-1, -2)],
    (1, 2): [(0, 0), (-1, 0), (+2, 0), (-1, +2), (+2, -1)],
    (2, 1): [(0, 0), (+1, 0), (-2, 0), (+1, -2), (-2, +1)],
    (2, 3): [(0, 0), (+2, 0), (-1, 0), (+2, +1), (-1, -2)],
    (3, 2): [(0, 0), (-2, 0), (+1, 0), (-2, -1), (+1, +2)],
    (3, 0): [(0, 0), (+1, 0), (-2, 0), (+1, -2), (-2, +1)],
    (0, 3): [(0, 0), (-1, 0), (+2, 0), (-1, +2), (+2, -1)],
}

SPAWN_BOX_ROW = 2
SPAWN_BOX_COL = 3

NOOP, LEFT, RIGHT, SOFT, HARD, CW, CCW, HOLD = range(8)
GUIDELINE_POINTS = [0, 100, 300, 500, 800]
FEATURE_NAMES = tuple([f"height{c}" for c in range(W)] + [
    "holes", "bumpiness", "row_transitions", "col_transitions", "cumulative_wells",
    "landing_height", "eroded_cells"])

PRESETS = {
    "guideline": dict(rotation="srs", randomizer="bag", hold=True, queue=5, scoring="guideline"),
    "classic": dict(rotation="none", randomizer="uniform", hold=False, queue=0, scoring="lines"),
}
DEFAULTS = dict(action_mode="drop", rotation="srs", randomizer="bag", hold=True, queue=5,
                scoring="guideline", gravity=1, invalid_action="raise")


class ReferenceTetris:
    """One Tetris env following SPEC.md literally.

    State attributes (writable, for scenario tests): ``board`` (H x W int colours, 0 empty),
    ``piece`` (current type), ``rot``, ``box_row``, ``box_col`` (current pose), ``queue``
    (list of the 6 internal upcoming types), ``held`` (hold slot type, 7 for none),
    ``can_hold``, ``features`` (list of 17 ints), ``bag``, ``bag_pos``, ``rng``.
    """

    def __init__(self, action_mode=None, rotation=None, randomizer=None, hold=None, queue=None,
                 scoring=None, gravity=None, invalid_action=None, preset=None):
        cfg = dict(DEFAULTS)
        if preset is not None:
            if preset not in PRESETS:
                raise ValueError(f"unknown preset {preset!r}")
            cfg.update(PRESETS[preset])
        given = dict(action_mode=action_mode, rotation=rotation, randomizer=randomizer, hold=hold,
                     queue=queue, scoring=scoring, gravity=gravity, invalid_action=invalid_action)
        cfg.update({k: v for k, v in given.items() if v is not None})
        if cfg["action_mode"] not in ("primitive", "drop", "reach"):
            raise ValueError(f"bad action_mode {cfg['action_mode']!r}")
        if cfg["rotation"] not in ("srs", "none"):
            raise ValueError(f"bad rotation {cfg['rotation']!r}")
        if cfg["randomizer"] not in ("bag", "uniform"):
            raise ValueError(f"bad randomizer {cfg['randomizer']!r}")
        if cfg["scoring"] not in ("guideline", "lines"):
            raise ValueError(f"bad scoring {cfg['scoring']!r}")
        if cfg["invalid_action"] not in ("raise", "flag"):
            raise ValueError(f"bad invalid_action {cfg['invalid_action']!r}")
        if not 0 <= int(cfg["queue"]) <= 6:
            raise ValueError(f"bad queue {cfg['queue']!r}")
        self.config = cfg
        self.action_mode = cfg["action_mode"]
        self.rotation = cfg["rotation"]
        self.randomizer = cfg["randomizer"]
        self.hold_on = bool(cfg["hold"])
        self.queue_len = int(cfg["queue"])
        self.scoring = cfg["scoring"]
        self.gravity = int(cfg["gravity"])
        self.invalid_action = cfg["invalid_action"]

        if self.action_mode == "primitive":
            self.n_actions = 8
        elif self.action_mode == "drop":
            self.n_actions = 80 if self.hold_on else 40
        else:
            self.n_actions = 2 * 4 * H * W if self.hold_on else 4 * H * W
        self.obs_size = 4 + H * W + 17 + (1 if self.hold_on else 0) + self.queue_len

        self.rng = np.zeros((1, 2), dtype=np.uint64)
        self.board = np.zeros((H, W), dtype=np.int64)
        self.piece = 0
        self.rot = 0
        self.box_row = SPAWN_BOX_ROW
        self.box_col = SPAWN_BOX_COL
        self.queue = [0] * 6
        self.held = NONE
        self.can_hold = True
        self.bag = list(range(7))
        self.bag_pos = 7
        self.features = [0] * 17
        self.terminated = False
        self.draws = []  # every piece drawn since reset, in order (for tests)
        self._costs_key = None
        self._costs_value = None
        self._mask_key = None
        self._mask_value = None

    # ------------------------------------------------------------------ randomness
    def draw(self):
        if self.randomizer == "bag":
            if self.bag_pos == 7:
                self.bag = [0, 1, 2, 3, 4, 5, 6]
                for k in range(6, 0, -1):
                    j = int(randint(self.rng, 0, k + 1))
                    self.bag[k], self.bag[j] = self.bag[j], self.bag[k]
                self.bag_pos = 0
            t = self.bag[self.bag_pos]
            self.bag_pos += 1
        else:
            t = int(randint(self.rng, 0, 7))
        self.draws.append(t)
        return t

    # ------------------------------------------------------------------ geometry
    def cells_at(self, t, r, box_row, box_col):
        return [(box_row + row, box_col + col) for row, col in CELLS[t][r]]

    def blocked_cell(self, row, col):
        if col < 0 or col >= W or row < 0 or row >= H:
            return True
        return self.board[row, col] != 0

    def blocked(self, t, r, box_row, box_col):
        for row, col in self.cells_at(t, r, box_row, box_col):
            if self.blocked_cell(row, col):
                return True
        return False

    def anchor(self, t=None, r=None, box_row=None, box_col=None):
        t = self.piece if t is None else t
        r = self.rot if r is None else r
        box_row = self.box_row if box_row is None else box_row
        box_col = self.box_col if box_col is None else box_col
        return box_row + min_row(t, r), box_col + min_col(t, r)

    def rotate_pose(self, t, r, box_row, box_col, direction, blocked=None):
        """The pose after rotating (direction +1 cw, -1 ccw), or the same pose if none fits."""
        if blocked is None:
            def blocked(r_, br_, bc_):
                return self.blocked(t, r_, br_, bc_)
        new_r = (r + 1) % 4 if direction > 0 else (r + 3) % 4
        if self.rotation == "none" or t == 1:
            tests = [(0, 0)]
        elif t == 0:
            tests = KICKS_I[(r, new_r)]
        else:
            tests = KICKS_JLSTZ[(r, new_r)]
        for dx, dy in tests:
            nr, nc = box_row - dy, box_col + dx
            if not blocked(new_r, nr, nc):
                return new_r, nr, nc
        return r, box_row, box_col

    def drop_row(self, t, r, box_row, box_col):
        while not self.blocked(t, r, box_row + 1, box_col):
            box_row += 1
        return box_row

    # ------------------------------------------------------------------ spawning / hold
    def spawn(self):
        """Put the current piece at spawn; return False if it cannot spawn (game over)."""
        self.rot = 0
        self.box_row = SPAWN_BOX_ROW
        self.box_col = SPAWN_BOX_COL
        for row, col in self.cells_at(self.piece, 0, SPAWN_BOX_ROW, SPAWN_BOX_COL):
            if self.board[row, col] != 0:
                return False
        return True

    def advance(self):
        self.piece = self.queue[0]
        self.queue = self.queue[1:] + [self.draw()]

    def can_hold_now(self):
        return self.hold_on and self.can_hold

    def piece_after_hold(self):
        return self.queue[0] if self.held == NONE else self.held

    def do_hold(self):
        """Hold (assumes holding is possible). Returns False if the new piece cannot spawn."""
        if self.held == NONE:
            self.held = self.piece
            self.advance()
        else:
            self.piece, self.held = self.held, self.piece
        ok = self.spawn()
        self.can_hold = False
        return ok

    # ------------------------------------------------------------------ reset
    def reset(self, seed):
        self.rng = np.zeros((1, 2), dtype=np.uint64)
        seed_env(self.rng, 0, int(seed))
        self.board = np.zeros((H, W), dtype=np.int64)
        self.bag = list(range(7))
        self.bag_pos = 7
        self.draws = []
        self.piece = self.draw()
        self.queue = [self.draw() for _ in range(6)]
        self.held = NONE
        self.can_hold = True
        ok = self.spawn()
        assert ok, "a piece always fits on an empty board"
        # the features of the empty board: all 0 but col_transitions = 10
        self.features = self.compute_features(0, 0)
        self.terminated = False
        return self.obs()

    # ------------------------------------------------------------------ locking
    def lock(self):
        """Lock the current piece at its pose; returns (lines, terminated)."""
        t = self.piece
        cells = self.cells_at(t, self.rot, self.box_row, self.box_col)
        for row, col in cells:
            self.board[row, col] = t + 1
        full_rows = [row for row in range(H) if all(self.board[row, c] != 0 for c in range(W))]
        lines = len(full_rows)
        piece_cells_in_full = sum(1 for row, _ in cells if row in full_rows)
        eroded = lines * piece_cells_in_full
        landing = H - 1 - max(row for row, _ in cells)
        if lines:
            kept = [self.board[row].copy() for row in range(H) if row not in full_rows]
            new_board = np.zeros((H, W), dtype=np.int64)
            for k, row_values in enumerate(kept):
                new_board[H - len(kept) + k] = row_values
            self.board = new_board
        self.features = self.compute_features(landing, eroded)
        self.can_hold = True
        self.advance()
        ok = self.spawn()
        return lines, not ok

    def compute_features(self, landing, eroded):
        filled = [[1 if self.board[row, col] != 0 else 0 for col in range(W)] for row in range(H)]
        heights = []
        for col in range(W):
            h = 0
            for row in range(H):
                if filled[row][col]:
                    h = H - row
                    break
            heights.append(h)
        holes = 0
        for col in range(W):
            seen_filled = False
            for row in range(H):
                if filled[row][col]:
                    seen_filled = True
                elif seen_filled:
                    holes += 1
        bumpiness = sum(abs(heights[c] - heights[c + 1]) for c in range(W - 1))
        top = None
        for row in range(H):
            if any(filled[row]):
                top = row
                break
        row_transitions = 0
        if top is not None:
            for row in range(top, H):
                line = [1] + filled[row] + [1]
                for k in range(len(line) - 1):
                    if line[k] != line[k + 1]:
                        row_transitions += 1
        col_transitions = 0
        for col in range(W):
            column = [filled[row][col] for row in range(H)] + [1]
            for k in range(len(column) - 1):
                if column[k] != column[k + 1]:
                    col_transitions += 1
        wells = 0
        for col in range(W):
            run = 0
            for row in range(H + 1):
                is_well = False
                if row < H and not filled[row][col]:
                    left = 1 if col == 0 else filled[row][col - 1]
                    right = 1 if col == W - 1 else filled[row][col + 1]
                    is_well = bool(left and right)
                if is_well:
                    run += 1
                else:
                    wells += run * (run + 1) // 2
                    run = 0
        values = heights + [holes, bumpiness, row_transitions, col_transitions, wells, landing, eroded]
        return [min(v, 255) for v in values]

    def reward_of(self, lines):
        if self.scoring == "lines":
            return float(lines)
        return float(GUIDELINE_POINTS[lines])

    # ------------------------------------------------------------------ step
    def _events(self, lines=0, pieces=0, holds=0, invalid=0):
        return {"lines": lines, "pieces": pieces, "holds": holds, "invalid_action": invalid}

    def step(self, action):
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            raise ValueError(f"action must be an integer, got {action!r}")
        a = int(action)
        if not 0 <= a < self.n_actions:
            raise ValueError(f"action {a} out of range [0, {self.n_actions})")
        if self.terminated:
            raise ValueError("the episode is over; reset first")
        if self.action_mode == "primitive":
            result = self._step_primitive(a)
        else:
            if not self.mask()[a]:
                if self.invalid_action == "raise":
                    raise ValueError(f"illegal action {a}")
                return 0.0, False, self._events(invalid=1)
            if self.action_mode == "drop":
                result = self._step_drop(a)
            else:
                result = self._step_reach(a)
        self.terminated = result[1]
        return result

    def _step_primitive(self, a):
        t = self.piece
        was_resting = self.blocked(t, self.rot, self.box_row + 1, self.box_col)
        gravity_applies = False
        if a == LEFT or a == RIGHT:
            dc = -1 if a == LEFT else 1
            if not self.blocked(t, self.rot, self.box_row, self.box_col + dc):
                self.box_col += dc
            gravity_applies = True
        elif a == CW or a == CCW:
            self.rot, self.box_row, self.box_col = self.rotate_pose(
                t, self.rot, self.box_row, self.box_col, +1 if a == CW else -1)
            gravity_applies = True
        elif a == SOFT:
            if not self.blocked(t, self.rot, self.box_row + 1, self.box_col):
                self.box_row += 1
                return 0.0, False, self._events()
            lines, over = self.lock()
            return self.reward_of(lines), over, self._events(lines=lines, pieces=1)
        elif a == HARD:
            self.box_row = self.drop_row(t, self.rot, self.box_row, self.box_col)
            lines, over = self.lock()
            return self.reward_of(lines), over, self._events(lines=lines, pieces=1)
        elif a == HOLD:
            if self.can_hold_now():
                ok = self.do_hold()
                return 0.0, not ok, self._events(holds=1)
            gravity_applies = True
        else:  # noop
            gravity_applies = True
        assert gravity_applies
        moved = 0
        while moved < self.gravity and not self.blocked(t, self.rot, self.box_row + 1, self.box_col):
            self.box_row += 1
            moved += 1
        if self.gravity > 0 and moved == 0 and was_resting:
            lines, over = self.lock()
            return self.reward_of(lines), over, self._events(lines=lines, pieces=1)
        return 0.0, False, self._events()

    def _step_drop(self, a):
        h, rest = divmod(a, 40)
        r, x = divmod(rest, 10)
        holds = 0
        if h == 1:
            holds = 1
            ok = self.do_hold()
            assert ok, "the mask makes the hold half illegal when the new piece cannot spawn"
        t = self.piece
        self.rot = r
        self.box_row = SPAWN_BOX_ROW
        self.box_col = x - min_col(t, r)
        self.box_row = self.drop_row(t, r, self.box_row, self.box_col)
        lines, over = self.lock()
        return self.reward_of(lines), over, self._events(lines=lines, pieces=1, holds=holds)

    def _step_reach(self, a):
        n_half = 4 * H * W
        h, rest = divmod(a, n_half)
        ry, x = divmod(rest, W)
        r, y = divmod(ry, H)
        holds = 0
        if h == 1:
            holds = 1
            ok = self.do_hold()
            assert ok, "the mask makes the hold half illegal when the new piece cannot spawn"
        t = self.piece
        self.rot = r
        self.box_row = y - min_row(t, r)
        self.box_col = x - min_col(t, r)
        lines, over = self.lock()
        return self.reward_of(lines), over, self._events(lines=lines, pieces=1, holds=holds)

    # ------------------------------------------------------------------ planner
    def _primitive_outcome(self, t, pose, a, blocked):
        """One primitive input (not hold) from a live pose: ("live", pose) or ("lock", pose).

        ``blocked(r, box_row, box_col)`` tells whether piece ``t`` is blocked at a pose.
        """
        r, br, bc = pose
        was_resting = blocked(r, br + 1, bc)
        if a == LEFT or a == RIGHT:
            dc = -1 if a == LEFT else 1
            if not blocked(r, br, bc + dc):
                bc += dc
        elif a == CW or a == CCW:
            r, br, bc = self.rotate_pose(t, r, br, bc, +1 if a == CW else -1, blocked)
        elif a == SOFT:
            if not blocked(r, br + 1, bc):
                return "live", (r, br + 1, bc)
            return "lock", (r, br, bc)
        elif a == HARD:
            while not blocked(r, br + 1, bc):
                br += 1
            return "lock", (r, br, bc)
        moved = 0
        while moved < self.gravity and not blocked(r, br + 1, bc):
            br += 1
            moved += 1
        if self.gravity > 0 and moved == 0 and was_resting:
            return "lock", (r, br, bc)
        return "live", (r, br, bc)

    def plan(self, t):
        """BFS from the spawn pose of piece t: {lock pose (r, y, x) anchor: least cost}."""
        memo = {}

        def blocked(r, br, bc):  # self.blocked for piece t, memoised (the board is fixed here)
            key = (r, br, bc)
            if key not in memo:
                memo[key] = self.blocked(t, r, br, bc)
            return memo[key]

        start = (0, SPAWN_BOX_ROW, SPAWN_BOX_COL)
        if blocked(*start):
            return {}
        dist = {start: 0}
        locks = {}
        frontier = deque([start])
        while frontier:
            pose = frontier.popleft()
            cost = dist[pose]
            for a in (NOOP, LEFT, RIGHT, SOFT, HARD, CW, CCW):
                kind, new_pose = self._primitive_outcome(t, pose, a, blocked)
                if kind == "live":
                    if new_pose not in dist:
                        dist[new_pose] = cost + 1
                        frontier.append(new_pose)
                else:
                    r, br, bc = new_pose
                    key = (r, br + min_row(t, r), bc + min_col(t, r))
                    if key not in locks or cost + 1 < locks[key]:
                        locks[key] = cost + 1
        return locks

    def costs(self):
        """int16 placement costs of reach actions (-1 illegal), for the current state."""
        return self._cached("costs", self._compute_costs)

    def _cached(self, name, compute):
        """``compute()`` for the current state, recomputed only when the state changed."""
        key = self._state_key()
        if getattr(self, f"_{name}_key") != key:
            setattr(self, f"_{name}_value", compute())
            setattr(self, f"_{name}_key", key)
        return getattr(self, f"_{name}_value").copy()

    def _state_key(self):
        """Everything masks and costs depend on (they are cached on it: state is writable)."""
        return (self.board.tobytes(), self.piece, self.held, self.queue[0], self.can_hold, self.rot,
                self.box_row, self.box_col, self.terminated)

    def _compute_costs(self):
        n_half = 4 * H * W
        out = np.full((2 if self.hold_on else 1) * n_half, -1, dtype=np.int16)
        halves = [(0, self.piece, 0)]
        if self.can_hold_now():
            halves.append((1, self.piece_after_hold(), 1))
        for h, t, extra in halves:
            for (r, y, x), c in self.plan(t).items():
                out[h * n_half + (r * H + y) * W + x] = c + extra
        return out

    # ------------------------------------------------------------------ masks / obs
    def mask(self):
        """Legal actions (bool, one per action) of the current state."""
        return self._cached("mask", self._compute_mask)

    def _compute_mask(self):
        m = np.zeros(self.n_actions, dtype=bool)
        if self.terminated:  # SPEC: after game over every action is marked legal
            m[:] = True
            return m
        if self.action_mode == "primitive":
            m[:] = True
            m[HOLD] = self.can_hold_now()
        elif self.action_mode == "drop":
            for h in (0, 1) if self.hold_on else (0,):
                t = self.piece if h == 0 else self.piece_after_hold()
                if h == 1 and not self.can_hold_now():
                    continue
                if h == 1 and self.blocked(t, 0, SPAWN_BOX_ROW, SPAWN_BOX_COL):
                    continue  # the post-hold piece cannot spawn: the hold half is illegal
                for r in range(4):
                    for x in range(W):
                        if x + width(t, r) > W:
                            continue
                        box_row = SPAWN_BOX_ROW  # y_s = 2 + min row, so the box row is 2
                        box_col = x - min_col(t, r)
                        if not self.blocked(t, r, box_row, box_col):
                            m[h * 40 + r * 10 + x] = True
        else:
            m = self.costs() >= 0
        return m

    def obs(self):
        y, x = self.anchor()
        parts = [np.array([self.piece, self.rot, y, x], dtype=np.uint8),
                 (self.board != 0).astype(np.uint8).reshape(-1),
                 np.array(self.features, dtype=np.uint8)]
        if self.hold_on:
            parts.append(np.array([self.held], dtype=np.uint8))
        if self.queue_len > 0:
            parts.append(np.array(self.queue[: self.queue_len], dtype=np.uint8))
        out = np.concatenate(parts)
        assert out.shape == (self.obs_size,)
        return out

    # ------------------------------------------------------------------ scenario helpers
    def set_board_from_ascii(self, lines, colour=8):
        """Fill the bottom rows from text: '.' empty, any other char filled.

        ``lines`` (a list of strings or one multi-line string) gives the bottom rows, top
        first; the last line is row H-1. A digit 1-7 sets that colour, other chars ``colour``.
        Rows above are cleared. Features are not recomputed (call ``refresh_features``).
        """
        if isinstance(lines, str):
            lines = [ln for ln in lines.strip("\n").split("\n")]
        lines = [ln.strip() for ln in lines if ln.strip()]
        if len(lines) > H:
            raise ValueError("too many rows")
        self.board = np.zeros((H, W), dtype=np.int64)
        for k, text in enumerate(lines):
            if len(text) != W:
                raise ValueError(f"row {text!r} must have {W} chars")
            row = H - len(lines) + k
            for col, ch in enumerate(text):
                if ch != ".":
                    self.board[row, col] = int(ch) if ch in "1234567" else colour
        return self.board

    def refresh_features(self, landing=0, eroded=0):
        self.features = self.compute_features(landing, eroded)

    def board_text(self, with_piece=True):
        """The board as text, row 0 first: '.' empty, '#' filled, the active piece as its letter."""
        grid = [["#" if self.board[row, col] else "." for col in range(W)] for row in range(H)]
        if with_piece:
            for row, col in self.cells_at(self.piece, self.rot, self.box_row, self.box_col):
                if 0 <= row < H and 0 <= col < W:
                    grid[row][col] = TYPE_NAMES[self.piece].lower() if self.board[row, col] == 0 else "X"
        lines = [f"{row:2d} {''.join(grid[row])}" for row in range(H)]
        lines.append(f"piece={TYPE_NAMES[self.piece]} rot={self.rot} box=({self.box_row},{self.box_col}) "
                     f"queue={''.join(TYPE_NAMES[t] for t in self.queue)} "
                     f"held={'-' if self.held == NONE else TYPE_NAMES[self.held]} can_hold={self.can_hold}")
        return "\n".join(lines)


def decode_obs(obs, hold=True, queue=5):
    """Split a flat observation into its Dict parts (for readable failure messages)."""
    obs = np.asarray(obs)
    out = {"active": obs[0:4], "board": obs[4:4 + H * W].reshape(H, W), "features": obs[244:261]}
    k = 261
    if hold:
        out["hold"] = obs[k:k + 1]
        k += 1
    if queue:
        out["queue"] = obs[k:k + queue]
    return out
