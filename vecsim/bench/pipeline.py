"""Throughput of the actor-learner loop: pipelined against synchronous, the same agent, side by side.

    python -m vecsim.bench.pipeline [--num-envs 16 256] [--actors 2 1] [--impls numpy torch]
                                    [--rounds 5] [--cycles 20] [--blas-threads N] [--json FILE]

(``vecsim bench --pipeline`` runs its NumPy cells.) The seed's benchmark of issue #25: CartPole,
``steps_per_cycle=100``, a policy MLP of 5 hidden layers of 200 units run by the actors
(inference on), and a learner of one of three kinds: ``step``, a gradient step on every sample
of each batch (REINFORCE with a baseline, ``vecsim.pipeline.agents.Reinforce``, policy and
baseline networks both 5x200; with ``torch``, ``TorchPPO`` with one epoch of one minibatch, the
same networks); ``minibatch``, the same agent's gradient step on a random minibatch of
``MINIBATCH_STEPS * num_envs`` samples of each batch (a learner that costs about what acting a
cycle costs, NumPy only); ``none``, acting alone. Each cell is env steps per second of ``Pipeline.run`` over
``cycles`` cycles, after a warm-up run of the same loop (whose actor threads then play ahead, so
the timed run is a long training run's steady state, without the wait for a first trajectory
that only a loop's first run has); every round measures every configuration in turn, so
that the load of other programs falls on both sides alike, and the table gives medians with
the ratio per round, and the synchronous runs' milliseconds per cycle spent acting and
learning. Nothing here changes torch's or BLAS's threads unless asked
(``--blas-threads``, ``--torch-threads``: this process is the caller).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time

from vecsim.bench.measure import format_rate, format_table

GAME = "vecsim/CartPole-v1"
STEPS_PER_CYCLE = 100
HIDDEN = (200,) * 5
NUM_ENVS = (16, 256)
ACTORS = (2, 1)
IMPLS = ("numpy", "torch")
SYNCHRONOUS, PIPELINED = "synchronous", "pipelined"


LEARNERS = ("step", "minibatch", "balanced", "none")
#: The learners that step on a minibatch of each batch (NumPy's Reinforce only).
MINIBATCH_LEARNERS = ("minibatch", "balanced")
#: The minibatch learner's samples per env and cycle: a sixth of each batch of ``STEPS_PER_CYCLE``
#: steps, where one gradient step cost about as much as acting the cycle (16 and 256 envs) on a
#: CPU with AVX-512; the balanced learner finds that size on the machine it runs on.
MINIBATCH_STEPS = 16
#: The balanced learner's samples per gradient step, by num_envs, once measured in this process.
_BALANCED_SIZES: dict = {}


class ActingOnly:
    """An agent's ``act`` with a learner that changes nothing: the throughput of env stepping
    and inference alone."""

    def __init__(self, agent):
        self.agent = agent
        self.initial_actor_state = agent.initial_actor_state

    def init(self):
        return self.agent.init()

    def act(self, params, actor_state, obs, mask):
        return self.agent.act(params, actor_state, obs, mask)

    def learn(self, params, opt_state, batch):
        return params, opt_state, None


def minibatch_size(learner: str, num_envs: int) -> int:
    """Samples of each batch a gradient step of the ``minibatch`` or ``balanced`` learner takes."""
    if learner == "minibatch":
        return MINIBATCH_STEPS * num_envs
    if num_envs not in _BALANCED_SIZES:
        _BALANCED_SIZES[num_envs] = balanced_minibatch_size(num_envs)
    return _BALANCED_SIZES[num_envs]


def balanced_minibatch_size(num_envs: int, cycles: int = 4) -> int:
    """The samples a gradient step must take for learning a cycle to cost what acting it costs
    on this machine, as the table measures both (synchronous runs of ``cycles`` cycles): the
    learning time is affine in the samples, measured at two sizes, and solved for the mean
    acting time; within ``[num_envs, STEPS_PER_CYCLE * num_envs]``. Pipelining hides the cheaper
    of acting and learning, so balanced costs are where its gain can approach 2x."""
    sizes = (4 * num_envs, MINIBATCH_STEPS * num_envs)
    acting, learning = [], []
    for size in sizes:
        metrics, _ = run_metrics("numpy", num_envs, SYNCHRONOUS, 1, cycles, learner="balanced", minibatch=size)
        learning.append(metrics.learn_seconds / metrics.cycles)
        acting.append((metrics.seconds - metrics.learn_seconds) / metrics.cycles)
    slope = (learning[1] - learning[0]) / (sizes[1] - sizes[0])
    size = sizes[0] + (statistics.mean(acting) - learning[0]) / slope if slope > 0 else sizes[1]
    return int(min(max(round(size), num_envs), STEPS_PER_CYCLE * num_envs))


def make_agent(impl: str, learner: str = "step", num_envs: int | None = None, minibatch: int | None = None):
    """The benchmark's agent: ``numpy`` (Reinforce) or ``torch`` (TorchPPO, one step per batch);
    with ``learner="minibatch"`` or ``"balanced"`` (NumPy, needs ``num_envs``) Reinforce's step
    takes ``minibatch_size(learner, num_envs)`` samples of each batch (or ``minibatch``); with
    ``learner="none"`` the learner does nothing (``ActingOnly``)."""
    if learner not in LEARNERS:
        raise ValueError(f"learner must be one of {LEARNERS}, but got learner={learner!r}")
    if learner == "none":
        return ActingOnly(make_agent(impl))
    if learner in MINIBATCH_LEARNERS and impl != "numpy":
        raise ValueError(f"the {learner} learner is NumPy's Reinforce, but got impl={impl!r}")
    if impl == "numpy":
        from vecsim.pipeline.agents import Reinforce

        if learner in MINIBATCH_LEARNERS:
            if num_envs is None:
                raise ValueError(f"the {learner} learner needs num_envs (its minibatch is a number of samples per env)")
            size = minibatch_size(learner, num_envs) if minibatch is None else minibatch
            return Reinforce.for_env(GAME, hidden=HIDDEN, minibatch_size=size)
        return Reinforce.for_env(GAME, hidden=HIDDEN)
    if impl == "torch":
        from vecsim.pipeline.agents.torch_ppo import TorchPPO

        return TorchPPO.for_env(GAME, hidden=HIDDEN, epochs=1, minibatches=1)
    raise ValueError(f"impl must be one of {IMPLS}, but got impl={impl!r}")


def run_metrics(impl: str, num_envs: int, mode: str, num_actors: int, cycles: int,
                steps_per_cycle: int = STEPS_PER_CYCLE, learner: str = "step", minibatch: int | None = None):
    """``(metrics, cores)``: the ``PipelineMetrics`` of ``Pipeline.run(cycles)`` after a warm-up
    run of 2 cycles of the same loop (pipelined, its actors have played ahead meanwhile), and
    the cores the process got meanwhile (its CPU seconds, every thread's, per wall-clock second:
    a pipelined run that gets no second core cannot overlap anything)."""
    from vecsim.pipeline import Pipeline

    agent = make_agent(impl, learner, num_envs, minibatch)
    params, opt_state = agent.init()
    with Pipeline(GAME, num_envs, agent, params=params, opt_state=opt_state, num_actors=num_actors,
                  steps_per_cycle=steps_per_cycle, mode=mode) as loop:
        loop.run(2)
        cpu = time.process_time()
        metrics = loop.run(cycles)
        return metrics, (time.process_time() - cpu) / metrics.seconds


def steps_per_second(impl: str, num_envs: int, mode: str, num_actors: int, cycles: int,
                     steps_per_cycle: int = STEPS_PER_CYCLE, learner: str = "step") -> float:
    """Env steps per second of ``Pipeline.run(cycles)`` after a warm-up run of 2 cycles."""
    return run_metrics(impl, num_envs, mode, num_actors, cycles, steps_per_cycle, learner)[0].steps_per_second


def acting_cpu_per_step(hidden: tuple, num_envs: int, cycles: int = 5, repeats: int = 7) -> float:
    """CPU microseconds per step of a synchronous acting-only run (``time.thread_time``: the
    calling thread's, so other programs' load counts little), the best of ``repeats`` runs of
    ``cycles`` cycles, with a policy MLP of ``hidden`` widths."""
    from vecsim.pipeline import Pipeline
    from vecsim.pipeline.agents import Reinforce

    agent = ActingOnly(Reinforce.for_env(GAME, hidden=tuple(hidden)))
    params, opt_state = agent.init()
    best = float("inf")
    with Pipeline(GAME, num_envs, agent, params=params, opt_state=opt_state, num_actors=1,
                  steps_per_cycle=STEPS_PER_CYCLE, mode=SYNCHRONOUS) as loop:
        loop.run(2)
        for _ in range(repeats):
            start = time.thread_time()
            loop.run(cycles)
            best = min(best, (time.thread_time() - start) / (cycles * STEPS_PER_CYCLE))
    return 1e6 * best


def learning_cpu_per_cycle(learner: str, num_envs: int, cycles: int = 3, repeats: int = 3) -> float:
    """CPU milliseconds per cycle of the learner's thread (``PipelineMetrics.learner_cpu_seconds``:
    ``learn`` and the loop's own work, acting excluded) in a synchronous run of the benchmark's
    NumPy agent with ``learner``, the best of ``repeats`` runs of ``cycles`` cycles."""
    from vecsim.pipeline import Pipeline

    agent = make_agent("numpy", learner, num_envs)
    params, opt_state = agent.init()
    with Pipeline(GAME, num_envs, agent, params=params, opt_state=opt_state, num_actors=1,
                  steps_per_cycle=STEPS_PER_CYCLE, mode=SYNCHRONOUS) as loop:
        loop.run(1)
        return 1e3 * min(loop.run(cycles).learner_cpu_seconds / cycles for _ in range(repeats))


def configurations(sizes, actors, impls, learners=("step",)):
    """``(impl, learner, num_envs, num_actors)`` cells; each is measured synchronous and pipelined.
    The minibatch learner is NumPy's alone."""
    return [(impl, learner, n, a) for impl in impls for learner in learners for n in sizes for a in actors
            if learner not in MINIBATCH_LEARNERS or impl == "numpy"]


