"""``vecsim train``: Stable-Baselines3 (and sb3-contrib's MaskablePPO) on a vecsim env.

The trainer steps ``vecsim.trainers.sb3.SB3VecEnv``. Hyperparameters come from a preset per
env and algorithm: RL Baselines3 Zoo's tuned values where the Zoo has them
(``hyperparams/{ppo,a2c,dqn,sac}.yml`` of DLR-RM/rl-baselines3-zoo; its ``lin_`` schedules
become SB3's linear schedules), else SB3's defaults. A run writes into its output folder:

- ``episodes.csv``: one row per finished training episode (timestep, env index, return,
  length, seconds, and the totals of the game's event counters, e.g. Tetris's ``lines``);
- ``evaluation.csv``: the deterministic evaluation's episodes, and random play's (the
  uniform policy over legal actions) as the baseline;
- ``summary.json``: the settings, hyperparameters, per-env and aggregated episode
  statistics, the evaluation, steps per second;
- ``checkpoints/model_<timesteps>.zip`` every ``checkpoint_every`` steps, ``model.zip`` at
  the end (``ALGO.load`` reads them).

SB3 and torch are imported only when a run starts (``vecsim demo`` never imports torch), and
torch's thread count is left as it is unless ``torch_threads`` is given.
"""

from __future__ import annotations

import csv
import json
import math
import pathlib
import sys
import time
from dataclasses import dataclass, field

import numpy as np

#: The algorithms of ``--algo``: SB3's, and sb3-contrib's MaskablePPO.
ALGOS = ("ppo", "maskable-ppo", "dqn", "sac", "a2c")
DISCRETE_ALGOS = ("ppo", "maskable-ppo", "dqn", "a2c")
CONTINUOUS_ALGOS = ("ppo", "sac", "a2c")
ON_POLICY = ("ppo", "maskable-ppo", "a2c")
INSTALL_HINT = 'pip install "vecsim[train]"'
#: Steps of a ``--smoke`` run: two rollouts of the preset's on-policy settings, or this many.
SMOKE_STEPS = 512
#: The evaluation env's seeds start here past the training seed (no training episode reused).
EVAL_SEED_OFFSET = 10_000


#: Where no preset applies: SB3's defaults, with these batch sizes and steps.
DEFAULT_NUM_ENVS = {"ppo": 8, "maskable-ppo": 8, "a2c": 8, "dqn": 1, "sac": 1}
DEFAULT_STEPS = 100_000


class TrainerMissing(RuntimeError):
    """Stable-Baselines3, sb3-contrib or torch is not installed."""


@dataclass
class Preset:
    """What a run uses unless told otherwise: hyperparameters, batch size, steps, where they
    come from, and ``step_bonus``, a reward added to every training step (shaping for a
    sparse game: the logs and the evaluation keep the game's own reward)."""

    hyperparameters: dict
    num_envs: int
    steps: int
    source: str
    step_bonus: float = 0.0


def preset(env_id: str, algo: str) -> Preset:
    """The preset of an env id and algorithm: the game's ``TRAIN_PRESETS`` entry, else SB3's defaults."""
    from vecsim.engine.registry import resolve

    entry = resolve(_full_id(env_id)).train_presets.get(algo)
    if entry is None:
        return Preset({}, DEFAULT_NUM_ENVS[algo], DEFAULT_STEPS, "SB3 defaults")
    return Preset(json.loads(json.dumps(entry["hyperparameters"])), entry["num_envs"], entry["steps"],
                  entry["source"], entry.get("step_bonus", 0.0))


def _full_id(env_id: str) -> str:
    from vecsim.bench.measure import full_id

    return full_id(env_id)


def algorithm_class(algo: str):
    """The SB3 class of ``algo`` (``TrainerMissing`` naming the install command without it)."""
    try:
        if algo == "maskable-ppo":
            from sb3_contrib import MaskablePPO

            return MaskablePPO
        import stable_baselines3

        return getattr(stable_baselines3, algo.upper())
    except ImportError as exc:
        raise TrainerMissing(f"vecsim train needs Stable-Baselines3, sb3-contrib and torch ({exc.name} is "
                             f"missing): {INSTALL_HINT}") from None


