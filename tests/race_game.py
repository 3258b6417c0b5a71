"""RaceToSeven-v0, a two-seat test game for the engine's seat machinery (``SEATS``).

Two seats take turns adding 1 (action 0) or 2 (action 1) to a shared count that starts at
0; the seat whose move brings it to 7 or more wins (+1, the other -1) and the episode
terminates. The seat to move first is drawn from the env's own random stream. Observation:
``(count, acting seat)`` as float32.
"""

from typing import NamedTuple

import numpy as np
from gymnasium import spaces

from vecsim.core.jit import exact
from vecsim.core.rng import randint

NAME = "RaceToSeven"
ENV_ID = "RaceToSeven-v0"
SEATS = 2
GOAL = 7


class Params(NamedTuple):
    pass


class State(NamedTuple):
    count: np.ndarray  # (N,) the shared count
    acting_seat: np.ndarray  # (N,) int64: whose turn it is
    seat_rewards: np.ndarray  # (N, 2): each seat's reward of the last step


def allocate_state(num_envs, float_dtype, params):
    return State(np.zeros(num_envs, dtype=np.int64), np.zeros(num_envs, dtype=np.int64),
                 np.zeros((num_envs, SEATS), dtype=float_dtype))


def observation_space(p):
    return spaces.Box(0.0, GOAL + 1.0, shape=(2,), dtype=np.float32)


def action_space(p):
    return spaces.Discrete(2)


@exact
def reset_env(s, p, i, rng):
    s.count[i] = 0
    s.acting_seat[i] = randint(rng, i, SEATS)
    s.seat_rewards[i, 0] = 0.0
    s.seat_rewards[i, 1] = 0.0


@exact
def step_env(s, p, i, actions, events, rng):
    seat = s.acting_seat[i]
    s.count[i] += actions[i] + 1
    s.seat_rewards[i, 0] = 0.0
    s.seat_rewards[i, 1] = 0.0
    if s.count[i] >= GOAL:
        s.seat_rewards[i, seat] = 1.0
        s.seat_rewards[i, 1 - seat] = -1.0
        return 1.0, True
    s.acting_seat[i] = 1 - seat
    return 0.0, False


@exact
def write_obs(s, p, i, obs):
    obs[i, 0] = s.count[i]
    obs[i, 1] = s.acting_seat[i]


def render_rgb(values, p):
    img = np.full((16, 16 * (GOAL + 1), 3), 255, dtype=np.uint8)
    img[4:12, : 16 * int(values["count"])] = (0, 0, 200) if int(values["acting_seat"]) == 0 else (200, 0, 0)
    return img


def render_text(values, p):
    return f"count {int(values['count'])}, seat {int(values['acting_seat'])} to move"
