"""``Pipeline``: actors step envs and act, a learner learns, overlapping in threads.

After Sebulba (Hessel et al., "Podracer architectures for scalable reinforcement learning",
2021, section 3), with CPU threads as the devices. Each actor thread owns a vecsim engine over
a disjoint slice of the envs. At the start of each cycle it takes the newest parameters from a
slot of capacity one, plays ``steps_per_cycle`` steps, and pushes the trajectory (with its
initial and final actor state) onto its own bounded queue. The learner, in the thread that
called ``run``, pops one trajectory from every actor's queue, joins them into one ``Batch``,
updates, and publishes the new parameters without waiting for anyone. With a fixed lag
``L``, an actor instead acts in cycle ``c`` with the parameters the learner held at the start
of cycle ``c - L`` (waiting for them if need be), so the run no longer depends on timing. vecsim's kernels release
the GIL, and so do NumPy's matrix products and torch: while one actor steps its envs, another
runs inference and the learner differentiates.

The actor threads start with the first ``run`` and stop at ``close``; between runs they play
ahead until their queues are full, so that short runs overlap as a long one does.

The synchronous mode plays the same protocol in one thread (every actor's cycle, then the
learner's update), deterministically: the baseline, and the path for debugging an agent.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
import weakref

import numpy as np

from vecsim.engine.engine import _is_int, check_seed
from vecsim.pipeline.actor import Actor
from vecsim.pipeline.protocol import Batch, join_slices
from vecsim.pipeline.staging import CycleParams, ParamSlot, Stopped, TrajectoryQueue

__all__ = ["MODES", "Pipeline", "PipelineMetrics", "default_num_actors"]

MODES = ("pipelined", "synchronous")
#: Seconds ``close`` waits for the actor threads (they stop between two steps).
CLOSE_TIMEOUT_S = 0.9
#: Seconds ``run`` waits for the actor threads when it ends or fails, before it reports them.
JOIN_TIMEOUT_S = 30.0
THREAD_PREFIX = "vecsim-pipeline-actor"
#: Envs each of two default actor threads needs: with fewer, their matrix products are too short
#: to hide each other's Python, and the two threads mostly take turns on the GIL.
MIN_ENVS_PER_ACTOR = 64


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_num_actors(num_envs: int) -> int:
    """Actor threads when none are asked for: two (one steps its envs while the other runs
    inference) where each gets ``MIN_ENVS_PER_ACTOR`` envs and there is a core for each besides
    the learner's, else one (the learner needs the other core of a two-core machine)."""
    return 2 if _positive_int("num_envs", num_envs) >= 2 * MIN_ENVS_PER_ACTOR and available_cores() >= 3 else 1


@dataclasses.dataclass
class PipelineMetrics:
    """What one ``Pipeline.run`` did.

    Attributes
    ----------
    cycles : int
        Cycles learned from (fewer than asked when ``close`` stopped the run: see ``stopped``).
    env_steps : int
        Env steps in those cycles (``cycles * steps_per_cycle * num_envs``).
    seconds : float
        Wall-clock time of the run.
    steps_per_second : float
        ``env_steps / seconds``.
    episode_returns, episode_lengths : ndarray, shape (E,)
        The episodes that ended in those cycles, in cycle order (then step, then env).
    episode_cycles : ndarray of int64, shape (E,)
        The cycle each of those episodes ended in.
    learner : list of dict
        The metrics of every ``learn`` call, in order, each with ``cycle`` and ``version``
        (the version its parameters were published as) added.
    params_versions : ndarray of int64, shape (cycles, num_actors)
        The parameter version each actor acted with in each cycle.
    params_lag : ndarray of int64, shape (cycles, num_actors)
        How many versions behind the learner those were when it received the trajectory.
    learn_seconds : float
        Time spent in ``learn``.
    learner_wait_seconds : float
        Time the learner waited for trajectories.
    actor_wait_seconds : ndarray of float64, shape (num_actors,)
        Time each actor waited for room in its full queue (backpressure).
    actor_cpu_seconds : ndarray of float64, shape (num_actors,)
        CPU time each actor's acting took (``time.thread_time`` of the thread it ran in): with
        ``learner_cpu_seconds``, per wall-clock second, the cores each thread got.
    learner_cpu_seconds : float
        CPU time of the thread that called ``run``, less its acting (synchronous mode).
    stopped : bool
        ``close`` was called during the run.
    """

    cycles: int
    env_steps: int
    seconds: float
    steps_per_second: float
    episode_returns: np.ndarray
    episode_lengths: np.ndarray
    episode_cycles: np.ndarray
    learner: list
    params_versions: np.ndarray
    params_lag: np.ndarray
    learn_seconds: float
    learner_wait_seconds: float
    actor_wait_seconds: np.ndarray
    actor_cpu_seconds: np.ndarray
    learner_cpu_seconds: float
    stopped: bool


