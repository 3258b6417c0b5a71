"""Blokus's seats played out of the kernel by a Python callable (``mode="single",
opponent=f``; ``vecsim.engine.opponents``): a callable that plays greedy gives exactly the
in-kernel greedy opponent's games in every front end and autoreset mode, every opponent plays
every turn it has a move, a seeded callable gives the same games, and a bad callable's output
is refused naming the env and the seat."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import vecsim
from vecsim.games.blokus.pieces import N_PIECES, ORIENT_SIZE

CLASSIC, DUO = "vecsim/Blokus-v0", "vecsim/BlokusDuo-v0"


def greedy(obs, mask):
    """The built-in greedy opponent in Python: a largest piece, ties to the lowest action."""
    cells = mask.shape[1] // ORIENT_SIZE.shape[0]
    size = ORIENT_SIZE[np.arange(mask.shape[1]) // cells]
    return np.where(mask, size, -1).argmax(axis=1)


def seeded_random(seed):
    rng = np.random.default_rng(seed)
    calls = []

    def play(obs, mask):
        calls.append(mask.shape[0])
        return (rng.random(mask.shape) * mask).argmax(axis=1)

    play.calls = calls
    return play


def learner_actions(masks, rng):
    return (rng.random(masks.shape) * masks).argmax(axis=1)


def placed_pieces(eng):
    """(N, P) pieces each seat has placed."""
    left = eng.state.pieces_left
    return N_PIECES - np.array([[bin(int(v)).count("1") for v in row] for row in left])


def greedy_pair(blokus_id, mode, **kwargs):
    """Three envs against the in-kernel greedy opponent, and three against ``greedy`` as a callable."""
    return [gym.make_vec(blokus_id, num_envs=3, vectorization_mode="vector_entry_point", autoreset_mode=mode,
                         mode="single", opponent=opponent, **kwargs) for opponent in ("greedy", greedy)]


def lockstep(envs, seed, steps):
    """Yield the outputs of ``steps`` steps of ``envs`` (reset with ``seed``), each given the
    same random legal actions of the first env's mask, after checking that they agree."""
    for env in envs:
        env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        actions = learner_actions(envs[0].action_masks(), rng)
        outs = [env.step(actions) for env in envs]
        assert_same_steps(*outs)
        yield outs


def assert_same_steps(a, b):
    """Two VectorEnv steps' outputs are equal: observations, rewards, flags and the info."""
    for key in a[0]:
        np.testing.assert_array_equal(a[0][key], b[0][key], err_msg=key)
    for k, name in ((1, "rewards"), (2, "terminations"), (3, "truncations")):
        np.testing.assert_array_equal(a[k], b[k], err_msg=name)
    for key in ("action_mask", "placements", "passes", "acting_seat", "seat_rewards", "final_scores", "winner"):
        np.testing.assert_array_equal(a[4][key], b[4][key], err_msg=key)


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_a_greedy_callable_plays_the_games_of_the_built_in_greedy_opponent(mode):
    envs = greedy_pair(CLASSIC, mode)
    finished = 0
    for outs in lockstep(envs, 5, 40):
        obs, rew, term, trunc, info = outs[0]
        info2 = outs[1][4]
        if mode == "same_step" and term.any():
            for key in obs:
                np.testing.assert_array_equal(info["final_obs"][term][0][key], info2["final_obs"][term][0][key])
        finished += int(term.sum())
    assert finished >= 3  # every env finished a game and went on into the next
    for env in envs:
        env.close()


def test_a_greedy_callable_matches_in_the_engine_without_reset():
    engines = [vecsim.make(DUO, 4, mode="single", opponent=opponent) for opponent in ("greedy", greedy)]
    for eng in engines:
        eng.reset(seed=3)
    rng = np.random.default_rng(3)
    a, b = engines
    while not a.terminals.any():
        actions = learner_actions(a.masks, rng)
        for eng in engines:
            eng.step_no_reset(actions)
        for x, y in ((a.obs, b.obs), (a.rewards, b.rewards), (a.terminals, b.terminals), (a.events, b.events),
                     (a.seat_rewards, b.seat_rewards), (a.state.final_scores, b.state.final_scores)):
            np.testing.assert_array_equal(x, y)
    assert np.array_equal(a.result.to_reset_mask().to_bools(), a.terminals)
    assert np.array_equal(b.result.to_reset_mask().to_bools(), b.terminals)


