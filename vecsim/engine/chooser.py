"""Serial or parallel kernels on a machine that other work keeps busy.

A parallel kernel splits its envs evenly between Numba's threads and returns when the last
share is done. While other processes or threads keep the cores busy, one of those threads is
often descheduled for a whole time slice, and the others wait for it (on the omp layer they
spin): a step can then take many times as long as the serial kernel's. The batch size says
when threads pay on an idle machine (``vecsim.engine.parallel_min_envs``); only a
measurement says whether they pay now.

``KernelChooser`` makes that measurement as the caller steps. It times each call of the
kernel in use, and now and then a few calls of the other one (a *probe*), and switches when
the other is faster. A loaded machine is noticed within a few calls: the kernel in use turns
much slower than the other was, which starts a probe at once. Probes of a kernel that loses
are spaced out (doubling their interval), and the time they lose is kept below a fixed share
of the time spent stepping, so that a parallel kernel that is many times slower under load
costs little to keep watching; once the machine is idle again a probe finds it and switches
back. Both kernels compute the same results, so the choice changes only the speed.
"""

from __future__ import annotations

import collections
import os
import time

#: Environment variable: ``0`` turns the online choice off (the batch size alone decides).
ADAPT_VAR = "VECSIM_ADAPT"


def adapt_enabled() -> bool:
    """Whether the online choice is on (``bool``): ``VECSIM_ADAPT`` unset, empty or ``1``;
    ``0`` turns it off, and any other value raises ``ValueError`` naming it."""
    value = os.environ.get(ADAPT_VAR, "1").strip()
    if value not in ("0", "1", ""):
        raise ValueError(f"{ADAPT_VAR} must be 0 or 1, but got {ADAPT_VAR}={value!r}")
    return value != "0"


def _positive(name: str, value, integer: bool = False):
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not value > 0:
        raise ValueError(f"{name} must be {'an int' if integer else 'a number'} > 0, but got {name}={value!r}")
    return value


