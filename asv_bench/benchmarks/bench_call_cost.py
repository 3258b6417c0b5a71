"""The fixed cost of one call on the paths a trainer or the collector takes, on batches small
enough that the kernel's own work is a small part of it.

``Engine.step``, ``Engine.step_no_reset`` (with ``reset_envs`` of the envs that finished) and
``VecsimVectorEnv.step`` (``copy=True`` and ``copy=False``) on 1 and 16 CartPole envs, with
one preallocated int64 action array of the right shape (the fast path: no conversion), and
``Engine.step`` given a Python list (the checked, converting path). The kernels are compiled
(or loaded from the cache) in ``setup``. ``python -m vecsim.bench.call_cost`` times the same
paths in per-thread CPU time, for before/after comparisons on a loaded machine.
"""

from __future__ import annotations

import numpy as np

# vecsim through common: it makes the checkout importable where asv installed nothing.
from .common import bench, vecsim

GAME = bench.full_id("CartPole-v1")


class CallCost:
    """Microseconds per call; subtract ``num_envs`` times the per-env cost at 4096 envs
    (``bench_classic.Step``) for the fixed part."""

    params = ((1, 16),)
    param_names = ("num_envs",)

    def setup(self, num_envs):
        import gymnasium

        vecsim.warmup(GAME)
        self.actions = np.zeros(num_envs, dtype=np.int64)
        self.action_list = [0] * num_envs
        self.engine = vecsim.make(GAME, num_envs)
        self.engine.reset(seed=0)
        self.no_reset = vecsim.make(GAME, num_envs)
        self.no_reset.reset(seed=0)
        self.envs = {copy: gymnasium.make_vec(GAME, num_envs, vectorization_mode="vector_entry_point", copy=copy)
                     for copy in (True, False)}
        for env in self.envs.values():
            env.reset(seed=0)
        self.time_engine_step(num_envs)
        self.time_step_no_reset(num_envs)

    def teardown(self, num_envs):
        for obj in (self.engine, self.no_reset, *self.envs.values()):
            obj.close()

    def time_engine_step(self, num_envs):
        self.engine.step(self.actions)

    def time_engine_step_list(self, num_envs):
        self.engine.step(self.action_list)

    def time_step_no_reset(self, num_envs):
        result = self.no_reset.step_no_reset(self.actions)
        if result.num_done:
            self.no_reset.reset_envs(result.to_reset_mask())

    def time_vector_env_step(self, num_envs):
        self.envs[True].step(self.actions)

    def time_vector_env_step_no_copy(self, num_envs):
        self.envs[False].step(self.actions)