def check_algo(algo: str, env_id: str, action_space, has_masks: bool, mask_binding: bool) -> None:
    """``ValueError`` in the words of the command's options where ``algo`` cannot train on the env."""
    from gymnasium import spaces

    if algo not in ALGOS:
        raise ValueError(f"--algo must be one of {', '.join(ALGOS)}, but got --algo {algo}")
    discrete = isinstance(action_space, spaces.Discrete)
    if algo == "maskable-ppo" and not has_masks:
        raise ValueError(f"--algo maskable-ppo needs a game with action masks, but {env_id} has none "
                         f"(try --algo ppo)")
    if discrete and algo not in DISCRETE_ALGOS:
        raise ValueError(f"--algo {algo} needs continuous (Box) actions, but {env_id} has {action_space} "
                         f"(try --algo {' or '.join(a for a in DISCRETE_ALGOS if a != 'maskable-ppo')})")
    if not discrete and algo not in CONTINUOUS_ALGOS:
        raise ValueError(f"--algo {algo} needs discrete actions, but {env_id} has {action_space} "
                         f"(try --algo {' or '.join(CONTINUOUS_ALGOS)})")
    if mask_binding and algo != "maskable-ppo":
        raise ValueError(f"{env_id} refuses actions outside its action mask, which --algo {algo} does not read: "
                         f"use --algo maskable-ppo, or --param invalid_action=flag (an illegal action then does "
                         f"nothing)")


