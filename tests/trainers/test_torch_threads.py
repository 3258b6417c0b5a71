"""Making and stepping vecsim envs leaves torch's thread count as the caller set it.

Numba's omp threading layer shares libgomp with torch, and starting Numba's thread pool sets
OpenMP's thread count: each check runs in a new process, in which the pool starts under it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.trainers

TORCH_THREADS = 3  # neither 1 nor NUMBA_NUM_THREADS: a reset to either default shows

PRELUDE = f"""
import numpy as np, torch
torch.set_num_threads({TORCH_THREADS})
assert torch.get_num_threads() == {TORCH_THREADS}  # torch has set up its threads in this thread
import gymnasium as gym, numba, vecsim

def check(what):
    assert torch.get_num_threads() == {TORCH_THREADS}, (what, torch.get_num_threads())
"""

SCENARIOS = {
    "vector envs of every size": """
        for n, parallel in [(8, "auto"), (64, "auto"), (8192, "auto"), (8192, True), (16, True)]:
            envs = gym.make_vec("vecsim/CartPole-v1", num_envs=n, vectorization_mode="vector_entry_point",
                                parallel=parallel)
            envs.reset(seed=0)
            for _ in range(50):
                envs.step(envs.action_space.sample())
            check(f"{n} envs, parallel={parallel}")
        assert numba.threading_layer()  # the parallel kernels ran
    """,
    "engines, resets and the chooser": """
        eng = vecsim.make("Pendulum-v1", 8192)
        eng.reset(seed=0)
        for _ in range(200):
            result = eng.step_no_reset(np.zeros((8192, 1), dtype=np.float32))
            eng.reset_envs(np.ones(8192, dtype=bool))
        check("engine")
        eng.kernel_chooser and eng._use_parallel(True)
        check("switch to the parallel kernels")
    """,
    "the episode collector": """
        with vecsim.EpisodeCollector("CartPole-v1", num_workers=2048, max_steps=64, policy="random", seed=0,
                                     prefetch=True) as c:
            c.request_episodes(64)
            check("collect")
            c.request_episodes(64)
            check("prefetched collect")
    """,
    "the Tetris agent": """
        from vecsim.collect.tetris import dellacherie_actions
        eng = vecsim.make("Tetris-v0", 64, preset="classic", parallel=False)
        eng.reset(seed=0)
        eng.step(dellacherie_actions(eng))  # a parallel kernel of its own, the first one to run
        check("agent")
    """,
    "the SB3 adapter": """
        from vecsim.trainers.sb3 import SB3VecEnv
        venv = SB3VecEnv("vecsim/CartPole-v1", 4096, seed=0, parallel=True)
        venv.reset()
        for _ in range(50):
            venv.step(np.zeros(4096, dtype=np.int64))
        check("SB3VecEnv")
    """,
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_torch_thread_count_is_left_alone(scenario):
    code = PRELUDE + textwrap.dedent(SCENARIOS[scenario]) + "\nprint('ok')\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]
