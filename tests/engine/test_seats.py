"""The engine's seat machinery (``SEATS``): whose turn it is and each seat's reward, reported
by every front end, on a two-seat test game (tests/race_game.py)."""

from __future__ import annotations

import types
from typing import NamedTuple

import gymnasium as gym
import numpy as np
import pytest

import race_game
import vecsim
from vecsim.engine.game import load_game
from vecsim.testing import check_engine, check_vector_env


@pytest.fixture(scope="module")
def race_id():
    env_id = vecsim.register("race_game")
    yield env_id
    vecsim.unregister(env_id)


def play(envs, steps, rng):
    """Random steps of a VectorEnv; yields (seat that acted, step outputs)."""
    obs, info = envs.reset(seed=5)
    for _ in range(steps):
        seat = info["acting_seat"].copy()
        obs, rewards, terminations, truncations, info = envs.step(rng.integers(0, 2, envs.num_envs))
        yield seat, rewards, terminations, info


def test_turns_alternate_and_rewards_are_per_seat(race_id):
    envs = gym.make_vec(race_id, num_envs=16, vectorization_mode="vector_entry_point",
                        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    rng = np.random.default_rng(0)
    wins = np.zeros(2)
    _, first_info = envs.reset(seed=5)
    assert set(np.unique(first_info["acting_seat"])) == {0, 1}  # drawn per env
    for seat, rewards, terminations, info in play(envs, 200, rng):
        moved_on = ~terminations
        assert np.array_equal(info["acting_seat"][moved_on], 1 - seat[moved_on])  # the other seat's turn
        final = info["final_info"] if terminations.any() else {}
        seat_rewards = np.where(terminations[:, None], final.get("seat_rewards", 0), info["seat_rewards"])
        assert seat_rewards.shape == (16, 2)
        assert np.array_equal(rewards, seat_rewards[np.arange(16), seat])  # the reward is the acting seat's
        for i in np.flatnonzero(terminations):
            assert sorted(seat_rewards[i]) == [-1.0, 1.0] and seat_rewards[i, seat[i]] == 1.0
            wins[seat[i]] += 1
        assert not seat_rewards[moved_on].any()
    assert wins.min() > 10  # both seats won games


def test_the_engine_exposes_the_seat_arrays(race_id):
    eng = vecsim.make(race_id, 8)
    eng.reset(seed=1)
    assert eng.num_seats == 2 and eng.acting_seat is eng.state.acting_seat
    before = eng.acting_seat.copy()
    eng.step(np.zeros(8, dtype=np.int64))
    assert np.array_equal(eng.acting_seat, 1 - before) and eng.seat_rewards.shape == (8, 2)
    cart = vecsim.make("CartPole-v1", 4)
    cart.reset(seed=0)
    cart.step(np.ones(4, dtype=np.int64))
    assert cart.num_seats == 1 and not cart.acting_seat.any()
    assert np.array_equal(cart.seat_rewards[:, 0], cart.rewards)


def test_single_env_and_sb3_adapter_report_the_seats(race_id):
    env = gym.make(race_id)
    _, info = env.reset(seed=3)
    seat = int(info["acting_seat"])
    _, reward, terminated, _, info = env.step(1)
    assert int(info["acting_seat"]) == 1 - seat and info["seat_rewards"].shape == (2,)
    pytest.importorskip("stable_baselines3")
    from vecsim.trainers.sb3 import SB3VecEnv

    venv = SB3VecEnv(race_id, 4, seed=0)
    venv.reset()
    seats = [int(info["acting_seat"]) for info in venv.reset_infos]
    _, _, dones, infos = venv.step(np.zeros(4, dtype=np.int64))
    assert [int(info["acting_seat"]) for info in infos] == [1 - s for s in seats]


def test_the_contract_checker_passes(race_id):
    check_vector_env(race_id)
    check_engine(race_id)


def test_a_multi_seat_game_needs_its_seat_fields():
    bad = types.ModuleType("seatless")
    for name in dir(race_game):
        if not name.startswith("__"):
            setattr(bad, name, getattr(race_game, name))
    class State(NamedTuple):
        count: np.ndarray

    bad.State = State
    with pytest.raises(TypeError, match="acting_seat, seat_rewards"):
        load_game(bad)
    bad.State = race_game.State
    bad.SEATS = 0
    with pytest.raises(TypeError, match="SEATS must be an int >= 1"):
        load_game(bad)