def _positive_int(name: str, value) -> int:
    if not _is_int(value) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, but got {name}={value!r}")
    return int(value)


class _Control:
    """What the actor threads share with the loop: the parameter schedule, the stop flag and
    the first error. The threads hold this, never the ``Pipeline``, so that a loop its user
    dropped without ``close`` is collected and its finalizer stops them."""

    def __init__(self, params, fixed_lag: int | None, actors: list, queues: list):
        self.stop = threading.Event()
        self.slot = ParamSlot(params)
        self.cycle_params = CycleParams(self.stop)
        self.cycle_params.record(0, 0, params)
        self.fixed_lag, self.actors, self.queues = fixed_lag, actors, queues
        self.error: BaseException | None = None
        self._error_lock = threading.Lock()

    def params_for(self, cycle: int) -> tuple[int, object]:
        if self.fixed_lag is None:
            return self.slot.newest()
        return self.cycle_params.wait(max(0, cycle - self.fixed_lag))

    def fail(self, exc: BaseException) -> None:
        with self._error_lock:
            if self.error is None:
                self.error = exc
        self.request_stop()

    def request_stop(self) -> None:
        self.stop.set()
        for actor in self.actors:
            actor.stopping = True
        for queue in self.queues:
            queue.wake()
        self.cycle_params.wake()


class _ActorThread:
    """An actor's thread: cycle after cycle from ``first``, each trajectory onto the actor's
    queue, until the loop stops. It outlives a ``run``: between runs it plays ahead until its
    queue is full, so that the next run starts with trajectories waiting."""

    def __init__(self, control: _Control, actor: Actor, queue: TrajectoryQueue, first: int):
        self.control, self.actor, self.queue, self.first = control, actor, queue, first
        self.wait_seconds = self.cpu_seconds = 0.0
        self.thread = threading.Thread(target=self._main, name=f"{THREAD_PREFIX}-{actor.index}", daemon=True)
        self._clock = None

    def start(self) -> None:
        self.thread.start()
        try:
            self._clock = time.pthread_getcpuclockid(self.thread.ident)
        except (AttributeError, OSError):  # no per-thread clocks here: ``cpu_seconds`` counts whole cycles
            self._clock = None

    def cpu_time(self) -> float:
        """CPU seconds the thread has run (up to its last finished cycle where the platform
        cannot read another thread's clock)."""
        if self._clock is not None and self.thread.is_alive():
            try:
                return time.clock_gettime(self._clock)
            except OSError:
                pass
        return self.cpu_seconds

    def _main(self) -> None:
        control, actor = self.control, self.actor
        cycle = self.first
        try:
            while True:
                version, params = control.params_for(cycle)
                batch = actor.play_cycle(params, version, cycle)
                if batch is None:
                    return
                self.cpu_seconds = time.thread_time()
                self.wait_seconds += self.queue.put(batch)
                cycle += 1
        except Stopped:
            pass
        except BaseException as exc:  # reported to the learner, which re-raises it
            exc.add_note(f"raised in actor {actor.index} of the pipeline (envs {actor.start}..{actor.stop - 1}), "
                         f"cycle {cycle}")
            control.fail(exc)
        finally:
            self.cpu_seconds = time.thread_time()


