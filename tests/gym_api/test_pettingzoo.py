"""The PettingZoo front ends (``vecsim.gym.pettingzoo``) over both Blokus ids: PettingZoo's own
``api_test`` and ``parallel_api_test``, agents named by seat, the action mask in the
observation, every seat's rewards adding up to its final score, and bad actions refused."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pettingzoo")
from pettingzoo.test import api_test, parallel_api_test  # noqa: E402

from vecsim.gym.pettingzoo import VecsimAECEnv, VecsimParallelEnv  # noqa: E402

CLASSIC, DUO = "vecsim/Blokus-v0", "vecsim/BlokusDuo-v0"


@pytest.mark.parametrize("blokus_id", [CLASSIC, DUO])
def test_aec_env_passes_pettingzoos_api_test(blokus_id):
    env = VecsimAECEnv(blokus_id)
    api_test(env, num_cycles=200)
    env.close()


@pytest.mark.parametrize("blokus_id", [CLASSIC, DUO])
def test_parallel_env_passes_pettingzoos_parallel_api_test(blokus_id):
    env = VecsimParallelEnv(blokus_id)
    parallel_api_test(env, num_cycles=200)
    env.close()


def play_aec(env, seed):
    """A whole game, each seat playing its first... random legal move; returns the moves, the
    summed rewards and the terminal infos."""
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    moves, returns, infos = [], dict.fromkeys(env.possible_agents, 0.0), {}
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, info = env.last()
        returns[agent] += reward
        if terminated or truncated:
            infos[agent] = info
            env.step(None)
            continue
        mask = obs["action_mask"]
        assert mask.dtype == np.int8 and mask.any()
        action = int(rng.choice(np.flatnonzero(mask)))
        moves.append((agent, action))
        env.step(action)
    return moves, returns, infos


@pytest.mark.parametrize("blokus_id, seats", [(CLASSIC, 4), (DUO, 2)])
def test_aec_seats_take_turns_and_returns_add_up_to_the_final_scores(blokus_id, seats):
    env = VecsimAECEnv(blokus_id)
    assert env.possible_agents == [f"seat_{q}" for q in range(seats)]
    moves, returns, infos = play_aec(env, seed=4)
    assert moves[0][0] == "seat_0" and [a for a, _ in moves[:seats]] == env.possible_agents
    assert set(infos) == set(env.possible_agents)
    for agent, info in infos.items():
        assert returns[agent] == info["final_scores"] + 89  # the seat's squares and bonuses
    winners = {info["winner"] for info in infos.values()}
    assert len(winners) == 1
    assert play_aec(VecsimAECEnv(blokus_id), seed=4)[0] == moves  # same seed, same game
    env.close()


def test_parallel_env_plays_the_seat_to_move_and_ends_all_agents_together():
    env = VecsimParallelEnv(DUO)
    obs, infos = env.reset(seed=2)
    rng = np.random.default_rng(2)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    while env.agents:
        to_move = [a for a in env.agents if obs[a]["action_mask"].any()]
        assert len(to_move) == 1
        actions = {a: int(rng.choice(np.flatnonzero(o["action_mask"]))) if o["action_mask"].any() else 0
                   for a, o in obs.items()}
        obs, rewards, terminated, truncated, infos = env.step(actions)
        for a, r in rewards.items():
            totals[a] += r
    assert all(terminated.values())
    for a in env.possible_agents:
        assert totals[a] == infos[a]["final_scores"] + 89
    with pytest.raises(RuntimeError, match="reset"):
        env.step({})


def test_bad_actions_are_refused_naming_the_agent():
    env = VecsimAECEnv(DUO)
    env.reset(seed=0)
    mask = env.observe("seat_0")["action_mask"]
    with pytest.raises(ValueError, match="seat_0.*not a legal move"):
        env.step(int(np.flatnonzero(mask == 0)[0]))
    with pytest.raises(ValueError, match=r"seat_0 must be in \[0, 17836\)"):
        env.step(17836)
    with pytest.raises(TypeError, match="seat_0 must be an int"):
        env.step(1.5)
    with pytest.raises(ValueError, match="agent must be one of"):
        env.observe("player_0")
    par = VecsimParallelEnv(DUO)
    par.reset(seed=0)
    with pytest.raises(ValueError, match="seat_0, the seat to move"):
        par.step({"seat_1": 0})
    with pytest.raises(ValueError, match="PettingZoo API needs a game with seats"):
        VecsimAECEnv("vecsim/CartPole-v1")
