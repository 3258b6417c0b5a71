"""Blokus-v0: classic Blokus, four seats on a 20x20 board, as a vecsim game.

The rules (``games/blokus/SPEC.md``) are the official Blokus rules (Mattel); the move
generator is ``games/blokus/rules.py``; ``games/blokus/env.py`` holds the contract shared with
``BlokusDuo-v0`` (``duo.py``, the same game on 14x14 with two seats).

Description
    Seats 0-3 (blue, yellow, red, green) start in the corners (0, 0), (0, 19), (19, 19),
    (19, 0) and place their 21 pieces in turn; a piece touches a same-colour corner and no
    same-colour edge. A seat with no legal move passes for good; the game ends when no seat
    can move.
Action Space
    ``Discrete(91 * 20 * 20)``: ``orientation * 400 + row * 20 + col``, the anchor being the
    board cell under the top-left corner of the orientation's bounding box
    (``games/blokus/pieces.py``). ``info["action_mask"]`` / ``action_masks()`` hold the
    acting seat's legal moves; the mask is binding: an illegal action raises ``ValueError``,
    or with the engine's ``invalid_action="flag"`` is not played and is flagged.
Observation Space
    ``Dict`` of uint8 arrays, from the acting seat's point of view: the board turned by a
    quarter turn counter-clockwise per seat (half a turn in Duo) so that its start corner is
    at (0, 0) for every seat, and the seats listed from the acting seat on in play order:
    ``board`` (P, S, S) each seat's squares, ``corners`` (S, S) the acting seat's free corner
    cells (every legal move covers one), ``pieces`` (P, 21) each seat's pieces still held.
    ``flatten_obs=True`` gives the flat uint8 row.
Rewards
    ``info["seat_rewards"]`` (P,): each seat's score change over the step (the squares it
    placed, plus the +15 / +20 bonus when it places its last piece), so a seat's return is its
    final score + 89. The step's reward is the acting seat's.
Seats (``mode``)
    ``"selfplay"`` (default): a step is one placement by the acting seat
    (``info["acting_seat"]``); the turn then passes to the next seat that can move.
    ``"single"``: the learner is seat 0; after its placement the other seats are played inside
    the step by the built-in ``opponent``, ``"random"`` (uniform over legal moves, from the
    env's random stream, default) or ``"greedy"`` (a largest piece; ties to the lowest action
    index), each seat playing every turn it has a move until seat 0 is to move again or the
    game ends. ``acting_seat`` is then always 0. ``opponent=f``, a callable
    ``f(obs, mask) -> actions``, plays the other seats out of the kernel instead
    (``vecsim.engine.opponents``): every step still returns at seat 0's turn.
Starting State
    An empty board, full sets, seat 0 to move.
Episode End
    Terminated when no seat can move; ``info["final_scores"]`` (P,) and ``info["winner"]``
    (the best seat, -1 on a tie) from then until the reset (0 and -1 before). No step limit
    (a game has at most 84 placements).
Events
    ``placements`` (pieces placed in the step) and ``passes`` (seats that passed for good).
Arguments
    ``mode`` and ``opponent`` as above (names or 0/1); ``mode`` is one value for the batch.
Version History
    v0: first version.
"""

from vecsim.games.blokus.env import *  # noqa: F401,F403 (the shared contract, env.__all__)
from vecsim.games.blokus.env import sized

NAME = "Blokus"
ENV_ID = "Blokus-v0"
SEATS = 4
SIZE = 20
MAX_EPISODE_STEPS = None


allocate_state, observation_space, action_space = sized(SEATS, SIZE)
