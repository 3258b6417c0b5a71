"""Each trainer learns CartPole on the README's vecsim env (the settings and seeds that
docs/trainers.md compares with Gymnasium's CartPole; ``python tests/trainers/learning.py``)."""

from __future__ import annotations

import pytest

from learning import cleanrl_on, skrl_on, torch_threads, torchrl_on

pytestmark = [pytest.mark.trainers, pytest.mark.slow]

RANDOM_POLICY_RETURN = 22  # a uniformly random CartPole policy's mean episode return


@pytest.mark.parametrize("train_on", [skrl_on, torchrl_on, cleanrl_on], ids=["skrl", "torchrl", "cleanrl"])
def test_ppo_learns_cartpole_on_vecsim(train_on):
    with torch_threads(1):
        run = train_on("vecsim")
    assert run.last_mean(20) > 5 * RANDOM_POLICY_RETURN
