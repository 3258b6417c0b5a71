"""Blokus (classic 4-seat 20x20 and Duo 2-seat 14x14): the rules and a bitboard move generator.

The exact rules, the action encoding and the start cells are in ``games/blokus/SPEC.md``.
``pieces.py`` holds the 21 pieces and 91 orientations, ``rules.py`` the ``@njit`` kernels
over one env ``i`` of a structure-of-arrays ``BoardState``, ``board.py`` that state and the
validated Python entry points. ``env.py`` holds the vecsim game contract (seats, opponents,
observation, mask) that ``classic.py`` (``vecsim/Blokus-v0``) and ``duo.py``
(``vecsim/BlokusDuo-v0``) register; ``render.py`` draws a board.
"""

from vecsim.games.blokus.board import (  # noqa: F401
    VARIANTS, BoardState, board_size, count_legal_moves, has_legal_move, legal_actions, legal_mask,
    n_actions, n_seats, new_boards, play, reset, scores,
)
from vecsim.games.blokus.pieces import N_ORIENT, N_PIECES, PIECE_NAMES, action_index, action_parts  # noqa: F401
from vecsim.games.blokus.board import set_position  # noqa: F401,E402
