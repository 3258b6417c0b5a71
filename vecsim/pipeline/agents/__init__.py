"""Example agents for ``vecsim.pipeline``, in NumPy: ``Reinforce`` (REINFORCE with a baseline)
and ``PPO`` (with action masks). ``vecsim.pipeline.agents.torch_ppo`` is PPO in PyTorch (needs
torch; imported only from there)."""

from vecsim.pipeline.agents.base import CategoricalAgent, evaluate
from vecsim.pipeline.agents.ppo import PPO
from vecsim.pipeline.agents.reinforce import Reinforce

__all__ = ["PPO", "CategoricalAgent", "Reinforce", "evaluate"]
