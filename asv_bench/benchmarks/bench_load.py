"""Stepping speed while other work keeps the cores busy, as a trainer's learner does.

``load`` is how many busy-loop processes run beside the envs, each in a session of its own at
nice 19 (``vecsim.bench.load.BusyProcesses``, what ``vecsim bench --load`` starts): 0 measures an
idle machine (other programs aside), 2 a machine whose two cores are both contended. They
are started in ``setup``, after the warm-up, and killed in ``teardown``. The engines choose
their kernels as a user's do (``parallel="auto"``); their choice under load is what is
measured. Tetris-v0 in primitive mode (the parallel kernel from 64 envs) and CartPole-v1
float32 at a batch below and one above its parallel threshold (``vecsim/engine/tuning.json``).
"""

from __future__ import annotations

# vecsim through common: it makes the checkout importable where asv installed nothing.
from .common import bench, vecsim

from vecsim.bench import load  # noqa: E402  (after common has made vecsim importable)

LOADS = (0, 2)
#: (game, variant (its BENCH_VARIANTS) or precision, num_envs).
CASES = ("Tetris-v0 primitive 4096", "CartPole-v1 float32 4096", "CartPole-v1 float32 65536")


def _runner(case: str):
    game, kind, num_envs = case.split()
    num_envs = int(num_envs)
    variants = bench.bench_variants(game)
    if variants:
        vecsim.warmup(bench.full_id(game), **variants[kind])
        return bench.variant_runner(game, kind, num_envs), num_envs
    vecsim.warmup(bench.full_id(game), precision=kind)
    return bench.vecsim_no_reset_runner(game, num_envs, precision=kind), num_envs


class StepUnderLoad:
    """``Engine.step`` (Tetris) and ``Engine.step_no_reset`` (CartPole) beside busy processes."""

    params = (CASES, LOADS)
    param_names = ("case", "load")
    timeout = 600.0

    def setup(self, case, load_count):
        self.busy = self.runner = None  # teardown runs after a setup that failed too
        self.runner, self.num_envs = _runner(case)
        for _ in range(3):
            self.runner.step()
        self.busy = load.BusyProcesses(load_count).start()
        for _ in range(20):  # let the kernel choice settle under the load
            self.runner.step()

    def teardown(self, case, load_count):
        if self.busy is not None:
            self.busy.stop()
        if self.runner is not None:
            self.runner.close()

    def time_step(self, case, load_count):
        self.runner.step()

    def track_steps_per_second(self, case, load_count):
        return bench.steps_per_second(self.runner.step, self.num_envs, seconds=0.5)

    track_steps_per_second.unit = "steps/s"
