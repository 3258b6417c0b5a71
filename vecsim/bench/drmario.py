"""Dr. Mario per-frame speed: frames/s of the per-frame kernel and of the vecsim engine.

    python -m vecsim.bench.drmario [--num-envs 4096] [--seconds 3] [--level 10] [--speed 1] [--thread-time]
                                         [--decision-envs 64] [--decision-only] [--samples 0] [--planner-profile]

Three figures on the same batch (level, speed, random frame-mode inputs drawn once per
frame from a fixed table, games restarted when over):

* ``kernel``: ``rules.frame`` over every env in a serial loop (one thread), compiled as the
  engine's kernels are (no reference counting: with it, each read of a ``State`` field costs
  an atomic increment and decrement, more than the frame itself);
* ``kernel parallel``: the same frames, runs of 16 envs a ``prange`` iteration on Numba's threads;
* ``engine serial``: ``vecsim.make("vecsim/DrMario-v0", num_envs=N, mode="frame", parallel=False).step``
  (autoreset, observations, events and info), the path a learner uses, on one thread;
* ``engine``: the same with the engine's own kernel choice (threads over envs).

Decision mode (``mode="decision"``, the default of ``vecsim/DrMario-v0``) is timed in
decisions/s: ``Engine.step`` of ``--decision-envs`` envs with a random feasible placement each
(``vecsim.bench.measure.LegalActions``: chosen inside the timed step, no Python loop over envs),
on one thread (``decision serial``, CPU time with ``--thread-time``), on Numba's threads
(``decision parallel``, wall clock, and per CPU second of the process), and with the engine's
own choice (``decision auto``: ``parallel="auto"``, what a user gets, wall clock; on a busy
machine its online chooser may step with the serial kernel). ``--samples K`` also
times the parallel step in K samples of one second and prints each with their median and best:
a shared machine's speed changes from one second to the next, so compare two versions by the
medians of runs alternated in the same minutes. A decision is the
chosen placement's script read off the tree the last search kept, its frames, the frames to
the next decision point and one search for the new costs.

The planner is timed per decision on the same level and speed (``planner``): one exact
search from each of ``--planner-decisions`` decision points of games played with random
feasible placements, in CPU time of this thread (``time.thread_time``, so other load on the
machine does not count), best of ``--rounds`` rounds over the whole set. ``--compare-module
FILE`` times another planner module with the same ``plan(state, i, planner)`` and
``Planner()`` (for example the reference search the tests keep) on the same decisions, in
alternating rounds, and prints the ratio; ``--planner-only`` skips the frame figures.
``planner envs`` times ``plan_envs`` (masks and costs of many envs in one call, on Numba's
threads: set ``NUMBA_NUM_THREADS`` to compare thread counts) on the same decisions, wall clock.
``--planner-profile`` prints instead where a search's time goes on those decisions: each stage
of ``planners/drmario.search`` (fit table, move table, lock bound, lock bits of each pose)
and the whole search timed alone in a compiled loop of ``--profile-calls`` calls, CPU time of
the thread, with the nodes a search keeps.
"""

from __future__ import annotations

import argparse
import importlib.util
import time

import numpy as np
from numba import njit, prange

from vecsim.core.jit import exact, kernel_options
# A module alias: vecsim.planners.drmario imports the package this module belongs to.
import vecsim.planners.drmario as _planner
from vecsim.games.drmario import BUTTONS, rules
from vecsim.games.drmario.state import allocate

#: Envs a call of ``_frames`` steps (as the engine's ``KernelHints.envs_per_call``).
_RUN = 16


@exact
def _frames(s, lo, hi, inputs, r, level, speed):
    """One frame of envs ``lo <= i < hi``, a game over restarted first. A call, never inlined
    into the prange body: with ``frame`` inlined there, Numba's parallel loop skips envs
    (docs/numba-workarounds.md)."""
    for i in range(lo, hi):
        if s.outcome[i] != rules.PLAYING:
            rules.start_level(s, i, level, speed, 0x8988 + i, 0)
        rules.frame(s, i, inputs[(i * 7 + r) % inputs.shape[0]])


