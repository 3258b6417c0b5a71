"""What a game's ``step_env`` calls to report telemetry: ``push_event`` into a per-env ring.

A game that declares ``TELEMETRY`` (its event kinds' names; kind ``k`` is ``TELEMETRY[k]``)
takes a last parameter ``telemetry=None`` in ``step_env`` and calls
``push_event(telemetry, i, kind, stamp, value)`` where something happens. The engine passes a
``TelemetryRing`` only when the batch was made with ``telemetry=capacity``; otherwise the
argument is left out, ``push_event`` is typed for ``None`` and compiles to nothing, and the
kernels are those of a game without telemetry.

The ring of env ``i`` holds ``capacity`` records ``(kind, stamp, value)`` (int64); record ``k``
(counting from 0 since the engine was made) lives in slot ``k % capacity``, and
``written[i]`` counts the records pushed. A push writes the record, then (after a release
fence, so that no compiler moves it earlier) the count: a reader on another thread that sees
the count ``c`` sees every record below ``c`` whole, except those already overwritten by
later ones (``vecsim.engine.telemetry`` reads by that rule). A push never waits and never
fails: a full ring overwrites its oldest record.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import types
from numba.extending import intrinsic, overload

#: The columns of a record.
RECORD_FIELDS = ("kind", "stamp", "value")
KIND, STAMP, VALUE = range(3)


class TelemetryRing(NamedTuple):
    records: np.ndarray  # (N, capacity, 3) int64: (kind, stamp, value) records
    written: np.ndarray  # (N,) int64: records pushed so far (monotonic)
    elapsed: np.ndarray  # (N,) int32: the engine's steps in the current episode (read only)


@intrinsic
def _release_fence(typingctx):
    """An LLVM release fence: the stores before it are not moved after the stores after it."""
    def codegen(context, builder, signature, args):
        builder.fence("release")
        return context.get_dummy_value()

    return types.void(), codegen


def _absent(telemetry) -> bool:
    return isinstance(telemetry, (types.NoneType, types.Omitted))


def push_event(telemetry, i, kind, stamp, value):
    """Append the record ``(kind, stamp, value)`` to env ``i``'s ring; nothing when
    ``telemetry`` is ``None`` (in a kernel: nothing compiled)."""
    if telemetry is None:
        return
    n = int(telemetry.written[i])
    slot = telemetry.records[i, n % telemetry.records.shape[1]]
    slot[KIND], slot[STAMP], slot[VALUE] = kind, stamp, value
    telemetry.written[i] = n + 1


@overload(push_event)
def _push_event(telemetry, i, kind, stamp, value):
    if _absent(telemetry):
        return lambda telemetry, i, kind, stamp, value: None

    def push(telemetry, i, kind, stamp, value):
        n = telemetry.written[i]
        slot = n % telemetry.records.shape[1]
        telemetry.records[i, slot, KIND] = kind
        telemetry.records[i, slot, STAMP] = stamp
        telemetry.records[i, slot, VALUE] = value
        _release_fence()
        telemetry.written[i] = n + 1

    return push


def step_stamp(telemetry, i):
    """The number of the step env ``i`` is taking in its episode (1 for the first step after
    a reset): a stamp for games without a clock of their own; 0 when ``telemetry`` is None."""
    return 0 if telemetry is None else int(telemetry.elapsed[i]) + 1


@overload(step_stamp)
def _step_stamp(telemetry, i):
    if _absent(telemetry):
        return lambda telemetry, i: 0
    return lambda telemetry, i: np.int64(telemetry.elapsed[i]) + 1
