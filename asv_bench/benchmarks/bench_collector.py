"""``EpisodeCollector``: whole episodes, against a plain single-env Gymnasium loop over the same game.

One request is ``B = 512`` episodes padded to ``K = 256`` steps. The kernels are compiled (or
loaded from the cache) and a first request is made in ``setup``, never inside a timed call.
Each ``time_python_single_env_loop`` plays as many env steps as one request holds, with one
``gymnasium.make`` env in a Python loop, so its ratio to ``time_request_episodes`` is the
collector's speed-up; ``track_speedup_over_single_env`` measures both side by side and
reports the ratio itself.

``Collector``
    CartPole-v1 with ``policy="random"`` (drawn inside the kernel).
``TetrisCollector``
    Issue #4: Tetris-v0 (classic preset, drop mode) with a batched *Python* policy, uniform
    over the legal placements of each row (``random_legal``), against a single env that plays
    random legal placements from ``info["action_mask"]``.
``TetrisInKernelRandomCollector``
    The same setting with ``policy="random"``: uniform legal placements drawn inside the
    kernel, no Python per step. No policy called from Python can collect faster, so its
    ``track_speedup_over_single_env`` bounds what ``TetrisCollector`` can reach.
``TetrisDellacherieCollector``
    The same Tetris setting with the Dellacherie agent inside the kernel
    (``vecsim.games.tetris.BatchedTetrisCollector``): a whole batch is one kernel call.
"""

from __future__ import annotations

import time

import gymnasium
import numpy as np

# vecsim through common: it makes the checkout importable where asv installed nothing.
from .common import vecsim
from vecsim.collect.collector import EpisodeCollector

GAME = "CartPole-v1"
TETRIS = "Tetris-v0"
TETRIS_RULES = dict(preset="classic", action_mode="drop")
TETRIS_ACTIONS = 40  # drop mode without hold: 4 rotations x 10 columns
NUM_EPISODES = 512  # B
MAX_STEPS = 256  # K
SEED = 0


def random_legal(num_actions: int, max_rows: int, seed: int = 0):
    """A batched Python policy: for each row, a uniform choice among the legal actions of its mask."""
    rng = np.random.default_rng(seed)
    offsets = np.arange(0, (max_rows + 1) * num_actions, num_actions)  # flat index of each row's start

    def policy(obs, masks):
        n = masks.shape[0]
        legal = np.flatnonzero(masks)  # flat indices of the legal (row, action) pairs, row-major
        bounds = legal.searchsorted(offsets[: n + 1])  # row i's legal actions: legal[bounds[i]:bounds[i + 1]]
        starts = bounds[:-1]
        pick = starts + (rng.random(n) * (bounds[1:] - starts)).astype(np.int64)
        return legal[pick] - offsets[:n]

    return policy


class SingleEnvLoop:
    """A plain Python loop over one ``gymnasium.make`` env with a per-step action choice."""

    def __init__(self, env, choose, seed: int = SEED):
        self.env = env
        self.choose = choose
        self.seed = seed

    def run(self, steps: int) -> None:
        env, choose = self.env, self.choose
        _, info = env.reset(seed=self.seed)
        for _ in range(steps):
            _, _, terminated, truncated, info = env.step(choose(info))
            if terminated or truncated:
                _, info = env.reset()

    def close(self) -> None:
        self.env.close()


def tetris_single_env() -> SingleEnvLoop:
    """Random legal placements, taken from ``info["action_mask"]`` at every step."""
    env = gymnasium.make(f"vecsim/{TETRIS}", **TETRIS_RULES)
    uniforms = iter(np.random.default_rng(SEED).random(1 << 24).tolist())

    def choose(info):
        legal = np.flatnonzero(info["action_mask"])
        return int(legal[int(next(uniforms) * len(legal))])

    return SingleEnvLoop(env, choose)


def steps_per_second(collector, seconds: float = 0.5) -> float:
    """Env steps per second of back-to-back ``request_episodes`` (padding not counted)."""
    steps = 0
    start = time.perf_counter()
    while True:
        steps += int(collector.request_episodes(NUM_EPISODES).lengths.sum())
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return steps / elapsed


def speedup_over_single_env(collector, single: SingleEnvLoop, batch_steps: int) -> float:
    """Collector steps/s over single-env loop steps/s, measured one after the other."""
    rate = steps_per_second(collector)
    start = time.perf_counter()
    single.run(batch_steps)
    return rate / (batch_steps / (time.perf_counter() - start))


