"""Tetris-v0: the Tetris Guideline rules (or the classic setting of the literature) as
batched Numba kernels, with three action modes, legal-placement masks, a placement planner
and Dellacherie/BCTS board features computed in the kernel.

The exact rules are in ``games/tetris/SPEC.md``; this docstring summarises them.

Board
    10 columns x 24 rows: 4 hidden spawn rows on top of the 20 visible ones.
Rule variants (keyword arguments; see ``SPEC.md`` for each reference)
    ``rotation``: ``"srs"`` (Super Rotation System with its kick tables, default) or
    ``"none"`` (a blocked rotation does nothing). ``randomizer``: ``"bag"`` (7-bag, default)
    or ``"uniform"``. ``hold``: on (default) or off. ``queue``: visible next pieces, 0-6
    (default 5). ``scoring``: ``"guideline"`` (100/300/500/800, default) or ``"lines"``.
    ``gravity``: rows per primitive step (default 1). ``preset="classic"``: uniform pieces, no
    hold, no queue, no kicks, lines as reward (Dellacherie, BCTS).
Action Space
    ``action_mode="primitive"``: ``Discrete(8)`` noop, left, right, soft drop, hard drop,
    rotate cw, rotate ccw, hold; one input per step, then gravity.
    ``action_mode="drop"`` (default): ``Discrete(40)`` (80 with hold), rotation x column,
    hard dropped from the spawn rows.
    ``action_mode="reach"``: ``Discrete(960)`` (1920 with hold), a final pose (rotation x row
    x column of the piece's top-left cell) the piece can reach from spawn with primitive
    inputs; ``info["placement_cost"]`` gives each pose's cost in steps.
    In drop and reach mode ``info["action_mask"]``/``action_masks()`` give the legal actions;
    the mask is binding: an illegal action raises ``ValueError``, or with the engine's
    ``invalid_action="flag"`` is answered with no state change and the event ``invalid_action``.
Observation Space
    ``Dict`` of uint8 arrays: ``active`` (type, rotation, row, col), ``board`` (24, 10)
    occupancy, ``features`` (17: ten column heights, holes, bumpiness, row and column
    transitions, cumulative wells, landing height and eroded cells of the last lock, as
    defined in ``SPEC.md``),
    ``hold`` (1,) with hold on, ``queue`` (q,) with q > 0. Pass ``flatten_obs=True`` to the
    vector env for the flat (N, obs_dim) uint8 array (Gymnasium's ``flatten`` order).
Rewards
    Lines cleared by the step's lock, as guideline points or plain lines.
Episode End
    Terminated when a new piece cannot spawn. No step limit by default (pass
    ``max_episode_steps``).
Events
    ``lines``, ``pieces``, ``holds`` per step, and the engine's ``invalid_action``, in ``info``.
Telemetry
    With ``telemetry=capacity`` (records per env), the ring gets, stamped with the step's
    number in its episode: ``lock`` (value: the piece type), ``line_clear`` (value: rows
    cleared, after a lock that cleared any), ``spawn`` (value: the new piece's type, after a
    lock or a hold brings a piece in), ``top_out`` (the new piece could not spawn).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from gymnasium import spaces

from vecsim.games.tetris.pieces import (  # noqa: F401 (pieces first)
    DROP_Y, H, HEIGHT, N_POSES, NONE, SPAWN_X, SPAWN_Y, W, WIDTH, pose_of,
)
from vecsim.games.tetris.rules import (
    BOARD_ROWS_PER_LOAD, LINE_SCORES, N_FEATURES, QUEUE_SLOTS, advance, blocked, board_features, clear_board, do_hold,
    draw_piece, drop_columns, drop_legal, drop_row, hold_target, lock, packed_rows, spawn,
)
# A module alias, not ``from ... import``: vecsim.planners.tetris imports this package's rules, and
# the names are looked up when the kernels compile, after both modules finished importing.
import vecsim.planners.tetris as _planner  # noqa: E402
from vecsim.core import buffers as placed
from vecsim.core.cells import load_word, prefetch_write, put_cells
from vecsim.core.contract import KernelHints, discrete_ok, named_choices, param
from vecsim.core.jit import exact
from vecsim.core.telemetry import push_event, step_stamp

NAME = "Tetris"
ENV_ID = "Tetris-v0"
MAX_EPISODE_STEPS = None
REWARD_THRESHOLD = None
EVENTS = ("lines", "pieces", "holds")
EV_LINES, EV_PIECES, EV_HOLDS = range(3)
#: Telemetry event kinds (``vecsim.core.telemetry``); the module docstring gives their values.
TELEMETRY = ("spawn", "lock", "line_clear", "top_out")
TM_SPAWN, TM_LOCK, TM_LINE_CLEAR, TM_TOP_OUT = range(4)
PHYSICAL_STATE = ()  # no Gymnasium reference state vector
# Runs of 16 envs a call in the parallel kernel (the serial one steps all envs in one call): the
# State's many arrays are passed once a run rather than once an env.
KERNEL_HINTS = KernelHints(write_obs_fills_row=True, envs_per_call=16, call_by_symbol=True)

PRIMITIVE, DROP, REACH = 0, 1, 2
ACTION_MODES = ("primitive", "drop", "reach")
N_PRIMITIVE = 8
#: The primitive inputs legal in every state, as mask bits: all but hold.
PRIMITIVE_MOVES = ((1 << N_PRIMITIVE) - 1) & ~(1 << _planner.HOLD)
N_DROP = 40
#: How many envs ahead a step prefetches the colour rows a lock would write (step_env).
PREFETCH_ENVS_AHEAD = 4
#: What a step changed of the observation (``State.obs_change``, ``write_obs_changes``): the
#: piece's pose; also the hold and the queue (a hold); also the features and the board's rows
#: of the locked piece (a lock without a line clear); everything.
OBS_POSE, OBS_PIECES, OBS_LOCK, OBS_ALL = range(4)
#: Where the board and the features start in an observation row (after the pose's 4 bytes).
OBS_BOARD = 4
OBS_FEATURES = OBS_BOARD + H * W
SCRATCH_COLS = 96  # int64 words of State.scratch_cols per env
CHOICES = {
    "action_mode": ACTION_MODES,
    "rotation": ("none", "srs"),
    "randomizer": ("uniform", "bag"),
    "scoring": ("lines", "guideline"),
}
PRESETS = {
    "guideline": dict(rotation="srs", randomizer="bag", hold=True, queue=5, scoring="guideline"),
    "classic": dict(rotation="none", randomizer="uniform", hold=False, queue=0, scoring="lines"),
}
#: What ``vecsim demo`` plays besides random actions: (name, batched agent, engine arguments).
DEMO_AGENT = ("dellacherie", "vecsim.collect.tetris:dellacherie_actions", {"action_mode": "drop"})
#: ``vecsim bench`` times each action mode in a column of its own (a step is a placement
#: decision in drop and reach mode).
BENCH_VARIANTS = {mode: {"action_mode": mode} for mode in ACTION_MODES}
#: ``vecsim train``'s settings (drop mode, classic preset). One point a line is too sparse to
#: learn from in minutes: every training step also pays ``step_bonus`` (staying alive).
TRAIN_PRESETS = {
    "maskable-ppo": dict(hyperparameters=dict(n_steps=128, batch_size=512, n_epochs=4, learning_rate=3e-4,
                                              ent_coef=0.01, gamma=0.99, policy_kwargs=dict(net_arch=[64, 64])),
                         num_envs=16, steps=400_000, source="vecsim's own (drop mode, classic preset)", step_bonus=0.1),
}
#: Parameters that shape the spaces or choose kernel_functions: one value for the whole batch.
STRUCTURAL = ("action_mode", "hold", "queue")


class Params(NamedTuple):
    action_mode: float = 1.0  # 0 primitive, 1 drop, 2 reach
    rotation: float = 1.0  # 0 none, 1 SRS
    randomizer: float = 1.0  # 0 uniform, 1 7-bag
    hold: float = 1.0  # 0 off, 1 on
    queue: float = 5.0  # visible next pieces, 0-6
    scoring: float = 1.0  # 0 lines, 1 guideline points
    gravity: float = 1.0  # rows per primitive step


class State(NamedTuple):
    cells: np.ndarray  # (N, 24, 10) uint8 colour of each cell (0 empty, type + 1)
    rows: np.ndarray  # (N, 24) uint16 bitmask of filled columns per row
    piece: np.ndarray  # (N,) int8 current piece type
    rot: np.ndarray  # (N,) int8 rotation state 0-3
    y: np.ndarray  # (N,) int16 anchor row (top of the cells' bounding box)
    x: np.ndarray  # (N,) int16 anchor column (left of the cells' bounding box)
    queue: np.ndarray  # (N, 6) int8 upcoming types
    hold: np.ndarray  # (N,) int8 held type, 7 if none
    can_hold: np.ndarray  # (N,) bool
    bag: np.ndarray  # (N, 7) int8 the current 7-bag
    bag_pos: np.ndarray  # (N,) int8 pieces taken from the bag (7: empty)
    feat: np.ndarray  # (N, 17) int16 board features (exact; the observation saturates at 255)
    cost: np.ndarray  # (N, A) int16 reach mode: steps to lock at each pose, -1 if not (A = 0 otherwise)
    plan_bits: np.ndarray  # (N, 624) int16 planner scratch: pose sets (reach mode only)
    plan_rows: np.ndarray  # (N, 2) int64 planner scratch: rows of the next frontier
    scratch_rows: np.ndarray  # (N, 24) uint16 scratch board for policies evaluating afterstates
    scratch_feat: np.ndarray  # (N, 17) int16 scratch features for policies
    scratch_cols: np.ndarray  # (N, 96) int64 scratch for policies: column bitboards and their feature terms
    obs_change: np.ndarray  # (N,) int8 what the last step changed of the observation: OBS_POSE .. OBS_ALL
    lock_row: np.ndarray  # (N,) int8 the top row of the piece the last step locked (OBS_LOCK)


def prepare_params(given: dict) -> dict:
    """Expand ``preset=`` and turn named choices (``action_mode="reach"``...) into numbers."""
    given = dict(given)
    preset = given.pop("preset", None)
    out = {}
    if preset is not None:
        if preset not in PRESETS:
            raise ValueError(f"Tetris preset must be one of {sorted(PRESETS)}, but got preset={preset!r}")
        out.update(PRESETS[preset])
    out.update(given)
    return named_choices(NAME, CHOICES, out)


def check_params(values: dict) -> None:
    limits = {"action_mode": (0, 2), "rotation": (0, 1), "randomizer": (0, 1), "hold": (0, 1), "queue": (0, 6),
              "scoring": (0, 1), "gravity": (0, H)}
    for name, (lo, hi) in limits.items():
        v = np.asarray(values[name])
        if np.any(v != np.round(v)) or np.any(v < lo) or np.any(v > hi):
            bad = v.flat[int(np.flatnonzero((v != np.round(v)) | (v < lo) | (v > hi))[0])]
            raise ValueError(f"Tetris {name} must be an integer in [{lo}, {hi}], but got {name}={bad}")


def _mode(p) -> int:
    return int(p.action_mode)


def n_actions(p) -> int:
    """Number of actions for scalar ``Params`` ``p``."""
    halves = 2 if p.hold else 1
    return (N_PRIMITIVE, N_DROP * halves, N_POSES * halves)[_mode(p)]


def allocate_state(num_envs: int, float_dtype, params=None) -> State:
    p = params if params is not None else Params()
    n = num_envs
    a = n_actions(p) if _mode(p) == REACH else 0
    reach = _mode(p) == REACH
    state = State(
        cells=placed.zeros((n, H, W), np.uint8), rows=placed.zeros((n, H), np.uint16),
        piece=placed.zeros(n, np.int8), rot=placed.zeros(n, np.int8), y=placed.zeros(n, np.int16),
        x=placed.zeros(n, np.int16), queue=placed.zeros((n, QUEUE_SLOTS), np.int8),
        hold=placed.full(n, NONE, np.int8), can_hold=placed.ones(n, np.bool_), bag=placed.zeros((n, 7), np.int8),
        bag_pos=placed.full(n, 7, np.int8), feat=placed.zeros((n, N_FEATURES), np.int16),
        cost=placed.full((n, a), -1, np.int16), plan_bits=placed.zeros((n, _planner.SCRATCH if reach else 0), np.int16),
        plan_rows=placed.zeros((n, 2 if reach else 0), np.int64), scratch_rows=placed.zeros((n, H), np.uint16),
        scratch_feat=placed.zeros((n, N_FEATURES), np.int16), scratch_cols=placed.zeros((n, SCRATCH_COLS), np.int64),
        obs_change=placed.full(n, OBS_ALL, np.int8), lock_row=placed.zeros(n, np.int8),
    )
    return state


def observation_space(p) -> spaces.Dict:
    parts = {
        "active": spaces.Box(0, 255, (4,), np.uint8),
        "board": spaces.Box(0, 1, (H, W), np.uint8),
        "features": spaces.Box(0, 255, (N_FEATURES,), np.uint8),
    }
    if p.hold:
        parts["hold"] = spaces.Box(0, NONE, (1,), np.uint8)
    if int(p.queue) > 0:
        parts["queue"] = spaces.Box(0, 6, (int(p.queue),), np.uint8)
    return spaces.Dict(parts)


def action_space(p) -> spaces.Discrete:
    return spaces.Discrete(n_actions(p))


def info_fields(p) -> dict:
    """Extra per-step info arrays: info key -> ``State`` field."""
    return {"placement_cost": "cost"} if _mode(p) == REACH else {}


@exact
def _n_actions(p, i):
    halves = 2 if param(p.hold, i) > 0 else 1
    mode = np.int64(param(p.action_mode, i))
    if mode == PRIMITIVE:
        return N_PRIMITIVE
    if mode == DROP:
        return N_DROP * halves
    return N_POSES * halves


@exact
def action_ok(p, actions, i):
    return discrete_ok(actions, i, _n_actions(p, i))


@exact
def enforce_mask(p, i):
    """Whether env ``i``'s mask is binding: in drop and reach mode an action outside it is
    illegal (the engine refuses or flags it); in primitive mode every input is accepted."""
    return np.int64(param(p.action_mode, i)) != PRIMITIVE


@exact
def reset_env(s, p, i, rng):
    use_bag = param(p.randomizer, i) > 0
    clear_board(s, i)
    s.bag_pos[i] = 7
    s.piece[i] = draw_piece(s.bag, s.bag_pos, rng, i, use_bag)
    for k in range(QUEUE_SLOTS):
        s.queue[i, k] = draw_piece(s.bag, s.bag_pos, rng, i, use_bag)
    s.hold[i] = NONE
    s.can_hold[i] = True
    spawn(s, i)
    board_features(s.rows, i, s.feat)
    s.feat[i, N_FEATURES - 2] = 0
    s.feat[i, N_FEATURES - 1] = 0
    s.obs_change[i] = OBS_ALL
    s.lock_row[i] = 0  # a reset leaves nothing of the last episode in the state


@exact(inline="always")
def _lock_and_spawn(s, p, i, t, r, y, x, events, rng, telemetry):
    """Lock the piece, score it, bring the next piece; returns (reward, terminated)."""
    lines = lock(s, i, t, r, y, x)
    if lines == 0:  # the board changed in the piece's rows only
        s.obs_change[i] = OBS_LOCK
        s.lock_row[i] = y
    events[i, EV_LINES] = lines
    events[i, EV_PIECES] = 1
    stamp = step_stamp(telemetry, i)
    push_event(telemetry, i, TM_LOCK, stamp, t)
    if lines > 0:
        push_event(telemetry, i, TM_LINE_CLEAR, stamp, lines)
    s.can_hold[i] = True
    advance(s, i, rng, param(p.randomizer, i) > 0)
    ok = spawn(s, i)
    _report_spawn(s, i, ok, telemetry)
    if not ok:
        _end_game(s, i)
    reward = np.float64(LINE_SCORES[lines]) if param(p.scoring, i) > 0 else np.float64(lines)
    return reward, not ok


@exact(inline="always")
def _end_game(s, i):
    """A game that ended (its piece could not spawn) has no pose with a cost; its mask is the
    engine's (all True after termination)."""
    for a in range(s.cost.shape[1]):
        s.cost[i, a] = -1


