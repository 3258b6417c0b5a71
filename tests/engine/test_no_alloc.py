"""No allocation per step on the hot path: ``step_no_reset`` and the ``copy=False`` VectorEnv.

tracemalloc sees every NumPy buffer allocation, so a step that allocated an output array
(``num_envs * obs_dim`` elements) would show as growth of the traced memory or of its peak.
"""

from __future__ import annotations

import sys
import tracemalloc

import gymnasium
import numpy as np
import pytest

import vecsim
from vecsim.testing import sample_actions

from conftest import lenient

N = 1024
#: Steps measured: a leak of 8 bytes a step shows above SLACK (Blokus's masks make a step costly).
STEPS = 300
#: Half of one (N,) float32 array: room for interpreter bookkeeping only.
SLACK = 2048


def _info_dict_bytes(info: dict) -> int:
    """The Python objects a step's info makes whatever ``num_envs``: the dict and its keys
    (a game with many info arrays has a larger dict; its arrays are views)."""
    return sys.getsizeof(info) + sum(sys.getsizeof(k) for k in info)


def _measure(step, actions):
    """(growth of traced memory, peak above the start) over STEPS calls of ``step``."""
    for k in range(20):  # warm up: first-call caches, lazily built objects
        step(actions[k % len(actions)])
    tracemalloc.start()
    try:
        start, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        for k in range(STEPS):
            step(actions[k % len(actions)])
        end, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return end - start, peak - start


@pytest.fixture(scope="module")
def action_batches(game_id):
    space = vecsim.make(game_id, 1).single_action_space
    rng = np.random.default_rng(0)
    return [sample_actions(space, N, rng) for _ in range(8)]


def test_step_no_reset_does_not_allocate(game_id, action_batches):
    eng = vecsim.make(game_id, N, parallel=False, **lenient(game_id))
    eng.reset(seed=0)
    buffers = [eng.obs.ctypes.data, eng.rewards.ctypes.data, eng.terminals.ctypes.data]
    done = np.zeros(N, dtype=bool)
    for k in range(20):
        eng.step_no_reset(action_batches[k % 8])
        eng.reset_envs(np.logical_or(eng.terminals, eng.truncations, out=done))
    tracemalloc.start()
    try:
        start, _ = tracemalloc.get_traced_memory()
        step_peak = reset_peak = 0
        for k in range(STEPS):
            tracemalloc.reset_peak()
            base, _ = tracemalloc.get_traced_memory()
            result = eng.step_no_reset(action_batches[k % 8])
            step_peak = max(step_peak, tracemalloc.get_traced_memory()[1] - base)
            np.logical_or(result.terminals, result.truncations, out=done)
            if done.any():
                tracemalloc.reset_peak()
                base, _ = tracemalloc.get_traced_memory()
                eng.reset_envs(done)
                reset_peak = max(reset_peak, tracemalloc.get_traced_memory()[1] - base)
        growth = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert growth <= SLACK, f"traced memory grew by {growth} bytes over {STEPS} steps"
    assert step_peak <= SLACK, f"step_no_reset allocated {step_peak} bytes at its peak"
    # Packing a bool mask into words (np.packbits) takes a few KiB of scratch, freed at once.
    assert reset_peak <= 2 * N + 8192, f"reset_envs allocated {reset_peak} bytes at its peak"
    assert [eng.obs.ctypes.data, eng.rewards.ctypes.data, eng.terminals.ctypes.data] == buffers


def test_step_with_autoreset_does_not_allocate(game_id, action_batches):
    eng = vecsim.make(game_id, N, parallel=False, **lenient(game_id))
    eng.reset(seed=0)
    growth, peak = _measure(eng.step, action_batches)
    assert growth <= SLACK and peak <= SLACK, (growth, peak)


def test_vector_env_with_copy_false_does_not_allocate(game_id, action_batches):
    env = gymnasium.make_vec(game_id, N, vectorization_mode="vector_entry_point", copy=False, parallel=False,
                               **lenient(game_id))
    env.reset(seed=0)
    growth, peak = _measure(env.step, action_batches)
    assert growth <= SLACK, f"traced memory grew by {growth} bytes over {STEPS} steps"
    info = env.step(action_batches[0])[-1]
    assert peak <= SLACK + _info_dict_bytes(info), f"a step allocated {peak} bytes at its peak"
    env.close()


def test_vector_env_with_copy_true_allocates_new_results_each_step(game_id, action_batches):
    """The counter-check: copying results is visible to the measurement above."""
    env = gymnasium.make_vec(game_id, N, vectorization_mode="vector_entry_point", copy=True, parallel=False,
                               **lenient(game_id))
    env.reset(seed=0)
    _, peak = _measure(env.step, action_batches)
    assert peak > SLACK
    env.close()
