"""DrMario-v0: NES Dr. Mario (NTSC, one player), frame-exact, as a vecsim game.

The rules follow ``games/drmario/SPEC.md`` (a frame-exact specification of the NES program,
each fact with its source in the disassembly); the per-frame kernel ``rules.frame`` replays the
emulator capture of the attract demo exactly (``tests/games/drmario``).

Description
    Pills of two colored halves are thrown into a 16 x 8 bottle of viruses; four or more of
    one color in a line clear; the level is won when no virus is left.
Action Space (``mode="decision"``, the default)
    ``Discrete(512)``: a placement, the planner's encoding (``vecsim.planners.drmario``):
    ``o * 128 + row * 8 + col`` with ``(row, col)`` the pill's 1st-color half (row 0 at the
    top) and ``o`` where its 2nd-color half sits (0 right, 1 below, 2 left, 3 above). A step
    plays the placement's fastest input script frame by frame (``rules.frame``), then the game
    with no input until the next pill is controllable (the next decision point) or the game
    ends, and plans the new decision exactly inside the kernel. ``info["action_mask"]`` (and
    ``action_masks()``) are the feasible placements; the mask is binding: an infeasible
    placement raises ``ValueError``, or with the engine's ``invalid_action="flag"`` leaves the
    env as it was: the same decision, its info that of the step that reached it but ``tau``
    and ``tiles_cleared`` 0 (no frame played), reward 0 and the ``invalid_action`` event set.
Action Space (``mode="frame"``)
    ``Discrete(16)``: one frame's controller, ``dpad * 4 + rotation`` with ``dpad`` 0 none,
    1 Left, 2 Right, 3 Down and ``rotation`` 0 none, 1 A (clockwise), 2 B (counter-clockwise),
    3 A+B. ``BUTTONS[action]`` is the controller byte. Up, Start, Select, Left+Right and
    Down with a direction are left out: Up and Down+direction act as no d-pad or the direction
    alone, Start pauses, Left+Right needs a pad without a rocker. Every action is legal: the
    mask is all True.
Observation Space
    ``Box((136,), uint8)``: the 128 bottle bytes (row * 8 + col, row 0 at the top, the ROM's
    tile bytes: high nibble type, low nibble color 0 yellow 1 red 2 blue, 0xFF empty), then
    the falling pill's column, row from the top, rotation, 1st and 2nd color, the preview's
    1st and 2nd color, and 1 while the pill is controllable (else 0).
Decision mode's info (per env; ``N`` envs in the vector env)
    ``action_mask`` (512,) bool; ``cost_to_lock`` (512,) uint16, frames from the decision point
    to each placement's lock (0xFFFF unreachable); ``tau`` () int64, frames the step played
    (``cost_to_lock[a]`` plus the frames to the next decision); ``terminal_reason`` () int64;
    ``pill_colors``, ``preview_colors`` (2,) int64 (0 yellow, 1 red, 2 blue); ``pill_count``
    () int64, pills thrown in the level (the pill's spawn id); ``lock_x``, ``lock_y`` (from the
    bottom), ``lock_rot`` () int64, the pose of the last lock; ``tiles_cleared`` (3,) int64,
    viruses, other tiles and all tiles cleared in the step; ``viruses_left`` () and
    ``viruses_by_color`` (3,) int64; ``level``, ``speed``, ``speed_ups``, ``frame_count`` ()
    int64; ``column_heights`` (8,) int64 (rows up to each column's highest tile) and
    ``max_height`` () int64; ``score`` () int64; and the ``EVENTS`` counters of the step.
    Each is a ``State`` field (``info_fields``), so the engine's buffer spec lists it and
    caller-owned buffers can take it.
Rewards
    Viruses cleared in the step.
Starting State
    ``initData_level`` and the level intro for ``level`` and ``speed``: the 128-pill reserve
    and the viruses drawn from the 16-bit LFSR, which starts at ``seed`` (a state 1..65535), or,
    with ``seed=-1``, at a state of the power-on cycle chosen by the env's random stream. The
    episode starts at the level's first throw frame in frame mode, and at the first pill's
    decision point (the throw played, its placements planned) in decision mode.
Episode End
    Terminated on clearing the level or on top-out; ``info["terminal_reason"]`` is 0 while
    playing, 1 cleared, 2 topped out. ``info["score"]`` is the internal score (display x10).
    Decision mode also ends with 3 (timeout) at the first decision point at or past
    ``max_frames`` frames (0: never), and with 4 if the planner finds no placement (its node
    arrays hold every node a search can visit, so a search never stops short).
Events
    ``locks``, ``spawns``, ``match_groups``, ``match_rounds``, ``viruses_cleared``,
    ``tiles_cleared``, ``drop_passes``, ``speed_ups`` in the step.
Telemetry
    With ``telemetry=capacity``, the ring gets ``rules.TELEMETRY`` (spawn, lock, match, clear,
    virus_cleared, cascade, top_out, victory), stamped with ``frame_count`` (their values:
    ``rules``), from every frame a step plays, in both modes.
Arguments
    ``mode``: ``"decision"`` (default) or ``"frame"``. ``level``: 0..24. ``speed``: ``"low"``,
    ``"med"``, ``"high"`` (or 0..2). ``seed``: -1 or an LFSR state 1..65535. ``max_frames``:
    decision mode's episode frame cap, 0 for none. ``level``, ``speed``, ``seed`` and
    ``max_frames`` may differ per env, and ``engine.reset_envs(mask, seed, level=...,
    speed=...)`` sets them for the envs it resets.
Memory
    Decision mode keeps about 17 KB an env: its outputs and the paths of its last search's
    tree to the locks (the step reads the chosen script off them). The search itself
    runs on scratch of the thread stepping the env (``SCRATCH_STATE``): the visited bitmap at
    the slowest gravity and node arrays that no search can outgrow, about 170 MB a thread of
    which a search maps only what it reaches. A batch that would not fit in the memory
    available is refused with ``MemoryError`` at construction; ``mode="frame"`` keeps under
    2 KB an env.
Version History
    v0: first version.
"""

