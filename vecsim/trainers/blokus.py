"""MaskablePPO (sb3-contrib) on ``BlokusDuo-v0`` in single mode against a built-in opponent,
through vecsim's SB3 adapter, and the win rates of a policy over whole evaluation games.

Imports SB3, sb3-contrib and torch when called (the ``[train]`` extra). The tests' slow tier,
``notebooks/03_blokus.ipynb`` and ``python -m vecsim.trainers.blokus`` use it.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

DUO = "vecsim/BlokusDuo-v0"
#: Short rollouts (a Duo game is about 15 learner moves), a high learning rate and no entropy
#: bonus: each of the 17,836 actions has its own output weights, and an entropy bonus over that
#: many actions holds the policy near uniform.
HYPERPARAMETERS = dict(n_steps=64, batch_size=256, n_epochs=4, learning_rate=3e-3, ent_coef=0.0, gamma=0.9,
                       policy_kwargs=dict(net_arch=[128, 128]))
NUM_ENVS = 16
STEPS = 30_000


def train_duo(opponent: str = "random", steps: int = STEPS, num_envs: int = NUM_ENVS, seed: int = 0,
              torch_threads: int | None = 1, curve: list | None = None, **hyperparameters):
    """Train MaskablePPO for ``steps`` learner moves on ``num_envs`` Duo games against
    ``opponent`` (``"random"`` or ``"greedy"``); returns the model.

    ``torch_threads`` sets torch's thread count for the run and puts the caller's back after
    (``None`` leaves it). ``curve``, a list, receives ``(timestep, return)`` per finished
    training game (the return is the learner's final score + 89). ``hyperparameters``
    override ``HYPERPARAMETERS``.
    """
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback

    from vecsim.trainers.sb3 import SB3VecEnv

    if opponent not in ("random", "greedy"):
        raise ValueError(f"opponent must be 'random' or 'greedy', but got opponent={opponent!r}")

    class Curve(BaseCallback):
        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "episode" in info and curve is not None:
                    curve.append((self.num_timesteps, info["episode"]["r"]))
            return True

    before = torch.get_num_threads()
    if torch_threads is not None:
        torch.set_num_threads(torch_threads)
    env = SB3VecEnv(DUO, num_envs, seed=seed, mode="single", opponent=opponent)
    try:
        model = MaskablePPO("MultiInputPolicy", env, seed=seed, device="cpu",
                            **{**HYPERPARAMETERS, **hyperparameters})
        model.learn(steps, callback=Curve())
    finally:
        env.close()
        torch.set_num_threads(before)
    return model


def wilson(wins: int, games: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval (95% by default) of a win rate ``wins / games``."""
    if games == 0:
        return 0.0, 1.0
    p = wins / games
    centre = (p + z * z / (2 * games)) / (1 + z * z / games)
    half = z * math.sqrt(p * (1 - p) / games + z * z / (4 * games * games)) / (1 + z * z / games)
    return centre - half, centre + half


def win_rates(model, opponent: str = "random", games: int = 200, seed: int = 10_000, num_envs: int = 20,
              deterministic: bool = False) -> dict:
    """Play ``games`` whole Duo games as seat 0 against ``opponent`` with ``model``'s masked
    policy (``None``: uniform over the legal moves, drawn from ``seed``); each of ``num_envs``
    envs plays ``games / num_envs`` of them (``games`` a multiple of ``num_envs``).

    Returns ``dict(games, wins, ties, losses, win_rate, low, high, mean_score)``: ``low`` and
    ``high`` the 95% Wilson interval, ``mean_score`` the learner's mean final score.
    """
    import gymnasium as gym

    if games < 1 or games % num_envs:
        raise ValueError(f"games must be a positive multiple of num_envs={num_envs}, but got games={games}")
    env = gym.make_vec(DUO, num_envs=num_envs, vectorization_mode="vector_entry_point", mode="single",
                       opponent=opponent)
    rng = np.random.default_rng(seed)
    per_env = games // num_envs
    counts = np.zeros(num_envs, int)
    winners, scores = [], []
    try:
        obs, info = env.reset(seed=seed)
        while (counts < per_env).any():
            masks = info["action_mask"]
            if model is None:
                actions = (rng.random(masks.shape) * masks).argmax(axis=1)
            else:
                actions, _ = model.predict(obs, action_masks=masks, deterministic=deterministic)
            obs, _, terminated, truncated, info = env.step(actions)
            for i in np.flatnonzero(terminated):
                if counts[i] < per_env:
                    winners.append(int(info["winner"][i]))
                    scores.append(int(info["final_scores"][i][0]))
                    counts[i] += 1
            # NEXT_STEP autoreset: a finished env's next action only resets it
    finally:
        env.close()
    winners = np.array(winners)
    wins, ties = int(np.sum(winners == 0)), int(np.sum(winners == -1))
    low, high = wilson(wins, games)
    return dict(games=games, wins=wins, ties=ties, losses=games - wins - ties, win_rate=wins / games, low=low,
                high=high, mean_score=float(np.mean(scores)))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opponent", choices=("random", "greedy"), default="random")
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--learning-rate", type=float, default=HYPERPARAMETERS["learning_rate"])
    parser.add_argument("--ent-coef", type=float, default=HYPERPARAMETERS["ent_coef"])
    parser.add_argument("--gamma", type=float, default=HYPERPARAMETERS["gamma"])
    parser.add_argument("--against", nargs="+", choices=("random", "greedy"), default=["random", "greedy"])
    args = parser.parse_args(argv)
    hyper = dict(learning_rate=args.learning_rate, ent_coef=args.ent_coef, gamma=args.gamma)
    from vecsim.trainers.sb3 import SB3VecEnv

    SB3VecEnv(DUO, 1, mode="single", opponent=args.opponent).close()  # compiled before the clock starts
    curve: list = []
    start, cpu = time.perf_counter(), time.process_time()
    model = train_duo(args.opponent, args.steps, seed=args.seed, curve=curve, **hyper)
    out = {"steps": args.steps, "opponent": args.opponent, "num_envs": NUM_ENVS,
           "hyperparameters": {**HYPERPARAMETERS, **hyper},
           "train_minutes": round((time.perf_counter() - start) / 60, 2),
           "train_cpu_minutes": round((time.process_time() - cpu) / 60, 2)}
    for against in args.against:
        out[f"trained_vs_{against}"] = win_rates(model, against, args.games)
        out[f"random_policy_vs_{against}"] = win_rates(None, against, args.games)
    out["curve"] = curve
    print(json.dumps(out))


if __name__ == "__main__":
    main()
