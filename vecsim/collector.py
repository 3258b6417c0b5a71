"""``EpisodeCollector``: whole episodes from a pool of env slots of one batched engine.

The slots ("workers") of one ``Engine`` are stepped together with ``step_no_reset``. When a
slot's episode ends (terminated, truncated, or ``max_steps`` reached) the slot takes the next
job at once: job ``j`` is reset with seed ``seed + j`` (DESIGN.md, "Per-env RNG"), so it plays
exactly the episode of a single env seeded ``seed + j``. Episodes are written straight into
preallocated ``[B, K, ...]`` arrays in job order, so a batch is bit-identical whatever the
number of workers or Numba threads. The layout follows the episode buffers of EnvPool's and
Sample Factory's collectors: one row per episode, padded after its end.
"""

from __future__ import annotations

import threading

import numpy as np
from gymnasium import spaces

import vecsim
from vecsim._codegen import load_collect_kernel
from vecsim.engine import _is_int, check_seed
from vecsim.rng import MAX_SEED

__all__ = ["EpisodeBatch", "EpisodeCollector", "PolicyError"]

#: Seconds ``close()`` waits for a background collection to stop.
JOIN_TIMEOUT_S = 30.0


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

    def clear(self, first_job: int, seed: int) -> None:
        b = self.batch
        if not self._fresh:
            for arr in (b.observations, b.actions, b.rewards, b.terminated, b.lengths):
                arr.fill(0)
            b.dones.fill(True)
            if b.action_masks is not None:
                b.action_masks.fill(False)
        self._fresh = False
        for arr in (b.log_probs, b.values):  # created by the first step that returns them
            if arr is not None:
                arr.fill(0)
        b.job_ids[:] = np.arange(first_job, first_job + self.n)
        b.seeds[:] = b.job_ids + seed


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
          game's ``step_env`` sees it; e.g. ``games.tetris.agent.policy``), defined at the top
          level of an importable module: the whole collection then runs inside one cached
          kernel, policy included, with no Python per step (the fastest path; Discrete actions).
          It may draw from env ``i``'s stream ``rng``; an illegal action raises ``ValueError``.
        - ``policy(obs, masks) -> actions`` or ``-> (actions, log_probs, values)``: called
          once per step with the observations ``(n_running, obs_dim)`` of every running slot
          and their legal-action masks ``(n_running, n_actions)`` bool (``None`` for games
          without masks). ``actions``: ``(n_running,)`` integers for Discrete, ``(n_running,
          act_dim)`` numbers for Box; ``log_probs`` and ``values``: ``(n_running,)`` numbers.
        - an ndarray of shape ``(num_jobs, max_steps)`` (Discrete) or ``(num_jobs, max_steps,
          act_dim)`` (Box): the action of job ``j`` at step ``t`` is ``policy[j, t]``.
        - ``"random"``: uniform over the legal actions (Box: over the bounds, infinite bounds
          as +-1), drawn from ``np.random.default_rng(seed + j)`` for job ``j``.
    seed : int
        Job ``j`` is reset with seed ``seed + j``.
    prefetch : bool
        Collect the next batch of the same size in a background thread while the caller uses
        the current one (the kernels release the GIL). Two sets of output arrays alternate:
        the arrays of a batch stay valid until the next call to ``request_episodes`` (which
        returns the prefetched batch and starts writing the following one into the arrays of
        the one before). Without prefetch every batch has its own arrays.
    **env_kwargs
        Passed to ``vecsim.make`` (``precision``, game constants, ``max_episode_steps``, which
        defaults to ``None`` here: only ``max_steps`` cuts episodes).

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
        kwargs = {"max_episode_steps": None, **env_kwargs}
        self.engine = vecsim.make(env_id, self.num_workers, **kwargs)
        space = self.engine.single_action_space
        self.single_action_space = space
        self.single_observation_space = self.engine.single_observation_space
        self._discrete = isinstance(space, spaces.Discrete)
        self._act_shape = () if self._discrete else tuple(space.shape)
        self._act_dtype = np.dtype(np.int64) if self._discrete else np.dtype(space.dtype)
        self._policy_kind, self._policy = self._check_policy(policy)
        if self._policy_kind == "random" and not self._discrete:
            self._low = np.where(np.isfinite(space.low), space.low, -1.0).astype(np.float64)
            self._high = np.where(np.isfinite(space.high), space.high, 1.0).astype(np.float64)
        self._next_job = 0
        self._sets: list[_Slots] = []
        self._turn = 0
        self._pending: _Pending | None = None
        self._streaming = False
        self._closed = False

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
            return "jitted", load_collect_kernel(self.engine.game, self.engine.precision, policy)
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
    def _random_table(self, job: int) -> np.ndarray:
        rng = np.random.default_rng(self.seed + job)
        if self._discrete:
            return rng.random(self.max_steps)
        return rng.uniform(self._low, self._high, size=(self.max_steps, *self._act_shape))

    def _policy_actions(self, run, jobs, steps, obs, masks, tables):
        """(actions, log_probs, values) of the running slots; log_probs/values may be None."""
        if self._policy_kind == "array":
            return self._policy[jobs, steps], None, None
        if self._policy_kind == "random":
            u = tables[run, steps]
            if not self._discrete:
                return u, None, None
            if masks is None:
                return np.minimum((u * self.single_action_space.n).astype(np.int64),
                                  self.single_action_space.n - 1), None, None
            counts = masks.sum(axis=1)
            if (counts == 0).any():
                i = int(np.flatnonzero(counts == 0)[0])
                raise ValueError(f"no legal action for job {int(jobs[i])} (slot {int(run[i])}) at step {int(steps[i])}")
            k = np.minimum((u * counts).astype(np.int64), counts - 1)
            return np.argmax(masks.cumsum(axis=1) > k[:, None], axis=1), None, None
        try:
            out = self._policy(obs, masks)
        except Exception as exc:
            raise PolicyError(f"policy raised {type(exc).__name__} at steps {int(steps.min())}..{int(steps.max())} "
                              f"of jobs {int(jobs.min())}..{int(jobs.max())}: {exc}") from exc
        if isinstance(out, tuple):
            if len(out) != 3:
                raise ValueError(f"policy must return actions or (actions, log_probs, values), "
                                 f"but returned a tuple of {len(out)} items")
            return out
        return out, None, None

    def _check_actions(self, actions, run, jobs, masks) -> np.ndarray:
        """The policy's actions as an array of the action dtype; errors name the slot and job."""
        n = run.shape[0]
        try:
            arr = np.asarray(actions)
        except Exception as exc:
            raise TypeError(f"policy actions must be array-like, but got {type(actions).__name__}: {exc}") from None
        want = (n, *self._act_shape)
        if arr.shape != want:
            raise ValueError(f"policy actions must have shape {want} for {n} running slots "
                             f"(slots {run.tolist()[:8]}, jobs {jobs.tolist()[:8]}), but got shape {arr.shape}")
        if self._discrete:
            if arr.dtype.kind not in "iu":
                raise TypeError(f"policy actions for {self.single_action_space} must be integers, "
                                f"but got dtype {arr.dtype}")
            bad = (arr < 0) | (arr >= self.single_action_space.n)
            if masks is not None:
                legal = masks[np.arange(n), np.clip(arr, 0, self.single_action_space.n - 1)]
                bad |= ~legal
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ValueError(f"policy action {arr[i].item()!r} of job {int(jobs[i])} (slot {int(run[i])}) "
                                 f"is illegal for {self.single_action_space}"
                                 f"{' under its action mask' if masks is not None else ''}")
            return arr.astype(np.int64, copy=False)
        if arr.dtype.kind not in "fiu":
            raise TypeError(f"policy actions for {self.single_action_space} must be numbers, but got dtype {arr.dtype}")
        with np.errstate(over="ignore"):
            cast = arr.astype(self._act_dtype, copy=False)
        bad = ~np.isfinite(cast).all(axis=1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"policy action {arr[i].tolist()!r} of job {int(jobs[i])} (slot {int(run[i])}) "
                             f"is not finite in {self._act_dtype}")
        return cast

    @staticmethod
    def _check_extra(name, value, n, jobs) -> np.ndarray:
        try:
            arr = np.asarray(value)
        except Exception as exc:
            raise TypeError(f"policy {name} must be array-like, but got {type(value).__name__}: {exc}") from None
        if arr.shape != (n,):
            raise ValueError(f"policy {name} must have shape ({n},), but got shape {arr.shape} "
                             f"(jobs {jobs.tolist()[:8]})")
        if arr.dtype.kind not in "fiu":
            raise TypeError(f"policy {name} must be numbers, but got dtype {arr.dtype}")
        return arr

    def _run_jitted(self, slots: _Slots, first_job: int):
        """Play jobs ``first_job ..`` into ``slots`` in one kernel call with the in-kernel policy."""
        eng, out, n = self.engine, slots.batch, slots.n
        seeds = self.seed + first_job + np.arange(n, dtype=np.int64)
        masks_out = out.action_masks if out.action_masks is not None else np.zeros((0, 0, 0), dtype=np.bool_)
        bad = np.zeros((self.num_workers, 2), dtype=np.int64)
        args = (seeds, self.max_steps, eng._max_steps, out.observations, out.actions, out.rewards, out.dones,
                out.terminated, out.lengths, masks_out, bad, eng._act_buf, eng.obs, eng.masks, eng.events, eng.rng,
                eng._P) + tuple(eng.state)
        if "collect" in self._policy.PADDED:
            args += (np.zeros(1),)
        self._policy.collect(*args)
        failed = bad[:, 0] > 0
        if failed.any():
            slot = int(np.flatnonzero(failed)[0])
            job, action = int(bad[slot, 0]) - 1, int(bad[slot, 1])
            step = int(out.lengths[job])  # the kernel records the steps played before the bad one
            raise ValueError(f"in-kernel policy action {action} of job {first_job + job} (slot {slot}) at step "
                             f"{step} is illegal for {self.single_action_space}"
                             f"{' under its action mask' if eng.n_mask else ''}")
        yield np.arange(n)

    def _run(self, slots: _Slots, first_job: int, stop: threading.Event | None = None):
        """Play jobs ``first_job ..`` into ``slots``; yields the local indices finished at each step."""
        eng, out, k, w, n = self.engine, slots.batch, self.max_steps, self.num_workers, slots.n
        slots.clear(first_job, self.seed)
        if self._policy_kind == "jitted":
            yield from self._run_jitted(slots, first_job)
            return
        job_of = np.full(w, -1, dtype=np.int64)  # local job index per slot; -1: idle
        step_of = np.zeros(w, dtype=np.int64)
        tables = None
        if self._policy_kind == "random":
            tables = np.zeros((w, k, *self._act_shape), dtype=np.float64)
        started = min(w, n)
        job_of[:started] = np.arange(started)
        # Idle slots keep stepping (step_no_reset steps every env); they get any seed.
        eng.reset(seed=[self.seed + first_job + min(i, n - 1) for i in range(w)])
        if tables is not None:
            for s in range(started):
                tables[s] = self._random_table(first_job + s)
        full = np.zeros((w, *self._act_shape), dtype=self._act_dtype)
        has_masks = eng.n_mask > 0
        extras = None  # whether the policy returns (actions, log_probs, values)
        finished = 0
        while finished < n:
            if stop is not None and stop.is_set():
                raise _Cancelled
            run = np.flatnonzero(job_of >= 0)
            rows, steps = job_of[run], step_of[run]
            jobs = rows + first_job
            obs = eng.obs[run]
            out.observations[rows, steps] = obs
            masks = None
            if has_masks:
                masks = eng.masks[run]
                out.action_masks[rows, steps] = masks
            actions, log_probs, values = self._policy_actions(run, jobs, steps, obs, masks, tables)
            actions = self._check_actions(actions, run, jobs, masks)
            if self._policy_kind == "callable":
                if extras is None:
                    extras = log_probs is not None
                elif extras != (log_probs is not None):
                    raise ValueError("policy must return (actions, log_probs, values) at every step or at none")
                if log_probs is not None:
                    log_probs = self._check_extra("log_probs", log_probs, run.shape[0], jobs)
                    values = self._check_extra("values", values, run.shape[0], jobs)
                    if out.log_probs is None:
                        out.log_probs = np.zeros((n, k), dtype=np.float64)
                        out.values = np.zeros((n, k), dtype=np.float64)
                    out.log_probs[rows, steps] = log_probs
                    out.values[rows, steps] = values
            idle = job_of < 0
            if idle.any():
                # Any legal action: the first one under the mask.
                full[idle] = np.argmax(eng.masks[idle], axis=1) if has_masks else 0
            full[run] = actions
            res = eng.step_no_reset(full)
            out.actions[rows, steps] = actions
            out.rewards[rows, steps] = res.rewards[run]
            term = res.terminals[run]
            done = term | res.truncations[run] | (steps + 1 >= k)
            out.dones[rows, steps] = done
            step_of[run] += 1
            ended = run[done]
            ended_rows = rows[done]
            out.lengths[ended_rows] = steps[done] + 1
            out.terminated[ended_rows] = term[done]
            finished += ended.shape[0]
            # Reset the slots that finished (with their next job) and any idle slot that ended.
            reset = np.zeros(w, dtype=np.bool_)
            reset[ended] = True
            reset |= idle & (res.terminals | res.truncations)
            if reset.any():
                seeds = [None] * w
                job_of[ended] = -1
                for s in ended.tolist():
                    nxt = started
                    if nxt < n:
                        job_of[s] = nxt
                        step_of[s] = 0
                        seeds[s] = self.seed + first_job + nxt
                        if tables is not None:
                            tables[s] = self._random_table(first_job + nxt)
                        started += 1
                eng.reset_envs(reset, seeds)
            if ended_rows.shape[0]:
                yield ended_rows

    # -- prefetching ---------------------------------------------------------------------
    def _slot_set(self, n: int) -> _Slots:
        if not self.prefetch:
            return _Slots(n, self.max_steps, self.engine, self._act_shape, self._act_dtype)
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

        def work():
            try:
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
    def request_episodes(self, num_episodes: int) -> EpisodeBatch:
        """Collect the next ``num_episodes`` jobs and return them in job order.

        Parameters
        ----------
        num_episodes : int
            ``B`` (>= 1).

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
            for rows in self._run(slots, first):
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
