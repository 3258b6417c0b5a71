"""Integer expressions in the engine's kernels stay integer.

Numba types a comparison of uint64 with int64 (a literal ``0`` included) as one of two
float64 values, and an array operation mixing the two as float64 like NumPy does: correct for
small values, a conversion per test, and wrong past 2**53. The step and reset templates test
bit words of envs, so this checks every binary operation of the kernels a game compiles.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba.core import compiler, ir, typed_passes, types
from numba.core.registry import cpu_target

import vecsim


def _kind(t) -> str:
    t = getattr(t, "dtype", t)
    return "float" if isinstance(t, types.Float) else "int" if isinstance(t, types.Integer) else "other"


def integer_operations_typed_as_float(dispatcher) -> list[str]:
    """``file:line op signature`` of each binary operation of ``dispatcher``'s compiled
    signatures whose operands are integers (arrays of them included) but which Numba computes
    in floating point; true division and powers aside."""
    typing, target = cpu_target.typing_context, cpu_target.target_context
    typing.refresh()
    target.refresh()
    found = []
    for sig in dispatcher.signatures:
        interp = compiler.run_frontend(dispatcher.py_func)
        typed = typed_passes.type_inference_stage(typing, target, interp, sig, None)
        for block in interp.blocks.values():
            for stmt in block.body:
                expr = getattr(stmt, "value", None)
                if not (isinstance(stmt, ir.Assign) and isinstance(expr, ir.Expr)
                        and expr.op in ("binop", "inplace_binop")):
                    continue
                if expr.fn.__name__ in ("truediv", "itruediv", "pow", "ipow"):
                    continue
                call = typed.calltypes[expr]
                operands = [typed.typemap[v.name] for v in (expr.lhs, expr.rhs)]
                in_float = _kind(call.return_type) == "float" or "float" in map(_kind, call.args)
                if in_float and all(_kind(t) == "int" for t in operands):
                    found.append(f"{stmt.loc.filename}:{stmt.loc.line} {expr.fn.__name__} {call}")
    return found


def test_the_checker_finds_a_mixed_comparison():
    import numba

    @numba.njit
    def mixed(words, k):
        return words[0] != 0, words[0] & np.uint64(k)

    mixed(np.zeros(1, np.uint64), 1)
    found = integer_operations_typed_as_float(mixed)
    assert len(found) == 1 and " ne " in found[0], found


@pytest.mark.slow
def test_step_and_reset_kernels_keep_integers_integer():
    engine = vecsim.make("CartPole-v1", 4, parallel=False)
    engine.reset(seed=0)
    engine.step(np.zeros(4, np.int64))
    kernels = {"step": engine._step_kernel, "reset": engine._reset_kernel}
    found = {name: integer_operations_typed_as_float(k) for name, k in kernels.items()}
    assert all(k.signatures for k in kernels.values())
    assert found == {"step": [], "reset": []}, found
