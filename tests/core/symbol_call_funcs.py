"""Jitted functions for tests/core/test_symbol_call.py: a callee called by symbol and cached
callers of it, in a module a test's subprocess imports by name."""

import numpy as np

from vecsim.core.jit import exact
from vecsim.core.symbol_call import by_symbol


@by_symbol
@exact
def weighted_sum(values, weight, out, i):
    """``out[i]``: the sum of ``values`` times ``weight``; returns the count of values."""
    total = 0.0
    for v in values:
        total += v * weight
    out[i] = total
    return values.shape[0]


@exact
def sum_rows(rows, weight, out):
    """``weighted_sum`` of each row of ``rows`` (2-D float64) into ``out``; returns the values counted."""
    n = 0
    for i in range(rows.shape[0]):
        n += weighted_sum(rows[i], weight, out, np.int64(i))
    return n


@exact
def sum_rows_twice(rows, weight, out):
    """``sum_rows``, called by a second cached caller: the link to the callee comes with the
    library of ``sum_rows`` that this one links."""
    return sum_rows(rows, weight, out) + sum_rows(rows, weight, out)