def _loop(parallel: bool):
    @njit(**dict(kernel_options("float64", parallel), cache=False))
    def run(s, inputs, rounds, level, speed):
        n = s.x.shape[0]
        for r in range(rounds):
            for c in prange((n + _RUN - 1) // _RUN):
                _frames(s, c * _RUN, min(n, (c + 1) * _RUN), inputs, r, level, speed)
    return run


def _time(fn, seconds: float, clock=time.perf_counter) -> float:
    """Calls per second of ``fn()`` over about ``seconds`` of ``clock`` (after one warm-up call)."""
    fn()
    n, start = 0, clock()
    while clock() - start < seconds:
        fn()
        n += 1
    return n / (clock() - start)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--num-envs", type=int, default=4096)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--level", type=int, default=10)
    ap.add_argument("--speed", type=int, default=1, choices=(0, 1, 2))
    ap.add_argument("--planner-decisions", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--planner-only", action="store_true")
    ap.add_argument("--decision-envs", type=int, default=64)
    ap.add_argument("--decision-only", action="store_true", help="time decision mode only")
    ap.add_argument("--samples", type=int, default=0,
                    help="also time decision mode's parallel step in this many one-second samples")
    ap.add_argument("--compare-module", default=None)
    ap.add_argument("--planner-profile", action="store_true", help="time each stage of a search alone")
    ap.add_argument("--profile-calls", type=int, default=100)
    ap.add_argument("--thread-time", action="store_true",
                    help="time the one-thread frame figures (kernel, engine serial) by the calling thread's CPU "
                         "time, steady on a loaded machine; the threaded ones stay wall-clock (the planner's "
                         "figure is always CPU time)")
    args = ap.parse_args(argv)
    needs = (("num-envs", args.num_envs, args.num_envs >= 1, ">= 1"), ("seconds", args.seconds, args.seconds > 0, "> 0"),
             ("level", args.level, 0 <= args.level <= 24, "in [0, 24]"),
             ("planner-decisions", args.planner_decisions, args.planner_decisions >= 1, ">= 1"),
             ("rounds", args.rounds, args.rounds >= 1, ">= 1"),
             ("profile-calls", args.profile_calls, args.profile_calls >= 1, ">= 1"),
             ("decision-envs", args.decision_envs, args.decision_envs >= 1, ">= 1"),
             ("samples", args.samples, args.samples >= 0, ">= 0"))
    broken = [f"--{name} {rule}, got {value}" for name, value, ok, rule in needs if not ok]
    if broken:
        raise ValueError("need " + "; ".join(broken))
    if args.planner_profile:
        _planner_profile(args)
        return
    if args.decision_only:
        _decision_figures(args)
        return
    if not args.planner_only:
        _frame_figures(args)
        _decision_figures(args)
    _planner_figures(args)


def _frame_figures(args) -> None:
    n, rounds = args.num_envs, 16
    one_thread_clock = time.thread_time if args.thread_time else time.perf_counter
    rng = np.random.default_rng(0)
    inputs = BUTTONS[rng.integers(0, len(BUTTONS), size=4099)]
    for name, parallel in (("kernel", False), ("kernel parallel", True)):
        s = allocate(n)
        for i in range(n):
            rules.start_level(s, i, args.level, args.speed, 0x8988 + i, 0)
        run = _loop(parallel)
        clock = time.perf_counter if parallel else one_thread_clock
        rate = _time(lambda: run(s, inputs, rounds, args.level, args.speed), args.seconds, clock) * n * rounds
        print(f"{name:16s} {rate:12.4g} frames/s  (num_envs={n})")

    import vecsim
    actions = rng.integers(0, len(BUTTONS), size=(64, n))
    for name, parallel in (("engine serial", False), ("engine", "auto")):
        engine = vecsim.make("vecsim/DrMario-v0", num_envs=n, mode="frame", level=args.level, speed=args.speed,
                             parallel=parallel)
        engine.reset(seed=0)
        k = [0]

        def step():
            engine.step(actions[k[0] % 64])
            k[0] += 1
        clock = one_thread_clock if parallel is False else time.perf_counter
        print(f"{name:16s} {_time(step, args.seconds, clock) * n:12.4g} frames/s  (num_envs={n})")
        engine.close()


def _decision_figures(args) -> None:
    import vecsim
    from vecsim.bench.measure import LegalActions

    n = args.decision_envs
    one_thread_clock = time.thread_time if args.thread_time else time.perf_counter
    for name, parallel in (("decision serial", False), ("decision parallel", True), ("decision auto", "auto")):
        engine = vecsim.make("vecsim/DrMario-v0", num_envs=n, mode="decision", level=args.level, speed=args.speed,
                             parallel=parallel)
        engine.reset(seed=0)
        choose = LegalActions(engine.masks, count=4)

        def step():
            engine.step(choose())
        clock = time.perf_counter if parallel else one_thread_clock
        start_cpu, start = time.process_time(), time.perf_counter()
        rate = _time(step, args.seconds, clock) * n
        # Of the process's CPU time too: on a loaded machine the wall clock counts others' time.
        per_cpu = rate * (time.perf_counter() - start) / max(time.process_time() - start_cpu, 1e-9)
        extra = f", {per_cpu:.4g} per CPU second of the process" if parallel is True else ""
        if parallel == "auto":
            chooser = engine.kernel_chooser
            kernel = "parallel" if (engine.parallel if chooser is None else chooser.parallel) else "serial"
            extra = f"; the {kernel} kernel" + ("" if chooser is None else
                                                 f" at the end, {chooser.switches} switches, {chooser.probes} probes")
        print(f"{name:16s} {rate:12.4g} decisions/s (num_envs={n}, mean tau "
              f"{float(engine.info_arrays['tau'].mean()):.0f} frames{extra})")
        if parallel is True and args.samples:
            rates = [_time(step, 1.0) * n for _ in range(args.samples)]
            print(f"{'  1 s samples':16s} {' '.join(f'{r:.4g}' for r in rates)} decisions/s (median "
                  f"{float(np.median(rates)):.4g}, best {max(rates):.4g})")
        engine.close()


def decision_states(level: int, speed: int, count: int) -> list:
    """``count`` one-env ``State`` copies at decision points of games played with random
    feasible placements (a new game when one ends)."""
    from vecsim.games.drmario.replay import frames, take
    from vecsim.planners import drmario as planner_mod
    rng = np.random.default_rng(0)
    planner = planner_mod.Planner()
    s, seed, out = allocate(1), 0x8988, []
    rules.start_level(s, 0, level, speed, seed, 0)
    while len(out) < count:
        if s.outcome[0] != rules.PLAYING:
            seed = (seed * 7 + 1) & 0xFFFF or 1
            rules.start_level(s, 0, level, speed, seed, 0)
        if s.next_action[0] != rules.FALLING:
            frames(s, np.zeros(1, np.int64))
            continue
        out.append(take(s, np.zeros(1, np.int64)))
        plan = planner_mod.plan(s, 0, planner)
        for b in planner_mod.script(plan, rng.choice(np.flatnonzero(plan.feasible_mask))):
            frames(s, np.array([b], np.int64))
    return out


#: The stages ``_stage_calls`` times, in ``search``'s order.
PROFILE_STAGES = ("fit table", "move table", "lock bound", "lock reach", "whole search")


@exact
def _stage_calls(stage, calls, board, threshold, x0, y0, rot0, sc0, hv0, held0, fc0, cost, lock_node, lock_button,
                 parent, button, node_slots, visited, fit, locks, reach, moves, seen, queue):
    """``calls`` calls of stage ``stage`` of ``PROFILE_STAGES`` on env 0 of ``board``, on the
    fit table, move table and reachable poses the stages before it left; returns the nodes of the last search."""
    n = 0
    for _ in range(calls):
        if stage == 0:
            _planner.fit_table(board, 0, fit)
        elif stage == 1:
            _planner.pose_moves(fit, moves)
        elif stage == 2:
            _planner.reachable_locks(fit, moves, x0, y0, rot0, threshold, cost, seen, queue)
        elif stage == 3:
            _planner.lock_reach(fit, moves, seen, locks, reach)
        else:
            n = _planner.search(board, 0, threshold, x0, y0, rot0, sc0, hv0, held0, fc0, cost, lock_node,
                                lock_button, parent, button, node_slots, visited, fit, locks, reach, moves, seen,
                                queue)
            _planner.clear_visited(visited, node_slots, abs(n))
    return n


def _planner_profile(args) -> None:
    from vecsim.games.drmario.tables import BASE_SPEED, SPEED_TABLE
    states = decision_states(args.level, args.speed, args.planner_decisions)
    p = _planner.Planner()
    seconds = np.zeros(len(PROFILE_STAGES))
    nodes = []
    for st in states:
        _planner.plan(st, 0, p)  # grows the node arrays to hold this search
        threshold = int(SPEED_TABLE[BASE_SPEED[st.speed[0]] + st.speed_ups[0]])
        cost = np.full(_planner.N_ACTIONS, _planner.UNREACHABLE, np.uint16)  # the lock bound: nothing found yet
        rest = (st.board, threshold, st.x[0], st.y[0], st.rot[0], st.speed_counter[0], st.hor_velocity[0],
                st.held[0], st.fc[0], cost, np.empty(_planner.N_ACTIONS, np.int64),
                np.empty(_planner.N_ACTIONS, np.uint8), p._parent, p._button, p._keys, p._scratch(threshold), p._fit,
                p._locks, p._reach, p._moves, p._seen, p._queue)
        for stage in range(len(PROFILE_STAGES)):
            _stage_calls(stage, 1, *rest)  # compile, and the stages after it read what it left
            start = time.thread_time()
            n = _stage_calls(stage, args.profile_calls, *rest)
            seconds[stage] += time.thread_time() - start
        nodes.append(n)
    per = seconds / (len(states) * args.profile_calls) * 1e6
    print(f"planner profile, level {args.level}, speed {args.speed}, {len(states)} decisions, "
          f"{args.profile_calls} calls a stage (CPU time of the thread, us per decision):")
    for name, us in zip(PROFILE_STAGES, per):
        print(f"  {name:22s} {us:9.2f} us")
    print(f"  {'search nodes':22s} {np.mean(nodes):9.0f} (min {min(nodes)}, max {max(nodes)}); the whole search "
          f"{per[-1] * 1e3 / np.mean(nodes):.1f} ns a node")


def _load(path: str):
    spec = importlib.util.spec_from_file_location("compared_planner", path)
    if spec is None:
        raise ValueError(f"--compare-module must be a Python file, got {path!r}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _planner_figures(args) -> None:
    from vecsim.planners import drmario as planner_mod
    modules = [("planner", planner_mod)]
    if args.compare_module:
        modules.append(("compared", _load(args.compare_module)))
    states = decision_states(args.level, args.speed, args.planner_decisions)
    planners = [m.Planner() for _, m in modules]
    for (_, m), p in zip(modules, planners):
        m.plan(states[0], 0, p)  # compile
    best = [float("inf")] * len(modules)
    for _ in range(args.rounds):
        for k, ((_, m), p) in enumerate(zip(modules, planners)):
            start = time.thread_time()
            for st in states:
                m.plan(st, 0, p)
            best[k] = min(best[k], time.thread_time() - start)
    nodes = [len(planner_mod.plan(st, 0, planners[0]).parent) for st in states]
    for (name, _), t in zip(modules, best):
        print(f"{name:16s} {len(states) / t:12.4g} decisions/s (one thread, CPU time, best of {args.rounds} "
              f"rounds over {len(states)} decisions)")
    print(f"{'':16s} {np.mean(nodes):12.4g} search nodes per decision (level {args.level}, speed {args.speed})")
    if len(modules) == 2:
        print(f"{'ratio':16s} {best[1] / best[0]:12.4g}x (planner over compared)")
    _planner_envs_figure(states, args.rounds)


def _planner_envs_figure(states: list, rounds: int) -> None:
    """``plan_envs`` over every decision (each 8 times) in one call, on Numba's threads:
    decisions per second of wall-clock time and per CPU second of the process (all its
    threads: on a loaded machine the wall clock counts the time others take), best of
    ``rounds`` calls."""
    from vecsim.core.scratch import numba_threads
    from vecsim.games.drmario.state import State
    from vecsim.planners import drmario as planner_mod
    batch = State(*(np.concatenate(fields) for fields in zip(*states)))
    envs = np.tile(np.arange(len(states)), 8)
    planner = planner_mod.EnvsPlanner()
    planner_mod.plan_envs(batch, envs, planner)  # compile
    best = best_cpu = float("inf")
    for _ in range(rounds):
        start, start_cpu = time.perf_counter(), time.process_time()
        planner_mod.plan_envs(batch, envs, planner)
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - start_cpu)
    print(f"{'planner envs':16s} {envs.size / best:12.4g} decisions/s ({numba_threads()} Numba threads, wall clock, "
          f"best of {rounds} calls of {envs.size} decisions; {envs.size / best_cpu:.4g} per CPU second of the process)")

if __name__ == "__main__":
    main()
