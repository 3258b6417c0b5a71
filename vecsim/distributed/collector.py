"""``RayEpisodeCollector``: the episode collector with its env slots in Ray actors.

Each actor holds one ``EpisodeCollector`` over a slice of the slots (one engine, one process,
on any node of the cluster). A request of ``B`` jobs is cut into contiguous runs of jobs, one
per actor; an actor collects its run with ``request_episodes(n, first_job=...)`` (job ``j``
reset with seed ``seed + j``) and returns it through Ray's object store; the driver reads the
runs without a copy and joins them into one batch in job order. A job's episode depends only
on its seed (and, for a callable policy, on its own observations), so a batch is
bit-identical to the single-process collector's whatever the number of actors or nodes, and
the run of an actor that died is collected again by the others with the same seeds.
The shape follows Ray's actor pool (``ray.util.ActorPool``): idle actors take the next run.
"""

from __future__ import annotations

import collections
import importlib
import math
import os
import queue
import threading
import time

import numpy as np
from numba.core.registry import CPUDispatcher

import vecsim
from vecsim.collect.collector import EpisodeBatch, EpisodeCollector, PolicyError
from vecsim.core.rng import MAX_SEED
from vecsim.extras import require
from vecsim.engine.codegen import _policy_location
from vecsim.engine.engine import _is_int, check_seed
from vecsim.engine.opponents import refuse_callable_opponent

__all__ = ["CollectorTimeout", "RayEpisodeCollector"]

#: Where a batched callable policy is evaluated.
POLICY_PLACES = ("actors", "driver")
#: Default for ``timeout_s``: the longest wait for any answer of the actors.
DEFAULT_TIMEOUT_S = 600.0


class CollectorTimeout(TimeoutError):
    """No actor answered within the collector's ``timeout_s``; the collector is closed."""


def _import_ray():
    return require("ray", "ray", "the Ray collector")


class _Stop(Exception):
    """The driver gave up a run whose policy it evaluates."""


def _keep_cause(error: PolicyError) -> PolicyError:
    """``error`` with its ``__cause__`` (the policy's own exception) also kept as an attribute:
    pickling, as Ray sends an actor's exception to the driver, drops ``__cause__``."""
    error.policy_exception = error.__cause__
    return error


class SliceActor:
    """One engine slice: an ``EpisodeCollector`` of ``num_workers`` slots, run as a Ray actor.

    ``policy`` is ``"random"``, a callable (evaluated here), ``("jitted", module, name)`` (an
    @njit policy imported and compiled here, from this node's cache) or ``("driver",)`` (each
    step's observations go back to the driver, which answers with the actions).
    """

    def __init__(self, game_module: str, env_id: str, num_workers: int, max_steps: int, policy, seed: int,
                 env_kwargs: dict):
        self._error = None
        self._to_driver: queue.Queue = queue.Queue()
        self._from_driver: queue.Queue = queue.Queue()
        self._thread = None
        try:
            vecsim.register(game_module)  # a user's game: the same module is a no-op for built-ins
            if isinstance(policy, tuple):
                policy = (getattr(importlib.import_module(policy[1]), policy[2]) if policy[0] == "jitted"
                          else self._ask_driver)
            self.collector = EpisodeCollector(env_id, num_workers, max_steps, policy, seed, **env_kwargs)
        except Exception as exc:  # reported by where(), as raised, instead of a dead actor
            self._error = exc

    def where(self) -> tuple[str, int]:
        """(Ray node id, process id) of this actor; raises what its construction raised."""
        if self._error is not None:
            raise self._error
        import ray

        return ray.get_runtime_context().get_node_id(), os.getpid()

    def collect(self, first_job: int, num_episodes: int) -> EpisodeBatch:
        try:
            return _played(self.collector.request_episodes(num_episodes, first_job=first_job))
        except PolicyError as exc:
            raise _keep_cause(exc)

    # -- a policy evaluated on the driver ----------------------------------------------------
    def _ask_driver(self, obs, masks):
        # Views of the collector's buffers: serialised when start()/act() return, while this
        # thread waits for the answer, so nothing overwrites them first.
        self._to_driver.put(("obs", obs, masks))
        answer = self._from_driver.get()
        if answer is None:
            raise _Stop
        return answer

    def start(self, first_job: int, num_episodes: int):
        """Begin collecting a run; returns ``("obs", obs, masks)`` for the first step or ``("done", batch)``."""
        def run():
            try:
                self._to_driver.put(("done", _played(self.collector.request_episodes(num_episodes,
                                                                                      first_job=first_job))))
            except BaseException as exc:  # handed to the driver by _reply
                self._to_driver.put(("error", _keep_cause(exc) if isinstance(exc, PolicyError) else exc))

        self._thread = threading.Thread(target=run, name="vecsim-ray-slice", daemon=True)
        self._thread.start()
        return self._reply()

    def act(self, answer):
        """The driver's policy output for the last observations; returns as ``start`` does."""
        self._from_driver.put(answer)
        return self._reply()

    def _reply(self):
        message = self._to_driver.get()
        if message[0] == "error":
            self._thread = None
            raise message[1]
        if message[0] == "done":
            self._thread = None
        return message

    def abort(self) -> None:
        """Give up the run in progress (its jobs stay unconsumed)."""
        thread, self._thread = self._thread, None
        if thread is not None and thread.is_alive():
            self._from_driver.put(None)
            thread.join()
        for q in (self._to_driver, self._from_driver):
            while not q.empty():
                q.get_nowait()


