"""The step loops that must run on SIMD lanes do (a guard against silent scalar fallbacks).

LLVM vectorises a kernel's loop over envs only if a run-time overlap check of every array
the loop touches is cheap enough; one more array in the loop, or one 64-bit array among
32-bit ones, silently halves the lanes or turns the loop scalar (see README, "Where the time
goes"). These tests compile CartPole's parallel step kernel in a fresh process with an empty
cache and read the optimised LLVM IR: the divisions of the step must be vector divisions.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

_STEP = """
import numpy as np, vecsim
eng = vecsim.make("CartPole-v1", 4096, precision={precision!r}, parallel=True)
eng.reset(seed=0)
eng.step(np.zeros(4096, dtype=np.int64))
"""


@pytest.mark.slow
@pytest.mark.parametrize("precision, lanes", [("float32", "<8 x float>"), ("float64", "<4 x double>")])
def test_cartpole_step_loop_is_vectorised(tmp_path, precision, lanes):
    env = {**os.environ, "VECSIM_CACHE_DIR": str(tmp_path), "NUMBA_DUMP_OPTIMIZED": "1"}
    proc = subprocess.run([sys.executable, "-c", _STEP.format(precision=precision)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    divisions = re.findall(r"= fdiv [a-z ]*(<\d+ x \w+>|float|double) ", proc.stdout)
    assert divisions, "no division found in the dumped IR"
    assert lanes in divisions, f"the {precision} step loop is not vectorised {lanes} wide: divisions {sorted(set(divisions))}"
