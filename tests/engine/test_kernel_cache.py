"""Kernels loaded from the cache: one process may load kernels that different processes
compiled, and each must run its own code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from vecsim.engine import fusion
from vecsim.engine.registry import resolve


def test_each_fused_function_is_named_after_what_it_fuses():
    """The factories' closures share a qualified name unless given one; Numba names their
    symbols after it, so two closures compiled in two processes could share a symbol."""
    game = resolve("vecsim/Tetris-v0").module
    names = {
        fusion.reset_and_write(game, "write_mask").py_func.__qualname__,
        fusion.reset_and_write(game, "write_mask_without_planner").py_func.__qualname__,
        fusion.step_and_write(game, "step_env", "float64").py_func.__qualname__,
        fusion.step_and_write(game, "step_env", "float64", flag_invalid=True).py_func.__qualname__,
        fusion.step_and_write(game, "step_env", "float32").py_func.__qualname__,
        fusion.step_run_and_write(game, "step_env", "float64").py_func.__qualname__,
    }
    assert len(names) == 6, names


_PLAY = textwrap.dedent("""
    import hashlib, json, sys
    import vecsim
    out = {}
    for mode in sys.argv[1:]:
        engine = vecsim.make("Tetris-v0", 4, action_mode=mode, parallel=False)
        engine.reset(seed=3)
        out[mode] = [hashlib.sha256(engine.masks.tobytes()).hexdigest(), int(engine.masks.sum())]
    print(json.dumps(out))
""")


@pytest.mark.slow
def test_kernels_compiled_by_different_processes_each_run_their_own_code(tmp_path):
    """Tetris's drop mode and reach mode reset with different masks (without and with the
    reach planner) from otherwise alike fused functions: compiled by two processes, then
    loaded by a third, drop mode first, reach mode must still plan its masks."""
    env = dict(os.environ, VECSIM_CACHE_DIR=str(tmp_path / "vecsim"), NUMBA_CACHE_DIR=str(tmp_path / "numba"))

    def play(*modes):
        done = subprocess.run([sys.executable, "-c", _PLAY, *modes], env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    drop = play("drop")["drop"]
    reach = play("reach")["reach"]
    assert reach != drop  # reach mode's actions are every reachable pose
    assert play("drop", "reach") == {"drop": drop, "reach": reach}