def measure(sizes=NUM_ENVS, actors=ACTORS, impls=("numpy",), rounds: int = 5, cycles: int = 20, progress=None,
            learners=("step",)) -> list:
    """Every cell ``rounds`` times, interleaved; a list of dicts with the rates of each round."""
    cells = configurations(sizes, actors, impls, learners)
    results = [{"impl": i, "learner": lr, "num_envs": n, "num_actors": a, SYNCHRONOUS: [], PIPELINED: [],
                "acting_ms": [], "learning_ms": [], "pipelined_cores": [], "actor_cores": [],
                "learner_cores": []} for i, lr, n, a in cells]
    for r in range(rounds):
        for cell in results:
            # the synchronous loop runs on one actor (one engine over every env), as a plain loop would
            order = (SYNCHRONOUS, PIPELINED) if r % 2 == 0 else (PIPELINED, SYNCHRONOUS)
            for mode in order:
                if progress:
                    progress(f"round {r + 1}/{rounds}: {cell['impl']} num_envs={cell['num_envs']} "
                             f"actors={cell['num_actors']} {mode}")
                actors_used = 1 if mode == SYNCHRONOUS else cell["num_actors"]
                metrics, cores = run_metrics(cell["impl"], cell["num_envs"], mode, actors_used, cycles,
                                             learner=cell["learner"])
                cell[mode].append(metrics.steps_per_second)
                if mode == PIPELINED:
                    cell["pipelined_cores"].append(cores)
                    cell["actor_cores"].append(float(metrics.actor_cpu_seconds.sum()) / metrics.seconds)
                    cell["learner_cores"].append(metrics.learner_cpu_seconds / metrics.seconds)
                if mode == SYNCHRONOUS:
                    cell["learning_ms"].append(1e3 * metrics.learn_seconds / metrics.cycles)
                    cell["acting_ms"].append(1e3 * (metrics.seconds - metrics.learn_seconds) / metrics.cycles)
    for cell in results:
        cell["ratios"] = [p / s for p, s in zip(cell[PIPELINED], cell[SYNCHRONOUS])]
        if cell["learner"] in MINIBATCH_LEARNERS:
            cell["minibatch"] = minibatch_size(cell["learner"], cell["num_envs"])
    return results


