"""Blokus-v0 and BlokusDuo-v0 as vecsim games: the contract checkers, seats in selfplay and
single mode, the built-in opponents, final scores, the observation's point of view, and
MaskablePPO through the SB3 adapter."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import vecsim
from vecsim.games.blokus import rules
from vecsim.games.blokus.pieces import N_PIECES, PIECE_SIZE
from vecsim.testing import check_engine, check_vector_env

CLASSIC, DUO = "vecsim/Blokus-v0", "vecsim/BlokusDuo-v0"


def random_legal(eng, rng):
    return np.array([rng.choice(np.flatnonzero(m)) for m in eng.masks])


def placed_pieces(eng):
    """(N, P) pieces each seat has placed."""
    left = eng.state.pieces_left
    return N_PIECES - np.array([[bin(int(v)).count("1") for v in row] for row in left])


# Selfplay, the default mode, passes the checkers in tests/test_testing_checker.py with every game.
@pytest.mark.parametrize("blokus_id", [CLASSIC, DUO])
def test_vector_env_contract_in_single_mode(blokus_id):
    check_vector_env(blokus_id, num_envs=2, steps=60, mode="single")


@pytest.mark.parametrize("blokus_id", [CLASSIC, DUO])
def test_engine_contract_in_single_mode(blokus_id):
    check_engine(blokus_id, num_envs=5, steps=60, mode="single")


def test_selfplay_seats_rotate_and_a_seat_that_cannot_move_passes_for_good():
    eng = vecsim.make(CLASSIC, 6)
    eng.reset(seed=1)
    rng = np.random.default_rng(1)
    assert not eng.acting_seat.any()
    saw_pass, was_done = False, np.zeros(6, bool)
    for _ in range(300):
        seat, out_before = eng.acting_seat.copy(), eng.state.out.copy()
        eng.step(random_legal(eng, rng))
        for i in np.flatnonzero(~eng.terminals & ~was_done):  # (a finished env restarts instead)
            nxt = int(eng.acting_seat[i])
            skipped = [(seat[i] + k) % 4 for k in range(1, (nxt - seat[i]) % 4 or 4)]
            # every seat skipped over is out for good (and stays out); the next one is not
            assert all(eng.state.out[i, q] for q in skipped) and not eng.state.out[i, nxt]
            saw_pass |= any(not out_before[i, q] for q in skipped)
            assert eng.events[i, 1] == sum(not out_before[i, q] for q in skipped)
        assert np.all(eng.events[~was_done, 0] == 1)  # one placement a step
        was_done = eng.terminals.copy()
    assert saw_pass


def test_single_mode_every_opponent_plays_every_turn_it_has_a_move():
    for opponent in ("random", "greedy"):
        eng = vecsim.make(CLASSIC, 8, mode="single", opponent=opponent)
        eng.reset(seed=2)
        rng = np.random.default_rng(2)
        while True:
            before = placed_pieces(eng)
            eng.step(random_legal(eng, rng))
            if eng.terminals.any():
                break
            assert not eng.acting_seat.any() and not eng.state.to_move.any()
            done = placed_pieces(eng) - before
            assert np.all(done[:, 0] == 1)
            # each opponent placed one piece unless it is out for good
            assert np.all((done[:, 1:] == 1) | eng.state.out[:, 1:])
            assert np.array_equal(eng.events[:, 0], done.sum(axis=1))
        assert eng.state.game_over.any()


def test_greedy_opponent_places_a_largest_piece():
    eng = vecsim.make(DUO, 4, mode="single", opponent="greedy")
    eng.reset(seed=3)
    rng = np.random.default_rng(3)
    eng.step(random_legal(eng, rng))
    # seat 1's first piece is the first pentomino in piece order, which fits on any start
    first_pentomino = int(np.flatnonzero(PIECE_SIZE == 5)[0])
    for v in eng.state.pieces_left[:, 1]:
        assert int(rules.ALL_PIECES ^ int(v)) == 1 << first_pentomino


@pytest.mark.parametrize("blokus_id, mode", [(CLASSIC, "selfplay"), (DUO, "selfplay"), (DUO, "single")])
def test_final_scores_are_the_rules_scores_and_returns_add_up(blokus_id, mode):
    eng = vecsim.make(blokus_id, 4, mode=mode)
    eng.reset(seed=4)
    seats = eng.num_seats
    rng = np.random.default_rng(4)
    returns = np.zeros((4, seats))
    finished = np.zeros(4, bool)
    while not finished.all():
        eng.step(random_legal(eng, rng))
        live = ~finished
        returns[live] += eng.seat_rewards[live]
        for i in np.flatnonzero(eng.terminals & live):
            finals = eng.state.final_scores[i]
            assert list(finals) == [rules.score(eng.state, i, q) for q in range(seats)]
            np.testing.assert_array_equal(returns[i], finals + 89)
            best = np.flatnonzero(finals == finals.max())
            assert eng.state.winner[i] == (best[0] if len(best) == 1 else -1)
        finished |= eng.terminals


def test_final_scores_reach_the_info_and_stay_until_reset():
    envs = gym.make_vec(DUO, num_envs=3, vectorization_mode="vector_entry_point",
                        autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP)
    obs, info = envs.reset(seed=5)
    rng = np.random.default_rng(5)
    assert not info["final_scores"].any() and np.all(info["winner"] == -1)
    for _ in range(200):
        masks = info["action_mask"]
        obs, rewards, term, trunc, info = envs.step(np.array([rng.choice(np.flatnonzero(m)) for m in masks]))
        if term.any():
            i = int(np.flatnonzero(term)[0])
            assert info["final_scores"][i].any()
            assert np.isin(info["winner"][i], [-1, 0, 1])
            break
    else:
        pytest.fail("no Duo game ended in 200 placements")


def test_observation_is_from_the_acting_seats_point_of_view():
    eng = vecsim.make(CLASSIC, 1)
    eng.reset(seed=6)
    rng = np.random.default_rng(6)
    size, cells = 20, 400
    for _ in range(4):  # each seat's first move, seen by the seat after it
        seat = int(eng.acting_seat[0])
        corners = eng.obs[0, 4 * cells:5 * cells].reshape(size, size)
        # before its first piece a seat's only corner cell is its start, always shown at (0, 0)
        assert corners[0, 0] == 1 and corners.sum() == 1
        eng.step(random_legal(eng, rng))
        board = eng.obs[0, :4 * cells].reshape(4, size, size)
        # the seat that just played is the next seat's last plane; its piece covers its start
        # corner, which the next seat's view (turned a further quarter) shows bottom-left
        assert board[3].sum() == (eng.state.cells[0] == seat + 1).sum()
        assert board[0].sum() == (eng.state.cells[0] == eng.acting_seat[0] + 1).sum()
        assert board[3, size - 1, 0] == 1
        pieces = eng.obs[0, 5 * cells:].reshape(4, N_PIECES)
        assert pieces[3].sum() == N_PIECES - 1 and seat == (int(eng.acting_seat[0]) + 3) % 4


def reference_obs(state, i):
    """Env ``i``'s observation from its cells, corner rows and pieces, with NumPy: each plane
    turned ``acting_seat * 4 // seats`` quarter turns counter-clockwise (``np.rot90``)."""
    seats, size = state.rows.shape[1], state.rows.shape[2]
    seat = int(state.acting_seat[i])
    turns = seat * (4 // seats)
    order = [(seat + j) % seats for j in range(seats)]
    planes = [np.rot90(state.cells[i] == q + 1, turns) for q in order]
    corner_bits = (state.legal_corners[i][:, None] >> np.arange(size)) & 1
    planes.append(np.rot90(corner_bits.astype(bool), turns))
    pieces = [(int(state.pieces_left[i, q]) >> np.arange(N_PIECES)) & 1 for q in order]
    return np.concatenate([np.stack(planes).ravel(), np.concatenate(pieces)]).astype(np.uint8)


@pytest.mark.parametrize("blokus_id", [CLASSIC, DUO])
def test_observation_equals_a_numpy_reference_on_random_positions(blokus_id):
    eng = vecsim.make(blokus_id, 6)
    eng.reset(seed=3)
    rng = np.random.default_rng(3)
    for step in range(70):  # games end and restart within this many steps, at every stage
        for i in range(eng.num_envs):
            np.testing.assert_array_equal(eng.obs[i], reference_obs(eng.state, i), err_msg=f"env {i}, step {step}")
        eng.step(random_legal(eng, rng))


def test_render_text_and_rgb():
    env = gym.make(DUO, render_mode="ansi")
    env.reset(seed=7)
    text = env.render()
    assert text.splitlines()[4][4] == "." and "B to move" in text
    env = gym.make(CLASSIC, render_mode="rgb_array")
    env.reset(seed=7)
    img = env.render()
    assert img.dtype == np.uint8 and img.shape[2] == 3 and img.shape[0] > 320


def test_maskable_ppo_learns_through_the_sb3_adapter_without_illegal_actions():
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks

    from vecsim.trainers.sb3 import SB3VecEnv

    venv = SB3VecEnv(DUO, 4, seed=0)
    model = MaskablePPO("MultiInputPolicy" if isinstance(venv.observation_space, gym.spaces.Dict) else "MlpPolicy",
                        venv, n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(256)
    obs = venv.reset()
    for _ in range(64):
        masks = get_action_masks(venv)
        action, _ = model.predict(obs, action_masks=masks, deterministic=False)
        assert masks[np.arange(4), action].all()
        obs, rewards, dones, infos = venv.step(action)
    venv.close()


def test_a_copy_true_vector_env_hands_out_new_masks_the_kernel_wrote_itself():
    # 16 envs: 582 KB of masks a step, which copy=True once copied; now the step kernel writes
    # them into new arrays, equal step for step to what a copy=False twin shows.
    envs = {copy: gym.make_vec(CLASSIC, num_envs=16, vectorization_mode="vector_entry_point", copy=copy)
            for copy in (True, False)}
    (_, fresh), (_, views) = envs[True].reset(seed=3), envs[False].reset(seed=3)
    rng, handed_out, ended = np.random.default_rng(0), [], 0
    for _ in range(90):  # past the first games' ends and resets
        assert np.array_equal(fresh["action_mask"], views["action_mask"])
        handed_out.append(fresh["action_mask"])
        actions = np.array([rng.choice(np.flatnonzero(row)) for row in views["action_mask"]])
        obs, reward, term, _, fresh = envs[True].step(actions)
        obs2, reward2, term2, _, views = envs[False].step(actions)
        assert all(np.array_equal(obs[k], obs2[k]) for k in obs2)
        assert np.array_equal(reward, reward2) and np.array_equal(term, term2)
        ended += int(term.sum())
    assert ended > 0
    assert not any(np.shares_memory(a, b) for a, b in zip(handed_out, handed_out[1:]))
    assert not np.shares_memory(fresh["action_mask"], envs[True].unwrapped.engine.masks)
    assert np.array_equal(envs[True].action_masks(), fresh["action_mask"])  # the engine's own catch up


@pytest.mark.parametrize("copy", [True, False])
def test_writing_into_a_mask_it_was_handed_cannot_make_an_illegal_move_pass(copy):
    # Blokus checks a move on the board (env.action_legal), not in the mask: with copy=False the
    # caller's mask is the engine's own buffer, which once decided.
    env = gym.make_vec(CLASSIC, num_envs=2, vectorization_mode="vector_entry_point", copy=copy)
    _, info = env.reset(seed=0)
    legal, illegal = (int(np.flatnonzero(info["action_mask"][0])[0]),
                      int(np.flatnonzero(~info["action_mask"][1])[0]))
    info["action_mask"][:] = True
    with pytest.raises(ValueError, match=rf"actions\[1\] = {illegal} is not a legal action for env 1"):
        env.step(np.array([legal, illegal]))


def test_flagged_illegal_moves_are_judged_on_the_board_too():
    eng = vecsim.make("Blokus-v0", 2, invalid_action="flag")
    eng.reset(seed=0)
    legal, illegal = int(np.flatnonzero(eng.masks[0])[0]), int(np.flatnonzero(~eng.masks[1])[0])
    before = eng.state.rows.copy()
    eng.masks[:] = True
    eng.step(np.array([legal, illegal]))
    flagged = eng.events[:, eng.event_names.index("invalid_action")]
    assert flagged.tolist() == [0, 1]
    assert np.array_equal(eng.state.rows[1], before[1]) and not np.array_equal(eng.state.rows[0], before[0])
