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
later ones (``Telemetry.read`` reads by that rule). A push never waits and never
fails: a full ring overwrites its oldest record.

Reading (``Telemetry``, the rings and their reader; an engine's ``engine.telemetry``): snapshot
each env's write count, copy the unread records below it, read the count again, and keep only
the records that no push can have overwritten meanwhile (those above the second count minus the
capacity: the oldest slot may be under rewrite); the others are counted in ``dropped``. Each
record is returned once or counted as dropped once; a reader never blocks the kernel and the
kernel never waits for a reader. Off by default, and then free: the kernels are generated
without the ring (``vecsim.engine.codegen``) and the game's pushes compile to nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import types
from numba.extending import intrinsic, overload

from vecsim.core import buffers as placed

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


#: Smallest ring: a reader gets at most ``capacity - 1`` unread records (the oldest slot may
#: be under rewrite by a push in flight).
MIN_CAPACITY = 2


@dataclass
class TelemetryEvents:
    """The records a ``Telemetry.read`` returned, in env order and push order within an env.

    Attributes
    ----------
    env, seq, kind, stamp, value : ndarray of int64, shape (n_records,)
        The env, the record's number in that env's stream (from 0), its kind (an index into
        ``names``), stamp (the game's clock: a step or frame number) and value.
    dropped : ndarray of int64, shape (num_envs,)
        Per env, records overwritten before this read could take them.
    names : tuple of str
        The game's ``TELEMETRY`` kinds.
    """

    env: np.ndarray
    seq: np.ndarray
    kind: np.ndarray
    stamp: np.ndarray
    value: np.ndarray
    dropped: np.ndarray
    names: tuple

    def __len__(self) -> int:
        return int(self.env.shape[0])

    def of_env(self, i: int) -> list:
        """Env ``i``'s records as ``(kind name, stamp, value)`` tuples, in push order."""
        rows = np.flatnonzero(self.env == i)
        return [(self.names[self.kind[r]], int(self.stamp[r]), int(self.value[r])) for r in rows]


class Telemetry:
    """The telemetry rings of ``num_envs`` envs, ``capacity`` records each, and a reader.

    Parameters
    ----------
    num_envs : int
    capacity : int
        Records per env (>= ``MIN_CAPACITY``).
    names : tuple of str
        The game's ``TELEMETRY`` kinds.
    elapsed : ndarray of int32, shape (num_envs,)
        The engine's per-env step counts (``vecsim.core.telemetry.step_stamp`` reads them).
    records, written : ndarray, optional
        Caller-owned arrays for the rings, ``(num_envs, capacity, 3)`` and ``(num_envs,)``
        int64 (``BufferSpec`` fields ``telemetry_records`` and ``telemetry_written``),
        already checked.

    Attributes
    ----------
    records : ndarray of int64, shape (num_envs, capacity, 3)
        Record ``k`` of env ``i`` at ``records[i, k % capacity]``: ``(kind, stamp, value)``.
    written : ndarray of int64, shape (num_envs,)
        Records pushed per env since the engine was made (monotonic).
    read_count : ndarray of int64, shape (num_envs,)
        Per env, records returned or counted as dropped by ``read`` so far.
    dropped : ndarray of int64, shape (num_envs,)
        Per env, records overwritten before a ``read`` took them, in total.
    """

    def __init__(self, num_envs: int, capacity: int, names: tuple, elapsed: np.ndarray, records=None,
                 written=None):
        self.names = tuple(names)
        self.capacity = int(capacity)
        self.records = placed.zeros((num_envs, capacity, len(RECORD_FIELDS)), np.int64) if records is None else records
        self.written = placed.zeros(num_envs, np.int64) if written is None else written
        self.records[...] = 0
        self.written[...] = 0
        self.read_count = np.zeros(num_envs, dtype=np.int64)
        self.dropped = np.zeros(num_envs, dtype=np.int64)
        self.ring = TelemetryRing(self.records, self.written, elapsed)

    def read(self) -> TelemetryEvents:
        """The records pushed since the last ``read`` (every env), without stopping a kernel
        running on another thread; those overwritten first are counted in ``dropped``."""
        cap = self.capacity
        first = self.written.copy()  # records below these counts were whole when written
        start = self.read_count
        lo = np.maximum(start, first - cap + 1)
        counts = np.maximum(first - lo, 0)
        env = np.repeat(np.arange(first.shape[0], dtype=np.int64), counts)
        offsets = np.cumsum(counts) - counts
        seq = lo[env] + (np.arange(env.shape[0], dtype=np.int64) - offsets[env])
        rows = self.records[env, seq % cap]  # the copy
        again = self.written.copy()
        # A push in flight writes record `again` into the slot of `again - cap`: keep records above.
        keep = seq > again[env] - cap
        env, seq, rows = env[keep], seq[keep], rows[keep]
        taken = np.bincount(env, minlength=first.shape[0]).astype(np.int64)
        end = np.maximum(first, lo)
        lost = end - start - taken
        self.dropped += lost
        self.read_count = end
        return TelemetryEvents(env, seq, rows[:, KIND].copy(), rows[:, STAMP].copy(), rows[:, VALUE].copy(), lost,
                               self.names)

    def pending(self) -> np.ndarray:
        """Records per env pushed and not yet read or dropped, ``(num_envs,)`` int64."""
        return self.written - self.read_count


def check_capacity(capacity, game_name: str, names: tuple) -> int:
    """``capacity`` (``Engine(telemetry=...)``) as an int, 0 for ``None``; or ``TypeError``/
    ``ValueError`` naming it."""
    if capacity is None:
        return 0
    if isinstance(capacity, (bool, np.bool_)) or not isinstance(capacity, (int, np.integer)):
        raise TypeError(f"telemetry must be an int (records per env) or None, but got telemetry={capacity!r}")
    if capacity < MIN_CAPACITY:
        raise ValueError(f"telemetry must be an int >= {MIN_CAPACITY} (records per env) or None, "
                         f"but got telemetry={capacity}")
    if not names:
        raise ValueError(f"telemetry={capacity} asks for a telemetry ring, but {game_name} reports no telemetry "
                         f"(its module declares no TELEMETRY event names)")
    return int(capacity)
