"""Blokus-v0 and BlokusDuo-v0 per way of playing the seats: ``Engine.step`` speed.

``selfplay``: a step is one placement by the acting seat. ``random`` and ``greedy``: single
mode, a step is the learner's placement and the other seats' inside the kernel. ``callable``:
single mode with the greedy opponent written in NumPy and played out of the kernel
(``vecsim.engine.opponents``). The learner's moves are random legal ones chosen by
``bench.LegalActions`` inside the timed step; steps/s are learner decisions per second. The
kernels are compiled (or loaded from the cache) in ``setup``.
"""

from __future__ import annotations

import time

import numpy as np

from .common import bench, vecsim

IDS = ("Blokus-v0", "BlokusDuo-v0")
SEATINGS = ("selfplay", "random", "greedy", "callable")
NUM_ENVS = (16, 256)


def _greedy(obs, mask):
    """The built-in greedy opponent in NumPy: a largest piece, ties to the lowest action."""
    from vecsim.games.blokus.pieces import ORIENT_SIZE

    size = ORIENT_SIZE[np.arange(mask.shape[1]) // (mask.shape[1] // ORIENT_SIZE.shape[0])]
    return np.where(mask, size, -1).argmax(axis=1)


def _params(seating: str) -> dict:
    if seating == "selfplay":
        return {"mode": "selfplay"}
    return {"mode": "single", "opponent": _greedy if seating == "callable" else seating}


class BlokusStep:
    """``Engine.step`` with a random legal learner move per env."""

    timeout = 600.0  # a cold cache compiles the Blokus kernels in setup
    params = (IDS, SEATINGS, NUM_ENVS)
    param_names = ("game", "seating", "num_envs")

    def setup(self, game, seating, num_envs):
        self.engine = vecsim.make(bench.full_id(game), num_envs, **_params(seating))
        self.engine.reset(seed=0)
        self.choose = bench.LegalActions(self.engine.masks, seed=0)
        self.engine.step(self.choose())

    def teardown(self, game, seating, num_envs):
        self.engine.close()

    def time_step(self, game, seating, num_envs):
        self.engine.step(self.choose())

    def track_placements_per_second(self, game, seating, num_envs):
        eng, choose = self.engine, self.choose
        placements, start = 0, time.perf_counter()
        while time.perf_counter() - start < 0.5:
            eng.step(choose())
            placements += int(eng.events[:, 0].sum())  # every seat's placements
        return placements / (time.perf_counter() - start)

    track_placements_per_second.unit = "placements/s"


class BlokusVectorEnvRandomPlay:
    """Random legal selfplay through the Gymnasium VectorEnv (NEXT_STEP), each env's action
    drawn from its whole ``info["action_mask"]`` by ``choose_legal`` (bool) or
    ``choose_legal_packed`` (``mask_format="packed"``: the kernel writes the bits, no bool
    mask), then ``env.step``: what ``python -m vecsim.bench.blokus --env-level`` times."""

    timeout = 600.0
    params = (("Blokus-v0",), (16, 256), (True, False), ("bool", "packed"))
    param_names = ("game", "num_envs", "copy", "mask_format")

    def setup(self, game, num_envs, copy, mask_format):
        import gymnasium as gym

        from vecsim.core.rng import seed_env
        from vecsim.bench.blokus import choose_legal, choose_legal_packed

        self.env = gym.make_vec(bench.full_id(game), num_envs=num_envs, vectorization_mode="vector_entry_point",
                                copy=copy, mask_format=mask_format)
        _, self.info = self.env.reset(seed=0)
        self.choose = choose_legal_packed if mask_format == "packed" else choose_legal
        self.rng, self.actions = np.zeros((num_envs, 2), np.uint64), np.zeros(num_envs, np.int64)
        for i in range(num_envs):
            seed_env(self.rng, i, i)
        for _ in range(5):
            self.time_move(game, num_envs, copy, mask_format)

    def teardown(self, game, num_envs, copy, mask_format):
        self.env.close()

    def time_move(self, game, num_envs, copy, mask_format):
        self.choose(self.info["action_mask"], self.rng, self.actions)
        self.info = self.env.step(self.actions)[4]
