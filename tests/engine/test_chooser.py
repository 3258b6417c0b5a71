"""The online choice between serial and parallel kernels (vecsim.engine.chooser), with durations
made up by the test (never timed), and Numba's thread pool left unstarted by serial engines."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import vecsim
import vecsim.core.scratch
from vecsim.engine.chooser import KernelChooser, adapt_enabled

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]


def drive(chooser: KernelChooser, calls: int, parallel_cost: float, serial_cost: float) -> int:
    """Feed ``calls`` calls whose cost depends on the kernel chosen; how many ran in parallel."""
    in_parallel = 0
    for _ in range(calls):
        in_parallel += chooser.parallel
        chooser.observe(parallel_cost if chooser.parallel else serial_cost)
    return in_parallel


def test_a_slow_parallel_kernel_falls_back_to_serial_within_a_few_calls():
    chooser = KernelChooser()
    assert chooser.parallel
    in_parallel = drive(chooser, 20, parallel_cost=20.0, serial_cost=1.0)
    assert not chooser.parallel and chooser.switches == 1
    assert in_parallel <= 8, in_parallel


def test_a_fast_parallel_kernel_is_kept_and_probes_are_spaced_out():
    chooser = KernelChooser(max_interval=1024)
    in_parallel = drive(chooser, 10_000, parallel_cost=1.0, serial_cost=2.0)
    assert chooser.parallel and chooser.switches == 0
    # Intervals doubling from 4 to 1024 calls: about 16 probes in 10000 calls, 3 calls each.
    assert chooser.probes <= 20, chooser.probes
    assert in_parallel >= 10_000 - 3 * chooser.probes


def test_a_lone_slow_call_of_the_parallel_kernel_does_not_switch():
    # An idle machine still deschedules a thread now and then: one call in fifty takes 30x as
    # long. The median of the recent calls ignores it; the serial kernel is never kept.
    chooser = KernelChooser()
    in_parallel = 0
    for call in range(5000):
        in_parallel += chooser.parallel
        slow = chooser.parallel and call % 50 == 49
        chooser.observe(30.0 if slow else 1.0 if chooser.parallel else 1.8)
    assert chooser.switches == 0 and chooser.parallel
    assert in_parallel >= 5000 - 3 * chooser.probes


def test_a_load_that_comes_and_goes_switches_to_serial_and_back():
    chooser = KernelChooser()
    drive(chooser, 2000, parallel_cost=1.0, serial_cost=2.0)  # idle: parallel wins
    assert chooser.parallel
    in_parallel = drive(chooser, 20, parallel_cost=20.0, serial_cost=1.5)  # loaded: falls back at once
    assert not chooser.parallel and in_parallel <= 8, in_parallel
    loaded = 20_000
    in_parallel = drive(chooser, loaded, parallel_cost=20.0, serial_cost=1.5)
    # Probes of the slow parallel kernel lose at most about the budget's share of the time.
    lost = in_parallel * (20.0 - 1.5)
    assert lost <= 2 * chooser.budget * loaded * 1.5, (in_parallel, chooser.probes)
    drive(chooser, 5000, parallel_cost=1.0, serial_cost=2.0)  # idle again: back to parallel
    assert chooser.parallel


def test_a_tie_within_the_margin_does_not_switch():
    chooser = KernelChooser(margin=1.1)
    drive(chooser, 3000, parallel_cost=1.05, serial_cost=1.0)
    assert chooser.parallel and chooser.switches == 0


def test_costs_are_compared_per_unit_of_work():
    chooser = KernelChooser()
    for _ in range(200):  # parallel: 1 per unit over 100 units; serial: 1.5 per unit over 10
        if chooser.parallel:
            chooser.observe(100.0, work=100)
        else:
            chooser.observe(15.0, work=10)
    assert chooser.parallel and chooser.switches == 0


def test_on_switch_is_told_each_change_of_kernel():
    seen = []
    chooser = KernelChooser(seen.append)
    drive(chooser, 20, parallel_cost=20.0, serial_cost=1.0)
    assert seen and seen[-1] is False and seen[0] is False
    assert all(a != b for a, b in zip(seen, seen[1:]))


@pytest.mark.parametrize("kwargs, match", [
    ({"probe_calls": 0}, "probe_calls must be an int > 0"),
    ({"min_interval": 1.5}, "min_interval must be an int > 0"),
    ({"min_interval": 8, "max_interval": 4}, "max_interval must be >= min_interval"),
    ({"budget": 1.0}, "budget must be in \\(0, 1\\)"),
    ({"margin": 0.5}, "margin must be >= 1"),
    ({"trigger": "x"}, "trigger must be a number > 0"),
])
def test_bad_settings_are_refused_by_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        KernelChooser(**kwargs)


def test_bad_callables_are_refused_by_name():
    with pytest.raises(TypeError, match="clock must be callable"):
        KernelChooser(clock=1.0)
    with pytest.raises(TypeError, match="on_switch must be callable"):
        KernelChooser("x")


def test_vecsim_adapt_accepts_0_and_1_only(monkeypatch):
    monkeypatch.setenv("VECSIM_ADAPT", "0")
    assert not adapt_enabled()
    monkeypatch.setenv("VECSIM_ADAPT", "1")
    assert adapt_enabled()
    monkeypatch.setenv("VECSIM_ADAPT", "yes")
    with pytest.raises(ValueError, match="VECSIM_ADAPT must be 0 or 1.*'yes'"):
        adapt_enabled()


class FakeClock:
    """A clock for one engine: each timed step call lasts what ``costs`` says for the kernel in use."""

    def __init__(self, engine, costs):
        self.engine, self.costs, self.now, self.reads = engine, costs, 0.0, 0

    def __call__(self) -> float:
        self.reads += 1
        if self.reads % 2 == 0:  # the read after the call
            parallel = self.engine._step_kernel is self.engine._kernels.step_parallel
            self.now += self.costs["parallel" if parallel else "serial"]
        return self.now


def _auto_engine(monkeypatch, n):
    monkeypatch.setenv("VECSIM_PARALLEL_THRESHOLD", "64")
    engine = vecsim.make("CartPole-v1", n)
    if engine.kernel_chooser is None:
        pytest.skip("one Numba thread: parallel='auto' keeps the serial kernels")
    return engine


def test_an_engine_switches_its_kernels_with_its_chooser_and_its_results_stay_the_same(monkeypatch):
    n = 300
    engine = _auto_engine(monkeypatch, n)
    reference = vecsim.make("CartPole-v1", n, parallel=False)
    assert engine.parallel and reference.kernel_chooser is None
    costs = {"parallel": 20.0, "serial": 1.0}
    engine.kernel_chooser.clock = FakeClock(engine, costs)
    engine.kernel_chooser.budget = 0.5  # probes often enough to switch back and forth in 400 steps
    rng = np.random.default_rng(0)
    engine.reset(seed=5)
    reference.reset(seed=5)
    kernels = set()
    for t in range(400):
        # Loaded (parallel slow), then idle (parallel fast), for each of the two ways to step.
        costs.update(parallel=20.0 if t % 200 < 100 else 1.0, serial=1.0 if t % 200 < 100 else 2.0)
        if t == 200:
            engine.reset(seed=6)
            reference.reset(seed=6)
        kernels.add(engine._step_kernel)
        actions = rng.integers(0, 2, n)
        if t < 200:
            got, want = engine.step(actions), reference.step(actions)
        else:
            result, other = engine.step_no_reset(actions), reference.step_no_reset(actions)
            if result.num_done:
                engine.reset_envs(result.to_reset_mask())
                reference.reset_envs(other.to_reset_mask())
            got = (engine.obs, engine.rewards, engine.terminals, engine.truncations)
            want = (reference.obs, reference.rewards, reference.terminals, reference.truncations)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    chooser = engine.kernel_chooser
    assert chooser.switches >= 4 and chooser.parallel
    assert kernels == {engine._kernels.step_parallel, engine._kernels.step_serial}
    assert engine._step_kernel is engine._kernels.step_parallel


def test_a_switch_to_serial_also_resets_serially(monkeypatch):
    engine = _auto_engine(monkeypatch, 300)
    engine._use_parallel(False)
    assert engine._reset_kernel is engine._kernels.reset_serial
    assert engine._reset_envs_kernel(np.ones(300, dtype=bool)) is engine._kernels.reset_serial
    engine._use_parallel(True)
    assert engine._reset_envs_kernel(np.ones(300, dtype=bool)) is engine._kernels.reset_parallel


def test_explicit_kernels_and_vecsim_adapt_0_are_not_adapted(monkeypatch):
    monkeypatch.setenv("VECSIM_PARALLEL_THRESHOLD", "64")
    assert vecsim.make("CartPole-v1", 300, parallel=True).kernel_chooser is None
    assert vecsim.make("CartPole-v1", 300, parallel=False).kernel_chooser is None
    assert vecsim.make("CartPole-v1", 32).kernel_chooser is None  # below the size: serial
    monkeypatch.setenv("VECSIM_ADAPT", "0")
    assert vecsim.make("CartPole-v1", 300).kernel_chooser is None


class ChooserClock:
    """A clock for a collector's chooser: each timed call costs ``costs[kernel]`` per slot step."""

    def __init__(self, chooser, costs):
        self.chooser, self.costs, self.now, self.reads = chooser, costs, 0.0, 0

    def __call__(self) -> float:
        self.reads += 1
        if self.reads % 2 == 0:
            self.now += self.costs["parallel" if self.chooser.parallel else "serial"]
        return self.now


