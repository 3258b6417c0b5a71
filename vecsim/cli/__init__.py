"""The ``vecsim`` command: ``demo``, ``bench``, ``warmup``, ``kernels``, ``calibrate`` and ``train``.

``vecsim demo`` runs every game with random actions through ``gymnasium.make_vec``, prints
its throughput and writes a PNG of rendered frames. ``vecsim bench`` measures steps per
second against Gymnasium (and EnvPool when installed) with the functions of
``vecsim.bench``, which the asv suite in ``asv_bench/`` uses too; a game that declares
``BENCH_VARIANTS`` gets a table of its own, a column per variant, beside the peers
``vecsim.bench.peers`` lists for it when they are installed.
``vecsim warmup`` compiles kernels into the on-disk cache ahead of time (an image build, a CI
cache), several games at once; ``vecsim kernels`` prints a game's generated kernel module, or
with ``--compile-times`` how long each kernel takes to compile cold (``vecsim.bench.compile_times``). ``vecsim calibrate`` times each game's serial and parallel
kernels on this machine and saves the batch size from which ``parallel="auto"`` picks the
parallel ones (``vecsim.bench.calibrate``). ``vecsim train`` trains a Stable-Baselines3 agent on
a game (``vecsim.trainers.train``, which imports SB3 and torch only then).

A module per command (``demo``, ``warmup``, ``kernels``, ``calibrate``, ``bench``, ``train``), each
with ``add_parser(subparsers)`` and ``run(args)``; ``common`` holds what they share.
"""

from __future__ import annotations

import argparse
import os
import sys

from vecsim.cli import bench, calibrate, demo, kernels, train, warmup
from vecsim.cli.common import UsageError, game_list


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vecsim", description=__doc__.split("\n\n")[0].replace("``", ""))
    sub = parser.add_subparsers(dest="command", required=True)
    for command in (demo, warmup, kernels, calibrate, bench, train):  # the order --help lists them
        command.add_parser(sub)
    return parser


def main(argv=None) -> int:
    """Run the ``vecsim`` command line (``argv`` defaults to ``sys.argv[1:]``)."""
    args = build_parser().parse_args(argv)
    if getattr(args, "games", None):
        try:
            args.games = game_list(args.games)
        except (TypeError, ValueError) as exc:
            build_parser().error(str(exc))
    try:
        return args.func(args)
    except UsageError as exc:
        build_parser().error(str(exc))
    except BrokenPipeError:  # the reader went away (``vecsim bench | head``): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