class _CollectorBench:
    """Shared ``time_``/``track_``/``peakmem_`` methods over ``self.collector`` and ``self.single``."""

    def teardown(self, *params):
        # asv runs teardown after a setup that skipped (NotImplementedError): close what exists.
        for name in ("collector", "single"):
            obj = getattr(self, name, None)
            if obj is not None:
                obj.close()

    def _warm(self):
        batch = self.collector.request_episodes(NUM_EPISODES)  # compiles/loads every kernel
        # The baseline plays as many env steps as one batch holds.
        self.batch_steps = int(batch.lengths.sum())

    def track_env_steps_per_second(self, *params):
        return steps_per_second(self.collector)

    track_env_steps_per_second.unit = "steps/s"

    def peakmem_request_episodes(self, *params):
        self.collector.request_episodes(NUM_EPISODES)

    def time_request_episodes_holding_the_previous_batch(self, *params):
        """A trainer's loop, ``batch = collector.request_episodes(B)``: the previous batch is
        still referenced while the next one is collected (new memory for every batch made
        this ten times slower on Tetris before the collector kept two sets of arrays)."""
        self.held = self.collector.request_episodes(NUM_EPISODES)


class Collector(_CollectorBench):
    """``EpisodeCollector.request_episodes`` on CartPole with ``policy="random"``, no prefetch."""

    params = ((64, 256),)
    param_names = ("num_workers",)

    def setup(self, num_workers):
        vecsim.warmup(GAME)
        self.collector = EpisodeCollector(GAME, num_workers, MAX_STEPS, "random", seed=SEED)
        self._warm()
        self.gym_env = gymnasium.make(GAME)
        self.gym_env.reset(seed=SEED)
        self.gym_actions = np.random.default_rng(SEED).integers(0, 2, size=self.batch_steps).tolist()

    def teardown(self, num_workers):
        super().teardown(num_workers)
        self.gym_env.close()

    def time_request_episodes_random(self, num_workers):
        self.collector.request_episodes(NUM_EPISODES)

    def time_python_single_env_loop(self, num_workers):
        env = self.gym_env
        env.reset(seed=SEED)
        for action in self.gym_actions:
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()


class TetrisCollector(_CollectorBench):
    """Issue #4: a batched Python random-legal policy on Tetris (classic, drop), B=512, K=256.

    The target is ``track_speedup_over_single_env >= 100``.
    """

    # A cold cache compiles the Tetris kernels (a minute or two) in setup.
    timeout = 600.0
    params = ((512, 64), (False, True))
    param_names = ("num_workers", "prefetch")

    def setup(self, num_workers, prefetch):
        policy = random_legal(TETRIS_ACTIONS, num_workers, SEED)
        self.collector = EpisodeCollector(TETRIS, num_workers, MAX_STEPS, policy, seed=SEED, prefetch=prefetch,
                                          **TETRIS_RULES)
        self._warm()
        self.single = tetris_single_env()
        self.single.run(100)

    def time_request_episodes(self, num_workers, prefetch):
        self.collector.request_episodes(NUM_EPISODES)

    def time_python_single_env_loop(self, num_workers, prefetch):
        self.single.run(self.batch_steps)

    def track_speedup_over_single_env(self, num_workers, prefetch):
        return speedup_over_single_env(self.collector, self.single, self.batch_steps)

    track_speedup_over_single_env.unit = "x"


class TetrisInKernelRandomCollector(_CollectorBench):
    """Uniform legal placements drawn inside the kernel (``policy="random"``), B=512, K=256: the
    speed of this collection with a policy that costs nothing, against the same single env."""

    params = ((512,),)
    param_names = ("num_workers",)

    def setup(self, num_workers):
        self.collector = EpisodeCollector(TETRIS, num_workers, MAX_STEPS, "random", seed=SEED, **TETRIS_RULES)
        self._warm()
        self.single = tetris_single_env()
        self.single.run(100)

    def time_request_episodes(self, num_workers):
        self.collector.request_episodes(NUM_EPISODES)

    def time_python_single_env_loop(self, num_workers):
        self.single.run(self.batch_steps)

    def track_speedup_over_single_env(self, num_workers):
        return speedup_over_single_env(self.collector, self.single, self.batch_steps)

    track_speedup_over_single_env.unit = "x"


class TetrisDellacherieCollector(_CollectorBench):
    """The Dellacherie agent inside the collection kernel on Tetris (classic, drop), B=512, K=256."""

    timeout = 600.0
    params = ((512,),)
    param_names = ("num_workers",)

    def setup(self, num_workers):
        try:
            from vecsim.collect.tetris import BatchedTetrisCollector
            from vecsim.games.tetris.agent import policy  # noqa: F401
        except ImportError:
            raise NotImplementedError("vecsim.games.tetris.agent is not available") from None
        self.collector = BatchedTetrisCollector(num_workers, MAX_STEPS, "dellacherie", seed=SEED, preset="classic")
        self._warm()

    def time_request_episodes(self, num_workers):
        self.collector.request_episodes(NUM_EPISODES)
