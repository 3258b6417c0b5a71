"""The step kernels' result: one int64 rather than a ``(status, index)`` tuple, which costs
Numba a tuple to box on every call.

A value ``>= 0`` is success (``OK``; in ``NO_RESET`` mode, the number of envs that finished).
A refusal is ``-(8 * index + status)``: ``status`` one of the codes below, ``index`` the env
(or table row) it concerns.
"""

from __future__ import annotations

from numba import njit

OK, BAD_ACTION, FINISHED_ENV, ILLEGAL_ACTION, ALIASED_ARRAY, BAD_SHAPE, NOT_CARRAY = 0, 1, 2, 3, 4, 5, 6
#: The refusals of an action array's form (its row count; its C-contiguity and alignment):
#: the caller checks and converts it on its general path instead.
FORM_REFUSALS = (BAD_SHAPE, NOT_CARRAY)


@njit(cache=False, nogil=True, inline="always")
def step_status(status, index):
    """The kernel's refusal value for ``status`` about env (or row) ``index`` >= 0."""
    return -(index * 8 + status)


def split_status(value: int) -> tuple[int, int]:
    """``(status, index)`` of a step kernel's refusal ``value`` < 0."""
    return -value & 7, -value >> 3
