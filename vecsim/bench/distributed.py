"""vecsim on Ray: the Ray collector against the single-process collector, and RLlib's sampling
with vecsim env runners against the same config on Gymnasium's own CartPole, in one run.

    python -m vecsim.bench.distributed [collect] [rllib] [--batch 256 1024] [--max-steps 200]
        [--workers 64] [--actors 2] [--rounds 5] [--num-envs 16 128] [--timesteps 4000]
        [--game CartPole-v1] [--policy random|mlp] [--address ADDRESS] [--network-gbps 10] [--json FILE]

``collect``: per batch, the median over ``rounds`` (each round times every configuration in
turn, so that other programs' load falls on all alike) of ``EpisodeCollector`` with
``workers`` slots and of ``RayEpisodeCollector`` with the same slots over ``actors`` actors,
same game, ``B`` and ``K``, policy ``"random"`` or ``mlp`` (``MLPPolicy``, on the actors). Where the time goes: the same run of jobs on
one local collector of one actor's slots (what each actor computes), the round trip of an
empty actor call (scheduling), ``ray.put`` + ``ray.get`` of one actor's run cut to its played
steps (serialisation through the object store) and the join of the runs into one batch. From these a model gives
the batch size from which ``M`` machines (one actor each) beat one, and their steps/s; the
transfer between machines is not measured here (one machine) but added at ``network-gbps``.

``rllib``: env steps per second of ``sample()`` on RLlib's remote env runners (PPO's default
RLModule, inference included), ``num_envs`` envs per runner, vecsim's vector entry point
against Gymnasium's CartPole-v1 in a ``SyncVectorEnv`` (RLlib's default vectorization).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time

import numpy as np

from vecsim.bench.measure import format_rate, format_table

GAME = "CartPole-v1"
BATCHES = (256, 1024)
MACHINES = (1, 4, 16)


class MLPPolicy:
    """A batched policy with an agent's compute per step: an MLP's forward pass in NumPy
    (``hidden`` tanh layers, fixed random weights), the legal action of largest logit."""

    def __init__(self, obs_dim: int, n_actions: int, hidden=(256, 256), seed: int = 0):
        rng = np.random.default_rng(seed)
        sizes = (obs_dim, *hidden, n_actions)
        self.layers = [(rng.normal(0, 1 / np.sqrt(a), (a, b)).astype(np.float32), np.zeros(b, np.float32))
                       for a, b in zip(sizes[:-1], sizes[1:])]

    def __call__(self, obs, masks):
        h = np.asarray(obs, dtype=np.float32)
        for k, (w, b) in enumerate(self.layers):
            h = h @ w + b
            if k < len(self.layers) - 1:
                h = np.tanh(h)
        if masks is not None:
            h = np.where(masks, h, -np.inf)
        return h.argmax(axis=1)


def _policy(name: str, game: str):
    if name == "random":
        return "random"
    import vecsim

    eng = vecsim.make(game, 1)
    try:
        return MLPPolicy(eng.obs_dim, int(eng.single_action_space.n))
    finally:
        eng.close()


def _median_time(fn, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _nbytes(batch) -> int:
    from vecsim.collect.collector import EpisodeBatch

    return sum(getattr(batch, n).nbytes for n in EpisodeBatch.__slots__ if getattr(batch, n) is not None)


def bench_collect(game: str, policy_name: str, batches, max_steps: int, workers: int, actors: int, rounds: int,
                  network_gbps: float) -> list[dict]:
    """Seconds per batch of each collector and the parts of the Ray collector's time, per ``B``."""
    import ray

    from vecsim.collect.collector import EpisodeCollector
    from vecsim.distributed import RayEpisodeCollector
    from vecsim.distributed.collector import _join, _played, _runs

    rows = []
    per_actor = workers // actors
    policy = _policy(policy_name, game)
    with EpisodeCollector(game, workers, max_steps, policy, 0) as single, \
            EpisodeCollector(game, per_actor, max_steps, policy, 0) as one_slice, \
            RayEpisodeCollector(game, workers, max_steps, policy, 0, num_actors=actors,
                                actor_options={"num_cpus": 0}) as spread:
        actor = spread.actors[0]
        for b in batches:
            run = _runs(0, b, actors)[0][1]
            for c in (single, spread):  # warm-up: kernels, spare arrays, the actors' first batch
                c.request_episodes(b)
            one_slice.request_episodes(run, first_job=0)
            times = {k: [] for k in ("single", "ray", "compute", "call", "ser", "ser_one", "join")}
            ratios = []
            full = one_slice.request_episodes(run, first_job=0)
            sample = _played(full)  # what an actor sends
            one = _played(one_slice.request_episodes(1, first_job=0))
            parts = {k: sample for k in range(actors)}
            for _ in range(rounds):
                times["single"].append(_median_time(lambda: single.request_episodes(b), 1))
                times["ray"].append(_median_time(lambda: spread.request_episodes(b), 1))
                ratios.append(times["single"][-1] / times["ray"][-1])
                times["compute"].append(_median_time(lambda: one_slice.request_episodes(run, first_job=0), 1))
                times["call"].append(_median_time(lambda: ray.get(actor.where.remote()), 3))
                times["ser"].append(_median_time(lambda: ray.get(ray.put(_played(full))), 1))
                times["ser_one"].append(_median_time(lambda: ray.get(ray.put(one)), 3))
                times["join"].append(_median_time(lambda: _join(parts, max_steps), 1))
            med = {k: statistics.median(v) for k, v in times.items()}
            row = dict(batch=b, max_steps=max_steps, workers=workers, actors=actors,
                       single_s=med["single"], ray_s=med["ray"], ratio=statistics.median(ratios),
                       actor_compute_s=med["compute"], call_s=med["call"], serialise_s=med["ser"],
                       serialise_one_s=med["ser_one"], join_s=med["join"], run_bytes=_nbytes(sample),
                       mean_length=float(sample.lengths.mean()))
            row.update(model(row, network_gbps))
            rows.append(row)
    return rows


