"""What the trainer adapters cost: ``vecsim bench --sb3``.

Two measurements, in one process:

- **Stepping** (``adapter_runners``): steps per second of CartPole at ``num_envs`` envs with
  random actions drawn ahead of time, through vecsim's ``VecsimVectorEnv.step`` in its
  ``NEXT_STEP`` (default) and ``SAME_STEP`` autoreset modes, through
  ``vecsim.trainers.sb3.SB3VecEnv.step`` (the same kernels in same-step mode, plus SB3's
  info dicts, terminal observations and Monitor statistics), and through SB3's own
  ``DummyVecEnv`` over Gymnasium's ``CartPole-v1``, each env wrapped in ``Monitor`` (what
  SB3's ``make_vec_env`` builds).
- **Training** (``training_steps_per_second``): SB3 PPO with RL Zoo's CartPole settings
  (CartPole's ``TRAIN_PRESETS``, ``games/train_presets.py``) on ``SB3VecEnv`` and on that ``DummyVecEnv``: env steps
  per second of ``model.learn``, rollouts and gradient steps together.

Imports SB3 and torch only when called.
"""

from __future__ import annotations

import itertools
import time

from . import measure

SB3_STEP = "SB3VecEnv step"
SAME_STEP = "vecsim step SAME_STEP"
DUMMY = "SB3 DummyVecEnv (gymnasium)"
#: In the table's order; ``measure.VECSIM_STEP`` is the NEXT_STEP default.
ADAPTER_IMPLS = (measure.VECSIM_STEP, SAME_STEP, SB3_STEP, DUMMY)
GAME = "vecsim/CartPole-v1"
#: The batch size of the adapter table.
NUM_ENVS = 64


def _cycle_actions(space, num_envs: int, seed: int = 0):
    return itertools.cycle(measure.action_batches(space, num_envs, seed=seed)).__next__


def same_step_runner(game_id: str, num_envs: int, seed: int = 0) -> measure.Runner:
    """``VecsimVectorEnv.step`` with ``AutoresetMode.SAME_STEP`` (``copy=True``)."""
    import gymnasium
    from gymnasium.vector import AutoresetMode

    import vecsim  # noqa: F401  (registers the vecsim ids)

    env = gymnasium.make_vec(measure.full_id(game_id), num_envs, vectorization_mode="vector_entry_point",
                             autoreset_mode=AutoresetMode.SAME_STEP)
    env.reset(seed=seed)
    actions = _cycle_actions(env.single_action_space, num_envs, seed)
    return measure.Runner(SAME_STEP, game_id, num_envs, lambda: env.step(actions()), env.close)


def sb3_runner(game_id: str, num_envs: int, seed: int = 0) -> measure.Runner:
    """``SB3VecEnv.step`` (``step_async`` + ``step_wait``)."""
    from vecsim.trainers.sb3 import SB3VecEnv

    env = SB3VecEnv(measure.full_id(game_id), num_envs, seed=seed)
    env.reset()
    actions = _cycle_actions(env.action_space, num_envs, seed)
    return measure.Runner(SB3_STEP, game_id, num_envs, lambda: env.step(actions()), env.close)


def dummy_vec_env(game_id: str, num_envs: int, seed: int = 0):
    """SB3's ``make_vec_env`` over Gymnasium's own env (``DummyVecEnv`` of ``Monitor``-wrapped envs)."""
    from stable_baselines3.common.env_util import make_vec_env

    ref = measure.reference_id(game_id)
    if ref is None:
        raise ValueError(f"{game_id} follows no Gymnasium env to compare with")
    return make_vec_env(ref, n_envs=num_envs, seed=seed)


def dummy_runner(game_id: str, num_envs: int, seed: int = 0) -> measure.Runner:
    """``DummyVecEnv.step`` over Gymnasium's env (``dummy_vec_env``)."""
    env = dummy_vec_env(game_id, num_envs, seed)
    env.reset()
    actions = _cycle_actions(env.action_space, num_envs, seed)
    return measure.Runner(DUMMY, game_id, num_envs, lambda: env.step(actions()), env.close)


def adapter_runner(impl: str, game_id: str = GAME, num_envs: int = NUM_ENVS) -> measure.Runner:
    """The runner of one of ``ADAPTER_IMPLS``."""
    builders = {measure.VECSIM_STEP: measure.vecsim_step_runner, SAME_STEP: same_step_runner, SB3_STEP: sb3_runner,
                DUMMY: dummy_runner}
    if impl not in builders:
        raise ValueError(f"impl must be one of {ADAPTER_IMPLS}, but got impl={impl!r}")
    return builders[impl](game_id, num_envs)


def training_envs(num_envs: int = 8, seed: int = 0) -> dict:
    """Builders of the two ``VecEnv``s PPO is timed on: ``SB3VecEnv`` and ``dummy_vec_env``."""
    from vecsim.trainers.sb3 import SB3VecEnv

    return {SB3_STEP: lambda: SB3VecEnv(GAME, num_envs, seed=seed), DUMMY: lambda: dummy_vec_env(GAME, num_envs, seed)}


def training_steps_per_second(make_env, steps: int, seed: int = 0) -> float:
    """Env steps per second of SB3 PPO's ``learn`` for ``steps`` steps on the ``VecEnv`` that
    ``make_env()`` builds, with RL Zoo's CartPole hyperparameters (a first rollout and update
    untimed: torch's lazy setup)."""
    from stable_baselines3 import PPO

    from vecsim.trainers import train

    env = make_env()
    try:
        hyper = train._schedules(train.preset(GAME, "ppo").hyperparameters)
        model = PPO("MlpPolicy", env, seed=seed, device="cpu", **hyper)
        model.learn(hyper["n_steps"] * env.num_envs)
        start = time.perf_counter()
        model.learn(steps, reset_num_timesteps=False)
        return (model.num_timesteps - hyper["n_steps"] * env.num_envs) / (time.perf_counter() - start)
    finally:
        env.close()


def training_comparison(steps: int = 20_000, num_envs: int = 8, seed: int = 0) -> dict[str, float]:
    """PPO training steps per second on ``SB3VecEnv`` and on ``DummyVecEnv`` (Gymnasium's
    CartPole), the same settings and seed."""
    return {impl: training_steps_per_second(make, steps, seed) for impl, make in training_envs(num_envs, seed).items()}


def torch_threads() -> int:
    import torch

    return torch.get_num_threads()
