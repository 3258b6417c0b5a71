"""The step loops that must run on SIMD lanes do (a guard against silent scalar fallbacks).

LLVM vectorises a kernel's loop over envs only if a run-time overlap check of every array
the loop touches is cheap enough; one more array in the loop, or one 64-bit array among
32-bit ones, silently halves the lanes or turns the loop scalar (see docs/performance.md, "Where
the time goes"). These tests compile the games' parallel and serial step kernels in one fresh process with
an empty cache and read the optimised LLVM IR of the step loop both kernels call
(``_step_share``, compiled once): the divisions of the step must be vector divisions.
CartPole and MountainCar in both precisions (in float64 also the pass that drafts their sines and
cosines); Pendulum and MountainCarContinuous in float32 (their float64 steps call the C
library's trigonometry, as Gymnasium's do, and stay scalar). Acrobot's float32 step is scalar too:
LLVM declines to inline a function that large into the loop, and Numba-level inlining into a
``prange`` body made the parallel kernel's results differ from the serial one's (Numba 0.68).
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

#: (game, precision, op, the lanes it must run on at least).
CASES = [
    ("CartPole-v1", "float32", "fdiv", "<8 x float>"),
    ("CartPole-v1", "float64", "fdiv", "<4 x double>"),
    ("MountainCar-v0", "float64", "fmul", "<4 x double>"),
    # Pendulum's divisions involve constants only and leave the loop: its products stay.
    ("Pendulum-v1", "float32", "fmul", "<8 x float>"),
    ("MountainCar-v0", "float32", "fmul", "<8 x float>"),
    ("MountainCarContinuous-v0", "float32", "fmul", "<8 x float>"),
]

_STEP = """
import sys, vecsim
for game, precision in {cases!r}:
    print(f"=== {{game}} {{precision}}", flush=True)
    for parallel in (True, False):
        eng = vecsim.make(game, 4096, precision=precision, parallel=parallel)
        eng.reset(seed=0)
        eng.step(eng.zero_actions())
    sys.stdout.flush()
"""


@pytest.fixture(scope="module")
def dumped_ir(tmp_path_factory) -> dict:
    """The optimised LLVM IR printed while one fresh process with an empty cache compiles every
    case's kernels (one interpreter and one compile of the engine's shared code for all), by
    ``(game, precision)``."""
    pairs = list(dict.fromkeys((game, precision) for game, precision, _, _ in CASES))
    env = {**os.environ, "VECSIM_CACHE_DIR": str(tmp_path_factory.mktemp("vecsim")), "NUMBA_DUMP_OPTIMIZED": "1"}
    proc = subprocess.run([sys.executable, "-c", _STEP.format(cases=pairs)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    parts = re.split(r"^=== (\S+) (\S+)\n", proc.stdout, flags=re.M)
    return {(game, precision): text for game, precision, text in zip(parts[1::3], parts[2::3], parts[3::3])}


def _widest(ir: str, op: str, kind: str) -> int:
    """The most lanes of any ``op`` on ``kind`` values in ``ir`` (1 for scalar ones only, 0 for none)."""
    found = re.findall(rf"= {op} [a-z ]*(<\d+ x \w+>|float|double) ", ir)
    widths = [int(n) for n, k in re.findall(r"<(\d+) x (\w+)>", " ".join(found)) if k == kind]
    return max(widths, default=1 if found else 0)


@pytest.mark.slow
@pytest.mark.parametrize("game, precision, op, lanes", CASES)
def test_step_loop_is_vectorised(dumped_ir, game, precision, op, lanes):
    # The loop of _step_share, which both kernels call (its views of the address table are
    # distinct: vecsim.engine.views.c_distinct_array_at); the kernels themselves step nothing.
    out = dumped_ir[game, precision]
    dumps = {name: ir for name, ir in re.findall(r"OPTIMIZED DUMP (\w+)-+\n(.*?)(?=^-+OPTIMIZED DUMP|\Z)", out,
                                                 re.S | re.M) if name in ("_step_share", "step_serial",
                                                                         "step_parallel")}
    assert sorted(dumps) == ["_step_share", "step_parallel", "step_serial"], sorted(dumps)
    for kernel in ("step_serial", "step_parallel"):
        assert not re.search(rf"= {op} ", dumps[kernel]), f"the {kernel} kernel steps envs itself"
    # ``lanes`` is the AVX2 width (256-bit vectors); on a CPU with AVX-512 LLVM may go twice as
    # wide (<16 x float> on the AMD EPYC of 2026-11-22): at least ``lanes`` wide passes.
    want, kind = re.fullmatch(r"<(\d+) x (\w+)>", lanes).groups()
    ir = dumps["_step_share"]
    widest = _widest(ir, op, kind)
    assert widest, f"no {op} found in the step loop's dumped IR"
    assert widest >= int(want), f"the {game} {precision} step loop is not vectorised {lanes} wide"
    if game in ("CartPole-v1", "MountainCar-v0") and precision == "float64":
        # The draft pass of the trigonometry (vecsim.core.exactmath.sincos_small, cos_wide)
        # takes the exponent of a result with an integer mask: on SIMD lanes, a vector "and".
        draft = re.findall(rf"= and <(\d+) x i64> [^\n]*\b{0x7FF0000000000000}\b", ir)
        assert draft and max(map(int, draft)) >= int(want), "the sin/cos draft pass is not vectorised"