def _shrink(hyper: dict, algo: str, steps: int, num_envs: int) -> None:
    """Fit the hyperparameters of a ``--smoke`` run to its ``steps``: at least two rollouts or
    updates, a small replay buffer."""
    if algo in ON_POLICY:
        n_steps = hyper.get("n_steps", 5 if algo == "a2c" else 2048)
        if 2 * n_steps * num_envs > steps:
            hyper["n_steps"] = n_steps = max(1, steps // (2 * num_envs))
        if algo != "a2c":
            hyper["batch_size"] = min(hyper.get("batch_size", 64), n_steps * num_envs)
    else:
        hyper["learning_starts"] = min(hyper.get("learning_starts", 100), steps // 4)
        hyper["buffer_size"] = min(hyper.get("buffer_size", 1_000_000), 10 * steps)


def _with_step_bonus(env, bonus: float):
    """``env`` with ``bonus`` added to every step's rewards (its infos' episode statistics,
    recorded below the wrapper, keep the game's reward)."""
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class StepBonus(VecEnvWrapper):
        def reset(self):
            return self.venv.reset()

        def step_wait(self):
            obs, rewards, dones, infos = self.venv.step_wait()
            return obs, rewards + np.float32(bonus), dones, infos

    return StepBonus(env)


def _schedules(hyper: dict) -> dict:
    """``{"linear": v}`` values as SB3's linear schedules from ``v`` down to 0."""
    try:
        from stable_baselines3.common.utils import LinearSchedule
    except ImportError:  # SB3 before 2.6
        from stable_baselines3.common.utils import get_linear_fn as LinearSchedule

    return {k: LinearSchedule(v["linear"], 0.0, 1.0) if isinstance(v, dict) and "linear" in v else v
            for k, v in hyper.items()}


# -- episode statistics ----------------------------------------------------------------------
@dataclass
class EpisodeStats:
    """Finished episodes, each a dict (``timestep``, ``env``, ``r``, ``l``, ``t`` and event
    totals), with per-env and aggregated summaries."""

    num_envs: int
    event_names: tuple
    episodes: list = field(default_factory=list)

    def add(self, timestep: int, env: int, episode: dict) -> None:
        self.episodes.append({"timestep": timestep, "env": env, **episode})

    def summary(self, episodes=None) -> dict:
        """Episodes, mean/min/max return and length, and event totals of ``episodes`` (all)."""
        eps = self.episodes if episodes is None else episodes
        out = {"episodes": len(eps)}
        if eps:
            r = np.array([e["r"] for e in eps], dtype=float)
            ln = np.array([e["l"] for e in eps], dtype=float)
            out.update(mean_return=float(r.mean()), std_return=float(r.std()), min_return=float(r.min()),
                       max_return=float(r.max()), mean_length=float(ln.mean()), min_length=int(ln.min()),
                       max_length=int(ln.max()))
        for name in self.event_names:
            total = int(sum(e.get(name, 0) for e in eps))
            out[f"{name}_total"] = total
            out[f"{name}_per_episode"] = total / len(eps) if eps else 0.0
        return out

    def per_env(self) -> list[dict]:
        return [dict(env=i, **self.summary([e for e in self.episodes if e["env"] == i])) for i in range(self.num_envs)]

    def recent_mean(self, key: str, last: int = 100) -> float:
        eps = self.episodes[-last:]
        return float(np.mean([e.get(key, 0) for e in eps])) if eps else math.nan

    def write_csv(self, path: pathlib.Path, extra: dict | None = None) -> None:
        columns = list(extra or {}) + ["timestep", "env", "r", "l", "t"] + list(self.event_names)
        with open(path, "w", newline="") as f:
            writer = csv.DictWriter(f, columns, extrasaction="ignore")
            writer.writeheader()
            for e in self.episodes:
                writer.writerow({**(extra or {}), **e})


def _episode_callback(stats: EpisodeStats, out: pathlib.Path | None, checkpoint_every: int | None,
                      total: int, progress: bool):
    """An SB3 callback: records every finished episode's Monitor statistics with its env index,
    saves a checkpoint every ``checkpoint_every`` steps and shows a progress line."""
    from stable_baselines3.common.callbacks import BaseCallback

    class EpisodeLog(BaseCallback):
        def _on_training_start(self) -> None:
            self.start = time.perf_counter()
            self.start_steps = self.num_timesteps
            self.next_checkpoint = checkpoint_every
            self.last_shown = 0.0
            self.checkpoints = []

        def _on_step(self) -> bool:
            for i, info in enumerate(self.locals["infos"]):
                episode = info.get("episode")
                if episode is not None:
                    stats.add(self.num_timesteps, i, episode)
            if self.next_checkpoint and self.num_timesteps >= self.next_checkpoint and out is not None:
                path = out / "checkpoints" / f"model_{self.num_timesteps}.zip"
                self.model.save(path)
                self.checkpoints.append(str(path.relative_to(out)))
                while self.next_checkpoint <= self.num_timesteps:
                    self.next_checkpoint += checkpoint_every
            if progress:
                now = time.perf_counter()
                if now - self.last_shown >= 0.5 or self.num_timesteps >= total:
                    self.last_shown = now
                    self.show(now)
            return True

        def steps_per_second(self) -> float:
            return (self.num_timesteps - self.start_steps) / max(time.perf_counter() - self.start, 1e-9)

        def show(self, now: float) -> None:
            done = self.num_timesteps
            events = "".join(f", {name}/episode {stats.recent_mean(name):.2f}" for name in stats.event_names
                             if name != "invalid_action")
            text = (f"\r[{done}/{total} steps {100 * done / total:3.0f}% {now - self.start:5.1f}s "
                    f"{self.steps_per_second():,.0f} steps/s] episodes {len(stats.episodes)}, last 100: "
                    f"return {stats.recent_mean('r'):.2f}, length {stats.recent_mean('l'):.1f}{events}")
            sys.stderr.write(text.ljust(getattr(self, "width", 0)))
            sys.stderr.flush()
            self.width = len(text)

        def _on_training_end(self) -> None:
            if progress and getattr(self, "width", 0):
                sys.stderr.write("\n")
                sys.stderr.flush()

    return EpisodeLog()


# -- evaluation ------------------------------------------------------------------------------
def evaluate(model, env_id: str, episodes: int, seed: int, num_envs: int = 8, deterministic: bool = True,
             **params) -> EpisodeStats:
    """Play ``episodes`` whole episodes with ``model`` (``None``: random actions, uniform over
    the legal ones where the game has masks) on a fresh ``SB3VecEnv`` seeded ``seed``.

    Env ``i`` of ``min(num_envs, episodes)`` plays ``(episodes + i) // n`` of them, as SB3's
    ``evaluate_policy`` spreads them, so the short episodes do not crowd out the long ones.
    MaskablePPO is given the legal actions. Returns the episodes as ``EpisodeStats``.
    """
    from .sb3 import SB3VecEnv

    n = max(1, min(num_envs, episodes))
    env = SB3VecEnv(env_id, n, seed=seed, **params)
    try:
        targets = np.array([(episodes + i) // n for i in range(n)])
        counts = np.zeros(n, dtype=int)
        stats = EpisodeStats(n, env.engine.event_names)
        masked = bool(env.engine.n_mask)
        masking = model is not None and _is_maskable(model)
        rng = np.random.default_rng(seed)
        obs = env.reset()
        steps = 0
        while (counts < targets).any():
            masks = np.stack(env.env_method("action_masks")) if masked else None
            if model is None:
                if masked:
                    actions = (rng.random(masks.shape) * masks).argmax(axis=1)
                else:
                    env.action_space.seed(int(rng.integers(2**31)))
                    actions = np.stack([env.action_space.sample() for _ in range(n)])
            elif masking:
                actions, _ = model.predict(obs, deterministic=deterministic, action_masks=masks)
            else:
                actions, _ = model.predict(obs, deterministic=deterministic)
            obs, _, dones, infos = env.step(actions)
            steps += 1
            for i in np.flatnonzero(dones):
                if counts[i] < targets[i]:
                    stats.add(steps, int(i), infos[i]["episode"])
                    counts[i] += 1
        return stats
    finally:
        env.close()


def _is_maskable(model) -> bool:
    try:
        from sb3_contrib import MaskablePPO
    except ImportError:
        return False
    return isinstance(model, MaskablePPO)


# -- a run -----------------------------------------------------------------------------------
@dataclass
class TrainResult:
    """What ``train`` returns: the model, the training episodes, the evaluations and the summary
    that ``summary.json`` holds."""

    model: object
    training: EpisodeStats
    evaluation: EpisodeStats | None
    random_play: EpisodeStats | None
    summary: dict


def train(env_id: str, algo: str = "ppo", steps: int | None = None, num_envs: int | None = None, seed: int = 0,
          out: str | pathlib.Path | None = None, eval_episodes: int = 10, checkpoint_every: int | None = None,
          smoke: bool = False, progress: bool = False, torch_threads: int | None = None,
          hyperparameters: dict | None = None, step_bonus: float | None = None, verbose: bool = False,
          **params) -> TrainResult:
    """Train ``algo`` on ``num_envs`` envs of ``env_id`` for ``steps`` env steps.

    Parameters
    ----------
    env_id : str
        A vecsim id (``"vecsim/CartPole-v1"`` or ``"CartPole-v1"``).
    algo : {"ppo", "maskable-ppo", "dqn", "sac", "a2c"}
    steps, num_envs : int or None
        ``None``: the preset's (``preset(env_id, algo)``).
    seed : int
        Seeds the model (torch, NumPy) and the envs (env ``i`` gets ``seed + i``); the
        evaluation env is seeded ``seed + EVAL_SEED_OFFSET``.
    out : path or None
        Folder for the logs, checkpoints and model (made if missing); ``None`` writes nothing.
    eval_episodes : int
        Deterministic evaluation episodes at the end (0: none), and as many of random play.
    checkpoint_every : int or None
        Save the model every this many steps (``None``: a quarter of ``steps``; 0: never).
    smoke : bool
        A run of seconds: a couple of rollouts (``SMOKE_STEPS`` or two of the preset's), at
        most 2 evaluation episodes.
    progress : bool
        A progress line on stderr.
    torch_threads : int or None
        ``torch.set_num_threads`` for the run, restored after; ``None`` leaves torch alone.
    hyperparameters : dict or None
        Overrides of the preset's (keyword arguments of the SB3 class).
    step_bonus : float or None
        A reward added to every training step (``None``: the preset's, 0 unless listed). The
        episode statistics and the evaluation count the game's own reward.
    **params
        Game parameters (``SB3VecEnv`` keyword arguments, e.g. ``action_mode="drop"``).

    Raises ``ValueError`` for a bad value or an algorithm the env cannot take, and
    ``TrainerMissing`` without SB3/torch.
    """
    if algo not in ALGOS:
        raise ValueError(f"--algo must be one of {', '.join(ALGOS)}, but got --algo {algo}")
    cls = algorithm_class(algo)
    import torch

    from .sb3 import SB3VecEnv

    full = _full_id(env_id)
    chosen = preset(full, algo)
    hyper = {**chosen.hyperparameters, **(hyperparameters or {})}
    for name, value in (("--steps", steps), ("--num-envs", num_envs)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1):
            raise ValueError(f"{name} must be an int >= 1, but got {name} {value}")
    if isinstance(eval_episodes, bool) or not isinstance(eval_episodes, (int, np.integer)) or eval_episodes < 0:
        raise ValueError(f"--eval-episodes must be an int >= 0, but got --eval-episodes {eval_episodes}")
    num_envs = chosen.num_envs if num_envs is None else int(num_envs)
    steps = chosen.steps if steps is None else int(steps)
    if smoke:
        steps = min(steps, SMOKE_STEPS)
        _shrink(hyper, algo, steps, num_envs)
        eval_episodes = min(eval_episodes, 2)
    if checkpoint_every is None:
        checkpoint_every = max(1, steps // 4)
    step_bonus = chosen.step_bonus if step_bonus is None else float(step_bonus)
    if not math.isfinite(step_bonus):
        raise ValueError(f"--step-bonus must be a finite number, but got --step-bonus {step_bonus}")

    env = SB3VecEnv(full, num_envs, seed=seed, **params)
    try:
        check_algo(algo, full, env.action_space, bool(env.engine.n_mask),
                   env.engine.game.enforces_mask and env.engine.invalid_action == "raise")
    except ValueError:
        env.close()
        raise
    out = None if out is None else pathlib.Path(out)
    if out is not None:
        (out / "checkpoints").mkdir(parents=True, exist_ok=True)
    stats = EpisodeStats(num_envs, env.engine.event_names)
    callback = _episode_callback(stats, out, checkpoint_every, steps, progress)
    old_threads = torch.get_num_threads()
    if torch_threads is not None:
        torch.set_num_threads(torch_threads)
    try:
        policy = "MultiInputPolicy" if env.observation_space.__class__.__name__ == "Dict" else "MlpPolicy"
        learning_env = _with_step_bonus(env, step_bonus) if step_bonus else env
        model = cls(policy, learning_env, seed=seed, device="cpu", verbose=int(verbose), **_schedules(hyper))
        start = time.perf_counter()
        model.learn(steps, callback=callback)
        train_seconds = time.perf_counter() - start
        evaluation = random_play = None
        eval_seed = seed + EVAL_SEED_OFFSET
        if eval_episodes:
            evaluation = evaluate(model, full, eval_episodes, eval_seed, **params)
            random_play = evaluate(None, full, eval_episodes, eval_seed, **params)
    finally:
        if torch_threads is not None:
            torch.set_num_threads(old_threads)
        env.close()

    summary = {
        "env_id": full, "algo": algo, "steps": int(model.num_timesteps), "requested_steps": steps,
        "num_envs": num_envs, "seed": seed, "params": params, "smoke": smoke,
        "preset": chosen.source, "hyperparameters": hyper, "step_bonus": step_bonus,
        "train_seconds": train_seconds, "steps_per_second": model.num_timesteps / max(train_seconds, 1e-9),
        "torch_threads": torch_threads if torch_threads is not None else old_threads,
        "training": stats.summary(), "training_per_env": stats.per_env(),
        "evaluation": None if evaluation is None else
        dict(evaluation.summary(), deterministic=True, seed=eval_seed),
        "random_play": None if random_play is None else dict(random_play.summary(), seed=eval_seed),
        "checkpoints": getattr(callback, "checkpoints", []),
    }
    if out is not None:
        stats.write_csv(out / "episodes.csv")
        _write_evaluation(out / "evaluation.csv", evaluation, random_play)
        model.save(out / "model.zip")
        summary["model"] = "model.zip"
        with open(out / "summary.json", "w") as f:
            json.dump(summary, f, indent=1)
    return TrainResult(model, stats, evaluation, random_play, summary)


def _write_evaluation(path: pathlib.Path, evaluation: EpisodeStats | None, random_play: EpisodeStats | None) -> None:
    rows = [(name, s) for name, s in (("trained", evaluation), ("random", random_play)) if s is not None]
    events = rows[0][1].event_names if rows else ()
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, ["policy", "episode", "env", "r", "l"] + list(events), extrasaction="ignore")
        writer.writeheader()
        for name, s in rows:
            for k, e in enumerate(s.episodes):
                writer.writerow({"policy": name, "episode": k, **e})


# -- the report the command prints -----------------------------------------------------------
def _fmt(value) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4g}"


def report(result: TrainResult, out: pathlib.Path | None = None, max_env_rows: int = 16) -> str:
    """The text ``vecsim train`` prints: per-env and aggregated training episodes, the
    evaluation beside random play, speed and where the files are."""
    from vecsim.bench.measure import format_table

    s = result.summary
    events = [n for n in result.training.event_names if n != "invalid_action"]
    header = ["env", "episodes", "mean return", "min", "max", "mean length", "min", "max"] + [f"{n} total"
                                                                                               for n in events]

    def row(label, d):
        return ([label, d["episodes"], _fmt(d.get("mean_return")), _fmt(d.get("min_return")),
                 _fmt(d.get("max_return")), _fmt(d.get("mean_length")), d.get("min_length", "-"),
                 d.get("max_length", "-")] + [d[f"{n}_total"] for n in events])

    per_env = s["training_per_env"]
    rows = [row(str(d["env"]), d) for d in per_env[:max_env_rows]]
    if len(per_env) > max_env_rows:
        rows.append([f"({len(per_env) - max_env_rows} more in summary.json)"] + [""] * (len(header) - 1))
    rows.append(row("all", s["training"]))
    bonus = f", a reward of {s['step_bonus']:g} added to every training step" if s["step_bonus"] else ""
    lines = [f"{s['algo']} on {s['env_id']}: {s['steps']} steps in {s['num_envs']} envs, {s['train_seconds']:.1f} s "
             f"({s['steps_per_second']:,.0f} steps/s); hyperparameters: {s['preset']}{bonus}", "",
             "training episodes, per env:", format_table(header, rows)]
    for label, key in (("evaluation (deterministic)", "evaluation"), ("random play", "random_play")):
        d = s[key]
        if d is None:
            continue
        extra = "".join(f", {n} per episode {_fmt(d[f'{n}_per_episode'])}" for n in events)
        lines.append(f"{label}: {d['episodes']} episodes, mean return {_fmt(d.get('mean_return'))} "
                     f"+/- {_fmt(d.get('std_return'))}, mean length {_fmt(d.get('mean_length'))}{extra}")
    if out is not None:
        lines.append(f"written to {out}: model.zip, checkpoints/ ({len(s['checkpoints'])}), episodes.csv, "
                     f"evaluation.csv, summary.json")
    return "\n".join(lines)
