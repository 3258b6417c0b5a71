"""``EpisodeCollector``: whole episodes from a pool of env slots of one batched engine.

The slots ("workers") of one ``Engine`` are stepped together with ``step_no_reset``. When a
slot's episode ends (terminated, truncated, or ``max_steps`` reached) the slot takes the next
job at once: job ``j`` is reset with seed ``seed + j`` (DESIGN.md, "Per-env RNG"), so it plays
exactly the episode of a single env seeded ``seed + j``. Episodes are written straight into
preallocated ``[B, K, ...]`` arrays in job order, so a batch is bit-identical whatever the
number of workers or Numba threads. The layout follows the episode buffers of EnvPool's and
Sample Factory's collectors: one row per episode, padded after its end.

Between two policy calls all the bookkeeping (stepping the running slots, writing the step
into the episode arrays, starting the next jobs in the slots that finished, packing the
running slots' observations for the policy) is one call of a generated kernel
(``vecsim/engine/templates/collect_step.py``); an in-kernel policy plays the whole batch in
one call (``vecsim/engine/templates/collect.py``).
"""

from __future__ import annotations

import sys
import threading
import weakref

import numba
import numpy as np
from gymnasium import spaces

import vecsim
from vecsim.core.rng import MAX_SEED
from vecsim.core.scratch import numba_threads
from vecsim.engine.chooser import KernelChooser, adapt_enabled
from vecsim.engine.codegen import load_collect_kernel, load_collect_step_kernels
from vecsim.engine.engine import _is_int, check_seed, parallel_min_envs
from vecsim.engine.opponents import refuse_callable_opponent
from vecsim.core.scratch import start_thread_pool

__all__ = ["EpisodeBatch", "EpisodeCollector", "PolicyError"]

#: Seconds ``close()`` waits for a background collection to stop.
JOIN_TIMEOUT_S = 30.0
#: Steps one kernel call plays for action-array and random policies (no Python in between);
#: ``close()`` and a new request stop a background collection between two calls.
STEPS_PER_CALL = 64
#: Without prefetch, the output arrays of this many recent batches are kept for reuse by a
#: later batch of the same size once nothing references them.
SPARE_SETS = 2


class PolicyError(RuntimeError):
    """The policy raised; the original exception is chained as ``__cause__``."""


class _Cancelled(Exception):
    """A background collection was stopped by ``close()`` or a new request."""


class EpisodeBatch:
    """``B`` finished episodes, one row each, padded to ``K = max_steps`` steps.

    Row ``b`` holds job ``job_ids[b]``. Steps ``t >= lengths[b]`` are padding: zeros in every
    array, and ``dones[b, t] = True``.

    Attributes
    ----------
    observations : ndarray, shape (B, K, obs_dim), the game's observation dtype
        The observation at each step *before* the action (the final observation is not stored).
    actions : ndarray, shape (B, K) int64 for Discrete, (B, K, act_dim) of the Box dtype
    rewards : ndarray of float64 (float32 with precision="float32"), shape (B, K)
    dones : ndarray of bool, shape (B, K)
        True at the episode's last step ``lengths[b] - 1`` and on the padding.
    terminated : ndarray of bool, shape (B,)
        The episode ended in a terminal state (False: truncated by the env or by ``max_steps``).
    lengths : ndarray of int64, shape (B,)
        Steps played, ``1 <= lengths <= K``.
    job_ids : ndarray of int64, shape (B,)
    seeds : ndarray of int64, shape (B,)
        Reset seed of each episode, ``collector seed + job_id``.
    action_masks : ndarray of bool, shape (B, K, n_actions), or None
        Legal actions at each step; ``None`` for games whose actions are always legal.
    log_probs : ndarray of float64, shape (B, K), or None
        As returned by the policy; ``None`` when it returns actions only.
    values : ndarray of float64, shape (B, K), or None
        As returned by the policy; ``None`` when it returns actions only.
    """

    __slots__ = ("observations", "actions", "rewards", "dones", "terminated", "lengths", "job_ids", "seeds",
                 "action_masks", "log_probs", "values")

    def __init__(self, observations, actions, rewards, dones, terminated, lengths, job_ids, seeds,
                 action_masks=None, log_probs=None, values=None):
        self.observations = observations
        self.actions = actions
        self.rewards = rewards
        self.dones = dones
        self.terminated = terminated
        self.lengths = lengths
        self.job_ids = job_ids
        self.seeds = seeds
        self.action_masks = action_masks
        self.log_probs = log_probs
        self.values = values

    @property
    def num_episodes(self) -> int:
        return self.lengths.shape[0]

    def __len__(self) -> int:
        return self.num_episodes

    def _rows(self, rows: slice) -> "EpisodeBatch":
        return EpisodeBatch(*(None if a is None else a[rows] for a in (getattr(self, n) for n in self.__slots__)))

    def __repr__(self) -> str:
        return (f"EpisodeBatch(num_episodes={self.num_episodes}, max_steps={self.rewards.shape[1]}, "
                f"steps={int(self.lengths.sum())})")