class Pipeline:
    """An actor-learner loop over ``num_envs`` envs of one vecsim game.

    Parameters
    ----------
    env_id : str
        A vecsim game id, e.g. ``"vecsim/CartPole-v1"``.
    num_envs : int
        Envs in all; env ``k`` is seeded ``seed + k``.
    agent : Agent
        ``act``, ``learn`` and optionally ``initial_actor_state`` (``vecsim.pipeline.protocol.Agent``).
    params : object
        The initial parameters (version 0).
    opt_state : object, optional
        The learner's initial optimiser state, passed to ``learn`` and replaced by what it returns.
    num_actors : int, optional
        Actor threads, each stepping its own engine over a contiguous slice of the envs (sizes
        differ by at most one). Default ``default_num_actors(num_envs)``: two (while one steps
        its envs the other runs inference) with at least ``MIN_ENVS_PER_ACTOR`` envs each and
        three cores or more, else one.
    steps_per_cycle : int
        Steps each actor plays between two parameter reads (the trajectory length ``T``).
    queue_capacity : int
        Trajectories each actor may have waiting for the learner; a full queue blocks the actor.
    updates_per_cycle : int or callable
        ``learn`` calls on each batch (0 skips it), or ``f(cycle) -> int`` (off-policy reuse).
    mode : {"pipelined", "synchronous"}
        Threads, or every step in the calling thread in a fixed order (same results for the
        same seed; the baseline).
    seed : int
        Env ``k`` is reset with seed ``seed + k`` when the loop is built, and continues its own
        random stream after that.
    fixed_lag : int or None
        ``None`` (default): each actor takes the newest parameters at the start of a cycle,
        so which version it gets depends on timing. An int ``L >= 0``: every actor acts in
        cycle ``c`` with the parameters the learner held at the start of cycle ``c - L``
        (those learned from cycles ``< c - L``; the initial ones while ``c <= L``), waiting for
        them if need be. Then a run is reproducible, and a pipelined run gives the same
        results as a synchronous one with the same lag. ``L = 0`` is lockstep (no overlap of
        acting and learning); ``L = 1`` lets one cycle of acting overlap one of learning.
    env_kwargs : dict, optional
        Keyword arguments of ``vecsim.make`` for every actor's engine (``precision``,
        ``max_episode_steps``, game constants such as Tetris's ``action_mode``).

    Use it as a context manager, or call ``close``: pipelined, the actor threads live from the
    first ``run`` to ``close`` (a loop dropped without it stops them when it is collected).
    """

    def __init__(self, env_id: str, num_envs: int, agent, *, params, opt_state=None, num_actors: int | None = None,
                 steps_per_cycle: int = 128, queue_capacity: int = 1, updates_per_cycle=1,
                 mode: str = "pipelined", seed: int = 0, fixed_lag: int | None = None,
                 env_kwargs: dict | None = None):
        num_envs = _positive_int("num_envs", num_envs)
        num_actors = default_num_actors(num_envs) if num_actors is None else _positive_int("num_actors", num_actors)
        if num_actors > num_envs:
            raise ValueError(f"num_actors must be at most num_envs={num_envs} (each actor steps at least one env), "
                             f"but got num_actors={num_actors}")
        self.steps_per_cycle = _positive_int("steps_per_cycle", steps_per_cycle)
        self.queue_capacity = _positive_int("queue_capacity", queue_capacity)
        if not callable(updates_per_cycle) and (not _is_int(updates_per_cycle) or updates_per_cycle < 0):
            raise ValueError(f"updates_per_cycle must be an int >= 0 or a callable, "
                             f"but got updates_per_cycle={updates_per_cycle!r}")
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, but got mode={mode!r}")
        for method in ("act", "learn"):
            if not callable(getattr(agent, method, None)):
                raise TypeError(f"agent must have a method {method}, but {type(agent).__name__} has none "
                                f"(see vecsim.pipeline.protocol.Agent)")
        if fixed_lag is not None and (not _is_int(fixed_lag) or fixed_lag < 0):
            raise ValueError(f"fixed_lag must be None or an int >= 0, but got fixed_lag={fixed_lag!r}")
        self.fixed_lag = None if fixed_lag is None else int(fixed_lag)
        if env_kwargs is not None and not isinstance(env_kwargs, dict):
            raise TypeError(f"env_kwargs must be a dict, but got {type(env_kwargs).__name__}")
        self.seed = check_seed(seed, span=num_envs)
        self.env_id, self.num_envs, self.num_actors = env_id, num_envs, num_actors
        self.agent, self.mode, self.updates_per_cycle = agent, mode, updates_per_cycle
        self.params, self.opt_state = params, opt_state
        self.cycle = 0
        self.actors: list[Actor] = []
        self.queues: list[TrajectoryQueue] = []
        self._control = _Control(params, self.fixed_lag, self.actors, self.queues)
        self.slot, self._stop, self._cycle_params = self._control.slot, self._control.stop, self._control.cycle_params
        self._running = False
        self._closed = False
        self._state_lock = threading.Lock()
        self._threads: list[_ActorThread] = []
        bounds = np.linspace(0, num_envs, num_actors + 1).round().astype(int)
        try:
            for i in range(num_actors):
                self.actors.append(Actor(i, env_id, int(bounds[i]), int(bounds[i + 1]), self.seed, agent,
                                         self.steps_per_cycle, dict(env_kwargs or {})))
        except BaseException:
            self._close_engines()
            raise
        self.queues.extend(TrajectoryQueue(self.queue_capacity, self._stop) for _ in range(num_actors))
        weakref.finalize(self, self._control.request_stop)

    # -- the learner ------------------------------------------------------------------------
    def _updates(self, cycle: int) -> int:
        if not callable(self.updates_per_cycle):
            return self.updates_per_cycle
        count = self.updates_per_cycle(cycle)
        if not _is_int(count) or count < 0:
            raise ValueError(f"updates_per_cycle({cycle}) must return an int >= 0, but returned {count!r}")
        return int(count)

    def _learn(self, batch: Batch, record: list) -> float:
        """The learner's updates on ``batch``, each published at once; return the seconds spent."""
        start = time.perf_counter()
        for _ in range(self._updates(batch.cycle)):
            try:
                out = self.agent.learn(self.params, self.opt_state, batch)
                if not isinstance(out, tuple) or len(out) != 3:
                    raise TypeError(f"agent.learn must return (params, opt_state, metrics), but returned "
                                    f"{type(out).__name__}" + (f" of length {len(out)}" if isinstance(out, tuple) else ""))
            except BaseException as exc:
                exc.add_note(f"raised in the pipeline's learner, cycle {batch.cycle}")
                raise
            self.params, self.opt_state, metrics = out
            version = self.slot.publish(self.params)
            record.append({**(metrics or {}), "cycle": batch.cycle, "version": version})
        return time.perf_counter() - start

    def params_for(self, cycle: int) -> tuple[int, object]:
        """``(version, params)`` an actor acts with in ``cycle``: the newest, or with a fixed
        lag ``L`` those of the start of cycle ``max(0, cycle - L)`` (waiting until the learner
        has them; ``Stopped`` if the loop stops meanwhile)."""
        return self._control.params_for(cycle)

    @property
    def _error(self) -> BaseException | None:
        return self._control.error

    def _request_stop(self) -> None:
        self._control.request_stop()

    def _next_batch(self) -> tuple[Batch | None, float]:
        """One trajectory from every actor's queue, joined; ``None`` once stopped. Re-raises an
        actor's exception."""
        parts, waited = [], 0.0
        for queue in self.queues:
            try:
                part, seconds = queue.get()
            except Stopped:
                if self._error is not None:
                    raise self._error from None
                return None, waited
            parts.append(part)
            waited += seconds
        return join_slices(parts), waited

    # -- public -----------------------------------------------------------------------------
    def run(self, num_cycles: int) -> PipelineMetrics:
        """Play and learn ``num_cycles`` cycles; return what happened.

        The learner learns from ``num_cycles`` batches, each of ``steps_per_cycle`` steps of
        every env. A later ``run`` goes on from there (envs, actor states, parameters and
        optimiser state carry over). An exception in an actor or in the learner stops every
        thread and is raised here (an actor's with its traceback, and a note naming the
        actor). ``close`` from another thread stops the run: it returns what was learned so
        far, with ``stopped`` set.

        Pipelined, the actor threads start with the first ``run`` and stop at ``close``.
        Between two runs they play on until their queues are full (``queue_capacity``
        trajectories each, and one more held ready), so a loop driven in short runs
        (``run(1)`` between two logs) overlaps acting and learning as one long run does, and
        only the first run waits for a first trajectory. Those trajectories are the next
        run's, acted with the parameters the schedule gives (the newest, or the fixed lag's):
        with a fixed lag, a sequence of runs gives the same results however it is cut.
        """
        num_cycles = _positive_int("num_cycles", num_cycles)
        with self._state_lock:
            self._check_open()
            if self._running:
                raise RuntimeError("this pipeline is already running (run is not reentrant)")
            self._running = True
        record = {"learner": [], "batches": [], "learn": 0.0, "wait": 0.0,
                  "actor_cpu": np.zeros(self.num_actors)}
        start, cpu = time.perf_counter(), time.thread_time()
        try:
            if self.mode == "synchronous":
                self._run_synchronous(num_cycles, record)
            else:
                self._run_pipelined(num_cycles, record)
        except BaseException:
            self._request_stop()
            self._closed = True  # the loop's state is past repair: a new run would mislead
            raise
        finally:
            with self._state_lock:
                self._running = False
                if self._closed:
                    self._close_engines()
        record["learner_cpu"] = time.thread_time() - cpu - (record["actor_cpu"].sum() if self.mode == "synchronous" else 0.0)
        return self._metrics(record, time.perf_counter() - start)

    def _run_synchronous(self, num_cycles: int, record: dict) -> None:
        for _ in range(num_cycles):
            if self._stop.is_set():
                return
            version, params = self.params_for(self.cycle)
            parts = []
            for actor in self.actors:
                cpu = time.thread_time()
                parts.append(actor.play_cycle(params, version, self.cycle))
                record["actor_cpu"][actor.index] += time.thread_time() - cpu
            if any(part is None for part in parts):
                return
            self._consume(join_slices(parts), record)

    def _consume(self, batch: Batch, record: dict) -> None:
        record["batches"].append((batch.cycle, batch.params_versions, self.slot.version, batch.episode_returns,
                                  batch.episode_lengths))
        record["learn"] += self._learn(batch, record["learner"])
        self.cycle += 1
        if self.fixed_lag is not None:
            self._cycle_params.record(self.cycle, self.slot.version, self.params)
            # Every actor is at this cycle or later, and asks for no entry older than its lag.
            self._cycle_params.forget_before(self.cycle - self.fixed_lag)

    def _run_pipelined(self, num_cycles: int, record: dict) -> None:
        if self._threads:
            cpu_before = [worker.cpu_time() for worker in self._threads]
        else:
            self._threads = [_ActorThread(self._control, actor, queue, self.cycle)
                             for actor, queue in zip(self.actors, self.queues)]
            for worker in self._threads:
                worker.start()
            cpu_before = [0.0] * len(self._threads)
        wait_before = [worker.wait_seconds for worker in self._threads]
        try:
            for _ in range(num_cycles):
                batch, waited = self._next_batch()
                record["wait"] += waited
                if batch is None:
                    break
                self._consume(batch, record)
        except BaseException:
            self._request_stop()
            self._join(JOIN_TIMEOUT_S)
            raise
        finally:
            record["actor_wait"] = [w.wait_seconds - before for w, before in zip(self._threads, wait_before)]
            record["actor_cpu"] = np.array([w.cpu_time() - before for w, before in zip(self._threads, cpu_before)])
        if self._stop.is_set():  # close() from another thread waits for the actors only so long
            self._join(JOIN_TIMEOUT_S)

    def _join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for worker in self._threads:
            worker.thread.join(max(0.0, deadline - time.monotonic()))
        alive = [w.thread.name for w in self._threads if w.thread.is_alive()]
        if alive and timeout >= JOIN_TIMEOUT_S:
            raise RuntimeError(f"actor threads {alive} did not stop within {timeout:g} s (an act call that does "
                               f"not return?)")

    def _close_engines(self) -> None:
        for actor in self.actors:
            actor.close()

    def _metrics(self, record: dict, seconds: float) -> PipelineMetrics:
        batches = record["batches"]
        cycles = len(batches)
        env_steps = cycles * self.steps_per_cycle * self.num_envs
        versions = np.array([b[1] for b in batches], dtype=np.int64).reshape(cycles, self.num_actors)
        learner_version = np.array([b[2] for b in batches], dtype=np.int64).reshape(cycles, 1)
        returns = [b[3] for b in batches]
        return PipelineMetrics(
            cycles=cycles, env_steps=env_steps, seconds=seconds,
            steps_per_second=env_steps / seconds if seconds > 0 else 0.0,
            episode_returns=np.concatenate(returns) if returns else np.zeros(0),
            episode_lengths=np.concatenate([b[4] for b in batches]) if batches else np.zeros(0, dtype=np.int64),
            episode_cycles=np.concatenate([np.full(len(b[3]), b[0], dtype=np.int64) for b in batches])
            if batches else np.zeros(0, dtype=np.int64),
            learner=record["learner"], params_versions=versions, params_lag=learner_version - versions,
            learn_seconds=record["learn"], learner_wait_seconds=record["wait"],
            actor_wait_seconds=np.array(record.get("actor_wait", [0.0] * self.num_actors)),
            actor_cpu_seconds=record["actor_cpu"], learner_cpu_seconds=record["learner_cpu"],
            stopped=self._stop.is_set() and self._error is None,
        )

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this pipeline is closed" + (" (an actor or the learner raised)" if self._error else ""))

    def close(self) -> None:
        """Stop the actors (within about a second, also during a ``run`` in another thread) and
        release the engines. Idempotent; a ``run`` in progress returns what it learned so far
        (with ``stopped`` set) once its current ``learn`` call returns."""
        self._request_stop()
        self._join(CLOSE_TIMEOUT_S)
        with self._state_lock:
            self._closed = True
            if not self._running:  # else run closes them when it returns
                self._close_engines()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        lag = "" if self.fixed_lag is None else f", fixed_lag={self.fixed_lag}"
        return (f"Pipeline({self.env_id!r}, num_envs={self.num_envs}, num_actors={self.num_actors}, "
                f"steps_per_cycle={self.steps_per_cycle}, mode={self.mode!r}{lag})")