def model(row: dict, network_gbps: float) -> dict:
    """Batch size from which ``M`` machines (one actor each) pay, and their steps/s at ``B``.

    Per batch on ``M`` machines: one actor call's round trip (the ``M`` calls are answered in
    parallel) and ``M`` object-store reads' fixed cost on the driver; per episode, its compute
    spread over ``M`` and, not spread, its serialisation, transfer and join on the driver.
    """
    b, actors = row["batch"], row["actors"]
    run = -(-b // actors)
    per_episode = row["actor_compute_s"] / run  # one actor's slots: one machine's share
    ser_fixed = row["serialise_one_s"]
    moved = (max(row["serialise_s"] - ser_fixed, 0.0) + row["run_bytes"] / (network_gbps * 1.25e8)) / run \
        + row["join_s"] / b
    single_per_episode = row["single_s"] / b
    out = {}
    for m in MACHINES:
        fixed = row["call_s"] + m * ser_fixed
        denominator = single_per_episode - per_episode / m - moved
        out[f"pays_from_B_M{m}"] = None if denominator <= 0 else int(np.ceil(fixed / denominator))
        out[f"steps_per_s_M{m}"] = b * row["mean_length"] / (fixed + b * (per_episode / m + moved))
    return out


def bench_rllib(num_envs_list, timesteps: int, rounds: int) -> list[dict]:
    """Env steps/s of ``sample()`` on two remote env runners, vecsim's CartPole against Gymnasium's."""
    from ray.rllib.algorithms.ppo import PPOConfig

    envs = {"vecsim": ("vecsim:vecsim/CartPole-v1", "vector_entry_point"), "gymnasium": ("CartPole-v1", "sync")}
    algos = {}
    rows = []
    for n in num_envs_list:
        for name, (env, mode) in envs.items():
            config = (PPOConfig().environment(env)
                      .env_runners(num_env_runners=2, num_envs_per_env_runner=n, gym_env_vectorize_mode=mode,
                                   num_cpus_per_env_runner=0)
                      .debugging(seed=0))
            algos[name] = config.build_algo()

        def sample(algo):
            runs = algo.env_runner_group.foreach_env_runner(lambda r: r.sample(num_timesteps=timesteps),
                                                            local_env_runner=False)
            return sum(len(e) for episodes in runs for e in episodes)

        rates = {name: [] for name in envs}
        for algo in algos.values():
            sample(algo)  # warm-up
        for _ in range(rounds):
            for name, algo in algos.items():
                start = time.perf_counter()
                steps = sample(algo)
                rates[name].append(steps / (time.perf_counter() - start))
        ratio = statistics.median(v / g for v, g in zip(rates["vecsim"], rates["gymnasium"]))
        rows.append(dict(num_envs=n, vecsim_steps_per_s=statistics.median(rates["vecsim"]),
                         gymnasium_steps_per_s=statistics.median(rates["gymnasium"]), ratio=ratio))
        for algo in algos.values():
            algo.stop()
    return rows


def _report(args, parts: list[str], results: dict) -> None:
    """Run the parts asked for, print their tables and keep their rows in ``results``."""
    if "collect" in parts:
        rows = results["collect"] = bench_collect(args.game, args.policy, args.batch, args.max_steps, args.workers, args.actors,
                                                  args.rounds, args.network_gbps)
        print(f"{args.game}, policy {args.policy}, K={args.max_steps}, {args.workers} slots: seconds per batch "
              f"(medians of {args.rounds} rounds)")
        print(format_table(
            ["B", "single", f"Ray {args.actors} actors", "single/Ray", "actor compute", "call",
             "serialise", "join", "other", "MB/run", "mean length"],
            [[r["batch"], f"{r['single_s']:.4f}", f"{r['ray_s']:.4f}", f"{r['ratio']:.2f}x",
              f"{r['actor_compute_s']:.4f}", f"{r['call_s'] * 1e3:.2f} ms", f"{r['serialise_s']:.4f}",
              f"{r['join_s']:.4f}",
              f"{r['ray_s'] - r['actor_compute_s'] - r['call_s'] - r['serialise_s'] - r['join_s']:.4f}",
              f"{r['run_bytes'] / 1e6:.1f}", f"{r['mean_length']:.0f}"] for r in rows]))
        print(f"\nModel, M machines of one actor each ({args.network_gbps:g} Gbit/s between them):")
        print(format_table(
            ["B"] + [f"pays from B (M={m})" for m in MACHINES] + [f"steps/s (M={m})" for m in MACHINES],
            [[r["batch"]] + [str(r[f"pays_from_B_M{m}"] or "never") for m in MACHINES]
             + [format_rate(r[f"steps_per_s_M{m}"]) for m in MACHINES] for r in rows]))
    if "rllib" in parts:
        rows = results["rllib"] = bench_rllib(args.num_envs, args.timesteps, args.rounds)
        print("\nRLlib sample() on 2 env runners, env steps/s (medians; ratio per round):")
        print(format_table(["envs per runner", "vecsim", "Gymnasium CartPole", "vecsim/Gymnasium"],
                           [[r["num_envs"], format_rate(r["vecsim_steps_per_s"]),
                             format_rate(r["gymnasium_steps_per_s"]), f"{r['ratio']:.2f}x"] for r in rows]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vecsim.bench.distributed", description=__doc__.split("\n")[0])
    parser.add_argument("parts", nargs="*", help="collect, rllib (default: both)")
    parser.add_argument("--game", default=GAME, help="a game id (collect)")
    parser.add_argument("--policy", default="random", choices=["random", "mlp"],
                        help="mlp: a NumPy MLP (2x256 tanh) evaluated on the actors (collect)")
    parser.add_argument("--batch", type=int, nargs="+", default=list(BATCHES))
    parser.add_argument("--max-steps", type=int, default=200)
    parser.add_argument("--workers", type=int, default=64)
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--num-envs", type=int, nargs="+", default=[16, 128])
    parser.add_argument("--timesteps", type=int, default=4000, help="env steps per runner per sample() (rllib)")
    parser.add_argument("--address", default=None, help="a running cluster (default: a local one)")
    parser.add_argument("--network-gbps", type=float, default=10.0)
    parser.add_argument("--blas-threads", type=int, default=None,
                        help="BLAS threads of this process (the single collector's mlp policy); "
                             "Ray's actors run with OMP_NUM_THREADS=1")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    parts = args.parts or ["collect", "rllib"]
    for part in parts:
        if part not in ("collect", "rllib"):
            parser.error(f"unknown part {part!r}: choose collect, rllib or both")
    for name in ("max_steps", "workers", "actors", "rounds", "timesteps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.workers < args.actors:
        parser.error("--workers must be >= --actors")
    import ray

    limits = contextlib.nullcontext()
    if args.blas_threads is not None:
        from threadpoolctl import threadpool_limits

        limits = threadpool_limits(args.blas_threads, user_api="blas")
    started = not ray.is_initialized()  # a caller's cluster is left running
    if started:
        ray.init(address=args.address, include_dashboard=False if args.address is None else None)
    results = {}
    try:
        with limits:
            _report(args, parts, results)
    finally:
        if started:
            ray.shutdown()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
