"""``vecsim bench``: steps per second against Gymnasium (and EnvPool and operant when installed), a
table per game that declares ``BENCH_VARIANTS`` beside its peers, ``--peer-command`` peers, and with
``--sb3`` or ``--pipeline`` the SB3 adapter's or the actor-learner loop's throughput."""

from __future__ import annotations

import argparse
import json

import vecsim
from vecsim.bench import measure as bench
from vecsim.bench.load import BUSY_NICE
from vecsim.cli.common import (Progress, game_list, machine, machine_line, positive_float, positive_int, short,
                               warmup_timed)


def add_parser(subparsers) -> None:
    """The ``bench`` subcommand and its options."""
    b = subparsers.add_parser("bench", help="steps/s of vecsim against Gymnasium (and EnvPool and operant when "
                                            "installed); a game with BENCH_VARIANTS per variant, beside its peers")
    b.add_argument("--games", nargs="+", help="game ids (default: every game)")
    b.add_argument("--num-envs", type=positive_int, nargs="+",
                   help=f"batch sizes (default: {list(bench.NUM_ENVS)}; with --sb3: 64; with --pipeline: 16 256)")
    b.add_argument("--seconds", type=positive_float, default=1.0,
                   help="measuring time per cell (default: %(default)s)")
    b.add_argument("--repeats", type=positive_int, default=3, help="repeats, the best counts (default: %(default)s)")
    b.add_argument("--precision", nargs="+", choices=("float64", "float32"), default=["float64", "float32"])
    b.add_argument("--json", help="also write the results to this JSON file")
    b.add_argument("--operant-python", metavar="PYTHON",
                   help="measure operant in this Python (one with numpy and operant installed; on Linux operant's "
                        "only wheel is for CPython 3.8), side by side with vecsim; default: $VECSIM_OPERANT_PYTHON, "
                        "else operant in this Python if it imports")
    b.add_argument("--load", type=_load_count, default=0, metavar="N",
                   help="measure with N busy-loop processes running, each in a session of its own (as a job "
                        "started from another terminal) at the lowest priority, stopped when the bench ends "
                        "(default: %(default)s)")
    b.add_argument("--load-threads", type=_load_count, default=0, metavar="M",
                   help="measure with M threads of this process multiplying matrices with NumPy (a learner beside "
                        "the envs) (default: %(default)s)")
    b.add_argument("--sb3", action="store_true",
                   help="instead, what the Stable-Baselines3 adapter costs on CartPole: steps/s of VecsimVectorEnv "
                        "(NEXT_STEP, SAME_STEP), SB3VecEnv and SB3's DummyVecEnv over Gymnasium's env, and SB3 PPO "
                        "training steps/s on SB3VecEnv and on that DummyVecEnv (needs vecsim[train])")
    b.add_argument("--pipeline", action="store_true",
                   help="instead, the actor-learner loop's env steps/s (vecsim.pipeline on CartPole, a 5x200 MLP "
                        "policy), pipelined against synchronous, with a learner and acting alone; --num-envs and "
                        "--repeats (rounds) apply (default sizes: 16 256)")
    b.add_argument("--train-steps", type=positive_int, default=20_000,
                   help="with --sb3: PPO training steps timed per env (default: %(default)s)")
    b.add_argument("--torch-threads", type=positive_int,
                   help="with --sb3: torch.set_num_threads for the PPO runs (default: leave torch's setting alone)")
    b.add_argument("--peer-command", action="append", metavar="NAME=COMMAND",
                   help="also time another program beside one game's cells, in rounds interleaved with them, and "
                        "print vecsim / NAME; COMMAND (split as a shell would, run without one) steps {num_envs} "
                        "envs for about {seconds} s on at most {threads} threads and prints its steps/s as the first "
                        "word of its last output line (see vecsim.bench.command_peer); repeatable")
    b.add_argument("--peer-vs", metavar="COLUMN",
                   help="the vecsim column the peers are set against: one of the game's BENCH_VARIANTS, or step / "
                        "step_no_reset for a game timed per precision (default: the first)")
    b.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    b.set_defaults(func=run)


def _ratio(ours, theirs) -> str:
    if ours is None or not theirs:
        return "-"
    return f"{ours / max(theirs):.1f}x"