from typing import NamedTuple

import numpy as np
from gymnasium import spaces

from vecsim.core.cells import put_cells, put_words
from vecsim.core.contract import KernelHints, named_choices, param
from vecsim.core.jit import exact
from vecsim.core.rng import randint
from vecsim.games.drmario import rules
from vecsim.games.drmario.rules import TELEMETRY  # noqa: F401 (the game's telemetry kinds)
from vecsim.games.drmario.state import N_PLACEMENTS, SCRATCH_FIELDS, State, allocate
from vecsim.games.drmario.tables import (BTN_A, BTN_B, BTN_DOWN, BTN_LEFT, BTN_RIGHT, LFSR_CYCLE_LENGTH,
                                         POWER_ON_CYCLE, POWER_ON_SEED)

NAME = "DrMario"
ENV_ID = "DrMario-v0"
MAX_EPISODE_STEPS = None
CHOICES = {"mode": ("frame", "decision"), "speed": ("low", "med", "high")}
FRAME, DECISION = 0, 1
STRUCTURAL = ("mode",)
EVENTS = ("locks", "spawns", "match_groups", "match_rounds", "viruses_cleared", "tiles_cleared",
          "drop_passes", "speed_ups")
PHYSICAL_STATE = ()
SCRATCH_STATE = SCRATCH_FIELDS
KERNEL_HINTS = KernelHints(write_obs_fills_row=True, envs_per_call=16, call_by_symbol=True)
OBS_SIZE = 136

_DPAD = (0, BTN_LEFT, BTN_RIGHT, BTN_DOWN)
_ROTATION = (0, BTN_A, BTN_B, BTN_A | BTN_B)
#: (16,) int64: controller byte of each frame-mode action.
BUTTONS = np.array([d | r for d in _DPAD for r in _ROTATION], np.int64)


class Params(NamedTuple):
    mode: float = 1.0  # 0 frame, 1 decision
    level: float = 0.0
    speed: float = 1.0  # 0 low, 1 med, 2 high
    seed: float = -1.0  # LFSR state at initData_level; -1 draws one from the power-on cycle
    max_frames: float = 0.0  # decision mode's episode frame cap, 0 none


def prepare_params(given: dict) -> dict:
    """Turn ``speed="med"`` and ``mode="decision"`` into their numbers."""
    return named_choices(NAME, CHOICES, given)


#: (65536,) bool: which 16-bit LFSR states lie on the power-on cycle (the seeds a console can have).
_ON_POWER_ON_CYCLE = np.zeros(1 << 16, dtype=bool)
_ON_POWER_ON_CYCLE[POWER_ON_CYCLE] = True


def check_params(values: dict) -> None:
    limits = {"mode": (0, len(CHOICES["mode"]) - 1), "level": (0, 24), "speed": (0, 2), "seed": (-1, 65535),
              "max_frames": (0, 2 ** 62)}
    for name, (lo, hi) in limits.items():
        v = np.asarray(values[name], dtype=float)
        bad = (v != np.round(v)) | (v < lo) | (v > hi)
        if name == "seed":
            # A state off the cycle can fall into the LFSR's fixed point 0 (seed 1 does), where every
            # virus draw is the same cell and a level that needs more viruses than it has cells never ends.
            bad |= (v != -1) & ~_ON_POWER_ON_CYCLE[np.clip(np.nan_to_num(v), 0, 65535).astype(np.int64)]
        if np.any(bad):
            what = {"speed": f"one of {CHOICES['speed']} or an integer in [0, 2]",
                    "mode": f"one of {CHOICES['mode']}",
                    "seed": f"-1 (a random one) or an LFSR state on the NES's power-on cycle ({LFSR_CYCLE_LENGTH} "
                            f"of the 65535 nonzero states, {POWER_ON_SEED:#x} the first)"}.get(
                name, f"an integer in [{lo}, {hi}]")
            raise ValueError(f"{NAME} {name} must be {what}, but got {name}={v.flat[int(np.flatnonzero(bad)[0])]:g}")


