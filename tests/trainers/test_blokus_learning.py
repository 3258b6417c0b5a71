"""MaskablePPO through the SB3 adapter on BlokusDuo-v0 against the built-in random opponent
(``vecsim.games.blokus.learning``) wins clearly more of 200 evaluation games than a random
legal policy does against the same opponent. Fixed seeds and one torch thread."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.trainers, pytest.mark.slow]


def test_maskable_ppo_beats_the_random_policys_win_rate_against_the_random_opponent():
    pytest.importorskip("sb3_contrib")
    from vecsim.games.blokus import learning

    model = learning.train_duo("random", learning.STEPS, seed=0)
    trained = learning.win_rates(model, "random", games=200)
    random_policy = learning.win_rates(None, "random", games=200)
    assert trained["games"] == random_policy["games"] == 200
    # a clear margin: the trained policy's 95% interval lies above the random policy's rate
    assert trained["low"] > random_policy["win_rate"] + 0.05, (trained, random_policy)
    assert trained["mean_score"] > random_policy["mean_score"]