def _variant_key(game_id: str, n: int, impl: str):
    """The results key of one cell of a game's variant table (a peer's precision is ``None``)."""
    for variant in bench.bench_variants(game_id):
        if impl == bench.variant_impl(variant):
            return game_id, n, impl, bench.variant_precision(game_id, variant)
    return game_id, n, impl, None


def _print_variant_table(game_id: str, args, results: dict) -> None:
    """The table of a game that declares ``BENCH_VARIANTS``: steps/s per variant, then its peers."""
    variants = bench.bench_variants(game_id)
    peers = bench.variant_peers(game_id)
    installed = {peer.name: peer.available() for peer in peers}
    header = (["game", "num_envs"] + [f"{v} steps/s" for v in variants] + [f"{p.name} steps/s" for p in peers]
              + [f"x {p.compare_with} vs {p.short}" for p in peers])
    rows = []
    for n in args.num_envs:
        ours = {v: results[_variant_key(game_id, n, bench.variant_impl(v))] for v in variants}
        theirs = {p.name: results[_variant_key(game_id, n, p.name)] if installed[p.name] else None for p in peers}
        rows.append([short(game_id), n] + [bench.format_rate(v) for v in ours.values()]
                    + [bench.format_rate(theirs[p.name]) if installed[p.name] else "not installed" for p in peers]
                    + [_ratio(ours.get(p.compare_with), [theirs[p.name]] if theirs[p.name] else []) for p in peers])
    print(bench.format_table(header, rows))
    made = "; ".join(f"{v} = {', '.join(f'{k}={x!r}' for k, x in kw.items()) or 'the defaults'}"
                     for v, kw in variants.items())
    print(f"\n{short(game_id)}: vecsim Engine.step (NEXT_STEP autoreset), one column per variant of its "
          f"BENCH_VARIANTS ({made}; float64 unless a variant sets precision: --precision applies to the games "
          f"timed per precision); best of {args.repeats} repeats in about {args.seconds:g} s per cell; a step of N "
          f"envs counts N (one action per env, a whole decision where the variant's action is one).\n"
          f"random actions drawn ahead of time, or where the variant refuses actions outside its mask a random legal "
          f"action (argmax of random keys x action mask, chosen inside the timed step).")
    for peer in peers:
        print(peer.description)
        print(f"x {peer.compare_with} vs {peer.short} = vecsim {peer.compare_with} / {peer.name} at the same "
              f"num_envs.")
    for peer in peers:
        if not installed[peer.name]:
            print(peer.missing)


def _command_peers(args, games: list[str]) -> list:
    """The ``--peer-command`` peers, checked: ``SystemExit`` naming a bad spec, a second game or a
    bad ``--peer-vs``."""
    from vecsim.bench import command_peer

    if not args.peer_command:
        if args.peer_vs is not None:
            raise SystemExit("vecsim bench: --peer-vs needs --peer-command")
        return []
    try:
        peers = command_peer.parse_peer_commands(args.peer_command)
    except ValueError as exc:
        raise SystemExit(f"vecsim bench: --peer-command: {exc}") from None
    if len(games) != 1:
        raise SystemExit(f"vecsim bench: --peer-command times a peer beside one game; give exactly one in --games "
                         f"(got {len(games)}: {', '.join(short(g) for g in games)})")
    choices = _peer_vs_choices(games[0])
    if args.peer_vs is None:
        args.peer_vs = choices[0]
    elif args.peer_vs not in choices:
        raise SystemExit(f"vecsim bench: --peer-vs must be one of {', '.join(choices)} for {short(games[0])}, "
                         f"but got --peer-vs {args.peer_vs}")
    return peers


def _peer_vs_choices(game_id: str) -> list[str]:
    """The columns of a game's table that a command peer may be set against: its variants, or
    vecsim's two step paths."""
    return list(bench.bench_variants(game_id)) or ["step", "step_no_reset"]


def _peer_vs_key(game_id: str, n: int, vs: str, precision: str):
    """The results key of the vecsim cell that ``--peer-vs vs`` names."""
    if bench.bench_variants(game_id):
        return _variant_key(game_id, n, bench.variant_impl(vs))
    return game_id, n, bench.VECSIM_STEP if vs == "step" else bench.VECSIM_NO_RESET, precision


