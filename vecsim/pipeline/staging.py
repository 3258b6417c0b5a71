"""Where the actors and the learner hand things over: the parameter slot and the trajectory queues.

After the Sebulba design (Hessel et al., "Podracer architectures for scalable reinforcement
learning", 2021, section 3): the learner stages new parameters in a slot of capacity one that
the actors read at the start of each cycle, and the actors push trajectories onto bounded
queues that the learner pops. Both wake a blocked thread at once when the loop stops.
"""

from __future__ import annotations

import collections
import threading
import time

#: Seconds a blocked ``put`` or ``get`` sleeps before it looks at the stop flag again (a stop
#: also wakes it at once; this is the fallback).
POLL_S = 0.1


class ParamSlot:
    """A slot of capacity one for the newest parameters, with their version.

    ``publish`` never blocks: it replaces whatever was there. ``newest`` returns the last
    published ``(version, params)``; a reader keeps using what it took while a newer version
    is published (the learner must not change published parameters in place).
    """

    def __init__(self, params, version: int = 0):
        self._lock = threading.Lock()
        self._item = (int(version), params)

    def publish(self, params) -> int:
        """Stage ``params`` as the next version; return that version."""
        with self._lock:
            version = self._item[0] + 1
            self._item = (version, params)
        return version

    def newest(self) -> tuple[int, object]:
        """The last published ``(version, params)``."""
        with self._lock:
            return self._item

    @property
    def version(self) -> int:
        return self.newest()[0]


class CycleParams:
    """The parameters the learner held at the start of each cycle, for a fixed lag.

    ``record(c, version, params)`` stores what the actors of cycle ``c`` act with at lag 0
    (the learner's parameters after its updates on every cycle before ``c``); ``wait(c)``
    blocks until cycle ``c``'s entry exists, and raises ``Stopped`` once ``stop`` is set.
    ``forget_before(c)`` drops the entries no actor can ask for any more.
    """

    def __init__(self, stop: threading.Event):
        self._stop = stop
        self._items: dict[int, tuple[int, object]] = {}
        self._changed = threading.Condition(threading.Lock())

    def record(self, cycle: int, version: int, params) -> None:
        with self._changed:
            self._items[cycle] = (int(version), params)
            self._changed.notify_all()

    def wait(self, cycle: int) -> tuple[int, object]:
        """``(version, params)`` of cycle ``cycle``, once the learner has recorded it."""
        with self._changed:
            while cycle not in self._items:
                if self._stop.is_set():
                    raise Stopped
                self._changed.wait(POLL_S)
            return self._items[cycle]

    def forget_before(self, cycle: int) -> None:
        with self._changed:
            for old in [c for c in self._items if c < cycle]:
                del self._items[old]

    def wake(self) -> None:
        with self._changed:
            self._changed.notify_all()


class Stopped(Exception):
    """The loop was asked to stop while a thread waited on a queue."""


class TrajectoryQueue:
    """A bounded FIFO between one actor and the learner: ``put`` blocks while it is full
    (backpressure), ``get`` while it is empty; both raise ``Stopped`` once ``stop`` is set.

    Parameters
    ----------
    capacity : int
        Trajectories it holds (>= 1).
    stop : threading.Event
        The loop's stop flag; ``wake`` after setting it.
    """

    def __init__(self, capacity: int, stop: threading.Event):
        if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity < 1:
            raise ValueError(f"queue capacity must be an int >= 1, but got capacity={capacity!r}")
        self.capacity = capacity
        self._stop = stop
        self._items = collections.deque()
        self._changed = threading.Condition(threading.Lock())

    def __len__(self) -> int:
        return len(self._items)

    def put(self, item) -> float:
        """Append ``item``, waiting while the queue is full; return the seconds waited."""
        start = None
        with self._changed:
            while len(self._items) >= self.capacity:
                if self._stop.is_set():
                    raise Stopped
                if start is None:
                    start = time.perf_counter()
                self._changed.wait(POLL_S)
            if self._stop.is_set():
                raise Stopped
            self._items.append(item)
            self._changed.notify_all()
        return 0.0 if start is None else time.perf_counter() - start

    def get(self):
        """Pop the oldest item, waiting while the queue is empty; return ``(item, seconds waited)``."""
        start = None
        with self._changed:
            while not self._items:
                if self._stop.is_set():
                    raise Stopped
                if start is None:
                    start = time.perf_counter()
                self._changed.wait(POLL_S)
            item = self._items.popleft()
            self._changed.notify_all()
        return item, 0.0 if start is None else time.perf_counter() - start

    def clear(self) -> None:
        with self._changed:
            self._items.clear()
            self._changed.notify_all()

    def wake(self) -> None:
        """Wake every thread waiting on this queue (after the stop flag was set)."""
        with self._changed:
            self._changed.notify_all()
