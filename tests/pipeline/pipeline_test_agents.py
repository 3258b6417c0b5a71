"""Small agents that exercise the loop's protocol (the learning agents are in vecsim.pipeline.agents)."""

from __future__ import annotations

import threading

import numpy as np


class LeanAgent:
    """Pushes the pole's way (CartPole) or picks the first legal action; counts its calls.
    ``params`` is an int that each ``learn`` increments; the actor state counts the steps."""

    def __init__(self):
        self.acts = 0
        self.learned = []
        self._lock = threading.Lock()

    def initial_actor_state(self, env_seeds):
        return {"seeds": np.array(env_seeds), "steps": 0}

    def act(self, params, actor_state, obs, mask):
        with self._lock:
            self.acts += 1
        if mask is not None:
            actions = mask.argmax(axis=1)
        else:
            actions = (obs[:, 2] + 0.5 * obs[:, 3] > 0).astype(np.int64)
        return actions, {"seeds": actor_state["seeds"], "steps": actor_state["steps"] + 1}

    def learn(self, params, opt_state, batch):
        self.learned.append(batch)
        return params + 1, opt_state, {"num_envs": batch.num_envs}


class RaisingAgent(LeanAgent):
    """Raises ``ValueError`` in ``act`` (``where="act"``) or ``learn`` at cycle ``at``."""

    def __init__(self, where: str, at: int = 1):
        super().__init__()
        self.where, self.at = where, at

    def act(self, params, actor_state, obs, mask):
        if self.where == "act" and actor_state["steps"] >= self.at * 8 and actor_state["seeds"][0] > 0:
            raise ValueError("boom in act")
        return super().act(params, actor_state, obs, mask)

    def learn(self, params, opt_state, batch):
        if self.where == "learn" and batch.cycle == self.at:
            raise ValueError("boom in learn")
        return super().learn(params, opt_state, batch)
