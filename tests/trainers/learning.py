"""Shared by the trainer tests: the README's trainer snippets, CartPole's limits, and PPO in
skrl, TorchRL and the CleanRL-style script, built the same way on vecsim's and on Gymnasium's
CartPole.

``python tests/trainers/learning.py`` runs the learning comparison that docs/trainers.md
reports (each trainer, same settings and seed, on ``vecsim/CartPole-v1`` and on Gymnasium's
``CartPole-v1`` in a ``SyncVectorEnv``; torch on one thread): returns of the last episodes,
and steps/s of the whole run (env stepping and learning together).
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from skrl.agents.torch.base import ExperimentCfg
from skrl.agents.torch.ppo import PPO, PPO_CFG
from skrl.memories.torch import RandomMemory
from skrl.models.torch import CategoricalMixin, DeterministicMixin, Model
from skrl.trainers.torch import SequentialTrainer
from skrl.utils import set_seed
from torch import nn

import vecsim  # noqa: F401  (registers the vecsim/... ids)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for readme.py when run as a script
from readme import run_readme_snippet  # noqa: E402


NUM_ENVS = 16  # as in the README's skrl and TorchRL snippets
# CartPole ends an episode once |x| > 2.4 or |theta| > 12 degrees, and starts every state
# variable in [-0.05, 0.05]: a terminal state and a fresh start are told apart by these alone.
X_LIMIT, THETA_LIMIT = 2.4, 12 * 2 * np.pi / 360
RESET_BOUND = 0.05


def beyond_limits(obs: np.ndarray) -> np.ndarray:
    """Which CartPole observations ``(..., 4)`` are terminal states (past a limit)."""
    return (np.abs(obs[..., 0]) > X_LIMIT) | (np.abs(obs[..., 2]) > THETA_LIMIT)




@contextlib.contextmanager
def torch_threads(n: int):
    """Torch's intra-op thread count set to ``n`` for the block, then restored."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def gymnasium_cartpole(num_envs: int, autoreset_mode) -> gym.vector.VectorEnv:
    """Gymnasium's own CartPole-v1 in a ``SyncVectorEnv``, the reference of the comparisons."""
    return gym.make_vec("CartPole-v1", num_envs=num_envs, vectorization_mode="sync",
                        vector_kwargs={"autoreset_mode": autoreset_mode})