def table(results: list) -> str:
    rows = []
    for cell in results:
        ratios = cell["ratios"]
        learner = cell["learner"] + (f" ({cell['minibatch']})" if "minibatch" in cell else "")
        rows.append([cell["impl"], learner, cell["num_envs"], cell["num_actors"],
                     f"{statistics.median(cell['acting_ms']):.1f}", f"{statistics.median(cell['learning_ms']):.1f}",
                     format_rate(statistics.median(cell[SYNCHRONOUS])), format_rate(statistics.median(cell[PIPELINED])),
                     f"{statistics.median(cell['pipelined_cores']):.2f}",
                     *(f"{statistics.median(cell[k]):.2f}" if cell.get(k) else "?" for k in ("actor_cores", "learner_cores")),
                     f"{statistics.median(ratios):.2f}x", f"{min(ratios):.2f}-{max(ratios):.2f}"])
    return format_table(["inference", "learner", "num_envs", "actor threads", "acting ms/cycle", "learning ms/cycle",
                         "synchronous steps/s", "pipelined steps/s", "pipelined cores",
                         "actors' cores", "learner's cores", "ratio (median)",
                         "ratio range"], rows)


def blas_limit(threads: int | None):
    """A context limiting BLAS to ``threads`` threads (threadpoolctl: NumPy's OpenBLAS and SciPy's,
    which the agents' compiled inference calls), or one that does nothing."""
    if threads is None:
        return contextlib.nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        raise SystemExit("--blas-threads needs threadpoolctl (pip install threadpoolctl)") from None
    import vecsim.pipeline.agents  # noqa: F401  (loads SciPy's BLAS, which the limit must cover too)

    return threadpool_limits(threads, user_api="blas")


