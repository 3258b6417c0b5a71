"""The actor-learner loop (Sebulba style): envs stepped and inference run in actor threads,
a learner in the calling thread, parameters staged in a slot of capacity one, trajectories on
bounded queues. See ``docs/pipeline.md``.

>>> from vecsim.pipeline import Pipeline
>>> from vecsim.pipeline.agents import PPO
>>> agent = PPO.for_env("vecsim/CartPole-v1")
>>> params, opt_state = agent.init(seed=0)
>>> with Pipeline("vecsim/CartPole-v1", 16, agent, params=params, opt_state=opt_state) as loop:
...     metrics = loop.run(10)
"""

from vecsim.pipeline.loop import MODES, Pipeline, PipelineMetrics, default_num_actors
from vecsim.pipeline.protocol import Agent, Batch
from vecsim.pipeline.staging import ParamSlot, TrajectoryQueue

__all__ = ["MODES", "Agent", "Batch", "ParamSlot", "Pipeline", "PipelineMetrics", "TrajectoryQueue",
           "default_num_actors"]