def _measure_rounds(game_id: str, cells: list, command_peers: list, n: int, args, progress: Progress,
                    results: dict) -> None:
    """Measure ``cells`` (``(results key, runner opener)`` at ``num_envs=n``) and the command
    peers interleaved: ``args.repeats`` rounds, each timing every cell for ``seconds / repeats``
    and running every peer once for as long; the best round counts. Machine load that drifts
    during the run then weighs on vecsim and the peers alike."""
    import numba

    share = args.seconds / args.repeats
    threads = numba.config.NUMBA_NUM_THREADS
    runners = {}
    try:
        for key, opener in cells:
            runners[key] = opener()
            results[key] = None
        for peer in command_peers:
            results[_command_key(game_id, n, peer)] = None
        for r in range(args.repeats):
            for key, runner in runners.items():
                if runner is None:
                    continue
                progress.show(f"{short(game_id)} num_envs={n} {key[2]} (round {r + 1}/{args.repeats})")
                rate = bench.steps_per_second(runner.step, n, share, repeats=1)
                results[key] = max(results[key] or 0.0, rate)
            for peer in command_peers:
                progress.show(f"{short(game_id)} num_envs={n} {peer.name} (round {r + 1}/{args.repeats})")
                try:
                    rate = peer.measure(n, threads, share)
                except RuntimeError as exc:
                    raise SystemExit(f"vecsim bench: {exc}") from None
                k = _command_key(game_id, n, peer)
                results[k] = max(results[k] or 0.0, rate)
        for _ in cells:
            progress.advance()
    finally:
        for runner in runners.values():
            if runner is not None:
                runner.close()


def _command_key(game_id: str, n: int, peer):
    """The results key of a command peer's cell."""
    return game_id, n, peer.name, None


def _print_command_peers(game_id: str, command_peers: list, args, results: dict, precision: str) -> None:
    import numba

    vs = args.peer_vs
    header = ["game", "num_envs", f"vecsim {vs} steps/s"] + [f"{p.name} steps/s" for p in command_peers]
    header += [f"x {vs} vs {p.name}" for p in command_peers]
    rows = []
    for n in args.num_envs:
        ours = results.get(_peer_vs_key(game_id, n, vs, precision))
        theirs = [results.get(_command_key(game_id, n, p)) for p in command_peers]
        rows.append([short(game_id), n, bench.format_rate(ours)] + [bench.format_rate(t) for t in theirs]
                    + [f"{ours / t:.2f}x" if ours and t else "-" for t in theirs])
    print(bench.format_table(header, rows))
    on = "" if bench.bench_variants(game_id) else f" ({precision})"
    print(f"\npeers run as commands, in {args.repeats} rounds interleaved with vecsim's cells at each num_envs "
          f"(each round: every cell for {args.seconds / args.repeats:g} s, then every peer once for as long; the best "
          f"round counts); {{threads}} = {numba.config.NUMBA_NUM_THREADS} (NUMBA_NUM_THREADS).")
    for peer in command_peers:
        print(f"{peer.name} = {peer.command}")
    print(f"x {vs} vs NAME = vecsim {vs}{on} / NAME at the same num_envs.")


def _operant_peer(python):
    """``peers.open_operant(python)``, its error as the command's."""
    from vecsim.bench import peers

    try:
        return peers.open_operant(python)
    except RuntimeError as exc:
        raise SystemExit(f"vecsim bench: {exc}") from None


def _competing_load(args, progress: Progress):
    """A context that keeps ``args.load`` busy processes (each in a session of its own, at nice
    19) and ``args.load_threads`` busy NumPy threads running while the cells are measured, and
    stops them however the block ends (an error, Ctrl-C)."""
    import contextlib

    from vecsim.bench import load

    stack = contextlib.ExitStack()
    if args.load or args.load_threads:
        progress.show(f"starting {args.load} busy processes and {args.load_threads} busy threads")
        with contextlib.ExitStack() as starting:  # a failed start stops what had started
            starting.enter_context(load.BusyProcesses(args.load))
            starting.enter_context(load.BusyThreads(args.load_threads))
            stack = starting.pop_all()
    return stack


def _load_line(args) -> str:
    if not (args.load or args.load_threads):
        return "load: none (other programs on this machine aside)."
    procs = f"{args.load} busy Python process{'es' if args.load != 1 else ''}"
    threads = f"{args.load_threads} thread{'s' if args.load_threads != 1 else ''}"
    return (f"load: {procs} at nice {BUSY_NICE}, each in a session of its own, and {threads} of this process "
            f"multiplying 256x256 float32 matrices (NumPy), running while every cell was measured.")