def _decision(p) -> bool:
    return int(p.mode) == DECISION


def allocate_state(num_envs, float_dtype, params):
    return allocate(num_envs, decision=params is not None and _decision(params))


def observation_space(p):
    return spaces.Box(0, 255, shape=(OBS_SIZE,), dtype=np.uint8)


def action_space(p):
    return spaces.Discrete(N_PLACEMENTS if _decision(p) else len(BUTTONS))


#: Decision mode's info keys beyond frame mode's, each a ``State`` field.
DECISION_INFO = {"cost_to_lock": "cost_to_lock", "tau": "tau", "pill_colors": "pill_colors",
                 "preview_colors": "preview_colors", "pill_count": "pills_sent", "lock_x": "lock_x",
                 "lock_y": "lock_y", "lock_rot": "lock_rot", "tiles_cleared": "tiles_cleared",
                 "viruses_left": "virus_left", "viruses_by_color": "viruses_by_color", "level": "level",
                 "speed": "speed", "speed_ups": "speed_ups", "frame_count": "frame_count",
                 "column_heights": "column_heights", "max_height": "max_height"}


def info_fields(p) -> dict:
    fields = {"terminal_reason": "outcome", "score": "score"}
    if _decision(p):
        fields.update(DECISION_INFO)
    return fields


def kernel_functions(p) -> dict:
    """Only a decision-mode batch compiles the planner into its reset, step and mask."""
    if _decision(p):
        return {"step_env": "step_decision_env", "write_mask": "write_decision_mask"}
    return {"reset_env": "reset_frame_env"}


@exact
def enforce_mask(p, i):
    """Decision mode's mask is binding (the engine refuses or flags an infeasible placement);
    frame mode accepts every controller byte."""
    return np.int64(param(p.mode, i)) == DECISION


@exact
def reset_frame_env(s, p, i, rng):
    """Frame mode's ``reset_env`` (``kernel_functions``): the level's first frame."""
    seed = np.int64(param(p.seed, i))
    lfsr = POWER_ON_CYCLE[randint(rng, i, LFSR_CYCLE_LENGTH)] if seed < 0 else seed
    s.held[i] = 0
    s.hor_velocity[i] = 0
    s.fc[i] = 0
    rules.start_level(s, i, np.int64(param(p.level, i)), np.int64(param(p.speed, i)), lfsr, 0)


@exact
def reset_env(s, p, i, rng):
    reset_frame_env(s, p, i, rng)
    if np.int64(param(p.mode, i)) == DECISION:
        decision.reset_to_decision(s, i)


@exact
def _emit_events(s, i, events):
    frame_events = s.frame_events
    for k in range(rules.N_FRAME_EVENTS):  # a constant count: unrolled
        events[i, k] = frame_events[i, k]
    for k in range(rules.N_FRAME_EVENTS):
        frame_events[i, k] = 0


@exact
def step_env(s, p, i, actions, events, rng, telemetry=None):
    rules.frame(s, i, BUTTONS[np.int64(actions[i])], telemetry)
    reward = s.frame_events[i, rules.EV_VIRUSES]
    _emit_events(s, i, events)
    return float(reward), s.outcome[i] != rules.PLAYING


@exact
def step_decision_env(s, p, i, actions, events, rng, telemetry=None):
    """Decision mode's ``step_env`` (``kernel_functions``)."""
    decision.step_decision(s, i, np.int64(actions[i]), np.int64(param(p.max_frames, i)), telemetry)
    reward = s.frame_events[i, rules.EV_VIRUSES]
    _emit_events(s, i, events)
    return float(reward), s.outcome[i] != rules.PLAYING


@exact
def refuse_env(s, p, i):
    """Decision mode: a refused placement (``invalid_action="flag"``) played no frame."""
    if np.int64(param(p.mode, i)) == DECISION:
        decision.refuse_decision(s, i)


@exact
def write_mask(s, p, i, masks):
    """Frame mode: every controller byte is legal."""
    put_cells(masks, i, 0, (1 << len(BUTTONS)) - 1, len(BUTTONS))


@exact
def write_decision_mask(s, p, i, masks):
    """Decision mode's ``write_mask`` (``kernel_functions``): the feasible placements."""
    decision.write_feasible_mask(s, i, masks)


@exact
def write_obs(s, p, i, obs):
    put_words(obs, i, 0, s.board.view(np.uint64), i, 16)  # the bottle's 128 bytes, 8 a store
    obs[i, 128] = s.x[i]
    obs[i, 129] = 15 - s.y[i]
    obs[i, 130] = s.rot[i]
    obs[i, 131] = s.falling[i] // 3
    obs[i, 132] = s.falling[i] % 3
    obs[i, 133] = s.next_pill[i] // 3
    obs[i, 134] = s.next_pill[i] % 3
    obs[i, 135] = 1 if s.next_action[i] == rules.FALLING else 0


from vecsim.games.drmario import decision  # noqa: E402 (imports the planner, which needs BUTTONS)
from vecsim.games.drmario.render import render_rgb, render_text  # noqa: E402,F401