def _runs(first_job: int, n: int, parts: int) -> list[tuple[int, int]]:
    """``n`` jobs from ``first_job`` cut into at most ``parts`` contiguous ``(first, count)`` runs."""
    size, extra = divmod(n, parts)
    runs, first = [], first_job
    for k in range(parts):
        count = size + (k < extra)
        if count:
            runs.append((first, count))
            first += count
    return runs


#: The fields with a step axis (``[B, K, ...]``), whose steps past the longest episode are padding.
STEP_FIELDS = ("observations", "actions", "rewards", "dones", "action_masks", "log_probs", "values")


def _uncollected(first: int, n: int, done: dict) -> list[tuple[int, int]]:
    """The ``[start, stop)`` ranges of jobs ``first .. first + n - 1`` that no run of ``done``
    (``{first job: batch}``) holds."""
    held = np.zeros(n, dtype=bool)
    for start, batch in done.items():
        held[start - first:start - first + len(batch.lengths)] = True
    edges = np.flatnonzero(np.diff(np.concatenate([[True], held, [True]]).astype(np.int8)))
    return [(first + int(a), first + int(b)) for a, b in zip(edges[::2], edges[1::2])]


def _played(batch: EpisodeBatch) -> EpisodeBatch:
    """``batch`` without the steps past its longest episode (padding: the driver puts it back),
    so that only played steps are serialised."""
    steps = int(batch.lengths.max())
    return EpisodeBatch(**{name: (None if arr is None else np.ascontiguousarray(arr[:, :steps]) if name in STEP_FIELDS
                                  else arr) for name, arr in ((n, getattr(batch, n)) for n in EpisodeBatch.__slots__)})


def _join(runs: dict[int, EpisodeBatch], max_steps: int) -> EpisodeBatch:
    """The runs' episodes in job order as one ``[B, max_steps, ...]`` batch of owned, writable
    arrays, padded as ``EpisodeBatch`` says (zeros; ``dones`` True)."""
    parts = [runs[k] for k in sorted(runs)]
    n = sum(len(p) for p in parts)
    fields = {}
    for name in EpisodeBatch.__slots__:
        arrays = [getattr(p, name) for p in parts]
        if arrays[0] is None:
            fields[name] = None
        elif name in STEP_FIELDS:
            # np.zeros maps zeroed pages lazily: padding that is never written costs nothing.
            full = (np.ones if name == "dones" else np.zeros)((n, max_steps, *arrays[0].shape[2:]), arrays[0].dtype)
            row = 0
            for arr in arrays:
                full[row:row + len(arr), :arr.shape[1]] = arr
                row += len(arr)
            fields[name] = full
        else:
            fields[name] = np.concatenate(arrays)
    return EpisodeBatch(**fields)