class _Slots:
    """Output arrays of one batch, reused across collections when prefetching."""

    def __init__(self, n: int, k: int, engine, act_shape, act_dtype):
        self.n = n
        self.batch = EpisodeBatch(
            observations=np.zeros((n, k, engine.obs_dim), dtype=engine.obs_dtype),
            actions=np.zeros((n, k, *act_shape), dtype=act_dtype),
            rewards=np.zeros((n, k), dtype=engine.rewards.dtype),
            dones=np.ones((n, k), dtype=np.bool_),
            terminated=np.zeros(n, dtype=np.bool_),
            lengths=np.zeros(n, dtype=np.int64),
            job_ids=np.zeros(n, dtype=np.int64),
            seeds=np.zeros(n, dtype=np.int64),
            action_masks=np.zeros((n, k, engine.n_mask), dtype=np.bool_) if engine.n_mask else None,
        )
        # np.zeros maps zeroed pages lazily: a fresh set is already clear, and not filling it
        # again keeps the padding's pages untouched (faster, and not resident in memory).
        self._fresh = True
        #: The last collection into these arrays finished: only steps ``t < lengths`` were written.
        self.complete = False
        self._extras = None  # log_probs and values arrays of an earlier batch, for reuse

    def clear(self, first_job: int, seed: int) -> None:
        """Make the arrays ready for a collection of jobs ``first_job ..``.

        After a complete collection nothing is cleared here: ``lengths`` keeps each row's
        last length, and the kernels put back to padding only the steps beyond the new
        episode's end that the old one wrote (for long episodes, none). After an interrupted
        one every array is reset.
        """
        b = self.batch
        if not self._fresh and not self.complete:
            for arr in (b.observations, b.actions, b.rewards):
                arr.fill(0)
            b.dones.fill(True)
            if b.action_masks is not None:
                b.action_masks.fill(False)
            b.lengths.fill(0)
        b.terminated.fill(False)
        self._fresh = False
        self.complete = False
        if b.log_probs is not None:  # the batch has them only if its policy returns them
            self._extras = (b.log_probs, b.values)
            b.log_probs = b.values = None
        b.job_ids[:] = np.arange(first_job, first_job + self.n)
        b.seeds[:] = b.job_ids + seed

    def add_extras(self, k: int) -> None:
        """Give the batch zeroed ``log_probs`` and ``values`` arrays, ``(n, k)`` float64."""
        if self._extras is None:
            self.batch.log_probs, self.batch.values = (np.zeros((self.n, k), dtype=np.float64) for _ in range(2))
            return
        for arr in self._extras:
            arr.fill(0)
        (self.batch.log_probs, self.batch.values), self._extras = self._extras, None


#: Stand-in for the masks of a game without masks (kernels take an array, never None).
_NO_MASKS = np.zeros((0, 0, 0), dtype=np.bool_)


def _ref_counts(batch: EpisodeBatch) -> tuple[int, int, int]:
    """(references to ``batch``, most references to one of its arrays, weak references to them)."""
    most = weak = 0
    for name in EpisodeBatch.__slots__:
        arr = getattr(batch, name)
        if arr is not None:
            most = max(most, sys.getrefcount(arr))
            weak += weakref.getweakrefcount(arr)
    return sys.getrefcount(batch), most, weak


def _base_refs() -> tuple[int, int, int] | None:
    """``_ref_counts`` of a batch that only its holder references (as ``_Slots`` holds one).

    Only CPython's reference counts say when nobody else can see a batch; elsewhere
    batches are never reused.
    """
    if sys.implementation.name != "cpython":
        return None
    holder = _Slots.__new__(_Slots)
    holder.batch = EpisodeBatch(*(np.zeros(1) for _ in EpisodeBatch.__slots__))
    return _ref_counts(holder.batch)


_BASE_REFS = _base_refs()


def _unreferenced(slots: _Slots) -> bool:
    """Whether nothing but ``slots`` references its batch or any array of it (or a view of one:
    a view references its base), so that reusing the arrays cannot change what a caller sees."""
    return _BASE_REFS is not None and all(n <= base for n, base in zip(_ref_counts(slots.batch), _BASE_REFS))


class _Pending:
    """A background collection of ``n`` jobs from ``first_job`` into ``slots``."""

    def __init__(self, n: int, first_job: int, slots: _Slots):
        self.n = n
        self.first_job = first_job
        self.slots = slots
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None


