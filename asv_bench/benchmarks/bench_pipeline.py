"""The actor-learner loop's throughput (``vecsim.bench.pipeline``): CartPole, ``steps_per_cycle=100``,
a 5x200 policy MLP run by the actors, synchronous against pipelined, with a gradient step on the
whole batch, one on a minibatch of it, and acting alone."""

from __future__ import annotations

# vecsim through common: it makes the checkout importable where asv installed nothing.
from .common import vecsim  # noqa: F401

from vecsim.bench import pipeline  # noqa: E402  (after common has made vecsim importable)


class PipelineThroughput:
    """Env steps per second of ``Pipeline.run`` (5 cycles after a warm-up)."""

    # The balanced learner's size is measured in each process, so its figures would not compare across runs.
    params = ((pipeline.SYNCHRONOUS, pipeline.PIPELINED), (16, 256),
              tuple(learner for learner in pipeline.LEARNERS if learner != "balanced"))
    param_names = ("mode", "num_envs", "learner")
    timeout = 300

    def setup(self, mode, num_envs, learner):
        vecsim.warmup(pipeline.GAME)

    def track_steps_per_second(self, mode, num_envs, learner):
        actors = 1 if mode == pipeline.SYNCHRONOUS else 2
        return pipeline.steps_per_second("numpy", num_envs, mode, actors, cycles=5, learner=learner)

    track_steps_per_second.unit = "steps/s"