@pytest.mark.parametrize("blokus_id", [CLASSIC, DUO])
def test_every_callable_opponent_plays_every_turn_it_has_a_move(blokus_id):
    opponent = seeded_random(1)
    eng = vecsim.make(blokus_id, 6, mode="single", opponent=opponent)
    eng.reset(seed=1)
    rng = np.random.default_rng(1)
    seats = eng.num_seats
    while True:
        assert not eng.acting_seat.any() and not eng.state.to_move.any()  # every env back at the learner
        before = placed_pieces(eng)
        eng.step(learner_actions(eng.masks, rng))
        if eng.terminals.any():
            break
        done = placed_pieces(eng) - before
        assert np.all(done[:, 0] == 1)
        # each opponent placed one piece unless it is out for good
        assert np.all((done[:, 1:] == 1) | eng.state.out[:, 1:])
        assert np.array_equal(eng.events[:, 0], done.sum(axis=1))
    assert sum(opponent.calls) > 6 * (seats - 1)


def test_a_seeded_callable_gives_the_same_games():
    runs = []
    for _ in range(2):
        eng = vecsim.make(DUO, 5, mode="single", opponent=seeded_random(9))
        eng.reset(seed=9)
        rng = np.random.default_rng(9)
        trace = []
        for _ in range(30):
            eng.step(learner_actions(eng.masks, rng))
            trace.append((eng.obs.copy(), eng.rewards.copy(), eng.terminals.copy(), eng.state.final_scores.copy()))
        runs.append(trace)
    for a, b in zip(*runs):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("bad, error, words", [
    (lambda obs, mask: np.zeros(mask.shape[0] + 1, np.int64), ValueError, ["shape (3,)", "shape (4,)"]),
    (lambda obs, mask: mask.argmax(axis=1).astype(np.float64), TypeError, ["integer", "float64", "env 0", "seat 1"]),
    (lambda obs, mask: np.full(mask.shape[0], mask.shape[1]), ValueError, ["env 0", "seat 1", "outside"]),
    (lambda obs, mask: (~mask).argmax(axis=1), ValueError, ["env 0", "seat 1", "not a legal move"]),
])
def test_a_bad_callable_output_is_refused_naming_the_env_and_seat(bad, error, words):
    eng = vecsim.make(DUO, 3, mode="single", opponent=bad)
    eng.reset(seed=0)
    with pytest.raises(error) as info:
        eng.step(eng.masks.argmax(axis=1))
    for word in words:
        assert word in str(info.value)


def test_a_callable_opponent_needs_single_mode_and_a_function():
    with pytest.raises(ValueError, match="mode='single'"):
        vecsim.make(DUO, 2, mode="selfplay", opponent=greedy)
    with pytest.raises(ValueError, match="passing a function as opponent"):
        vecsim.make(DUO, 2, mode="single", opponent="callable")
    with pytest.raises(TypeError, match="takes no callable"):
        vecsim.make("vecsim/CartPole-v1", 2, gravity=greedy)


def test_sb3_adapter_steps_against_a_callable_opponent():
    pytest.importorskip("stable_baselines3")
    from vecsim.trainers.sb3 import SB3VecEnv

    venv = SB3VecEnv(DUO, 4, seed=0, mode="single", opponent=greedy)
    venv.reset()
    rng = np.random.default_rng(0)
    games = 0
    returns, lengths = np.zeros(4), np.zeros(4, dtype=np.int64)  # of each env's game so far
    for _ in range(60):
        masks = np.stack(venv.env_method("action_masks"))
        _, rewards, dones, infos = venv.step(learner_actions(masks, rng))
        returns += rewards
        lengths += 1
        for i in np.flatnonzero(dones):
            games += 1
            # Monitor's statistics: the learner's reward and steps over the game, its opponent's turns unseen.
            assert infos[i]["episode"]["r"] == pytest.approx(returns[i], abs=1e-6)
            assert infos[i]["episode"]["l"] == lengths[i]
            returns[i], lengths[i] = 0.0, 0
        assert not venv.engine.acting_seat.any()
    assert games >= 4
    venv.close()