class RayEpisodeCollector:
    """Collect whole episodes with env slots spread over ``num_actors`` Ray actors.

    The same batches as ``EpisodeCollector`` (bit for bit: job ``j`` is reset with seed
    ``seed + j``, rows in job order) whatever ``num_actors`` or the cluster's nodes. Connects
    to the cluster that ``ray.init`` joined (``ray.init(address="auto")`` on a node of a
    running cluster); without one, Ray starts a local one.

    Parameters
    ----------
    env_id : str
        A game id, as for ``vecsim.make``; a game of your own (``vecsim.register``) must be
        importable on every node.
    num_workers : int
        Env slots in all (>= ``num_actors``), split as evenly as possible over the actors:
        one engine slice per actor. Results do not depend on it.
    max_steps : int
        ``K``: an episode is cut after this many steps (>= 1).
    policy : "random", numba @njit function or callable
        - ``"random"``: as ``EpisodeCollector``'s (drawn inside each actor's kernel).
        - an ``@njit`` function ``policy(s, p, i, rng) -> action`` defined at the top level of
          a module importable on every node: the actors import it by name and compile its
          collection kernel once each, from their own node's cache.
        - a batched callable ``policy(obs, masks) -> actions`` or ``-> (actions, log_probs,
          values)``, as for ``EpisodeCollector``; ``policy_on`` says where it runs.
    seed : int
        Job ``j`` is reset with seed ``seed + j``.
    num_actors : int
        Ray actors (>= 1), each a process with its own engine; Ray places them (by default
        spread over the nodes).
    policy_on : {"actors", "driver"}
        Where a batched callable is evaluated. ``"actors"``: it is pickled to every actor and
        called there on that actor's running slots (no round trip per step; it must be
        picklable, e.g. a model's weights in a closure). ``"driver"``: every step, each actor
        sends the observations of its running slots to the driver, which calls the policy
        once on all of them (in actor order) and sends each actor its rows of the answer: one
        object-store round trip per step, for a policy that must stay in one place (a model on
        the driver's GPU). Either way rows are independent, so batches do not depend on it.
    timeout_s : float
        The longest the collector waits for any answer of its actors: a run of jobs, or one
        step with ``policy_on="driver"``. When it passes, the collector kills its actors,
        closes, and raises ``CollectorTimeout`` naming the actors, their nodes and their jobs.
    start_timeout_s : float
        The same for the actors' start (a process each, the game's kernels loaded or compiled).
    actor_options : dict, optional
        Passed to Ray's ``.options()`` for every actor; the defaults are ``num_cpus=1`` and
        ``scheduling_strategy="SPREAD"``.
    **env_kwargs
        Passed to each actor's ``EpisodeCollector`` (``precision``, ``parallel``, game constants).

    Notes
    -----
    An actor that dies (its process or node lost) has its run collected again by the others
    with the same seeds, so the batch does not change; the collector goes on with the
    actors it has left. Action-array policies and ``prefetch`` are ``EpisodeCollector``'s
    only.
    """

    def __init__(self, env_id: str, num_workers: int, max_steps: int, policy, seed: int, *, num_actors: int = 2,
                 policy_on: str = "actors", timeout_s: float = DEFAULT_TIMEOUT_S,
                 start_timeout_s: float = DEFAULT_TIMEOUT_S, actor_options: dict | None = None, **env_kwargs):
        self._closed = True  # until construction succeeds: close() and __del__ stay safe
        self._actors: list = []
        for name, value, least in (("num_actors", num_actors, 1), ("num_workers", num_workers, None),
                                   ("max_steps", max_steps, 1)):
            if not _is_int(value):
                raise TypeError(f"{name} must be an int, but got {name}={value!r}")
            least = int(num_actors) if least is None else least
            if value < least:
                raise ValueError(f"{name} must be >= {least}{' (num_actors)' if name == 'num_workers' else ''}, "
                                 f"but got {name}={value}")
        self.seed = check_seed(seed)
        if policy_on not in POLICY_PLACES:
            raise ValueError(f"policy_on must be one of {POLICY_PLACES}, but got policy_on={policy_on!r}")
        for name, value in (("timeout_s", timeout_s), ("start_timeout_s", start_timeout_s)):
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise TypeError(f"{name} must be a number of seconds, but got {name}={value!r}")
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, but got {name}={value!r}")
        if actor_options is not None and not isinstance(actor_options, dict):
            raise TypeError(f"actor_options must be a dict or None, but got actor_options={actor_options!r}")
        if "prefetch" in env_kwargs:
            raise TypeError("RayEpisodeCollector has no prefetch: its actors collect while the driver waits")
        game = vecsim.resolve(env_id)
        refuse_callable_opponent(game, env_kwargs, "RayEpisodeCollector")
        self.num_actors = int(num_actors)
        self.num_workers = int(num_workers)
        self.max_steps = int(max_steps)
        self.policy_on = policy_on
        self.timeout_s = float(timeout_s)
        self.start_timeout_s = float(start_timeout_s)
        self._policy_kind, shipped = self._ship_policy(policy, policy_on)
        self._policy = policy
        ray = self._ray = _import_ray()
        options = {"num_cpus": 1, "scheduling_strategy": "SPREAD", **(actor_options or {})}
        remote = ray.remote(SliceActor).options(**options)
        self._actors = [remote.remote(game.module.__name__, env_id, w, self.max_steps, shipped, self.seed,
                                      dict(env_kwargs))
                        for _, w in _runs(0, self.num_workers, self.num_actors)]
        self._alive = list(range(self.num_actors))
        self._lost: list[int] = []  # actors that died, in the order the driver learnt it
        self._closed = False
        refs = {a.where.remote(): (i, None) for i, a in enumerate(self._actors)}
        #: Ray node id and process id of each actor.
        self.nodes, self.pids = [None] * self.num_actors, [None] * self.num_actors
        try:
            ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=self.start_timeout_s)
            if len(ready) < len(refs):
                self._time_out([refs[r] for r in refs if r not in ready], "start", self.start_timeout_s)
            for ref, (i, _) in refs.items():
                self.nodes[i], self.pids[i] = ray.get(ref)
        except BaseException:
            self.close()
            raise
        self._next_job = 0

    @staticmethod
    def _ship_policy(policy, policy_on):
        """(kind, what the actors get) for ``policy``."""
        if isinstance(policy, str):
            if policy != "random":
                raise ValueError(f"policy must be 'random', an @njit policy or a batched callable, "
                                 f"but got policy={policy!r}")
            return "random", "random"
        if isinstance(policy, np.ndarray):
            raise TypeError("RayEpisodeCollector takes no action-array policy (EpisodeCollector does)")
        if isinstance(policy, CPUDispatcher):
            module_name, name, _ = _policy_location(policy)
            return "jitted", ("jitted", module_name, name)
        if callable(policy):
            return "callable", (policy if policy_on == "actors" else ("driver",))
        raise TypeError(f"policy must be 'random', an @njit policy(s, p, i, rng) or a batched callable "
                        f"policy(obs, masks), but got {type(policy).__name__}")

    # -- public API ----------------------------------------------------------------------
    def request_episodes(self, num_episodes: int) -> EpisodeBatch:
        """Collect the next ``num_episodes`` jobs on the actors and return them in job order.

        Parameters
        ----------
        num_episodes : int
            ``B`` (>= 1).

        Returns
        -------
        EpisodeBatch
            Arrays ``[B, max_steps, ...]`` of the driver's own (writable, not reused).

        Raises
        ------
        CollectorTimeout
            No actor answered within ``timeout_s`` (the collector is then closed).
        PolicyError, ValueError, TypeError
            As ``EpisodeCollector.request_episodes``; the jobs are not consumed.
        RuntimeError
            After ``close()``, or when every actor has died.
        """
        self._check_open()
        n = EpisodeCollector._check_count(num_episodes)
        first = self._next_job
        if self.seed + first + n - 1 > MAX_SEED:
            raise ValueError(f"job {first + n - 1} would need seed {self.seed + first + n - 1}, "
                             f"above the largest seed {MAX_SEED}")
        if self._policy_kind == "callable" and self.policy_on == "driver":
            runs = self._collect_driver_policy(first, n)
        else:
            runs = self._collect(first, n)
        self._next_job += n
        return _join(runs, self.max_steps)

    def close(self, timeout_s: float = 30.0) -> None:
        """Kill every actor and wait, up to ``timeout_s`` seconds in all, until each is gone.

        When ``close`` returns, the actors' processes and CPUs are released: a collector made
        next finds them free. Idempotent.
        """
        if self._closed:
            return
        self._kill_all()
        ray = self._ray
        deadline = time.monotonic() + timeout_s
        for actor in self._actors:
            # ray.kill only sends the kill: a call made at once may still be answered.
            while (left := deadline - time.monotonic()) > 0:
                try:
                    ray.get(actor.where.remote(), timeout=left)
                except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                    break
                except Exception:  # Ray shut down
                    return
                time.sleep(0.02)

    def _kill_all(self) -> None:
        self._closed = True
        for actor in self._actors:
            try:
                self._ray.kill(actor)
            except Exception:  # already dead, or Ray shut down
                pass
        self._alive = []

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def actors(self) -> list:
        """The actors' handles, in slot order (dead ones included)."""
        return list(self._actors)

    @property
    def alive_actors(self) -> int:
        """Actors still collecting."""
        return len(self._alive)

    def __enter__(self) -> "RayEpisodeCollector":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            if not self._closed:
                self._kill_all()
        except Exception:
            pass

    def __repr__(self) -> str:
        return (f"RayEpisodeCollector({self.num_workers} slots on {self.alive_actors}/{self.num_actors} actors, "
                f"max_steps={self.max_steps}, policy={self._policy_kind}, seed={self.seed})")

    # -- scheduling ----------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this RayEpisodeCollector is closed")

    def _lose(self, actor: int, run, todo: collections.deque, done: dict, first: int, n: int) -> None:
        """Drop a dead actor and queue its run again, cut over the actors left; with none left,
        close and raise, naming every actor lost and every job of the request not collected."""
        self._alive.remove(actor)
        self._lost.append(actor)
        try:
            self._ray.kill(self._actors[actor])
        except Exception:
            pass
        if not self._alive:
            self._kill_all()
            actors = ", ".join(f"actor {a} (node {self.nodes[a] or 'not known'})" for a in self._lost)
            missing = ", ".join(f"{a}..{b - 1}" for a, b in _uncollected(first, n, done))
            raise RuntimeError(f"every actor of the collector died: {actors}; jobs {missing} of this request "
                               f"were not collected (no job is consumed); the collector is closed")
        todo.extend(_runs(run[0], run[1], len(self._alive)))

    def _policy_error(self, error: PolicyError, actor: int) -> PolicyError:
        """The driver's ``PolicyError`` for one raised on ``actor``, naming it (raise it from
        ``error.policy_exception``, the policy's own exception)."""
        message = str(getattr(error, "cause", error)).strip().splitlines()[-1]
        return PolicyError(f"{message} (on actor {actor}, node {self.nodes[actor]})")

    def _time_out(self, waiting, what: str, timeout_s: float | None = None):
        """Close and raise ``CollectorTimeout`` for ``(actor, run)`` pairs that did not answer."""
        lines = []
        for actor, run in waiting:
            jobs = "" if run is None else f", jobs {run[0]}..{run[0] + run[1] - 1}"
            node = self.nodes[actor] if getattr(self, "nodes", None) and self.nodes[actor] else "not known yet"
            lines.append(f"actor {actor} (node {node}{jobs})")
        self._kill_all()  # not close(): an actor that stopped answering may not confirm its end either
        name = "timeout_s" if timeout_s is None else "start_timeout_s"
        raise CollectorTimeout(f"no answer within {name}={timeout_s or self.timeout_s} s to {what} from "
                               f"{'; '.join(lines)}; the collector is closed")

    def _abandon(self) -> None:
        """Stop every run in progress after an error (their jobs stay unconsumed)."""
        refs = [self._actors[i].abort.remote() for i in self._alive]
        self._ray.wait(refs, num_returns=len(refs), timeout=self.timeout_s)

    def _collect(self, first: int, n: int) -> dict[int, EpisodeBatch]:
        """Runs of jobs collected on the actors with their own policy: ``{first job: batch}``."""
        ray = self._ray
        todo = collections.deque(_runs(first, n, len(self._alive)))
        idle = list(self._alive)
        running: dict = {}
        done: dict[int, EpisodeBatch] = {}
        while todo or running:
            while todo and idle:
                actor, run = idle.pop(0), todo.popleft()
                running[self._actors[actor].collect.remote(*run)] = (actor, run)
            ready, _ = ray.wait(list(running), num_returns=1, timeout=self.timeout_s)
            if not ready:
                self._time_out(list(running.values()), "a run of jobs")
            actor, run = running.pop(ready[0])
            try:
                done[run[0]] = ray.get(ready[0])
            except ray.exceptions.RayActorError:
                self._lose(actor, run, todo, done, first, n)
                idle = [a for a in idle if a in self._alive]
                continue
            except PolicyError as error:
                raise self._policy_error(error, actor) from getattr(error, "policy_exception", None)
            idle.append(actor)
        return done

    def _collect_driver_policy(self, first: int, n: int) -> dict[int, EpisodeBatch]:
        """Runs collected on the actors, each step's actions chosen by the policy on the driver."""
        ray = self._ray
        todo = collections.deque(_runs(first, n, len(self._alive)))
        idle = list(self._alive)
        running: dict = {}
        done: dict[int, EpisodeBatch] = {}
        try:
            while todo or running:
                while todo and idle:
                    actor, run = idle.pop(0), todo.popleft()
                    running[self._actors[actor].start.remote(*run)] = (actor, run)
                refs = list(running)
                ready, _ = ray.wait(refs, num_returns=len(refs), timeout=self.timeout_s)
                if len(ready) < len(refs):
                    self._time_out([running[r] for r in refs if r not in ready], "a step")
                asking = []
                for ref in refs:
                    actor, run = running.pop(ref)
                    try:
                        message = ray.get(ref)
                    except ray.exceptions.RayActorError:
                        self._lose(actor, run, todo, done, first, n)
                        idle = [a for a in idle if a in self._alive]
                        continue
                    if message[0] == "done":
                        done[run[0]] = message[1]
                        idle.append(actor)
                    else:
                        asking.append((actor, run, message[1], message[2]))
                if asking:
                    for (actor, run), answer in zip([a[:2] for a in asking], self._answer(asking)):
                        running[self._actors[actor].act.remote(answer)] = (actor, run)
        except BaseException:
            if not self._closed:
                self._abandon()
            raise
        return done

    def _answer(self, asking: list) -> list:
        """The policy called once on every asking actor's observations; each actor's rows of its output."""
        counts = [len(a[2]) for a in asking]
        obs = np.concatenate([a[2] for a in asking])
        masks = None if asking[0][3] is None else np.concatenate([a[3] for a in asking])
        try:
            result = self._policy(obs, masks)
        except Exception as exc:
            raise PolicyError(f"policy raised {type(exc).__name__} on the driver: {exc}") from exc
        parts = result if isinstance(result, tuple) else (result,)
        arrays = []
        for k, part in enumerate(parts):
            arr = np.asarray(part)
            if arr.ndim == 0 or arr.shape[0] != len(obs):
                what = ("actions", "log_probs", "values")[k] if k < 3 else f"item {k}"
                raise ValueError(f"policy {what} must have {len(obs)} rows (one per running slot of every "
                                 f"actor), but got shape {arr.shape}")
            arrays.append(arr)
        bounds = np.cumsum([0] + counts)
        answers = []
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            rows = tuple(a[lo:hi] for a in arrays)
            answers.append(rows if isinstance(result, tuple) else rows[0])
        return answers
