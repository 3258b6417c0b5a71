"""The project's jit decorators (``vecsim.core.jit``)."""

import numpy as np

from vecsim.core.jit import exact


@exact
def _add(a, b):
    return a + b


@exact
def _calls_with_a_constant_and_a_variable(x):
    return _add(x, 1) + _add(x, x) + _add(x, True)


def test_a_callee_given_constants_and_variables_compiles_once_per_plain_type():
    # Numba alone compiles _add for (int64, Literal[int](1)), (int64, int64) and
    # (int64, Literal[bool](True)): each compile of a planner costs seconds.
    assert _calls_with_a_constant_and_a_variable(np.int64(2)) == 3 + 4 + 3
    assert sorted(str(sig) for sig in _add.signatures) == ["(int64, bool)", "(int64, int64)"]


@exact(per_constant=True)
def _add_per_constant(a, b):
    return a + b


@exact
def _calls_per_constant(x):
    return _add_per_constant(x, 1) + _add_per_constant(x, x)


def test_a_function_marked_per_constant_compiles_for_each_constant_value():
    # For a hot function whose callers' constants pick its code (the planners' search runs).
    assert _calls_per_constant(np.int64(2)) == 3 + 4
    assert sorted(str(sig) for sig in _add_per_constant.signatures) == ["(int64, Literal[int](1))", "(int64, int64)"]