def _run_sb3(args) -> int:
    """``vecsim bench --sb3``: the SB3 adapter's stepping cost and PPO training speed on CartPole."""
    try:
        from vecsim.bench import trainers
        from vecsim.trainers.train import algorithm_class
        algorithm_class("ppo")
    except ImportError as exc:
        raise SystemExit(f'vecsim bench --sb3 needs Stable-Baselines3 and torch ({exc.name} is missing): '
                         f'pip install "vecsim[train]"') from None
    except RuntimeError as exc:
        raise SystemExit(f"vecsim bench --sb3: {exc}") from None
    sizes = args.num_envs or [trainers.NUM_ENVS]
    progress = Progress(len(sizes) * len(trainers.ADAPTER_IMPLS) + 2, enabled=not args.no_progress)
    rows, record = [], {"machine": machine(), "seconds": args.seconds, "repeats": args.repeats, "stepping": [],
                        "training": {}}
    for n in sizes:
        rates = {}
        for impl in trainers.ADAPTER_IMPLS:
            progress.show(f"CartPole num_envs={n} {impl}")
            with trainers.adapter_runner(impl, trainers.GAME, n) as runner:
                rates[impl] = bench.steps_per_second(runner.step, n, args.seconds, args.repeats)
            progress.advance()
        record["stepping"] += [{"num_envs": n, "impl": impl, "steps_per_s": v} for impl, v in rates.items()]
        sb3 = rates[trainers.SB3_STEP]
        rows.append([n] + [bench.format_rate(v) for v in rates.values()]
                    + [f"{sb3 / rates[bench.VECSIM_STEP]:.2f}", f"{sb3 / rates[trainers.SAME_STEP]:.2f}",
                       f"{sb3 / rates[trainers.DUMMY]:.1f}x"])
    train_rates = {}
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    for impl, make in trainers.training_envs(8, seed=0).items():
        progress.show(f"PPO on CartPole, 8 envs, {args.train_steps} steps: {impl}")
        train_rates[impl] = trainers.training_steps_per_second(make, args.train_steps)
        progress.advance()
    record["training"] = {"steps": args.train_steps, "num_envs": 8, "steps_per_s": train_rates,
                          "torch_threads": trainers.torch_threads()}
    progress.finish()
    print(bench.format_table(["num_envs", "vecsim step", "SAME_STEP", "SB3VecEnv", "DummyVecEnv (gym)",
                              "SB3VecEnv / step", "SB3VecEnv / SAME_STEP", "x SB3VecEnv vs DummyVecEnv"], rows))
    print(f"\nCartPole-v1 env steps per second (a step of N envs counts N), best of {args.repeats} repeats in about "
          f"{args.seconds:g} s per cell; random actions drawn ahead of time.\n"
          f"vecsim step = VecsimVectorEnv.step (NEXT_STEP autoreset, copy=True); SAME_STEP = the same in "
          f"AutoresetMode.SAME_STEP; SB3VecEnv = vecsim.trainers.sb3.SB3VecEnv.step (same-step resets, info dicts, "
          f"terminal observations, Monitor statistics); DummyVecEnv (gym) = SB3's make_vec_env('CartPole-v1') "
          f"(Gymnasium's env in Monitor, in DummyVecEnv).\n")
    ours, theirs = train_rates[trainers.SB3_STEP], train_rates[trainers.DUMMY]
    print(bench.format_table(["PPO training, 8 envs", "steps/s"],
                             [[impl, bench.format_rate(v)] for impl, v in train_rates.items()]
                             + [["x SB3VecEnv vs DummyVecEnv", f"{ours / theirs:.2f}x"]]))
    print(f"\nSB3 PPO with RL Zoo's CartPole-v1 hyperparameters (n_steps 32, batch 256, 20 epochs), "
          f"{args.train_steps} steps of model.learn timed after a first warm-up rollout; torch threads: "
          f"{trainers.torch_threads()}{'' if args.torch_threads else ' (left as they are)'}.")
    print(machine_line())
    if args.json:
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1)
        print(f"results written to {args.json}")
    return 0


