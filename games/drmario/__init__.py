"""DrMario-v0: NES Dr. Mario (NTSC, one player), frame-exact, as a vecsim game.

The rules follow ``games/drmario/SPEC.md`` (a frame-exact specification of the NES program,
each fact with its source in the disassembly); the per-frame kernel ``rules.frame`` replays the
emulator capture of the attract demo exactly (``tests/games/drmario``).

Description
    Pills of two colored halves are thrown into a 16 x 8 bottle of viruses; four or more of
    one color in a line clear; the level is won when no virus is left.
Action Space (``mode="frame"``)
    ``Discrete(16)``: one frame's controller, ``dpad * 4 + rotation`` with ``dpad`` 0 none,
    1 Left, 2 Right, 3 Down and ``rotation`` 0 none, 1 A (clockwise), 2 B (counter-clockwise),
    3 A+B. ``BUTTONS[action]`` is the controller byte. Up, Start, Select, Left+Right and
    Down with a direction are left out: Up and Down+direction act as no d-pad or the direction
    alone, Start pauses, Left+Right needs a pad without a rocker.
Observation Space
    ``Box((136,), uint8)``: the 128 bottle bytes (row * 8 + col, row 0 at the top, the ROM's
    tile bytes: high nibble type, low nibble color 0 yellow 1 red 2 blue, 0xFF empty), then
    the falling pill's column, row from the top, rotation, 1st and 2nd color, the preview's
    1st and 2nd color, and 1 while the pill is controllable (else 0).
Rewards
    Viruses cleared in the step.
Starting State
    ``initData_level`` and the level intro for ``level`` and ``speed``: the 128-pill reserve
    and the viruses drawn from the 16-bit LFSR, which starts at ``seed`` (a state 1..65535), or,
    with ``seed=-1``, at a state of the power-on cycle chosen by the env's random stream. The
    episode starts at the level's first throw frame.
Episode End
    Terminated on clearing the level or on top-out; ``info["terminal_reason"]`` is 0 while
    playing, 1 cleared, 2 topped out. ``info["score"]`` is the internal score (display x10).
Events
    ``locks``, ``spawns``, ``match_groups``, ``match_rounds``, ``viruses_cleared``,
    ``tiles_cleared``, ``drop_passes``, ``speed_ups`` in the step.
Arguments
    ``mode``: ``"frame"``. ``level``: 0..24. ``speed``: ``"low"``, ``"med"``, ``"high"``
    (or 0..2). ``seed``: -1 or an LFSR state 1..65535.
Version History
    v0: first version.
"""

from typing import NamedTuple

import numpy as np
from gymnasium import spaces

from vecsim.core.cells import put_words
from vecsim.core.contract import KernelHints, named_choices, param
from vecsim.core.jit import exact
from vecsim.core.rng import randint
from vecsim.games.drmario import rules
from vecsim.games.drmario.state import State, allocate
from vecsim.games.drmario.tables import BTN_A, BTN_B, BTN_DOWN, BTN_LEFT, BTN_RIGHT, LFSR_CYCLE_LENGTH, POWER_ON_CYCLE

NAME = "DrMario"
ENV_ID = "DrMario-v0"
MAX_EPISODE_STEPS = None
CHOICES = {"mode": ("frame",), "speed": ("low", "med", "high")}
STRUCTURAL = ("mode",)
EVENTS = ("locks", "spawns", "match_groups", "match_rounds", "viruses_cleared", "tiles_cleared",
          "drop_passes", "speed_ups")
PHYSICAL_STATE = ()
KERNEL_HINTS = KernelHints(write_obs_fills_row=True, envs_per_call=16)
OBS_SIZE = 136

_DPAD = (0, BTN_LEFT, BTN_RIGHT, BTN_DOWN)
_ROTATION = (0, BTN_A, BTN_B, BTN_A | BTN_B)
#: (16,) int64: controller byte of each frame-mode action.
BUTTONS = np.array([d | r for d in _DPAD for r in _ROTATION], np.int64)


class Params(NamedTuple):
    mode: float = 0.0  # 0 frame
    level: float = 0.0
    speed: float = 1.0  # 0 low, 1 med, 2 high
    seed: float = -1.0  # LFSR state at initData_level; -1 draws one from the power-on cycle


def prepare_params(given: dict) -> dict:
    """Turn ``speed="med"`` and ``mode="frame"`` into their numbers."""
    return named_choices(NAME, CHOICES, given)


def check_params(values: dict) -> None:
    limits = {"mode": (0, len(CHOICES["mode"]) - 1), "level": (0, 24), "speed": (0, 2), "seed": (-1, 65535)}
    for name, (lo, hi) in limits.items():
        v = np.asarray(values[name], dtype=float)
        bad = (v != np.round(v)) | (v < lo) | (v > hi) | ((v == 0) if name == "seed" else False)
        if np.any(bad):
            what = {"speed": f"one of {CHOICES['speed']} or an integer in [0, 2]",
                    "mode": f"one of {CHOICES['mode']}",
                    "seed": "-1 or an LFSR state in [1, 65535]"}.get(name, f"an integer in [{lo}, {hi}]")
            raise ValueError(f"{NAME} {name} must be {what}, but got {name}={v.flat[int(np.flatnonzero(bad)[0])]}")


def allocate_state(num_envs, float_dtype, params):
    return allocate(num_envs)


def observation_space(p):
    return spaces.Box(0, 255, shape=(OBS_SIZE,), dtype=np.uint8)


def action_space(p):
    return spaces.Discrete(len(BUTTONS))


def info_fields(p) -> dict:
    return {"terminal_reason": "outcome", "score": "score"}


@exact
def reset_env(s, p, i, rng):
    seed = np.int64(param(p.seed, i))
    lfsr = POWER_ON_CYCLE[randint(rng, i, LFSR_CYCLE_LENGTH)] if seed < 0 else seed
    s.held[i] = 0
    s.hor_velocity[i] = 0
    s.fc[i] = 0
    rules.start_level(s, i, np.int64(param(p.level, i)), np.int64(param(p.speed, i)), lfsr, 0)


@exact
def _emit_events(s, i, events):
    frame_events = s.frame_events
    for k in range(rules.N_FRAME_EVENTS):  # a constant count: unrolled
        events[i, k] = frame_events[i, k]
    for k in range(rules.N_FRAME_EVENTS):
        frame_events[i, k] = 0


@exact
def step_env(s, p, i, actions, events, rng):
    rules.frame(s, i, BUTTONS[np.int64(actions[i])])
    reward = s.frame_events[i, rules.EV_VIRUSES]
    _emit_events(s, i, events)
    return float(reward), s.outcome[i] != rules.PLAYING


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


from vecsim.games.drmario.render import render_rgb, render_text  # noqa: E402,F401
