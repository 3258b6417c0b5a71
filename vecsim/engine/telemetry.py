"""The telemetry channel of an engine: per-env rings of ``(kind, stamp, value)`` records that
the game's step fills from inside the kernels (``vecsim.core.telemetry.push_event``), read
from Python while a kernel runs on another thread, without stopping it.

Off by default, and then free: the kernels are generated without the ring
(``vecsim.engine.codegen``) and the game's pushes compile to nothing. On with
``vecsim.make(game, n, telemetry=capacity)`` for a game that declares ``TELEMETRY``.

Reading (``Telemetry.read``): snapshot each env's write count, copy the unread records below
it, read the count again, and keep only the records that no push can have overwritten
meanwhile (those above the second count minus the capacity: the oldest slot may be under
rewrite); the others are counted in ``dropped``. Each record is returned once or counted as
dropped once; a reader never blocks the kernel and the kernel never waits for a reader.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vecsim.core import buffers as placed
from vecsim.core.telemetry import KIND, RECORD_FIELDS, STAMP, VALUE, TelemetryRing

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