class EpisodeCollector:
    """Collect whole episodes with ``num_workers`` env slots of one batched engine.

    Parameters
    ----------
    env_id : str
        A game id, as for ``vecsim.make``.
    num_workers : int
        Env slots stepped together (>= 1). Results do not depend on it.
    max_steps : int
        ``K``: an episode is cut after this many steps (>= 1); it is the padded length.
    policy : callable, numba @njit function, ndarray or "random"
        - an ``@njit`` function ``policy(s, p, i, rng) -> action`` over the game's state (as a
          game's ``step_env`` sees it; e.g. ``vecsim.games.tetris.agent.policy``), defined at the top
          level of an importable module: the whole collection then runs inside one cached
          kernel, policy included, with no Python per step (the fastest path; Discrete actions).
          It may draw from env ``i``'s stream ``rng``; an illegal action raises ``ValueError``.
        - ``policy(obs, masks) -> actions`` or ``-> (actions, log_probs, values)``: called
          once per step with the observations ``(n_running, obs_dim)`` of every running slot
          (in slot order) and their legal-action masks ``(n_running, n_actions)`` bool
          (``None`` for games without masks). Both are views of the collector's buffers,
          overwritten by the next step: copy what the policy keeps. ``actions``:
          ``(n_running,)`` integers for Discrete, ``(n_running, act_dim)`` numbers for Box;
          ``log_probs`` and ``values``: ``(n_running,)`` numbers. Every action is checked
          (range, finiteness, mask) before any slot is stepped.
        - an ndarray of shape ``(num_jobs, max_steps)`` (Discrete) or ``(num_jobs, max_steps,
          act_dim)`` (Box): the action of job ``j`` at step ``t`` is ``policy[j, t]`` (only the
          steps played are read and checked).
        - ``"random"``: uniform over the legal actions (Box: over the bounds, infinite bounds
          as +-1), drawn inside the kernel from a stream of job ``j``'s own, keyed by its seed
          ``seed + j`` and apart from the env's stream (``vecsim.core.rng``): the same actions
          whatever the number of workers or threads.
    seed : int
        Job ``j`` is reset with seed ``seed + j``.
    prefetch : bool
        Collect the next batch of the same size in a background thread while the caller uses
        the current one (the kernels release the GIL). The background collection runs on one
        Numba thread fewer than the caller's (``numba.set_num_threads``; serially on two),
        leaving a core to the caller. Two sets of output arrays alternate:
        the arrays of a batch stay valid until the next call to ``request_episodes`` (which
        returns the prefetched batch and starts writing the following one into the arrays of
        the one before). Without prefetch every batch has its own arrays: the arrays of one of
        the last two batches are reused only when nothing references them any more (neither
        the batch, nor an array of it, nor a view of one), so that a loop ``batch =
        collector.request_episodes(B)`` alternates between two sets of arrays.
    **env_kwargs
        Passed to ``vecsim.make`` (``precision``, game constants, ``max_episode_steps``, which
        defaults to ``None`` here: only ``max_steps`` cuts episodes). ``parallel``
        (``"auto"``, ``True``, ``False``) also chooses the collection kernels: ``"auto"`` runs
        a step in parallel when at least the tuning table's ``collect`` size (else its engine
        size; ``vecsim.engine.tuning``) of slots, for the engine's precision, are running and
        more than one Numba thread is available, and times those steps to run them serially
        while that is faster (other work keeping the cores busy; ``vecsim.engine.chooser``). Results
        do not depend on it.

    Examples
    --------
    >>> with EpisodeCollector("CartPole-v1", 64, 500, "random", seed=0) as collector:
    ...     batch = collector.request_episodes(256)
    >>> batch.observations.shape
    (256, 500, 4)
    """

    def __init__(self, env_id: str, num_workers: int, max_steps: int, policy, seed: int, *,
                 prefetch: bool = False, **env_kwargs):
        self._closed = True  # until construction succeeds: close() and __del__ stay safe
        for name, value in (("num_workers", num_workers), ("max_steps", max_steps)):
            if not _is_int(value):
                raise TypeError(f"{name} must be an int, but got {name}={value!r}")
            if value < 1:
                raise ValueError(f"{name} must be >= 1, but got {name}={value}")
        self.seed = check_seed(seed)
        if not isinstance(prefetch, (bool, np.bool_)):
            raise TypeError(f"prefetch must be a bool, but got prefetch={prefetch!r}")
        self.num_workers = int(num_workers)
        self.max_steps = int(max_steps)
        self.prefetch = bool(prefetch)
        refuse_callable_opponent(vecsim.resolve(env_id), env_kwargs, "EpisodeCollector")
        if env_kwargs.get("mask_format", "bool") != "bool":
            raise ValueError(f"EpisodeCollector records and chooses from bool action masks, but got "
                             f"mask_format={env_kwargs['mask_format']!r}; leave mask_format out")
        kwargs = {"max_episode_steps": None, **env_kwargs}
        self.engine = vecsim.make(env_id, self.num_workers, **kwargs)
        space = self.engine.single_action_space
        self.single_action_space = space
        self.single_observation_space = self.engine.single_observation_space
        self._discrete = isinstance(space, spaces.Discrete)
        self._act_shape = () if self._discrete else tuple(space.shape)
        self._act_dtype = np.dtype(np.int64) if self._discrete else np.dtype(space.dtype)
        self._policy_kind, self._policy = self._check_policy(policy)
        self._setup_kernels(kwargs.get("parallel", "auto"))
        self._next_job = 0
        self._sets: list[_Slots] = []
        self._spares: list[_Slots] = []  # most recently used last
        self._turn = 0
        self._pending: _Pending | None = None
        self._streaming = False
        self._closed = False

    def _setup_kernels(self, parallel) -> None:
        """Load the per-step kernels and allocate their scratch buffers (one set: one collection at a time)."""
        eng, w = self.engine, self.num_workers
        self._kernels = kern = load_collect_step_kernels(eng.game, eng.precision, self._discrete,
                                                         eng.kernel_functions)
        self._parallel = parallel
        # Many-thread thresholds (a calibration's for this thread count where there is one): on
        # one thread these kernels stay serial (see _run).
        threshold = parallel_min_envs(eng.game, w, eng.precision, threads=max(2, numba_threads()),
                                      collect=True)
        self._parallel_min = sys.maxsize if threshold is None else threshold
        # As the engine's (vecsim.engine.chooser): steps that the batch size gives to the parallel
        # kernel run serially while that is faster (other work keeping the cores busy).
        self._chooser = (KernelChooser() if parallel == "auto" and threshold is not None and w >= threshold
                         and adapt_enabled() else None)
        self._ctl = np.zeros(kern.N_CTL, dtype=np.int64)
        self._job_of = np.full(w, -1, dtype=np.int64)
        self._step_of = np.zeros(w, dtype=np.int64)
        self._run_slots = np.zeros(w, dtype=np.int64)
        self._fin = np.zeros(w, dtype=np.bool_)
        self._idle = np.ones(w, dtype=np.bool_)
        self._r_of = np.zeros(w, dtype=np.int64)
        self._starts = np.zeros(w, dtype=np.int64)
        self._pol_rng = np.zeros((w, 2), dtype=np.uint64)
        self._pol_obs = np.zeros((w, eng.obs_dim), dtype=eng.obs_dtype)
        self._pol_masks = np.zeros((w, eng.n_mask), dtype=np.bool_)
        # Stand-ins for unused arguments, of the types the kernels are compiled for.
        self._no_given = np.zeros((0, *self._act_shape), dtype=self._act_dtype)
        self._no_table = np.zeros((0, 0, *self._act_shape), dtype=self._act_dtype)
        self._no_extra = np.zeros(0, dtype=np.float64)
        self._no_extra_out = np.zeros((0, 0), dtype=np.float64)
        space = self.single_action_space
        if self._discrete:
            self._n_actions = int(space.n)
            self._low = self._high = np.zeros(0, dtype=np.float64)
        else:
            self._n_actions = 0
            self._low = np.where(np.isfinite(space.low), space.low, -1.0).astype(np.float64)
            self._high = np.where(np.isfinite(space.high), space.high, 1.0).astype(np.float64)

    # -- validation ----------------------------------------------------------------------
    def _check_policy(self, policy):
        if isinstance(policy, str):
            if policy != "random":
                raise ValueError(f"policy must be a callable, an ndarray of actions or 'random', "
                                 f"but got policy={policy!r}")
            return "random", None
        if isinstance(policy, np.ndarray):
            want = (self.max_steps, *self._act_shape)
            if policy.ndim != 1 + len(want) or policy.shape[1:] != want:
                raise ValueError(f"an action array policy must have shape (num_jobs, {', '.join(map(str, want))}), "
                                 f"but got shape {policy.shape}")
            if policy.dtype.kind not in ("iu" if self._discrete else "fiu"):
                raise TypeError(f"an action array policy for {self.single_action_space} must have "
                                f"{'an integer' if self._discrete else 'a numeric'} dtype, but got dtype {policy.dtype}")
            return "array", policy
        from numba.core.registry import CPUDispatcher

        if isinstance(policy, CPUDispatcher):
            if not self._discrete:
                raise TypeError(f"in-kernel policies choose Discrete actions; {self.single_action_space} is not")
            return "jitted", load_collect_kernel(self.engine.game, self.engine.precision, policy,
                                                  self.engine.kernel_functions)
        if callable(policy):
            return "callable", policy
        raise TypeError(f"policy must be a batched callable policy(obs, masks), an @njit policy(s, p, i, rng), "
                        f"an ndarray of actions or 'random', but got {type(policy).__name__}")

    @staticmethod
    def _check_count(num_episodes) -> int:
        if not _is_int(num_episodes):
            raise TypeError(f"num_episodes must be an int, but got num_episodes={num_episodes!r}")
        if num_episodes < 1:
            raise ValueError(f"num_episodes must be >= 1, but got num_episodes={num_episodes}")
        return int(num_episodes)

    def _check_jobs(self, first_job: int, n: int) -> None:
        if self.seed + first_job + n - 1 > MAX_SEED:
            raise ValueError(f"job {first_job + n - 1} would need seed {self.seed + first_job + n - 1}, "
                             f"above the largest seed {MAX_SEED}")
        if self._policy_kind == "array" and first_job + n > self._policy.shape[0]:
            raise ValueError(f"the action array policy holds {self._policy.shape[0]} jobs, but jobs up to "
                             f"{first_job + n - 1} were requested")

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this EpisodeCollector is closed")
        if self._streaming:
            raise RuntimeError("a stream() of this EpisodeCollector is still open; exhaust or close it first")

    # -- the collection loop -------------------------------------------------------------
    def _where(self, first_job: int, rows) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(slots, jobs, steps) of the running slots at positions ``rows`` of the running list."""
        slots = self._run_slots[rows]
        return slots, self._job_of[slots] + first_job, self._step_of[slots]

    def _ask_policy(self, first_job: int, out: EpisodeBatch, extras):
        """Call the Python policy on the running slots; its checked output for the kernel.

        Returns ``(actions, log_probs, values, raw, has_extras)``: arrays of the kernel's
        dtypes (the ``log_probs``/``values`` stand-ins when the policy returns actions only),
        the actions as returned (for error messages), and whether it returned log-probs.
        """
        eng, n_run = self.engine, int(self._ctl[self._kernels.N_RUN])
        if n_run == self.num_workers:  # every slot running: the engine's buffers, no copy
            obs, masks = eng.obs, eng.masks
        else:
            obs, masks = self._pol_obs[:n_run], self._pol_masks[:n_run]
        try:
            result = self._policy(obs, masks if eng.n_mask else None)
        except Exception as exc:
            _, jobs, steps = self._where(first_job, slice(0, n_run))
            raise PolicyError(f"policy raised {type(exc).__name__} at steps {int(steps.min())}..{int(steps.max())} "
                              f"of jobs {int(jobs.min())}..{int(jobs.max())}: {exc}") from exc
        log_probs = values = None
        if isinstance(result, tuple):
            if len(result) != 3:
                raise ValueError(f"policy must return actions or (actions, log_probs, values), "
                                 f"but returned a tuple of {len(result)} items")
            result, log_probs, values = result
        if extras is not None and extras != (log_probs is not None):
            raise ValueError("policy must return (actions, log_probs, values) at every step or at none")
        raw, actions = self._check_actions(result, first_job, n_run)
        if log_probs is None:
            return actions, self._no_extra, self._no_extra, raw, False
        log_probs = self._check_extra("log_probs", log_probs, first_job, n_run)
        values = self._check_extra("values", values, first_job, n_run)
        return actions, log_probs, values, raw, True

    def _check_actions(self, actions, first_job: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(actions as returned, as a C-contiguous writable array of the kernel's dtype).

        Shape and dtype are checked here, values in the kernel before any slot is stepped.
        """
        if type(actions) is np.ndarray:
            arr = actions
        else:
            try:
                arr = np.asarray(actions)
            except Exception as exc:
                raise TypeError(f"policy actions must be array-like, but got {type(actions).__name__}: {exc}") from None
        want = (n, *self._act_shape)
        if arr.shape != want:
            slots, jobs, _ = self._where(first_job, slice(0, min(n, 8)))
            raise ValueError(f"policy actions must have shape {want} for {n} running slots "
                             f"(slots {slots.tolist()}, jobs {jobs.tolist()}), but got shape {arr.shape}")
        if arr.dtype.kind not in ("iu" if self._discrete else "fiu"):
            raise TypeError(f"policy actions for {self.single_action_space} must be "
                            f"{'integers' if self._discrete else 'numbers'}, but got dtype {arr.dtype}")
        if arr.dtype == self._act_dtype and arr.flags.c_contiguous and arr.flags.writeable:
            return arr, arr
        # A cast wraps or overflows a value it cannot hold; the kernel then rejects it and the
        # error quotes the value as returned.
        with np.errstate(over="ignore", invalid="ignore"):
            return arr, np.array(arr, dtype=self._act_dtype, order="C")

    def _check_extra(self, name, value, first_job: int, n: int) -> np.ndarray:
        try:
            arr = np.asarray(value)
        except Exception as exc:
            raise TypeError(f"policy {name} must be array-like, but got {type(value).__name__}: {exc}") from None
        if arr.shape != (n,):
            _, jobs, _ = self._where(first_job, slice(0, min(n, 8)))
            raise ValueError(f"policy {name} must have shape ({n},), but got shape {arr.shape} "
                             f"(jobs {jobs.tolist()})")
        if arr.dtype.kind not in "fiu":
            raise TypeError(f"policy {name} must be numbers, but got dtype {arr.dtype}")
        if arr.dtype == np.float64 and arr.flags.c_contiguous and arr.flags.writeable:
            return arr
        return np.array(arr, dtype=np.float64, order="C")

    def _raise_bad_action(self, first_job: int, raw) -> None:
        """Report the action the kernel refused (nothing of that step was played)."""
        kern = self._kernels
        r = int(self._ctl[kern.BAD_INDEX])
        slot, job, step = (int(v[0]) for v in self._where(first_job, slice(r, r + 1)))
        where = f"job {job} (slot {slot}) at step {step}"
        if self._ctl[kern.STATUS] == kern.NO_LEGAL_ACTION:
            raise ValueError(f"no legal action for {where}")
        if self._policy_kind == "array":
            value = self._policy[job, step]
            where += f" (action array policy[{job}, {step}])"
        else:
            value = raw[r]
        if self._discrete:
            raise ValueError(f"policy action {value.item()!r} of {where} is illegal for {self.single_action_space}"
                             f"{' under its action mask' if self.engine.n_mask else ''}")
        raise ValueError(f"policy action {np.asarray(value).tolist()!r} of {where} is not finite in {self._act_dtype}")

    def _run_jitted(self, slots: _Slots, first_job: int):
        """Play jobs ``first_job ..`` into ``slots`` in one kernel call with the in-kernel policy."""
        eng, out, n = self.engine, slots.batch, slots.n
        eng.state_written()  # the kernel steps the engine's state in its own order
        masks_out = out.action_masks if out.action_masks is not None else _NO_MASKS
        bad = np.zeros((self.num_workers, 2), dtype=np.int64)
        args = (out.seeds, self.max_steps, eng.max_steps_for_kernels, out.observations, out.actions, out.rewards, out.dones,
                out.terminated, out.lengths, masks_out, bad, eng.action_buffer, eng.obs, eng.masks, eng.events, eng.rng,
                eng.kernel_params) + tuple(eng.state)
        if "collect" in self._policy.PADDED:
            args += (np.zeros(1),)
        start_thread_pool()  # a parallel kernel
        self._policy.collect(*args)
        failed = bad[:, 0] > 0
        if failed.any():
            slot = int(np.flatnonzero(failed)[0])
            job, action = int(bad[slot, 0]) - 1, int(bad[slot, 1])
            step = int(out.lengths[job])  # the kernel records the steps played before the bad one
            raise ValueError(f"in-kernel policy action {action} of job {first_job + job} (slot {slot}) at step "
                             f"{step} is illegal for {self.single_action_space}"
                             f"{' under its action mask' if eng.n_mask else ''}")
        slots.complete = True
        yield np.arange(n)

    def _run(self, slots: _Slots, first_job: int, stop: threading.Event | None = None,
             steps_per_call: int = STEPS_PER_CALL):
        """Play jobs ``first_job ..`` into ``slots``; yields the local indices of the jobs that finished.

        Python policies are called once per step; between two calls one kernel call does the
        rest. Action-array and random policies play ``steps_per_call`` steps per kernel call.
        """
        kern = self._kernels
        slots.clear(first_job, self.seed)
        if self._policy_kind == "jitted":
            yield from self._run_jitted(slots, first_job)
            return
        eng, out, n, w = self.engine, slots.batch, slots.n, self.num_workers
        eng.state_written()  # the kernels step the engine's state in their own order
        ctl = self._ctl
        ctl[:] = 0
        self._job_of.fill(-1)
        self._idle.fill(True)
        self._fin.fill(False)
        ended = np.zeros(n, dtype=np.int64)
        given, log_probs, values, raw = self._no_given, self._no_extra, self._no_extra, None
        table = self._no_table
        if self._policy_kind == "callable":
            source, n_iters = kern.SOURCE_POLICY, 1
        elif self._policy_kind == "array":
            source, n_iters = kern.SOURCE_TABLE, steps_per_call
            with np.errstate(over="ignore", invalid="ignore"):  # the kernel rejects what a cast spoiled
                table = np.array(self._policy[first_job:first_job + n], dtype=self._act_dtype, order="C")
        else:
            source, n_iters = kern.SOURCE_RANDOM, steps_per_call
        head = (self.max_steps, eng.max_steps_for_kernels, self._n_actions)
        extras = None  # whether the policy returns (actions, log_probs, values)

        def packed():
            # Reused arrays may hold log-probs of an earlier batch: written only when this one has them.
            lp_out = out.log_probs if extras else self._no_extra_out
            val_out = out.values if extras else self._no_extra_out
            args = (table, self._low, self._high, ctl, self._job_of, self._step_of, self._run_slots, self._fin,
                    self._idle, self._r_of, self._starts, ended, out.seeds, self._pol_rng, out.observations,
                    out.actions, out.rewards, out.dones, out.terminated, out.lengths,
                    out.action_masks if out.action_masks is not None else _NO_MASKS, lp_out, val_out,
                    self._pol_obs, self._pol_masks, eng.action_buffer, eng.narrowed_action_buffer, eng.obs,
                    eng.masks, eng.events, eng.rng, eng.elapsed, eng.rewards, eng.terminals, eng.truncations,
                    eng.needs_reset, eng.kernel_params) + tuple(eng.state)
            return args + ((np.zeros(1),) if "advance_serial" in kern.PADDED else ())

        tail = packed()
        ask = source == kern.SOURCE_POLICY
        N_RUN, N_ENDED, FINISHED, STATUS = kern.N_RUN, kern.N_ENDED, kern.FINISHED, kern.STATUS
        serial, parallel = kern.advance_serial, kern.advance_parallel
        chooser = None
        if self._parallel != "auto":
            serial = parallel = parallel if self._parallel else serial
        elif numba_threads() < 2:
            parallel = serial
        else:
            chooser = self._chooser
        if parallel is kern.advance_parallel and (serial is parallel or w >= self._parallel_min):
            start_thread_pool()
        while True:
            if stop is not None and stop.is_set():
                raise _Cancelled
            running = int(ctl[N_RUN])
            if ask and running:
                given, log_probs, values, raw, has_extras = self._ask_policy(first_job, out, extras)
                if extras is None:
                    extras = has_extras
                    if extras:
                        slots.add_extras(self.max_steps)
                    tail = packed()
            slots_run = running or min(w, n)
            if chooser is not None and slots_run >= self._parallel_min:
                clock = chooser.clock
                start = clock()
                (parallel if chooser.parallel else serial)(source, n_iters, *head, given, log_probs, values, *tail)
                chooser.observe(clock() - start, slots_run * n_iters)
            else:
                advance = parallel if slots_run >= self._parallel_min else serial
                advance(source, n_iters, *head, given, log_probs, values, *tail)
            if ctl[STATUS]:
                self._raise_bad_action(first_job, raw)
            if ctl[N_ENDED]:
                yield ended[:ctl[N_ENDED]].copy()
            if ctl[FINISHED] >= n:
                break
        slots.complete = True

    # -- prefetching ---------------------------------------------------------------------
    def _slot_set(self, n: int) -> _Slots:
        if not self.prefetch:
            # The arrays of one of the last SPARE_SETS batches that nothing references any more:
            # new memory costs a page fault for every page the batch writes, a large share of
            # a batch's time. Two sets serve the usual loop, ``batch = collector.request_episodes(B)``,
            # in which the previous batch is still referenced while the next one is collected.
            spares = [s for s in self._spares if s.n == n]
            for spare in spares:
                if _unreferenced(spare):
                    self._spares = [s for s in spares if s is not spare] + [spare]
                    return spare
            spare = _Slots(n, self.max_steps, self.engine, self._act_shape, self._act_dtype)
            self._spares = (spares + [spare])[-SPARE_SETS:]
            return spare
        if not self._sets or self._sets[0].n != n:
            self._sets = [_Slots(n, self.max_steps, self.engine, self._act_shape, self._act_dtype) for _ in range(2)]
            self._turn = 0
        slots = self._sets[self._turn]
        self._turn ^= 1
        return slots

    def _start_prefetch(self, n: int) -> None:
        first = self._next_job
        try:
            self._check_jobs(first, n)
        except ValueError:
            return  # the next request reports it
        pending = _Pending(n, first, self._slot_set(n))
        threads = max(1, numba_threads() - 1)
        start_thread_pool()  # here: set_num_threads in the worker would start it there

        def work():
            try:
                # The caller trains while this collects: leave it one of Numba's threads (the
                # setting is the thread's own). On two threads the collection runs serially,
                # which beats a parallel one beside a busy caller.
                numba.set_num_threads(threads)
                for _ in self._run(pending.slots, pending.first_job, pending.stop):
                    pass
            except _Cancelled:
                pass
            except BaseException as exc:  # handed to the caller by the next request
                pending.error = exc

        pending.thread = threading.Thread(target=work, name="vecsim-collector-prefetch", daemon=True)
        self._pending = pending
        pending.thread.start()

    def _cancel_pending(self, closing: bool = False) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.stop.set()
            pending.thread.join(JOIN_TIMEOUT_S)
            # The thread stops at its next step; until then it owns the engine.
            if pending.thread.is_alive() and not closing:
                self.close()
                raise RuntimeError(f"the background collection did not stop within {JOIN_TIMEOUT_S} s "
                                   f"(a policy call still running?); the collector is closed")

    # -- public API ----------------------------------------------------------------------
    def request_episodes(self, num_episodes: int, *, first_job: int | None = None) -> EpisodeBatch:
        """Collect the next ``num_episodes`` jobs and return them in job order.

        Parameters
        ----------
        num_episodes : int
            ``B`` (>= 1).
        first_job : int, optional
            Collect jobs ``first_job .. first_job + B - 1`` (>= 0) instead of the next ones;
            later requests go on from there. A distributed collector hands a slice of its
            jobs to each of its collectors this way.

        Returns
        -------
        EpisodeBatch
            Arrays ``[B, max_steps, ...]``; with ``prefetch=True`` they are valid until the
            next call to ``request_episodes``.

        Raises
        ------
        PolicyError
            The policy raised (chained). The jobs are not consumed: the next call retries them.
        ValueError, TypeError
            A bad ``num_episodes``, or policy output of the wrong shape or dtype, or an illegal
            action (naming the slot, job and value).
        RuntimeError
            After ``close()``.
        """
        self._check_open()
        n = self._check_count(num_episodes)
        if first_job is not None:
            if not _is_int(first_job):
                raise TypeError(f"first_job must be an int, but got first_job={first_job!r}")
            if first_job < 0:
                raise ValueError(f"first_job must be >= 0, but got first_job={first_job}")
            self._next_job = int(first_job)
        pending = self._pending
        batch = None
        if pending is not None and pending.n == n and pending.first_job == self._next_job:
            self._pending = None
            pending.thread.join()
            if pending.error is not None:
                raise pending.error
            batch = pending.slots.batch
        else:
            self._cancel_pending()
            self._check_jobs(self._next_job, n)
            slots = self._slot_set(n)
            for _ in self._run(slots, self._next_job):
                pass
            batch = slots.batch
        self._next_job += n
        if self.prefetch:
            self._start_prefetch(n)
        return batch

    def stream(self, num_episodes: int):
        """Collect the next ``num_episodes`` jobs, yielding each as soon as it and every earlier job finished.

        A discarded prefetched batch is collected again. While the generator is open, other
        calls raise ``RuntimeError``; closing it early skips the jobs it did not yield.

        Parameters
        ----------
        num_episodes : int

        Yields
        ------
        EpisodeBatch
            One episode (``B = 1``), views into the stream's own arrays, in job order.
        """
        self._check_open()
        n = self._check_count(num_episodes)
        self._cancel_pending()
        self._check_jobs(self._next_job, n)
        first = self._next_job
        self._next_job += n
        return self._stream(n, first)

    def _stream(self, n: int, first: int):
        self._check_open()
        self._cancel_pending()  # a request between stream() and the first next() may have started one
        self._streaming = True
        try:
            slots = _Slots(n, self.max_steps, self.engine, self._act_shape, self._act_dtype)
            done = np.zeros(n, dtype=np.bool_)
            given = 0
            for rows in self._run(slots, first, steps_per_call=1):
                done[rows] = True
                while given < n and done[given]:
                    yield slots.batch._rows(slice(given, given + 1))
                    given += 1
        finally:
            self._streaming = False

    def close(self) -> None:
        """Stop a background collection (joined with a timeout) and release the engine. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._cancel_pending(closing=True)
        self._spares = []
        self.engine.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> "EpisodeCollector":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        return (f"EpisodeCollector({self.engine.game.env_id}, num_workers={self.num_workers}, "
                f"max_steps={self.max_steps}, policy={self._policy_kind}, seed={self.seed}, prefetch={self.prefetch})")