@pytest.mark.parametrize("mode", ["next_step", "same_step", "disabled"])
def test_a_callable_opponents_moves_count_toward_max_episode_steps_as_in_kernel_ones(mode):
    """One step is the learner's move and the opponents' moves after it, whoever plays them:
    the step count, the truncation (after the opponents have played) and the resets agree."""
    envs = greedy_pair(DUO, mode, max_episode_steps=4)
    truncated = 0
    for steps in lockstep(envs, 2, 14):
        term, trunc = steps[0][2], steps[0][3]
        np.testing.assert_array_equal(*(env.unwrapped.engine.elapsed for env in envs))
        truncated += int(trunc.sum())
        if mode == "disabled" and (term | trunc).any():
            for env in envs:
                env.reset(options={"reset_mask": term | trunc})
    assert truncated >= 6  # every env was truncated after 4 learner steps, more than once


def test_a_callable_opponents_moves_leave_the_step_count_to_the_learner():
    eng = vecsim.make(DUO, 2, mode="single", opponent=greedy, max_episode_steps=3)
    eng.reset(seed=0)
    rng = np.random.default_rng(0)
    for t in range(1, 3):
        eng.step_no_reset(learner_actions(eng.masks, rng))
        assert eng.elapsed.tolist() == [t, t] and not eng.truncations.any()
        assert eng.events[:, 0].tolist() == [2, 2]  # the learner's placement and the opponent's
    eng.step_no_reset(learner_actions(eng.masks, rng))
    assert eng.truncations.all() and eng.events[:, 0].tolist() == [2, 2]  # truncated once the opponent played
    assert eng.result.to_reset_mask().to_bools().all()


def test_the_episode_collectors_refuse_a_callable_opponent_naming_the_argument():
    from vecsim.collect import EpisodeCollector
    from vecsim.distributed.collector import RayEpisodeCollector

    for collector in (EpisodeCollector, RayEpisodeCollector):
        with pytest.raises(ValueError, match=r"cannot play .*opponent=<function greedy"):
            collector(DUO, 2, 50, "random", 0, mode="single", opponent=greedy)


def test_the_pipeline_plays_a_callable_opponent():
    from vecsim.pipeline import Pipeline

    class RandomLegal:
        def act(self, params, state, obs, mask):
            return (np.random.default_rng(len(obs)).random(mask.shape) * mask).argmax(axis=1), state

        def learn(self, params, opt_state, batch):
            return params, opt_state, {}

    opponent = seeded_random(4)
    with Pipeline(DUO, 2, RandomLegal(), params=0, num_actors=1, steps_per_cycle=3, mode="synchronous",
                  env_kwargs=dict(mode="single", opponent=opponent)) as loop:
        loop.run(1)
        placed = placed_pieces(loop.actors[0].engine)
    assert opponent.calls == [2, 2, 2]  # the opponent answered each of the learner's moves in both envs
    assert np.all(placed == 3)


def test_a_callable_opponents_step_count_agrees_in_the_engines_same_step_kernel():
    """The engine's own SAME_STEP step (the kernel resets finished envs; the VectorEnv of a game
    with masks takes another path) truncates and resets as with the opponent in the kernel."""
    from vecsim.engine.engine import SAME_STEP

    engines = [vecsim.make(DUO, 3, mode="single", opponent=opponent, max_episode_steps=3)
               for opponent in ("greedy", greedy)]
    for eng in engines:
        eng.reset(seed=6)
    rng = np.random.default_rng(6)
    a, b = engines
    reset = 0
    for _ in range(10):
        actions = learner_actions(a.masks, rng)
        for eng in engines:
            eng.step_mode(SAME_STEP, actions)
        for x, y in ((a.obs, b.obs), (a.final_obs, b.final_obs), (a.rewards, b.rewards), (a.terminals, b.terminals),
                     (a.truncations, b.truncations), (a.has_final, b.has_final), (a.elapsed, b.elapsed)):
            np.testing.assert_array_equal(x, y)
        reset += int((a.has_final & a.truncations).sum())
    assert reset == 9  # every env truncated and reset at its steps 3, 6 and 9