@exact(inline="always")
def _report_spawn(s, i, ok, telemetry):
    """Telemetry: the new piece spawned, or the game topped out."""
    if ok:
        push_event(telemetry, i, TM_SPAWN, step_stamp(telemetry, i), s.piece[i])
    else:
        push_event(telemetry, i, TM_TOP_OUT, step_stamp(telemetry, i), 0)


@exact(inline="always")
def _can_hold(s, p, i):
    return param(p.hold, i) > 0 and s.can_hold[i]


@exact
def step_env(s, p, i, actions, events, rng, telemetry=None):
    for k in range(len(EVENTS)):
        events[i, k] = 0
    s.obs_change[i] = OBS_ALL  # until the step knows it changed less
    a = np.int64(actions[i])
    mode = np.int64(param(p.action_mode, i))
    # The colour rows a lock of a later env would write: in a large batch they are out of
    # cache, and a store that misses holds back the observation's stores behind it.
    ahead = min(np.int64(i) + PREFETCH_ENVS_AHEAD, s.cells.shape[0] - 1)
    prefetch_write(s.cells, ahead, max(np.int64(s.y[ahead]), 0))
    use_bag = param(p.randomizer, i) > 0
    if mode == PRIMITIVE:
        if a == _planner.HOLD:
            if _can_hold(s, p, i):
                events[i, EV_HOLDS] = 1
                s.obs_change[i] = OBS_PIECES
                ok = do_hold(s, i, rng, use_bag)
                _report_spawn(s, i, ok, telemetry)
                if not ok:
                    _end_game(s, i)
                return 0.0, not ok
            a = _planner.NOOP
        t = np.int64(s.piece[i])
        kicks = 5 if param(p.rotation, i) > 0 else 1
        gravity = np.int64(param(p.gravity, i))
        r, y, x, locked = _planner.apply_input(s.rows, i, t, np.int64(s.rot[i]), np.int64(s.y[i]), np.int64(s.x[i]), a,
                                      gravity, kicks)
        s.rot[i] = r
        s.y[i] = y
        s.x[i] = x
        if not locked:
            s.obs_change[i] = OBS_POSE
            return 0.0, False
    else:
        half = N_DROP if mode == DROP else N_POSES
        use_hold = a >= half
        k = a - half if use_hold else a
        if use_hold and not _can_hold(s, p, i):
            return 0.0, False
        t = hold_target(s, i) if use_hold else np.int64(s.piece[i])
        if mode == DROP:
            r = k // W
            x = k % W
            spawnable = not (use_hold and blocked(s.rows, i, t, 0, SPAWN_Y[t], SPAWN_X[t]))
            if not (spawnable and drop_legal(s, i, t, r, x)):
                return 0.0, False
            y = drop_row(s.rows, i, t, r, DROP_Y[t, r], x)
        else:
            if s.cost[i, a] < 0:
                return 0.0, False
            r = k // (H * W)
            y = (k // W) % H
            x = k % W
        if use_hold:
            events[i, EV_HOLDS] = 1
            do_hold(s, i, rng, use_bag)
        s.rot[i] = r
        s.y[i] = y
        s.x[i] = x
    # One call site: _lock_and_spawn is inlined, and Numba compiles an inlined function once
    # per call site (see docs/numba-workarounds.md).
    return _lock_and_spawn(s, p, i, t, r, y, x, events, rng, telemetry)


# Inlined into the kernels: a call passes every State array by value, which costs more than
# the work. Only write_obs is: inlining step_env or write_mask into a prange body makes the
# parallel kernel's results differ from the serial kernel's (see docs/numba-workarounds.md).
@exact(inline="always")
def _write_pose(s, i, obs):
    obs[i, 0] = s.piece[i]
    obs[i, 1] = s.rot[i]
    obs[i, 2] = s.y[i]
    obs[i, 3] = s.x[i]


@exact(inline="always")
def write_obs_changes(s, p, i, obs):
    """What env ``i``'s last step changed of its observation (``State.obs_change``), ``obs[i]``
    holding the one before it: most primitive steps only move the piece."""
    change = s.obs_change[i]
    if change == OBS_ALL:
        write_obs(s, p, i, obs)
        return
    _write_pose(s, i, obs)
    if change == OBS_POSE:
        return
    if change == OBS_LOCK:
        _write_board_rows(s, i, obs, min(np.int64(s.lock_row[i]), H - BOARD_ROWS_PER_LOAD))
        _write_features(s, i, obs)
    _write_pieces(s, p, i, obs)


@exact(inline="always")
def _write_board_rows(s, i, obs, first):
    """Board rows ``first`` .. ``first + 3``: their 40 cells in five whole-word stores."""
    put_cells(obs, i, OBS_BOARD + first * W, packed_rows(load_word(s.rows, i, first)), BOARD_ROWS_PER_LOAD * W)


@exact(inline="always")
def _write_features(s, i, obs):
    for k in range(N_FEATURES):
        obs[i, OBS_FEATURES + k] = min(np.int64(s.feat[i, k]), 255)


@exact(inline="always")
def _write_pieces(s, p, i, obs):
    """The held piece (with hold on) and the visible queue."""
    o = OBS_FEATURES + N_FEATURES
    if param(p.hold, i) > 0:
        obs[i, o] = s.hold[i]
        o += 1
    for k in range(np.int64(param(p.queue, i))):
        obs[i, o + k] = s.queue[i, k]


@exact(inline="always")
def write_obs(s, p, i, obs):
    _write_pose(s, i, obs)
    for g in range(H // BOARD_ROWS_PER_LOAD):  # four board rows a load, not two stores a row
        _write_board_rows(s, i, obs, g * BOARD_ROWS_PER_LOAD)
    _write_features(s, i, obs)
    _write_pieces(s, p, i, obs)


@exact(inline="always")
def _drop_half(s, i, masks, base, t, ok):
    """The drop mask of piece ``t`` into ``masks[i, base:base + 40]`` (all False unless ``ok``),
    each rotation's ten columns from one ``drop_columns`` bitmask."""
    for r in range(4):
        a0 = base + r * W
        put_cells(masks, i, a0, drop_columns(s.rows, i, t, r) if ok else 0, W)


@exact(inline="always")
def _drop_mask(s, p, i, masks, hold_ok):
    _drop_half(s, i, masks, 0, np.int64(s.piece[i]), True)
    if param(p.hold, i) > 0:
        t2 = hold_target(s, i)
        hold_ok = hold_ok and not blocked(s.rows, i, t2, 0, SPAWN_Y[t2], SPAWN_X[t2])
        _drop_half(s, i, masks, N_DROP, t2, hold_ok)


@exact(inline="always")
def _reach_mask(s, p, i, masks, hold_ok):
    kicks = 5 if param(p.rotation, i) > 0 else 1
    gravity = np.int64(param(p.gravity, i))
    halves = 2 if param(p.hold, i) > 0 else 1
    # An int64 env index whatever the caller's (the step's, a reset's, observe's): one compile of the planner.
    _planner.plan_decision(s.rows, np.int64(i), np.int64(s.piece[i]), hold_target(s, i), hold_ok, halves, gravity,
                           kicks, s.cost, s.plan_bits, s.plan_rows)
    for h in range(halves):
        base = h * N_POSES
        for k in range(N_POSES):
            masks[i, base + k] = s.cost[i, base + k] >= 0


@exact(inline="always")
def _placement_free_mask(s, p, i, masks, mode):
    """The mask of primitive (``mode == PRIMITIVE``) or drop mode."""
    if mode == PRIMITIVE:
        hold = np.int64(1) << _planner.HOLD
        put_cells(masks, i, 0, PRIMITIVE_MOVES | (hold if _can_hold(s, p, i) else 0), N_PRIMITIVE)
    else:
        _drop_mask(s, p, i, masks, _can_hold(s, p, i))


@exact
def write_mask(s, p, i, masks):
    mode = np.int64(param(p.action_mode, i))
    if mode == REACH:
        _reach_mask(s, p, i, masks, _can_hold(s, p, i))
    else:
        _placement_free_mask(s, p, i, masks, mode)


@exact
def write_mask_without_planner(s, p, i, masks):
    """``write_mask`` for a batch in primitive or drop mode: the same masks, without the reach
    planner, which Numba would otherwise compile into every kernel (the larger part of a cold
    first step)."""
    _placement_free_mask(s, p, i, masks, np.int64(param(p.action_mode, i)))


def kernel_functions(p) -> dict:
    """Only a reach-mode batch needs the planner in its kernels (``vecsim.engine.game``)."""
    return {} if _mode(p) == REACH else {"write_mask": "write_mask_without_planner"}


from vecsim.games.tetris.render import render_rgb, render_text  # noqa: E402


def __getattr__(name):
    if name == "BatchedTetrisCollector":  # a collector, not a rule: it lives with the collectors
        raise AttributeError("BatchedTetrisCollector moved to vecsim.collect.tetris: "
                             "from vecsim.collect.tetris import BatchedTetrisCollector")
    raise AttributeError(f"module 'vecsim.games.tetris' has no attribute {name!r}")
