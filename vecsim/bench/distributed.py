"""vecsim on Ray: the Ray collector against the single-process collector, and RLlib's sampling
with vecsim env runners against the same config on Gymnasium's own CartPole, in one run.

    python -m vecsim.bench.distributed [collect] [rllib] [--batch 256 1024] [--max-steps 200]
        [--workers 64] [--actors 2] [--rounds 5] [--num-envs 16 128] [--timesteps 4000]
        [--game CartPole-v1] [--address ADDRESS] [--network-gbps 10] [--json FILE]

``collect``: per batch, the median over ``rounds`` (each round times every configuration in
turn, so that other programs' load falls on all alike) of ``EpisodeCollector`` with
``workers`` slots and of ``RayEpisodeCollector`` with the same slots over ``actors`` actors,
same game, ``B`` and ``K``, policy ``"random"``. Where the time goes: the same run of jobs on
one local collector of one actor's slots (what each actor computes), the round trip of an
empty actor call (scheduling), ``ray.put`` + ``ray.get`` of one actor's run (serialisation
through the object store) and the join of the runs into one batch. From these a model gives
the batch size from which ``M`` machines (one actor each) beat one, and their steps/s; the
transfer between machines is not measured here (one machine) but added at ``network-gbps``.

``rllib``: env steps per second of ``sample()`` on RLlib's remote env runners (PPO's default
RLModule, inference included), ``num_envs`` envs per runner, vecsim's vector entry point
against Gymnasium's CartPole-v1 in a ``SyncVectorEnv`` (RLlib's default vectorization).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

from vecsim.bench.measure import format_rate, format_table

GAME = "CartPole-v1"
BATCHES = (256, 1024)
MACHINES = (1, 4, 16)


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


def bench_collect(game: str, batches, max_steps: int, workers: int, actors: int, rounds: int,
                  network_gbps: float) -> list[dict]:
    """Seconds per batch of each collector and the parts of the Ray collector's time, per ``B``."""
    import ray

    from vecsim.collect.collector import EpisodeCollector
    from vecsim.distributed import RayEpisodeCollector
    from vecsim.distributed.collector import _join, _runs

    rows = []
    per_actor = workers // actors
    with EpisodeCollector(game, workers, max_steps, "random", 0) as single, \
            EpisodeCollector(game, per_actor, max_steps, "random", 0) as one_slice, \
            RayEpisodeCollector(game, workers, max_steps, "random", 0, num_actors=actors,
                                actor_options={"num_cpus": 0}) as spread:
        actor = spread.actors[0]
        for b in batches:
            run = _runs(0, b, actors)[0][1]
            for c in (single, spread):  # warm-up: kernels, spare arrays, the actors' first batch
                c.request_episodes(b)
            one_slice.request_episodes(run, first_job=0)
            local = spread_t = compute = call = ser = ser_one = join = 0.0
            ratios = []
            sample = one_slice.request_episodes(run, first_job=0)
            one = one_slice.request_episodes(1, first_job=0)
            parts = {k: sample for k in range(actors)}
            for _ in range(rounds):
                t_single = _median_time(lambda: single.request_episodes(b), 1)
                t_spread = _median_time(lambda: spread.request_episodes(b), 1)
                ratios.append(t_single / t_spread)
                local += t_single
                spread_t += t_spread
                compute += _median_time(lambda: one_slice.request_episodes(run, first_job=0), 1)
                call += _median_time(lambda: ray.get(actor.where.remote()), 3)
                ser += _median_time(lambda: ray.get(ray.put(sample)), 1)
                ser_one += _median_time(lambda: ray.get(ray.put(one)), 3)
                join += _median_time(lambda: _join(parts), 1)
            mean_len = float(sample.lengths.mean())
            row = dict(batch=b, max_steps=max_steps, workers=workers, actors=actors,
                       single_s=local / rounds, ray_s=spread_t / rounds, ratio=statistics.median(ratios),
                       actor_compute_s=compute / rounds, call_s=call / rounds, serialise_s=ser / rounds,
                       serialise_one_s=ser_one / rounds,
                       join_s=join / rounds, run_bytes=_nbytes(sample), mean_length=mean_len)
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vecsim.bench.distributed", description=__doc__.split("\n")[0])
    parser.add_argument("parts", nargs="*", help="collect, rllib (default: both)")
    parser.add_argument("--game", default=GAME, help="a game id (collect)")
    parser.add_argument("--batch", type=int, nargs="+", default=list(BATCHES))
    parser.add_argument("--max-steps", type=int, default=200)
    parser.add_argument("--workers", type=int, default=64)
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--num-envs", type=int, nargs="+", default=[16, 128])
    parser.add_argument("--timesteps", type=int, default=4000, help="env steps per runner per sample() (rllib)")
    parser.add_argument("--address", default=None, help="a running cluster (default: a local one)")
    parser.add_argument("--network-gbps", type=float, default=10.0)
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

    started = not ray.is_initialized()  # a caller's cluster is left running
    if started:
        ray.init(address=args.address, include_dashboard=False if args.address is None else None)
    results = {}
    try:
        if "collect" in parts:
            rows = results["collect"] = bench_collect(args.game, args.batch, args.max_steps, args.workers, args.actors,
                                                      args.rounds, args.network_gbps)
            print(f"{args.game}, policy random, K={args.max_steps}, {args.workers} slots: seconds per batch "
                  f"(medians of {args.rounds} rounds)")
            print(format_table(
                ["B", "single", f"Ray {args.actors} actors", "single/Ray", "actor compute", "call",
                 "serialise", "join", "MB/run"],
                [[r["batch"], f"{r['single_s']:.4f}", f"{r['ray_s']:.4f}", f"{r['ratio']:.2f}x",
                  f"{r['actor_compute_s']:.4f}", f"{r['call_s'] * 1e3:.2f} ms", f"{r['serialise_s']:.4f}",
                  f"{r['join_s']:.4f}", f"{r['run_bytes'] / 1e6:.1f}"] for r in rows]))
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
    finally:
        if started:
            ray.shutdown()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