def mlp(n_in: int, n_out: int, hidden: int = 64) -> nn.Sequential:
    return nn.Sequential(nn.Linear(n_in, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                         nn.Linear(hidden, n_out))


@dataclass
class LearningRun:
    """``returns``: every episode return the trainer finished, in order; ``steps_per_second``:
    env steps (all envs) per second of wall time, learning included."""

    returns: list
    steps_per_second: float

    def last_mean(self, k: int = 20) -> float:
        return float(np.mean(self.returns[-k:]))


# -- skrl ----------------------------------------------------------------------------------

SKRL_PPO = dict(rollouts=32, learning_epochs=4, mini_batches=4, discount_factor=0.99, gae_lambda=0.95,
                learning_rate=1e-3, grad_norm_clip=0.5, ratio_clip=0.2, value_clip=0.2,
                entropy_loss_scale=0.01, value_loss_scale=0.5)


class RecordingPPO(PPO):
    """skrl's PPO, keeping every transition the trainer hands it (``seen``, with the env's
    ``info["final_obs"]``) and every episode return skrl's own bookkeeping counts
    (``counted_returns``; skrl keeps only the last 100)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seen, self.counted_returns = [], []

    def record_transition(self, **t):
        super().record_transition(**t)
        seen = {k: t[k].clone() for k in ("observations", "actions", "rewards", "next_observations",
                                          "terminated", "truncated")}
        seen["final_obs"] = t["infos"].get("final_obs")  # the env's, which skrl never reads
        self.seen.append(seen)
        finished = int((t["terminated"] | t["truncated"]).sum())
        if finished:  # skrl has just appended these episodes' returns
            self.counted_returns += [float(np.ravel(r)[0]) for r in list(self._track_rewards)[-finished:]]


class Policy(CategoricalMixin, Model):
    def __init__(self, observation_space, action_space):
        Model.__init__(self, observation_space=observation_space, action_space=action_space, device="cpu")
        CategoricalMixin.__init__(self, unnormalized_log_prob=True)
        self.net = mlp(self.num_observations, action_space.n)

    def compute(self, inputs, role=""):
        return self.net(inputs["observations"]), {}


class Value(DeterministicMixin, Model):
    def __init__(self, observation_space, action_space):
        Model.__init__(self, observation_space=observation_space, action_space=action_space, device="cpu")
        DeterministicMixin.__init__(self)
        self.net = mlp(self.num_observations, 1)

    def compute(self, inputs, role=""):
        return self.net(inputs["observations"]), {}


def train_skrl(env, timesteps: int, seed: int = 0, **cfg) -> tuple[RecordingPPO, LearningRun]:
    """skrl's PPO (two 64-64 tanh MLPs, ``SKRL_PPO`` updated by ``cfg``) trained by its
    ``SequentialTrainer`` on a skrl-wrapped env for ``timesteps`` steps of every env. No
    checkpoints; skrl's TensorBoard writer (which its episode bookkeeping needs) writes into a
    temporary folder and never flushes. Returns the agent and the returns skrl counted."""
    set_seed(seed)
    settings = {**SKRL_PPO, **cfg}
    logs = tempfile.TemporaryDirectory(prefix="vecsim-skrl-")
    experiment = ExperimentCfg(directory=logs.name, write_interval=timesteps + 1, checkpoint_interval=0)
    config = PPO_CFG(**settings, experiment=experiment)
    models = {"policy": Policy(env.observation_space, env.action_space),
              "value": Value(env.observation_space, env.action_space)}
    memory = RandomMemory(memory_size=settings["rollouts"], num_envs=env.num_envs, device="cpu")
    agent = RecordingPPO(models=models, memory=memory, observation_space=env.observation_space,
                         action_space=env.action_space, device="cpu", cfg=config)
    trainer = SequentialTrainer(env=env, agents=agent, cfg={"timesteps": timesteps, "headless": True,
                                                            "disable_progressbar": True,
                                                            "close_environment_at_exit": False})
    start = time.perf_counter()
    trainer.train()
    elapsed = time.perf_counter() - start
    agent.writer.close()
    logs.cleanup()
    return agent, LearningRun(agent.counted_returns, timesteps * env.num_envs / elapsed)


# -- TorchRL -------------------------------------------------------------------------------

TORCHRL_PPO = dict(frames_per_env=32, epochs=4, minibatches=4, gamma=0.99, lmbda=0.95, learning_rate=1e-3,
                   clip_epsilon=0.2, entropy_coeff=0.01, critic_coeff=0.5, max_grad_norm=0.5)


@dataclass
class TorchRLRun(LearningRun):
    """A ``LearningRun`` with the batches the collector gave (``batches``: the first ones,
    as many as ``keep_batches`` asked for)."""

    batches: list = None


def episode_returns(batch, running: torch.Tensor) -> list:
    """Returns of the episodes that end in a collector batch ``(num_envs, frames)``, in time
    order; ``running`` (num_envs,) carries the unfinished sums from batch to batch."""
    rewards = batch["next", "reward"][..., 0]
    done = batch["next", "done"][..., 0]
    finished = []
    for t in range(rewards.shape[1]):
        running += rewards[:, t]
        finished += running[done[:, t]].tolist()
        running[done[:, t]] = 0.0
    return finished


def train_torchrl(env, batches: int, seed: int = 0, keep_batches: int = 0, **cfg) -> TorchRLRun:
    """TorchRL's PPO pieces (a ``Collector``, ``GAE``, ``ClipPPOLoss``; two 64-64 tanh MLPs,
    ``TORCHRL_PPO`` updated by ``cfg``) on a batched ``GymWrapper`` for ``batches`` collector
    batches of ``frames_per_env`` steps of every env."""
    from tensordict.nn import TensorDictModule
    from torchrl.collectors import Collector
    from torchrl.modules import OneHotCategorical, ProbabilisticActor, ValueOperator
    from torchrl.objectives import ClipPPOLoss
    from torchrl.objectives.value import GAE

    s = {**TORCHRL_PPO, **cfg}
    torch.manual_seed(seed)
    env.set_seed(seed)
    n_obs, n_actions = env.observation_spec["observation"].shape[-1], env.action_spec.shape[-1]
    actor = ProbabilisticActor(TensorDictModule(mlp(n_obs, n_actions), in_keys=["observation"], out_keys=["logits"]),
                               in_keys=["logits"], spec=env.action_spec, distribution_class=OneHotCategorical,
                               return_log_prob=True)
    value = ValueOperator(mlp(n_obs, 1), in_keys=["observation"])
    frames_per_batch = s["frames_per_env"] * env.batch_size.numel()
    collector = Collector(env, actor, frames_per_batch=frames_per_batch, total_frames=batches * frames_per_batch,
                          auto_register_policy_transforms=False)
    advantage = GAE(gamma=s["gamma"], lmbda=s["lmbda"], value_network=value, average_gae=True)
    loss_fn = ClipPPOLoss(actor, value, clip_epsilon=s["clip_epsilon"], entropy_coeff=s["entropy_coeff"],
                          critic_coeff=s["critic_coeff"], loss_critic_type="l2")
    optimizer = torch.optim.Adam(loss_fn.parameters(), lr=s["learning_rate"])
    minibatch_size = frames_per_batch // s["minibatches"]
    run = TorchRLRun([], 0.0, [])
    running = torch.zeros(env.batch_size.numel())
    start = time.perf_counter()
    for batch in collector:
        if len(run.batches) < keep_batches:
            run.batches.append(batch.clone())
        run.returns += episode_returns(batch, running)
        with torch.no_grad():
            advantage(batch)
        flat = batch.reshape(-1)
        for _ in range(s["epochs"]):
            order = torch.randperm(frames_per_batch)
            for begin in range(0, frames_per_batch, minibatch_size):
                losses = loss_fn(flat[order[begin:begin + minibatch_size]])
                loss = losses["loss_objective"] + losses["loss_critic"] + losses["loss_entropy"]
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(loss_fn.parameters(), s["max_grad_norm"])
                optimizer.step()
        collector.update_policy_weights_()
    run.steps_per_second = batches * frames_per_batch / (time.perf_counter() - start)
    collector.shutdown()
    return run


# -- the comparison docs/trainers.md reports -------------------------------------------------

SKRL_TIMESTEPS = 3125  # x 16 envs = 50_000 env steps
TORCHRL_BATCHES = 100  # x 16 envs x 32 frames = 51_200 env steps


def skrl_on(which: str, seed: int = 0) -> LearningRun:
    """skrl's PPO on ``which``: ``"vecsim"`` (the README's snippet) or ``"gymnasium"``."""
    from skrl.envs.wrappers.torch import wrap_env

    if which == "vecsim":
        env = run_readme_snippet("skrl")["env"]
    else:
        env = wrap_env(gymnasium_cartpole(NUM_ENVS, gym.vector.AutoresetMode.SAME_STEP), wrapper="gymnasium")
    _, run = train_skrl(env, SKRL_TIMESTEPS, seed)
    env.close()
    return run


def torchrl_on(which: str, seed: int = 0) -> LearningRun:
    """TorchRL's PPO on ``which``: ``"vecsim"`` (the README's snippet) or ``"gymnasium"``."""
    from torchrl.envs import GymWrapper

    if which == "vecsim":
        env = run_readme_snippet("torchrl")["env"]
    else:
        env = GymWrapper(gymnasium_cartpole(NUM_ENVS, gym.vector.AutoresetMode.DISABLED))
    run = train_torchrl(env, TORCHRL_BATCHES, seed)
    env.close()
    return run


CLEANRL_TIMESTEPS = 50_176  # 98 iterations of 4 envs x 128 steps


def cleanrl_on(which: str, seed: int = 0) -> LearningRun:
    """The CleanRL-style PPO on ``which``: ``"vecsim"`` (the README's snippet) or
    ``"gymnasium"`` (CleanRL's own construction: a ``SyncVectorEnv`` of wrapped envs)."""
    from cleanrl_style_ppo import PPOConfig, train

    if which == "vecsim":
        envs = run_readme_snippet("cleanrl")["envs"]
    else:
        envs = gym.vector.SyncVectorEnv([lambda: gym.wrappers.RecordEpisodeStatistics(gym.make("CartPole-v1"))
                                         for _ in range(4)], autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    run = train(envs, PPOConfig(total_timesteps=CLEANRL_TIMESTEPS, seed=seed))
    envs.close()
    return LearningRun([r for _, _, r, _ in run.episodes], run.steps_per_second)


SEEDS = (0, 1, 2)


def main() -> None:
    print("| trainer | env | env steps | mean return of the last 20 episodes, seeds 0, 1, 2 "
          "| env steps/s with learning (median) |")
    print("|---|---|---:|---|---:|")
    runs = (("skrl PPO", skrl_on, SKRL_TIMESTEPS * NUM_ENVS),
            ("TorchRL PPO", torchrl_on, TORCHRL_BATCHES * NUM_ENVS * TORCHRL_PPO["frames_per_env"]),
            ("CleanRL-style PPO", cleanrl_on, CLEANRL_TIMESTEPS))
    with torch_threads(1):
        for name, train_on, steps in runs:
            for which in ("vecsim", "gymnasium"):
                results = [train_on(which, seed) for seed in SEEDS]
                returns = ", ".join(f"{run.last_mean():.0f}" for run in results)
                speed = np.median([run.steps_per_second for run in results])
                print(f"| {name} | {which} | {steps:,} | {returns} | {speed:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
