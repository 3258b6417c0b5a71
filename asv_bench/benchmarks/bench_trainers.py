"""What the Stable-Baselines3 adapter costs: ``SB3VecEnv.step`` at 64 CartPole envs beside
``VecsimVectorEnv.step`` (NEXT_STEP and SAME_STEP) and SB3's ``DummyVecEnv`` over Gymnasium's
CartPole (``vecsim.bench.trainers``, what ``vecsim bench --sb3`` prints). Skipped where SB3 is
not installed."""

from __future__ import annotations

# vecsim through common: it makes the checkout importable where asv installed nothing.
from .common import vecsim

from vecsim.bench import trainers  # noqa: E402  (after common has made vecsim importable)


class SB3Step:
    """One step of 64 envs through each implementation of ``trainers.ADAPTER_IMPLS``."""

    params = (trainers.ADAPTER_IMPLS,)
    param_names = ("impl",)

    def setup(self, impl):
        try:
            import stable_baselines3  # noqa: F401
        except ImportError:
            raise NotImplementedError("stable-baselines3 is not installed") from None
        vecsim.warmup(trainers.GAME)
        self.runner = trainers.adapter_runner(impl, trainers.GAME, trainers.NUM_ENVS)
        self.runner.step()

    def teardown(self, impl):
        self.runner.close()

    def time_step(self, impl):
        self.runner.step()

    def track_steps_per_second(self, impl):
        return trainers.measure.steps_per_second(self.runner.step, trainers.NUM_ENVS, seconds=0.5)

    track_steps_per_second.unit = "steps/s"
