"""BlokusDuo-v0: Blokus Duo, two seats on a 14x14 board, as a vecsim game.

Seat 0 starts on (4, 4), seat 1 on (9, 9) (the official 5-5 and 10-10 points); otherwise the
spec is ``Blokus-v0``'s (``games/blokus/classic.py``): ``Discrete(91 * 14 * 14)`` actions,
the observation turned half a turn for seat 1, ``mode`` ``"selfplay"`` or ``"single"``. A game
has at most 42 placements.

Version History
    v0: first version.
"""

from vecsim.games.blokus.env import *  # noqa: F401,F403 (the shared contract, env.__all__)
from vecsim.games.blokus.env import sized

NAME = "BlokusDuo"
ENV_ID = "BlokusDuo-v0"
SEATS = 2
SIZE = 14
MAX_EPISODE_STEPS = None


allocate_state, observation_space, action_space = sized(SEATS, SIZE)
