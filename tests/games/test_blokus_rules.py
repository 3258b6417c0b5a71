"""Blokus rules: pieces, first moves, placement scenarios, scoring and bad input.

Scenario boards are drawn in their top-left corner: ``.`` empty, ``A``-``D`` seats 0-3.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from vecsim.games import blokus
from vecsim.games.blokus import rules
from vecsim.games.blokus.pieces import (
    N_ORIENT, ORIENT_CELLS, ORIENT_H, ORIENT_PIECE, ORIENT_SIZE, ORIENT_W, PIECE_FIRST, PIECE_NAMES, PIECE_SIZE,
    action_index, action_parts,
)

from blokus_reference import ORIENTATIONS, shape_cells

ALL = (1 << 21) - 1


def orientation_cells(o):
    return frozenset(map(tuple, ORIENT_CELLS[o, :ORIENT_SIZE[o]].tolist()))


def placement(action, size):
    """``(piece name, board cells)`` of an action."""
    o, r, c = action_parts(action, size)
    return PIECE_NAMES[ORIENT_PIECE[o]], frozenset((r + dy, c + dx) for dy, dx in orientation_cells(o))


def drawn(variant, text, **kwargs):
    """A one-env board of ``variant`` with ``text`` drawn in its top-left corner."""
    b = blokus.new_boards(1, variant)
    size = blokus.board_size(b)
    cells = np.zeros((size, size), np.int64)
    for r, line in enumerate(text.split()):
        for c, ch in enumerate(line):
            cells[r, c] = 0 if ch == "." else "ABCD".index(ch) + 1
    blokus.set_position(b, 0, cells, **kwargs)
    return b


def legal_placements(b, piece, seat=None):
    size = blokus.board_size(b)
    moves = (placement(a, size) for a in blokus.legal_actions(b, 0, seat))
    return {cells for name, cells in moves if name == piece}


# ------------------------------------------------------------------------------ pieces


def test_there_are_91_orientations_of_21_pieces_with_89_squares():
    assert N_ORIENT == 91 and len(PIECE_NAMES) == 21
    assert PIECE_SIZE.sum() == 89
    assert sorted(np.bincount(PIECE_SIZE)) == [0, 1, 1, 2, 5, 12]


def test_each_piece_has_the_orientations_of_the_reference():
    for k, name in enumerate(PIECE_NAMES):
        ours = [orientation_cells(o) for o in range(PIECE_FIRST[k], PIECE_FIRST[k + 1])]
        assert len(set(ours)) == len(ours), name
        assert set(ours) == ORIENTATIONS[name], name
        assert all(len(cells) == len(shape_cells(name)) for cells in ours)
        assert (ORIENT_PIECE[PIECE_FIRST[k]:PIECE_FIRST[k + 1]] == k).all()


def test_the_anchor_is_the_top_left_of_the_bounding_box():
    for o in range(N_ORIENT):
        cells = np.array(sorted(orientation_cells(o)))
        assert cells[:, 0].min() == 0 and cells[:, 1].min() == 0
        assert (ORIENT_H[o], ORIENT_W[o]) == (cells[:, 0].max() + 1, cells[:, 1].max() + 1)


def test_action_index_and_parts_are_inverse():
    for size in (14, 20):
        for a in (0, 1, size, size * size, 91 * size * size - 1, 12345 % (91 * size * size)):
            assert action_index(*action_parts(a, size), size) == a


# ------------------------------------------------------------------------------ first moves


@pytest.mark.parametrize("seat", range(4))
def test_classic_has_58_first_moves_per_corner_all_covering_it(seat):
    b = blokus.new_boards(1, "classic")
    start = tuple(b.start[0, seat])
    actions = blokus.legal_actions(b, 0, seat)
    assert len(actions) == 58 == blokus.count_legal_moves(b, 0, seat)
    assert all(start in placement(a, 20)[1] for a in actions)


@pytest.mark.parametrize("seat, start", [(0, (4, 4)), (1, (9, 9))])
def test_duo_has_414_first_moves_per_start_point_all_covering_it(seat, start):
    b = blokus.new_boards(1, "duo")
    actions = blokus.legal_actions(b, 0, seat)
    assert len(actions) == 414 == ORIENT_SIZE.sum()
    assert all(start in placement(a, 14)[1] for a in actions)


def test_a_start_cell_covered_by_another_colour_leaves_no_first_move():
    b = drawn("duo", """
        ..............
        ..............
        ..............
        ..............
        ....B.........
    """, pieces_left=[ALL, ALL])
    assert not blokus.has_legal_move(b, 0, 0)
    assert blokus.count_legal_moves(b, 0, 0) == 0


# ------------------------------------------------------------------------------ placement


def test_a_piece_touches_an_own_corner_and_no_own_edge():
    b = drawn("classic", """
        A...
        ....
        ....
    """)
    assert legal_placements(b, "I2") == {frozenset({(1, 1), (1, 2)}), frozenset({(1, 1), (2, 1)})}


def test_edges_of_other_colours_may_touch():
    b = drawn("classic", """
        A.B.
        ....
        ....
    """)
    assert legal_placements(b, "I2") == {frozenset({(1, 1), (1, 2)}), frozenset({(1, 1), (2, 1)})}


def test_pieces_never_overlap():
    b = drawn("classic", """
        A...
        ..C.
        ....
    """)
    assert legal_placements(b, "I2") == {frozenset({(1, 1), (2, 1)})}


def test_a_cell_diagonal_to_one_own_square_and_beside_another_is_no_corner():
    # (1, 1) is diagonal to (0, 0) but beside (1, 2); (0, 1) is diagonal to (1, 2) but beside (0, 0).
    b = drawn("classic", """
        A...
        ..A.
        ....
    """, pieces_left=[ALL & ~(1 << 1), ALL, ALL, ALL])  # seat 0 placed the domino, kept the monomino
    assert legal_placements(b, "I1") == {frozenset({(0, 3)}), frozenset({(2, 1)}), frozenset({(2, 3)})}


def test_a_piece_stays_inside_the_board():
    b = drawn("duo", """
        ..............
        ..............
        ..............
        ..............
        ..............
        .............A
    """, pieces_left=[ALL & ~1, ALL])
    assert legal_placements(b, "I2") == {frozenset({(4, 12), (4, 11)}), frozenset({(4, 12), (3, 12)}),
                                         frozenset({(6, 12), (6, 11)}), frozenset({(6, 12), (7, 12)})}


# ------------------------------------------------------------------------------ turns and scores


def test_a_seat_with_no_move_passes_for_good_and_a_lone_seat_plays_on():
    b = drawn("duo", """
        ..............
        ..............
        ..............
        ..............
        ....A.........
        .....B........
    """, pieces_left=[ALL & ~(1 << 20), ALL & ~1], to_move=0)
    b.pieces_left[0, 1] = 1  # seat 1 holds only the monomino...
    b.rows[0, 0, 6] |= 1 << 4  # ...and seat 0 blocks its corners (4,6), (6,4), (6,6)
    b.cells[0, 6, 4] = 1
    b.rows[0, 0, 4] |= 1 << 6
    b.cells[0, 4, 6] = 1
    b.rows[0, 0, 6] |= 1 << 6
    b.cells[0, 6, 6] = 1
    assert not blokus.has_legal_move(b, 0, 1)
    # Seat 0 plays; seat 1 passes for good and seat 0 moves again.
    a = blokus.legal_actions(b, 0)[0]
    assert blokus.play(b, 0, a) == 1
    assert b.out[0].tolist() == [False, True] and b.to_move[0] == 0 and not b.game_over[0]


def test_scores_count_unplaced_squares_and_the_bonuses():
    b = blokus.new_boards(1, "duo")
    assert blokus.scores(b, 0).tolist() == [-89, -89]
    b.pieces_left[0] = [1 << 20, 0]  # seat 0 holds Z5 (5 squares); seat 1 placed everything
    b.last_piece[0] = [0, 3]
    assert blokus.scores(b, 0).tolist() == [-5, 15]
    b.last_piece[0, 1] = 0  # the monomino last
    assert blokus.scores(b, 0).tolist() == [-5, 20]


# ------------------------------------------------------------------------------ bad input


def test_bad_input_is_refused_with_a_message_naming_it():
    b = blokus.new_boards(2, "duo")
    with pytest.raises(ValueError, match="variant"):
        blokus.new_boards(1, "trigon")
    with pytest.raises(ValueError, match="num_envs"):
        blokus.new_boards(0)
    with pytest.raises(ValueError, match="i=2"):
        blokus.legal_mask(b, 2)
    with pytest.raises(ValueError, match="seat=2"):
        blokus.count_legal_moves(b, 0, 2)
    with pytest.raises(ValueError, match="action=17836"):
        blokus.play(b, 0, 91 * 14 * 14)
    with pytest.raises(ValueError, match="not legal"):
        blokus.play(b, 0, 0)  # the monomino at (0, 0) misses the start point
    with pytest.raises(ValueError, match="out must be"):
        blokus.legal_mask(b, 0, out=np.zeros(10, np.bool_))
    with pytest.raises(TypeError):
        blokus.play(b, 0, 1.5)
    b.game_over[1] = True
    with pytest.raises(ValueError, match="over"):
        blokus.play(b, 1, 0)
    with pytest.raises(ValueError, match="cells must"):
        blokus.set_position(b, 0, np.full((14, 14), 3))


@njit
def _is_legal_disagreements(b, i, p, mask):
    """Actions where ``rules.is_legal`` and the generator's mask ``mask`` of seat ``p`` differ."""
    size = b.rows.shape[2]
    bad = 0
    for a in range(mask.shape[0]):
        bad += rules.is_legal(b, i, p, a // (size * size), (a // size) % size, a % size) != mask[a]
    return bad


@pytest.mark.parametrize("variant", ["classic", "duo"])
def test_is_legal_agrees_with_the_generator_on_every_action_of_random_games(variant):
    # The engine checks a Blokus action with is_legal (env.action_legal), never reading the mask
    # back: the two must agree everywhere, for every seat, whoever is to move.
    b = blokus.new_boards(1, variant)
    mask = np.zeros(blokus.n_actions(b), np.bool_)
    rng = np.random.default_rng(7)
    checked = disagreements = 0
    for _ in range(2):
        rules.clear_board(b, 0)
        while not b.game_over[0]:
            for p in range(b.rows.shape[1]):
                rules.write_legal_mask(b, 0, p, mask)
                disagreements += _is_legal_disagreements(b, 0, p, mask)
                checked += 1
            rules.write_legal_mask(b, 0, b.to_move[0], mask)
            rules.play(b, 0, int(rng.choice(np.flatnonzero(mask))))
    assert checked > 40 and disagreements == 0
