"""Same seed, same trajectory: whatever the thread count, kernel, or process; warm starts don't compile.

Each check runs fresh interpreters (``subprocess``), since Numba fixes its thread count and
loads its cache at start-up.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import vecsim
from vecsim.testing import legal_actions, sample_actions

from conftest import game_precisions

pytestmark = pytest.mark.slow

TESTS = pathlib.Path(__file__).resolve().parent
ROOT = TESTS.parent
NUM_ENVS = 67  # odd and above 64: uneven thread chunks and vector-loop remainders
STEPS = 120


def trajectory_hashes(parallel: bool) -> dict[str, str]:
    """SHA-256 of every game's observations, rewards and flags over a seeded run, per precision.

    The first half uses ``step`` (autoreset inside the kernel), the second ``step_no_reset``
    with ``reset_envs``; a short episode limit makes both reset paths run often.
    """
    hashes = {}
    # A parallel engine here resets through the parallel kernel whatever the number of envs.
    saved, vecsim.engine.engine.PARALLEL_MIN_RESETS = vecsim.engine.engine.PARALLEL_MIN_RESETS, 1
    try:
        _hash_games(parallel, hashes)
    finally:
        vecsim.engine.engine.PARALLEL_MIN_RESETS = saved
    return hashes


def _hash_games(parallel: bool, hashes: dict) -> None:
    for game_id, precision in game_precisions():
        eng = vecsim.make(game_id, NUM_ENVS, precision=precision, parallel=parallel, max_episode_steps=30)
        rng = np.random.default_rng(0)
        digest = hashlib.sha256(eng.reset(seed=7).tobytes())
        for t in range(STEPS):
            if t == STEPS // 2:  # before drawing actions: a reset changes the legal ones
                eng.reset_envs(eng.terminals | eng.truncations)
            actions = sample_actions(eng.single_action_space, NUM_ENVS, rng, mask=legal_actions(eng))
            if t < STEPS // 2:
                eng.step(actions)
            else:
                eng.step_no_reset(actions)
            for arr in (eng.obs, eng.rewards, eng.terminals, eng.truncations):
                digest.update(arr.tobytes())
            if t >= STEPS // 2:
                # the kernel-packed mask (its count known) or a bool array (counted)
                mask = eng.result.to_reset_mask() if t % 3 else eng.terminals | eng.truncations
                eng.reset_envs(mask, seed=None if t % 2 else 1000 + t)
        hashes[f"{game_id} {precision}"] = digest.hexdigest()
        eng.close()


def _run(code: str, **env) -> str:
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, **env},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


_HASHES = (f"import json, sys; sys.path.insert(0, {str(TESTS)!r}); import test_determinism as t; "
           "print(json.dumps(t.trajectory_hashes(parallel=True)))")


def test_thread_count_does_not_change_trajectories():
    one = json.loads(_run(_HASHES, NUMBA_NUM_THREADS="1"))
    two = json.loads(_run(_HASHES, NUMBA_NUM_THREADS="2"))
    assert set(one) == {f"{g} {p}" for g, p in game_precisions()}
    assert [k for k in one if one[k] != two[k]] == [], "1 vs 2 threads: these runs differ"
    # The serial kernel in this process agrees with both.
    serial = trajectory_hashes(parallel=False)
    assert [k for k in one if one[k] != serial[k]] == [], "parallel vs serial kernel: these runs differ"


_CACHE_STATS = """
import json, sys
sys.path.insert(0, TESTS_DIR)
from numba.core.registry import cpu_target
import vecsim
refreshes = []  # Numba's target-context refreshes (a compile does one; a cache load need not)
refresh = type(cpu_target.target_context).refresh
type(cpu_target.target_context).refresh = lambda ctx: (refreshes.append(1), refresh(ctx))[1]
stats = {}
def legal(eng):  # each env's first legal action (zero may be outside a binding mask)
    acts = eng.zero_actions()
    if eng.n_mask:
        acts[:] = eng.masks.argmax(axis=1)
    return acts
# A classic game, and a game with thread scratch (whose kernels load after the thread pool
# starts): every game's kernels come from one template, so these two take every loading path.
for game_id in ("vecsim/CartPole-v1", vecsim.register("scratch_walk_game")):
    for parallel in (False, True):
        eng = vecsim.make(game_id, 2, parallel=parallel)
        eng.reset(seed=0)
        eng.step(legal(eng))
        eng.reset_envs(vecsim.ResetMask.all(2))
        eng.step_no_reset(legal(eng))
        eng.refresh()
        module = sys.modules[eng._step_kernel.py_func.__module__]
        for name in ("step", "reset", "observe"):
            for kind in ("serial", "parallel"):
                d = getattr(module, f"{name}_{kind}", None)
                if d is not None and d.signatures:
                    stats[f"{game_id} {name}_{kind}"] = [sum(d.stats.cache_hits.values()),
                                                         sum(d.stats.cache_misses.values()), len(d.signatures)]
print(json.dumps({"kernels": stats, "refreshes": len(refreshes)}))
""".replace("TESTS_DIR", repr(str(TESTS)))


def test_a_warm_start_loads_every_kernel_from_the_cache(tmp_path):
    cold_run = json.loads(_run(_CACHE_STATS, VECSIM_CACHE_DIR=str(tmp_path)))
    warm_run = json.loads(_run(_CACHE_STATS, VECSIM_CACHE_DIR=str(tmp_path)))
    cold, warm = cold_run["kernels"], warm_run["kernels"]
    assert cold_run["refreshes"] > 0
    # Loading from the cache skips Numba's registry refresh (vecsim.core.kernel_cache.guard_cache):
    # about 0.15 s of a warm start.
    assert warm_run["refreshes"] == 0, "a warm process refreshed Numba's target context"
    assert all(misses for _, misses, _ in cold.values()), "the first process found a cache it should not have"
    assert set(warm) == set(cold)
    assert len(warm) == 12  # step, reset and observe, serial and parallel, of both games
    for name, (hits, misses, signatures) in warm.items():
        assert misses == 0, f"{name} compiled {misses} signature(s) in a warm process"
        assert hits == signatures > 0, f"{name}: {hits} cache hits for {signatures} signatures"