def _run_pipeline(args) -> int:
    """``vecsim bench --pipeline``: the actor-learner loop, pipelined against synchronous."""
    from vecsim.bench import pipeline

    sizes = args.num_envs or list(pipeline.NUM_ENVS)
    cells = len(pipeline.configurations(sizes, pipeline.ACTORS, ["numpy"], pipeline.LEARNERS))
    progress = Progress(2 * cells * args.repeats, enabled=not args.no_progress)

    def advance(line: str) -> None:
        progress.show(line)
        progress.advance()

    results = pipeline.measure(sizes, rounds=args.repeats, learners=pipeline.LEARNERS, progress=advance)
    progress.finish()
    print(pipeline.table(results))
    print(f"\n{pipeline.describe(20, args.repeats, None, None)}\n"
          f"More settings (torch inference, BLAS threads, cycles): python -m vecsim.bench.pipeline --help")
    print(machine_line())
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine(), "results": results}, f, indent=1)
        print(f"results written to {args.json}")
    return 0


def run(args) -> int:
    from vecsim.bench import peers

    if args.sb3:
        return _run_sb3(args)
    if args.pipeline:
        return _run_pipeline(args)
    args.num_envs = args.num_envs or list(bench.NUM_ENVS)
    games = game_list(args.games)
    # A game that declares BENCH_VARIANTS has its own table: steps/s per variant, beside its peers.
    by_variant = [g for g in games if bench.bench_variants(g)]
    games = [g for g in games if g not in by_variant]
    precisions = list(dict.fromkeys(args.precision))
    command_peers = _command_peers(args, games + by_variant)
    with_envpool = peers.envpool_available()
    operant = _operant_peer(args.operant_python) if games else None
    baselines = ([bench.GYM_VECTOR, bench.GYM_SYNC] + ([bench.ENVPOOL] if with_envpool else [])
                 + ([bench.OPERANT] if operant else []))
    tasks = []
    for game_id in games:
        for n in args.num_envs:
            for precision in precisions:
                tasks += [(game_id, n, bench.VECSIM_STEP, precision), (game_id, n, bench.VECSIM_NO_RESET, precision)]
            tasks += [(game_id, n, impl, None) for impl in baselines]
    variant_tasks = [(game_id, n, impl) for game_id in by_variant for n in args.num_envs
                     for impl in bench.variant_implementations(game_id)]
    warm_variants = [(game_id, variant) for game_id in by_variant for variant in bench.bench_variants(game_id)]
    progress = Progress(len(games) * len(precisions) + len(tasks) + len(warm_variants) + len(variant_tasks),
                        enabled=not args.no_progress)
    for game_id in games:
        for precision in precisions:
            progress.show(f"warming up {short(game_id)} {precision}")
            warmup_timed(game_id, precision)
            progress.advance()
    for game_id, variant in warm_variants:
        progress.show(f"warming up {short(game_id)} {variant}")
        vecsim.warmup(game_id, **bench.bench_variants(game_id)[variant])
        progress.advance()
    results = {}
    with _competing_load(args, progress):
        if command_peers:  # one game: its cells at each num_envs in rounds with the peers
            for n in args.num_envs:
                cells = [((g, m, impl, p), (lambda impl=impl, g=g, m=m, p=p: bench.make_runner(impl, g, m, p)))
                         for g, m, impl, p in tasks if m == n and impl != bench.OPERANT]
                cells += [(_variant_key(g, m, impl), (lambda impl=impl, g=g, m=m: bench.make_variant_runner(impl, g, m)))
                          for g, m, impl in variant_tasks if m == n]
                _measure_rounds((games + by_variant)[0], cells, command_peers, n, args, progress, results)
            done = set(results)
            tasks = [t for t in tasks if t not in done]
            variant_tasks = [t for t in variant_tasks if _variant_key(*t) not in done]
        try:
            for game_id, n, impl, precision in tasks:
                progress.show(f"{short(game_id)} num_envs={n} {impl}" + (f" {precision}" if precision else ""))
                if impl == bench.OPERANT:
                    ref = bench.reference_id(game_id)
                    rate = None if ref is None else operant.measure(ref, n, args.seconds, args.repeats)
                else:
                    rate = bench.measure(impl, game_id, n, precision or "float64", args.seconds, args.repeats)
                results[game_id, n, impl, precision] = rate
                progress.advance()
        finally:
            if operant:
                operant.close()
        for game_id, n, impl in variant_tasks:
            progress.show(f"{short(game_id)} num_envs={n} {impl}")
            results[_variant_key(game_id, n, impl)] = bench.measure_variant(impl, game_id, n, args.seconds,
                                                                            args.repeats)
            progress.advance()
    progress.finish()

    if games:
        header = ["game", "num_envs", "precision", "vecsim step", "step_no_reset", "gym vector", "gym sync"]
        header += ["envpool"] if with_envpool else []
        header += ["operant"] if operant else []
        header += ["x vs gymnasium"] + (["x no_reset vs operant"] if operant else [])
        rows = []
        for game_id in games:
            for n in args.num_envs:
                base = [results[game_id, n, impl, None] for impl in baselines]
                gym = [v for v in base[:2] if v is not None]
                theirs = results[game_id, n, bench.OPERANT, None] if operant else None
                for precision in precisions:
                    ours = results[game_id, n, bench.VECSIM_STEP, precision]
                    no_reset = results[game_id, n, bench.VECSIM_NO_RESET, precision]
                    rows.append([short(game_id), n, precision, bench.format_rate(ours), bench.format_rate(no_reset)]
                                + [bench.format_rate(v) for v in base] + [_ratio(ours, gym)]
                                + ([_ratio(no_reset, [theirs] if theirs and precision == "float32" else [])]
                                   if operant else []))
        print(bench.format_table(header, rows))
        print(f"\nenv steps per second (a step of N envs counts N), best of {args.repeats} repeats in about "
              f"{args.seconds:g} s per cell; random actions.\n"
              f"vecsim step = VecsimVectorEnv.step (copy=True); step_no_reset = Engine.step_no_reset + reset_envs; "
              f"gym vector = Gymnasium's vector_entry_point env; "
              f"gym sync = SyncVectorEnv (num_envs <= {bench.SYNC_MAX_ENVS}).\n"
              f"x vs gymnasium = vecsim step / the fastest Gymnasium implementation at the same num_envs.\n"
              f"- = does not apply, or the batch's state would not fit in the memory available.")
        if not with_envpool:
            print("EnvPool: not installed, left out.")
        if operant:
            where = (f"in Python {operant.versions['python']} ({operant.python}), numpy {operant.versions['numpy']}"
                     if operant.python else "in this Python")
            print(f"operant = operant {operant.versions['operant']}'s vector env .step (float32 SIMD, one "
                  f"worker thread, its own autoreset), {where}; for {', '.join(peers.OPERANT_ENVS)} only.\n"
                  f"x no_reset vs operant = vecsim float32 step_no_reset / operant at the same num_envs (operant "
                  f"computes in float32 only; vecsim's float64 kernels are bit-exact with Gymnasium).")
        else:
            print("operant: not installed, left out (on Linux, --operant-python with a CPython 3.8 that has it: "
                  "see docs/performance.md#operant).")
    for k, game_id in enumerate(by_variant):
        if games or k:
            print()
        _print_variant_table(game_id, args, results)
    if command_peers:
        print()
        _print_command_peers((games + by_variant)[0], command_peers, args, results, precisions[0])
    print(_load_line(args))
    print(machine_line())
    if args.json:
        record = {"machine": machine(), "seconds": args.seconds, "repeats": args.repeats,
                  "load": args.load, "load_threads": args.load_threads,
                  "results": [{"game": g, "num_envs": n, "impl": impl, "precision": p, "steps_per_s": v}
                              for (g, n, impl, p), v in results.items()]}
        for peer in (p for game_id in by_variant for p in bench.variant_peers(game_id)):
            record[peer.record_key] = peer.versions()
        if operant:
            record["operant"] = dict(operant.versions, python_path=operant.python)
        if command_peers:
            import numba

            record["peer_commands"] = {p.name: p.command for p in command_peers}
            record["peer_threads"] = numba.config.NUMBA_NUM_THREADS
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1)
        print(f"results written to {args.json}")
    return 0


def _load_count(text: str) -> int:
    from vecsim.bench.load import MAX_LOAD

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an int in [0, {MAX_LOAD}], got {text!r}") from None
    if not 0 <= value <= MAX_LOAD:
        raise argparse.ArgumentTypeError(f"must be an int in [0, {MAX_LOAD}], got {text}")
    return value