class KernelChooser:
    """Online choice between a serial and a parallel kernel that compute the same results.

    The caller runs the kernel ``parallel`` names, times the call with ``clock`` and passes the
    duration to ``observe``, which may change ``parallel`` for the next call (and calls
    ``on_switch(parallel)`` when it does). Costs are compared per unit of ``work`` (an engine:
    one step of its batch; a collector: one step of a running slot).

    Parameters
    ----------
    on_switch : callable or None
        Called with the new value of ``parallel`` after each switch.
    clock : callable
        Seconds as a float (default ``time.perf_counter``); tests pass a fake one.
    probe_calls : int
        Calls of the other kernel that a probe counts, after one that it does not (it may
        wake threads or refill caches) unless that one alone is ``2 * abort_ratio`` times as
        slow as the kernel in use.
    min_interval, max_interval : int
        Calls between probes: ``min_interval`` after a switch, doubling up to
        ``max_interval`` while the kernel in use keeps winning.
    budget : float
        Largest share of the time stepping that probes may lose (in ``(0, 1)``).
    margin : float
        The other kernel must be this many times faster to switch (>= 1).
    trigger : float
        A probe starts early when the kernel in use turns this many times slower than the
        other one last measured.
    abort_ratio : float
        A probe stops at a call this many times slower than the kernel in use.
    """

    MIN_GAP = 2  # calls between two probes at the least, however they are started
    WINDOW = 9  # recent calls of the kernel in use whose median is its cost: one slow call is noise

    def __init__(self, on_switch=None, *, clock=time.perf_counter, probe_calls: int = 2, min_interval: int = 2,
                 max_interval: int = 1024, budget: float = 0.02, margin: float = 1.1, trigger: float = 1.5,
                 abort_ratio: float = 4.0):
        if on_switch is not None and not callable(on_switch):
            raise TypeError(f"on_switch must be callable or None, but got on_switch={on_switch!r}")
        if not callable(clock):
            raise TypeError(f"clock must be callable, but got clock={clock!r}")
        self.probe_calls = _positive("probe_calls", probe_calls, integer=True)
        self.min_interval = _positive("min_interval", min_interval, integer=True)
        self.max_interval = _positive("max_interval", max_interval, integer=True)
        if max_interval < min_interval:
            raise ValueError(f"max_interval must be >= min_interval ({min_interval}), but got {max_interval}")
        if not 0 < _positive("budget", budget) < 1:
            raise ValueError(f"budget must be in (0, 1), but got budget={budget!r}")
        for name, value in (("margin", margin), ("trigger", trigger), ("abort_ratio", abort_ratio)):
            if _positive(name, value) < 1:
                raise ValueError(f"{name} must be >= 1, but got {name}={value!r}")
        self.budget, self.margin, self.trigger, self.abort_ratio = budget, margin, trigger, abort_ratio
        self.on_switch = on_switch
        self.clock = clock
        #: The kernel for the next call: True for the parallel one.
        self.parallel = True
        #: Switches so far, and probes so far (for tests and reports).
        self.switches = 0
        self.probes = 0
        self._cost = None  # cost per unit of work of the kernel in use: the median of _recent
        self._recent = collections.deque(maxlen=self.WINDOW)
        self._other = None  # the other kernel's cost at its last probe
        self._interval = self.min_interval
        self._since = 0  # calls of the kernel in use since the last probe
        self._time_since = 0.0  # and their seconds
        self._wait = 0.0  # seconds of calls before the next probe may start (the budget)
        self._probing = 0  # calls of the probe made so far (0: no probe)
        self._probe_seconds = self._probe_work = 0.0  # of the counted calls
        self._probe_lost = 0.0  # seconds the probe took more than the kernel in use would have

    def observe(self, seconds: float, work: float = 1.0) -> None:
        """Record a call of the kernel ``parallel`` named, and choose the kernel of the next call.

        Parameters
        ----------
        seconds : float
            How long the call took.
        work : float
            What it did, in the caller's unit (> 0; a call with none is ignored).
        """
        if work <= 0:
            return
        cost = seconds / work
        if self._probing:
            self._probe_call(seconds, work, cost)
            return
        if self._cost is None:
            # The first call ever is left out: it may start the thread pool or fault in pages.
            if self._since:
                self._recent.append(cost)
                self._cost = cost
            self._since += 1
            return
        self._recent.append(cost)
        ordered = sorted(self._recent)
        self._cost = ordered[len(ordered) // 2]
        self._since += 1
        self._time_since += seconds
        if self._since < self.MIN_GAP or self._time_since < self._wait:
            return
        if self._since >= self._interval or (self._other is not None and self._cost > self._other * self.trigger):
            self._flip()  # the probe runs the other kernel
            self._probing = 1
            self.probes += 1

    def _flip(self) -> None:
        self.parallel = not self.parallel
        if self.on_switch is not None:
            self.on_switch(self.parallel)

    def _probe_call(self, seconds: float, work: float, cost: float) -> None:
        ref = self._cost
        self._probe_lost += seconds - work * ref
        self._probing += 1
        if self._probing == 2:  # the warm-up call
            if cost > ref * self.abort_ratio * 2:
                self._end_probe(cost)  # too slow for a warm-up to explain
            return
        self._probe_seconds += seconds
        self._probe_work += work
        counted = self._probe_seconds / self._probe_work
        if self._probing - 2 >= self.probe_calls or counted > ref * self.abort_ratio:
            self._end_probe(counted)

    def _end_probe(self, other: float) -> None:
        ref, lost = self._cost, self._probe_lost
        self._probing = 0
        self._probe_seconds = self._probe_work = self._probe_lost = 0.0
        self._since, self._time_since = 0, 0.0
        if other * self.margin < ref:
            # The probed kernel wins: keep it (parallel already names it). Probing the one it
            # replaces would lose about what it just lost, so the budget applies as after a probe.
            self.switches += 1
            self._cost, self._other = other, ref
            self._recent.clear()
            self._recent.append(other)
            self._interval = self.min_interval
            self._wait = (ref - other) * (1 + self.probe_calls) / self.budget
            return
        self._flip()  # back to the kernel in use
        self._other = other
        self._interval = min(2 * self._interval, self.max_interval)
        self._wait = max(lost, 0.0) / self.budget
