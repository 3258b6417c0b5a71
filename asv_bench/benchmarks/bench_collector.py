"""``EpisodeCollector``: whole random CartPole episodes, against a plain Gymnasium loop.

One request is ``B = 512`` episodes padded to ``K = 256`` steps (about 11k env steps with
random actions). The engine's kernels are compiled (or loaded from the cache) and a first
request is made in ``setup``, never inside a timed call. ``time_python_single_env_loop``
plays the same number of env steps with one ``gymnasium.make("CartPole-v1")`` env in a
Python loop, so the ratio to ``time_request_episodes_random`` is the collector's speed-up.
"""

from __future__ import annotations

import time

import gymnasium
import numpy as np

# vecsim through common: it makes the checkout importable where asv installed nothing.
from .common import vecsim
from vecsim.collector import EpisodeCollector

GAME = "CartPole-v1"
NUM_EPISODES = 512  # B
MAX_STEPS = 256  # K
SEED = 0


class Collector:
    """``EpisodeCollector.request_episodes`` with ``policy="random"``, no prefetch."""

    params = ((64, 256),)
    param_names = ("num_workers",)

    def setup(self, num_workers):
        vecsim.warmup(GAME)
        self.collector = EpisodeCollector(GAME, num_workers, MAX_STEPS, "random", seed=SEED)
        batch = self.collector.request_episodes(NUM_EPISODES)  # warm-up: compiles/loads every kernel
        # The baseline plays as many env steps as one batch holds.
        self.batch_steps = int(batch.lengths.sum())
        self.gym_env = gymnasium.make(GAME)
        self.gym_env.reset(seed=SEED)
        self.gym_actions = np.random.default_rng(SEED).integers(0, 2, size=self.batch_steps).tolist()

    def teardown(self, num_workers):
        self.collector.close()
        self.gym_env.close()

    def time_request_episodes_random(self, num_workers):
        self.collector.request_episodes(NUM_EPISODES)

    def track_env_steps_per_second(self, num_workers):
        steps = 0
        start = time.perf_counter()
        while True:
            steps += int(self.collector.request_episodes(NUM_EPISODES).lengths.sum())
            elapsed = time.perf_counter() - start
            if elapsed >= 0.5:
                return steps / elapsed

    track_env_steps_per_second.unit = "steps/s"

    def peakmem_request_episodes(self, num_workers):
        self.collector.request_episodes(NUM_EPISODES)

    def time_python_single_env_loop(self, num_workers):
        env = self.gym_env
        env.reset(seed=SEED)
        for action in self.gym_actions:
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()
