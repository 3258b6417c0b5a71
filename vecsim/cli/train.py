"""``vecsim train``: train a Stable-Baselines3 agent on a game (``vecsim.trainers.train``, which
imports SB3 and torch only when it runs)."""

from __future__ import annotations

import argparse

from vecsim.cli.common import UsageError, game_list, game_params, positive_int


def add_parser(subparsers) -> None:
    """The ``train`` subcommand and its options."""
    from vecsim.trainers.train import ALGOS  # the trainers' module imports no trainer at import

    t = subparsers.add_parser("train", help="train a Stable-Baselines3 agent (PPO, MaskablePPO, DQN, SAC, A2C) on a "
                                            "game; logs per-env episode statistics, checkpoints, evaluates at the "
                                            'end (needs pip install "vecsim[train]")')
    t.add_argument("--env", required=True, help="a game id, e.g. vecsim/CartPole-v1")
    t.add_argument("--algo", choices=ALGOS, default="ppo", help="the algorithm (default: %(default)s)")
    t.add_argument("--num-envs", type=positive_int,
                   help="envs stepped together (default: the preset's, e.g. 8 for CartPole PPO)")
    t.add_argument("--steps", type=positive_int, help="env steps to train (default: the preset's)")
    t.add_argument("--seed", type=int, default=0, help="seeds the model and the envs (env i: seed + i) "
                                                      "(default: %(default)s)")
    t.add_argument("--out", metavar="DIR", help="folder for model.zip, checkpoints/, episodes.csv, evaluation.csv "
                                                "and summary.json (default: write nothing)")
    t.add_argument("--checkpoint-every", type=_nonnegative_int, metavar="N",
                   help="save a checkpoint every N steps (default: a quarter of --steps; 0: never)")
    t.add_argument("--eval-episodes", type=_nonnegative_int, default=10,
                   help="deterministic evaluation episodes at the end, and as many of random play "
                        "(default: %(default)s)")
    t.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="a game parameter, e.g. --param action_mode=drop --param preset=classic; repeatable")
    t.add_argument("--step-bonus", type=float, metavar="R",
                   help="a reward added to every training step, shaping for a sparse game; the logs and the "
                        "evaluation keep the game's reward (default: the preset's, else 0)")
    t.add_argument("--smoke", action="store_true", help="a run of seconds: a few hundred steps, 2 evaluation "
                                                        "episodes (checks the setup)")
    t.add_argument("--torch-threads", type=positive_int,
                   help="torch.set_num_threads for the run (default: leave torch's setting alone)")
    t.add_argument("--verbose", action="store_true", help="also SB3's own log tables")
    t.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    t.set_defaults(func=run)


def run(args) -> int:
    import pathlib

    try:
        game_id = game_list([args.env])[0]
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--env: {exc}") from None
    params = game_params(args.param, [game_id])
    from vecsim.trainers import train as trainer

    out = pathlib.Path(args.out) if args.out else None
    try:
        result = trainer.train(game_id, args.algo, steps=args.steps, num_envs=args.num_envs, seed=args.seed, out=out,
                               eval_episodes=args.eval_episodes, checkpoint_every=args.checkpoint_every,
                               smoke=args.smoke, progress=not args.no_progress, torch_threads=args.torch_threads,
                               step_bonus=args.step_bonus, verbose=args.verbose, **params)
    except trainer.TrainerMissing as exc:
        raise SystemExit(f"vecsim train: {exc}") from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    print(trainer.report(result, out))
    return 0


def _nonnegative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value
