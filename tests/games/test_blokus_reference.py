"""Blokus kernels against the plain-Python reference and against a recorded game.

(a) Random legal games (fixed seeds) on both boards: at every ply, every seat's Numba mask is
the reference's set of legal placements, ``count_legal_moves`` and ``has_legal_move`` agree
with the mask, and passes, turns and final scores agree.
(b) ``tests/data/blokus_classic_random_game_seed0.json`` (a copy of the shared reference's), a random classic game
recorded by another engine (blokus-rl), replayed ply by ply and matched by cells.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from vecsim.games import blokus
from vecsim.games.blokus.pieces import ORIENT_CELLS, ORIENT_PIECE, ORIENT_SIZE, PIECE_NAMES, action_parts

from blokus_reference import CLASSIC, DUO, ReferenceBlokus

RECORDED = Path(__file__).resolve().parents[1] / "data" / "blokus_classic_random_game_seed0.json"
RECORDED_NAMES = {"O": "O4"}  # the recorded game's piece names that differ from ours


def placement(action, size):
    o, r, c = action_parts(action, size)
    cells = ORIENT_CELLS[o, :ORIENT_SIZE[o]] + (r, c)
    return PIECE_NAMES[ORIENT_PIECE[o]], frozenset(map(tuple, cells.tolist()))


def check_every_seat(b, ref, where):
    size = blokus.board_size(b)
    mask = np.empty(blokus.n_actions(b), np.bool_)
    for seat in range(blokus.n_seats(b)):
        blokus.legal_mask(b, 0, seat, out=mask)
        ours = {placement(a, size) for a in np.flatnonzero(mask)}
        assert ours == ref.legal_moves(seat), f"{where}, seat {seat}"
        assert blokus.count_legal_moves(b, 0, seat) == mask.sum(), f"{where}, seat {seat}"
        assert blokus.has_legal_move(b, 0, seat) == mask.any(), f"{where}, seat {seat}"


@pytest.mark.parametrize("variant, ref_variant, seed", [
    ("duo", DUO, 0), ("duo", DUO, 1), ("duo", DUO, 2), ("classic", CLASSIC, 0), ("classic", CLASSIC, 1),
])
def test_random_games_agree_with_the_reference_at_every_ply(variant, ref_variant, seed):
    rng = np.random.default_rng(seed)
    b = blokus.new_boards(1, variant)
    ref = ReferenceBlokus(ref_variant)
    size = blokus.board_size(b)
    ply = 0
    positions_after_a_pass = 0
    while not b.game_over[0]:
        # Classic positions are compared in full every third ply (the reference is slow).
        if variant == "duo" or ply % 3 == 0:
            check_every_seat(b, ref, f"{variant} seed {seed} ply {ply}")
            positions_after_a_pass += bool(b.out[0].any())
        assert b.to_move[0] == ref.to_move
        action = rng.choice(blokus.legal_actions(b, 0))
        passed = blokus.play(b, 0, action)
        ref_passed = ref.play(*placement(action, size))
        assert passed == len(ref_passed), f"ply {ply}"
        assert b.out[0].tolist() == ref.out and bool(b.game_over[0]) == ref.over
        ply += 1
    check_every_seat(b, ref, f"{variant} seed {seed} end")
    assert b.out[0].all() and positions_after_a_pass > 0
    assert blokus.scores(b, 0).tolist() == [ref.score(p) for p in range(ref.seats)]


def test_the_brute_force_reference_agrees_on_a_middle_game_position():
    rng = np.random.default_rng(7)
    b = blokus.new_boards(1, "duo")
    ref = ReferenceBlokus(DUO)
    for _ in range(8):
        action = rng.choice(blokus.legal_actions(b, 0))
        ref.play(*placement(action, 14))
        blokus.play(b, 0, action)
    for seat in range(2):
        assert ref.legal_moves_brute_force(seat) == ref.legal_moves(seat)
        assert {placement(a, 14) for a in blokus.legal_actions(b, 0, seat)} == ref.legal_moves(seat)


def test_the_recorded_classic_game_replays_with_every_count_pass_and_score():
    game = json.loads(RECORDED.read_text())
    b = blokus.new_boards(1, "classic")
    mask = np.empty(blokus.n_actions(b), np.bool_)
    recorded_passes = []
    for k, ply in enumerate(game["plies"]):
        assert b.to_move[0] == ply["agent"], f"ply {k}"
        # The recorded engine skips (for good) the seats between this ply's agent and the next's.
        if k + 1 < len(game["plies"]):
            nxt = game["plies"][k + 1]["agent"]
            recorded_passes.append([(ply["agent"] + d) % 4 for d in range(1, (nxt - ply["agent"] - 1) % 4 + 1)
                                    if not b.out[0, (ply["agent"] + d) % 4]])
        n = blokus.legal_mask(b, 0, out=mask).sum()
        assert n == ply["n_legal"], f"ply {k}"
        cells = frozenset(map(tuple, ply["cells_abs"]))
        matches = [a for a in np.flatnonzero(mask) if placement(a, 20)[1] == cells]
        assert len(matches) == 1, f"ply {k}: {sorted(cells)} is not one legal placement"
        assert placement(matches[0], 20)[0] == RECORDED_NAMES.get(ply["piece"], ply["piece"]), f"ply {k}"
        before = b.out[0].copy()
        blokus.play(b, 0, matches[0])
        newly_out = np.flatnonzero(b.out[0] & ~before).tolist()
        if k + 1 < len(game["plies"]):
            assert sorted(newly_out) == sorted(recorded_passes[-1]), f"ply {k}"
    assert b.game_over[0] and b.out[0].all()
    assert len(game["plies"]) == game["n_plies"]
    assert blokus.scores(b, 0).tolist() == game["final_scores"]
