"""The parallel step kernel gives each thread one share of the envs, stepped in one call of
``_step_share`` (here for a game stepped in runs, ``KernelHints.envs_per_call > 1``, whose shares
are whole runs): same results as the serial kernel on one thread or two, shares on whole cache
lines of the flag arrays, and a refused action in the second thread's share leaves every env as
it was."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import numba
import numpy as np
import pytest

from vecsim.core.contract import KernelHints
from vecsim.engine.codegen import share_align, share_min_align
from vecsim.engine.engine import NEXT_STEP, NO_RESET, SAME_STEP, Engine
from vecsim.engine.game import load_game

N = 200  # two shares of 128 and 72 envs on two threads, the last one partial
STEPS = 120
RUN = 8


@pytest.fixture(scope="module")
def game():
    """The stochastic random walk stepped in runs of 8 envs a call."""
    module = load_game("rng_walk_game").module
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, "KERNEL_HINTS", KernelHints(envs_per_call=RUN), raising=False)
        return load_game("rng_walk_game")


@pytest.fixture
def threads():
    """Run the test body under ``numba.set_num_threads(k)`` for the k it asks, restoring the count."""
    before = numba.get_num_threads()
    yield numba.set_num_threads
    numba.set_num_threads(before)


def _trajectory(game, mode, parallel):
    eng = Engine(game, N, max_episode_steps=game.module.MAX_EPISODE_STEPS, parallel=parallel)
    eng.reset(5)
    out = []
    for t in range(STEPS):
        if mode == NO_RESET:
            eng.reset_envs(eng.terminals | eng.truncations)
        eng.step_mode(mode, np.random.default_rng(t).integers(0, 2, N))
        out.append(np.concatenate([eng.obs[:, 0], eng.rewards, eng.terminals, eng.truncations, eng.events[:, 0],
                                   eng.elapsed, eng.rng.view(np.float64).ravel()]))
    return np.array(out)


@pytest.mark.parametrize("mode", [NEXT_STEP, SAME_STEP, NO_RESET], ids=["next_step", "same_step", "no_reset"])
def test_thread_shares_step_as_the_serial_kernel(game, mode, threads):
    serial = _trajectory(game, mode, parallel=False)
    assert int(serial[:, 2 * N:4 * N].sum()) > 100, "the run must end many episodes in both shares"
    for k in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
        threads(k)
        np.testing.assert_array_equal(_trajectory(game, mode, parallel=True), serial, err_msg=f"{k} threads")


def test_a_share_is_whole_runs_and_cache_lines_and_covers_the_batch(game, threads):
    kernels = Engine(game, N, parallel=True)._kernels
    align, fine = share_align(RUN), share_min_align(RUN)
    assert align == 64 and share_align(16) == 64 and share_align(48) == 192 and share_align(1) == 64
    assert fine == 8 and share_min_align(16) == 16 and share_min_align(48) == 48 and share_min_align(1) == 8
    for k in range(1, numba.config.NUMBA_NUM_THREADS + 1):
        threads(k)
        for n in (1, 8, 16, 63, 64, 65, 128, 200, 4096, 4097):
            share = kernels._thread_share(n)
            shares = -(-n // share)
            assert shares <= k, f"{n} envs on {k} threads: shares of {share}"
            if share % align == 0:
                assert share < align + -(-n // k), f"{n} envs on {k} threads: shares of {share} needlessly long"
            else:  # whole cache lines would have left a thread idle: whole runs and flag words
                whole_lines = -(-(-(-n // k)) // align) * align
                assert share % fine == 0 and whole_lines * (k - 1) >= n, f"{n} envs on {k} threads: {share}"
                assert shares >= min(k, -(-n // fine)), f"{n} envs on {k} threads: {shares} shares of {share}"


def test_a_refused_action_in_the_second_share_changes_no_env(game, threads):
    threads(min(2, numba.config.NUMBA_NUM_THREADS))
    eng = Engine(game, N, max_episode_steps=game.module.MAX_EPISODE_STEPS, parallel=True)
    eng.reset(9)
    for t in range(500):  # until some envs are due for reset in both shares
        eng.step(np.random.default_rng(t).integers(0, 2, N))
        if eng.needs_reset[:128].any() and eng.needs_reset[128:].any():
            break
    assert eng.needs_reset[:128].any() and eng.needs_reset[128:].any()
    before = [a.copy() for a in (eng.obs, eng.rewards, eng.terminals, eng.truncations, eng.elapsed, eng.rng,
                                 eng.needs_reset, eng.events, *eng.state)]
    actions = np.zeros(N, dtype=np.int64)
    actions[150] = 2
    with pytest.raises(ValueError, match="150"):
        eng.step(actions)
    after = (eng.obs, eng.rewards, eng.terminals, eng.truncations, eng.elapsed, eng.rng, eng.needs_reset,
             eng.events, *eng.state)
    for old, new in zip(before, after):
        np.testing.assert_array_equal(new, old)


_WARM = """
import json, sys
sys.path.insert(0, {tests!r})
import numpy as np
from vecsim.core.contract import KernelHints
from vecsim.engine.engine import Engine
from vecsim.engine.game import load_game
load_game("rng_walk_game").module.KERNEL_HINTS = KernelHints(envs_per_call=8)
eng = Engine(load_game("rng_walk_game"), 200, parallel=True)
eng.reset(1)
eng.step(np.zeros(200, dtype=np.int64))
stats = eng._kernels.step_parallel.stats
print(json.dumps([sum(stats.cache_hits.values()), sum(stats.cache_misses.values())]))
"""


def test_the_parallel_step_kernel_of_runs_loads_from_the_cache(tmp_path):
    """``_thread_share`` reads the thread count without keeping the kernel out of Numba's cache."""
    code = _WARM.format(tests=str(pathlib.Path(__file__).resolve().parents[1]))
    env = {**os.environ, "VECSIM_CACHE_DIR": str(tmp_path), "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        assert "Cannot cache" not in proc.stderr, proc.stderr
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert runs[0][1] > 0 and runs[1] == [runs[0][1], 0], f"cold (hits, misses), warm: {runs}"
