"""The fixed cost of one call on the paths a trainer or the collector takes.

    python -m vecsim.bench.call_cost [--game CartPole-v1] [--num-envs 1 16] [--calls 10000]
                                     [--repeats 30] [--paths step no_reset vector vector_no_copy]

Per-thread CPU time (``time.thread_time_ns``) per call, the best of ``repeats`` batches of
``calls`` calls each, for: ``Engine.step`` (``step``), ``Engine.step_no_reset`` with
``reset_envs`` of the envs that finished (``no_reset``), and the Gymnasium ``VectorEnv.step``
with ``copy=True`` (``vector``) and ``copy=False`` (``vector_no_copy``), each given one
preallocated action array of the batch's shape and dtype (zeros). Thread CPU time leaves out
the time the process waits for a core, so the best of many batches is the cost on a quiet core.
Run it with ``NUMBA_NUM_THREADS=1`` for serial kernels. To compare two versions, run this
module from each checkout in turn, several times, in the same minutes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from vecsim.engine.registry import resolve

GAME = "CartPole-v1"
PATHS = ("step", "no_reset", "vector", "vector_no_copy")


def _timed_loop(path: str, game: str, num_envs: int):
    """``(run, close)``: ``run(calls)`` makes ``calls`` calls of ``path`` on a started batch of
    ``num_envs`` envs of ``game`` and returns their per-thread CPU nanoseconds (the call
    written out in the loop: a wrapper function would add its own call to the cost)."""
    import gymnasium

    import vecsim

    clock = time.thread_time_ns
    if path in ("step", "no_reset"):
        engine = vecsim.make(game, num_envs)
        engine.reset(seed=0)
        actions = engine.zero_actions()
        step, step_no_reset, reset_envs = engine.step, engine.step_no_reset, engine.reset_envs

        def run_step(calls):
            start = clock()
            for _ in range(calls):
                step(actions)
            return clock() - start

        def run_no_reset(calls):
            start = clock()
            for _ in range(calls):
                result = step_no_reset(actions)
                if result.num_done:
                    reset_envs(result.to_reset_mask())
            return clock() - start

        return (run_step if path == "step" else run_no_reset), engine.close
    env = gymnasium.make_vec(f"vecsim/{game}", num_envs, vectorization_mode="vector_entry_point",
                             copy=path == "vector")
    env.reset(seed=0)
    actions = np.zeros(env.action_space.shape, env.action_space.dtype)
    env_step = env.step

    def run_vector(calls):
        start = clock()
        for _ in range(calls):
            env_step(actions)
        return clock() - start

    return run_vector, env.close


def cost_per_call(path: str, game: str, num_envs: int, calls: int, repeats: int) -> float:
    """Best per-thread CPU microseconds per call of ``path`` over ``repeats`` batches of ``calls``."""
    run, close = _timed_loop(path, game, num_envs)
    try:
        run(min(calls, 1000))  # compiles or loads the kernels, binds the compiled step
        return min(run(calls) for _ in range(repeats)) / calls / 1e3
    finally:
        close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vecsim.bench.call_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default=GAME, help="registered vecsim game id (default %(default)s)")
    parser.add_argument("--num-envs", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--calls", type=int, default=10_000, help="calls per timed batch")
    parser.add_argument("--repeats", type=int, default=30, help="timed batches; the best is reported")
    parser.add_argument("--paths", nargs="+", choices=PATHS, default=list(PATHS))
    args = parser.parse_args(argv)
    for name in ("num_envs", "calls", "repeats"):
        values = getattr(args, name)
        for value in values if isinstance(values, list) else [values]:
            if value < 1:
                parser.error(f"--{name.replace('_', '-')} must be at least 1, but got {value}")
    try:
        resolve(args.game)
    except ValueError as error:
        parser.error(f"--game: {error}")
    print(f"per-thread CPU us per call, best of {args.repeats} x {args.calls} calls; "
          f"NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', 'unset')}, "
          f"load average {os.getloadavg()[0]:.2f}")
    for num_envs in args.num_envs:
        for path in args.paths:
            us = cost_per_call(path, args.game, num_envs, args.calls, args.repeats)
            print(f"{args.game} {path:<15} num_envs={num_envs:<6} {us:.3f} us", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