def load_average() -> str:
    """The 1-minute load average (other programs competing for the cores), or '?' where unknown."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "?"


def describe(cycles: int, rounds: int, blas_threads, torch_threads) -> str:
    return (f"vecsim/CartPole-v1, steps_per_cycle={STEPS_PER_CYCLE}, policy MLP {len(HIDDEN)}x{HIDDEN[0]} (tanh) run by "
            f"the actors; learner step = a gradient step on the whole batch, minibatch = a gradient step on "
            f"{MINIBATCH_STEPS} x num_envs samples of it, balanced = on as many samples as make learning a cycle "
            f"cost what acting it costs on this machine (in brackets: the samples), none = acting alone; ms per cycle acting and learning "
            f"from the synchronous runs; pipelined cores = the process's CPU seconds per second during the "
            f"pipelined runs, actors' and learner's cores = those of the actor threads and of the learner's thread "
            f"(time.thread_time); env steps/s of Pipeline.run over {cycles} cycles after a warm-up run of the same "
            f"loop (the steady state of a long run), median of "
            f"{rounds} interleaved rounds. synchronous = mode='synchronous' with one engine over every env; pipelined "
            f"= actor threads over slices of the envs, the learner in the calling thread. BLAS threads: "
            f"{blas_threads or 'as they were'}; torch threads: {torch_threads or 'as they were'}.")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-envs", type=int, nargs="+", default=list(NUM_ENVS))
    parser.add_argument("--actors", type=int, nargs="+", default=list(ACTORS), help="actor threads when pipelined")
    parser.add_argument("--impls", nargs="+", choices=IMPLS, default=["numpy"])
    parser.add_argument("--learners", nargs="+", choices=LEARNERS, default=list(LEARNERS),
                        help="step: a gradient step on the whole batch; minibatch: on MINIBATCH_STEPS x num_envs "
                             "samples of it; balanced: on as many samples as make learning cost what acting costs "
                             "here (measured first); none: acting alone (env steps and inference)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--blas-threads", type=int, help="limit BLAS (OpenBLAS, MKL) to N threads (threadpoolctl)")
    parser.add_argument("--torch-threads", type=int, help="torch.set_num_threads for the torch cells")
    parser.add_argument("--json", help="also write the results to this JSON file")
    parser.add_argument("--acting-cost", action="store_true",
                        help="instead: CPU us per step of synchronous acting alone, with a 1x8 policy (the loop's own "
                             "cost) and the benchmark's, at each --num-envs")
    parser.add_argument("--learning-cost", action="store_true",
                        help="instead: CPU ms per cycle of the learner's thread in a synchronous run, for each "
                             "--learners (but none) at each --num-envs")
    args = parser.parse_args(argv)
    for name in ("rounds", "cycles"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, but got {getattr(args, name)}")
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    if args.acting_cost:
        with blas_limit(args.blas_threads):
            rows = [[f"{len(h)}x{h[0]}", n, f"{acting_cpu_per_step(h, n):.1f}"] for h in ((8,), HIDDEN)
                    for n in args.num_envs]
        print(format_table(["policy MLP", "num_envs", "CPU us per step"], rows))
        return 0
    if args.learning_cost:
        with blas_limit(args.blas_threads):
            rows = [[learner, n, f"{learning_cpu_per_cycle(learner, n):.2f}"] for learner in args.learners
                    if learner != "none" for n in args.num_envs]
        print(format_table(["learner", "num_envs", "learner's CPU ms per cycle"], rows))
        return 0
    start, load_before = time.perf_counter(), load_average()
    with blas_limit(args.blas_threads):
        results = measure(args.num_envs, args.actors, args.impls, args.rounds, args.cycles, learners=args.learners,
                          progress=lambda line: print(f"\r{line:<90}", end="", file=sys.stderr, flush=True))
    print(file=sys.stderr)
    print(table(results))
    print(f"\n{describe(args.cycles, args.rounds, args.blas_threads, args.torch_threads)} "
          f"({time.perf_counter() - start:.0f} s in all; load average {load_before} before, {load_average()} after)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results, "args": vars(args)}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