def test_a_collector_switches_its_kernels_with_its_chooser_and_its_episodes_stay_the_same():
    from vecsim.collect.collector import EpisodeCollector

    def batch(collector):
        out = collector.request_episodes(600)
        return {name: getattr(out, name).copy() for name in ("observations", "actions", "rewards", "lengths")}

    def policy(obs, masks):  # a Python policy: one kernel call a step
        return (obs[:, 2] + obs[:, 3] > 0).astype(np.int64)

    with EpisodeCollector("CartPole-v1", 300, 60, policy, seed=3, parallel=False) as plain:
        want = batch(plain)
    with EpisodeCollector("CartPole-v1", 300, 60, policy, seed=3) as adaptive:
        chooser = adaptive._chooser
        if chooser is None or vecsim.core.scratch.numba_threads() < 2:
            pytest.skip("one Numba thread: the collector keeps the serial kernels")
        chooser.clock = ChooserClock(chooser, {"parallel": 20.0, "serial": 1.0})
        chooser.budget = 0.5
        got = batch(adaptive)
    assert chooser.switches >= 1 and not chooser.parallel
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)


def _run_python(code: str, **env) -> str:
    base = {k: v for k, v in os.environ.items() if k not in ("VECSIM_PARALLEL_THRESHOLD", "VECSIM_ADAPT")}
    base["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), base.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env={**base, **env}, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_serial_engines_and_collectors_leave_numbas_thread_pool_unstarted():
    # Starting it on the omp layer sets the OpenMP thread count of a libgomp torch may share.
    code = ("from numba.np.ufunc import parallel as p\n"
            "import numba, vecsim\n"
            "from vecsim.collect.collector import EpisodeCollector\n"
            "from vecsim.core.scratch import numba_threads\n"
            "for game in ('CartPole-v1', 'Tetris-v0'):\n"
            "    e = vecsim.make(game, 8)\n"
            "    e.reset(seed=0)\n"
            "    e.step(e.zero_actions()) if game == 'CartPole-v1' else e.step(e.masks.argmax(axis=1))\n"
            "with EpisodeCollector('CartPole-v1', 8, 20, 'random', seed=0) as c:\n"
            "    c.request_episodes(8)\n"
            "print(p._is_initialized, numba_threads() == numba.config.NUMBA_NUM_THREADS)\n"
            "big = vecsim.make('CartPole-v1', 8, parallel=True)\n"
            "big.reset(seed=0)\n"
            "big.step(big.zero_actions())\n"
            "print(p._is_initialized, numba_threads() == numba.get_num_threads())\n")
    assert _run_python(code, NUMBA_NUM_THREADS="2") == ["False", "True", "True", "True"]
