"""The batched engine: one game, ``num_envs`` copies, preallocated buffers, Numba kernels.

``Engine`` is the zero-copy API. Its ``step``/``step_no_reset``/``reset``/``reset_envs``
return views into buffers that the next call overwrites. The Gymnasium front ends
(``vecsim.gym.vector.VecsimVectorEnv`` and ``vecsim.gym.single.VecsimEnv``) are built on it.
"""

from __future__ import annotations

import numbers
import os
import pathlib
import sys

import numba
import numpy as np
from gymnasium import spaces

from vecsim.core import buffers as placed
from vecsim.core.rng import MAX_SEED
from vecsim.engine import tuning
from vecsim.engine.abi import OUTPUT, RING, STATE, buffer_spec, engine_event_names
from vecsim.core.scratch import numba_threads
from vecsim.engine.chooser import KernelChooser, adapt_enabled
from vecsim.engine.codegen import address_table, load_kernels, table_specs
from vecsim.engine.game import PACKED_MASK_FN, GameSpec
from vecsim.engine.opponents import CallableOpponent, split_opponent
from vecsim.engine.packed_masks import MASK_FORMATS, check_packed_out, pack_mask_rows, packed_width
from vecsim.engine.reset_mask import ResetMask
from vecsim.engine.reset_params import params_after_reset
from vecsim.engine.step_result import StepResult
from vecsim.engine.step_status import ALIASED_ARRAY, BAD_ACTION, FINISHED_ENV, FORM_REFUSALS, ILLEGAL_ACTION, split_status
from vecsim.core.telemetry import Telemetry, check_capacity
from vecsim.core.scratch import start_thread_pool
from vecsim.engine.threads import threading_layer

NEXT_STEP, SAME_STEP, NO_RESET = 0, 1, 2
# The per-call action checks test ``type(actions) is _NDARRAY``: a module global, not
# ``np.ndarray`` (one dictionary lookup instead of two on every call).
_NDARRAY = np.ndarray
PRECISIONS = ("float64", "float32")
INVALID_ACTION_POLICIES = ("raise", "flag")
#: Largest ``max_episode_steps``: the per-env step counter is int32.
MAX_EPISODE_STEPS = 2**31 - 1

DEFAULT_PARALLEL_MIN_ENVS = tuning.DEFAULT_PARALLEL_MIN_ENVS
#: How many times larger the thresholds are on Numba's ``workqueue`` threading layer (where no
#: OpenMP or TBB library is found): it launches threads far more slowly than ``omp``.
WORKQUEUE_FACTOR = 64
#: Number of envs from which ``reset_envs`` of a parallel engine uses the parallel reset
#: kernel: below it a launch costs more than the resets; above it each thread resets the envs
#: its share of the step loop just wrote, still in its own core's cache.
PARALLEL_MIN_RESETS = 256


def launch_factor() -> int:
    """``WORKQUEUE_FACTOR`` on Numba's workqueue threading layer, else 1: what the batch sizes
    measured on the omp layer (the tuning table's, ``PARALLEL_MIN_RESETS``) are scaled by."""
    return WORKQUEUE_FACTOR if threading_layer() == "workqueue" else 1


def parallel_min_envs(game: GameSpec, num_envs: int | None = None, precision: str = "float64",
                      threads: int | None = None, calibrated: bool = True, collect: bool = False) -> int | None:
    """Batch size from which ``parallel="auto"`` picks the parallel kernel for ``game`` in
    ``precision`` when Numba runs ``threads`` threads (default: ``numba_threads()``, the
    calling thread's count, found without starting Numba's threads),
    or ``None`` where the serial kernel always wins.

    ``VECSIM_PARALLEL_THRESHOLD`` if set; else the size ``vecsim calibrate`` measured for this
    machine, thread count and threading layer, if any and ``calibrated``; else the shipped
    tuning table's (``vecsim.engine.tuning``: measured on the omp layer; ``None`` for never)
    times ``launch_factor()``. With one thread the parallel kernel runs on the calling thread
    and gains nothing: the table has no size for it.

    ``collect``: the size for the episode collector's step kernels instead (the table's
    ``collect`` sizes; a calibration, which times the engine, is not used for those a game
    has in the table).

    Finding the threading layer may run a trivial parallel kernel (where none has run and
    Numba's threads are not started). A ``num_envs`` below every size that could apply (the
    game's own, and the calibrated ones of every layer) is answered without it: the kernel is
    serial whichever applies, and the size returned is the smallest of them.
    """
    override = os.environ.get("VECSIM_PARALLEL_THRESHOLD")
    if override:
        try:
            value = int(override)
        except ValueError:
            value = 0
        if value < 1:
            raise ValueError(f"VECSIM_PARALLEL_THRESHOLD must be an int >= 1, but got {override!r}")
        return value
    name = game.module.__name__
    if threads is None:
        threads = numba_threads()
    kind = "one_thread" if threads < 2 else "collect" if collect else "engine"
    base = tuning.shipped(name, precision, kind)
    own_collect = kind == "collect" and base != tuning.shipped(name, precision, "engine")
    by_layer = tuning.lookup(name, precision, threads) if calibrated and not own_collect else {}
    if by_layer:
        sizes = [size for size in [base, *by_layer.values()] if size is not None]
        if num_envs is not None and all(num_envs < size for size in sizes):
            return min(sizes, default=None)
        layer = threading_layer()
        if layer in by_layer:
            return by_layer[layer]
    if base is None or (num_envs is not None and num_envs < base):
        return base
    return base * launch_factor()


class FinishedEnvError(ValueError):
    """An env whose episode has ended was stepped without a reset (nothing was stepped).

    Attributes
    ----------
    env : int
        Its index.
    terminated, truncated : bool
        How its episode ended.
    """

    def __init__(self, env: int, terminated: bool, truncated: bool, remedy: str):
        self.env, self.terminated, self.truncated = env, terminated, truncated
        super().__init__(f"env {env} finished its episode (terminated={terminated}, truncated={truncated}); {remedy}")


def check_state_fits(game: GameSpec, num_envs: int, one_env_state) -> None:
    """Raise ``MemoryError`` naming the sizes when ``num_envs`` envs of the state that
    ``one_env_state`` (a 1-env state) shows would not fit in the memory available now: a clear
    error instead of a process the system kills while the kernels fill the pages."""
    per_env = placed.state_bytes_per_env(one_env_state, game.scratch_state)
    shared = placed.state_bytes_shared(one_env_state, game.scratch_state)
    available = placed.available_memory()
    if available is not None and per_env * num_envs + shared > available:
        raise MemoryError(f"{game.name} with these constants keeps {per_env / 1e6:.2f} MB of state per env "
                          f"and {shared / 1e6:.1f} MB of thread scratch: num_envs={num_envs} needs "
                          f"{(per_env * num_envs + shared) / 1e9:.1f} GB, more than the {available / 1e9:.1f} GB "
                          f"of memory available; use fewer envs (at most "
                          f"{placed.envs_that_fit(one_env_state, game.scratch_state, available)})")


def compiled_entry(dispatcher, *args):
    """The compiled function of the Numba ``dispatcher`` for the types of ``args``, which skips
    the dispatcher's typing of every argument on each call; the dispatcher itself where that
    signature is not compiled yet. Call it only with arguments of those same types."""
    overloads = getattr(dispatcher, "overloads", None)  # none where NUMBA_DISABLE_JIT left a plain function
    found = None if overloads is None else overloads.get(tuple(numba.typeof(a) for a in args))
    return dispatcher if found is None else found.entry_point


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_seed(seed, what: str = "seed", span: int = 1) -> int:
    """Validate an integer seed so that ``seed + span - 1`` still fits the RNG's range."""
    if not _is_int(seed):
        raise TypeError(f"{what} must be an int or None, but got {what}={seed!r}")
    seed = int(seed)
    if seed < 0 or seed + span - 1 > MAX_SEED:
        raise ValueError(f"{what} must be in [0, {MAX_SEED - span + 1}], but got {what}={seed}")
    return seed


def _random_seed() -> int:
    return int(np.random.SeedSequence().entropy % (MAX_SEED // 2))


def build_params(game: GameSpec, num_envs: int, float_dtype, given: dict):
    """The checked constants of a batch of ``num_envs`` envs of ``game`` from the keyword
    arguments ``given`` (each a scalar or ``num_envs`` values): ``(public, P, scalar)``, the
    ``Params`` the engine exposes, the ``(n_params,)`` or ``(n_params, num_envs)`` array of
    ``float_dtype`` the kernels read (always the latter for a game with
    ``KernelHints.call_by_symbol``: one compile of its rules serves both), and the scalar
    ``Params`` (env 0's values). Raises
    ``TypeError`` or ``ValueError`` naming a bad parameter, before anything compiles (``vecsim
    warmup --param`` checks its values with it)."""
    cls = game.params_cls
    given = game.prepare_params(given)
    unknown = sorted(set(given) - set(cls._fields))
    if unknown:
        raise TypeError(
            f"{game.name} got unknown parameter(s) {unknown}; valid parameters are {list(cls._fields)}"
        )
    values, per_env = {}, False
    n = num_envs
    for name in cls._fields:
        value = given.get(name, cls._field_defaults[name])
        if isinstance(value, (bool, np.bool_)):
            value = float(value)
        if isinstance(value, numbers.Real):
            arr = np.float64(value)
        else:
            try:
                arr = np.asarray(value, dtype=np.float64)
            except (TypeError, ValueError):
                raise TypeError(f"{game.name} parameter {name} must be a number or an array of "
                                f"{n} numbers, but got {name}={value!r}") from None
            if arr.ndim == 0:
                arr = np.float64(arr)
            elif arr.shape != (n,):
                raise ValueError(f"{game.name} parameter {name} per env must have shape ({n},), "
                                 f"but got shape {arr.shape}")
            else:
                per_env = True
        if not np.all(np.isfinite(arr)):
            bad = np.flatnonzero(~np.isfinite(np.atleast_1d(arr)))
            raise ValueError(f"{game.name} parameter {name} must be finite, but got "
                             f"{name}={arr if np.ndim(arr) == 0 else f'{arr[bad[0]]} at env {bad[0]}'}")
        values[name] = arr
    game.check_params(values)
    for name in game.structural:
        arr = values[name]
        if np.ndim(arr) > 0 and np.any(arr != arr[0]):
            k = int(np.flatnonzero(arr != arr[0])[0])
            raise ValueError(f"{game.name} parameter {name} shapes the spaces or the compiled kernels and must "
                             f"be the same for every env, but env 0 has {arr[0]} and env {k} has {arr[k]}")
    scalar = cls(**{k: float(v) if np.ndim(v) == 0 else float(v[0]) for k, v in values.items()})
    public = cls(**{k: (float(v) if np.ndim(v) == 0 else v.copy()) for k, v in values.items()})
    if per_env or game.hints.call_by_symbol:
        P = np.empty((len(cls._fields), n), dtype=float_dtype)
        for k, name in enumerate(cls._fields):
            P[k] = values[name]
    else:
        P = np.array([values[name] for name in cls._fields], dtype=float_dtype)
    return public, P, scalar


class Engine:
    """``num_envs`` copies of one game stepped by batched Numba kernels.

    Parameters
    ----------
    game : GameSpec
        The game (see ``vecsim.make`` to build an engine from an id).
    num_envs : int
        Number of envs (>= 1).
    precision : {"float64", "float32"}
        ``"float64"`` (default) computes the physics in float64 and matches the reference
        bit for bit. ``"float32"`` stores state in float32 and uses fast-math kernels with
        polynomial trigonometry: several times faster, not bit-exact with the reference.
    max_episode_steps : int or None
        Truncate an episode after this many steps (``None``: never).
    parallel : {"auto", True, False}
        Use the parallel kernel (threads over envs) or the serial one. ``"auto"`` picks
        parallel from ``parallel_min_envs`` envs: the tuning table's size (where a
        thread's share of the work outweighs a launch, measured per game and precision; run
        ``vecsim calibrate`` to measure them on your machine); with a single Numba thread the
        serial kernel. From that size on,
        with two threads or more, it also times the step calls and falls back to the serial
        kernels while they are faster, as when other processes or threads keep the cores
        busy, and back to the parallel ones once those win again (``kernel_chooser``,
        ``vecsim.engine.chooser``; ``VECSIM_ADAPT=0`` turns that off). Results are identical
        either way.
    buffers : BufferSet or dict, optional
        Caller-owned output arrays, written in place by the kernels (zero-copy into rollout
        storage): any subset of the fields of ``buffer_spec`` (``vecsim.engine.abi``): ``obs``
        (num_envs, obs_dim) of the observation dtype, ``rewards`` (num_envs,) float64 (float32
        in float32 precision), ``terminals``, ``truncations`` (num_envs,) bool, ``final_obs``,
        ``has_final``, and where the game has them ``masks``, ``events``, its info arrays,
        ``acting_seat``, ``seat_rewards``, and with telemetry the ring's arrays. Each must
        have the field's shape, dtype and layout, be writeable and share no memory with
        another; a ``BufferSet`` made for another protocol version or capability set is
        refused. The engine writes its starting values into them.
    telemetry : int or None
        Records per env of a telemetry ring (``vecsim.core.telemetry``; for a game that
        declares ``TELEMETRY``), read with ``telemetry.read()``; ``None`` (default): no ring,
        and the kernels of a game without telemetry.
    invalid_action : {"raise", "flag"}
        For a game whose action mask is binding (it declares ``enforce_mask``): an action
        outside an env's mask raises ``ValueError`` before anything is stepped (``"raise"``,
        the default), or that env is not stepped (reward 0, not terminated, its step counted)
        and is flagged in the event ``invalid_action`` (``"flag"``, for mask-unaware callers).
        Such games get that event column after their own, whichever the policy.
    mask_format : {"bool", "packed"}
        What ``masks`` holds for a game with action masks: ``"bool"`` (default) the
        ``(num_envs, n_actions)`` bool masks; ``"packed"`` the same eight actions a byte,
        ``(num_envs, ceil(n_actions / 8))`` uint8 (``vecsim.engine.packed_masks``), written
        straight by the game's ``write_mask_packed`` (a game without one refuses it) and
        checked against bit by bit: no bool mask is written. ``action_masks()`` stays bool
        (unpacked, a new array) and ``packed_masks()`` is then a view of ``masks``.
    **params
        Game constants (the fields of the game's ``Params``): a scalar, or a sequence of
        ``num_envs`` values for per-env constants. A game with ``CALLABLE_OPPONENT`` also
        takes a callable ``f(obs, mask) -> actions`` for that field: it plays every seat but
        seat 0 out of the kernel (``vecsim.engine.opponents``), and every step returns once
        each env is back at seat 0 or has finished.
    """

    #: True for the engine of a single env (``vecsim.gym.single``): errors name "action 5",
    #: not "actions[0] = 5 ... (env 0)".
    _one_env_api = False

    def __init__(self, game: GameSpec, num_envs: int, *, precision: str = "float64",
                 max_episode_steps: int | None = None, parallel="auto", buffers: dict | None = None,
                 invalid_action: str = "raise", telemetry: int | None = None, mask_format: str = "bool",
                 **params):
        if not _is_int(num_envs) or num_envs < 1:
            raise ValueError(f"num_envs must be an int >= 1, but got num_envs={num_envs!r}")
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, but got precision={precision!r}")
        if max_episode_steps is not None and (not _is_int(max_episode_steps)
                                              or not 1 <= max_episode_steps <= MAX_EPISODE_STEPS):
            raise ValueError(
                f"max_episode_steps must be an int in [1, {MAX_EPISODE_STEPS}] or None, "
                f"but got max_episode_steps={max_episode_steps!r}"
            )
        if parallel not in ("auto", True, False):
            raise ValueError(f"parallel must be 'auto', True or False, but got parallel={parallel!r}")
        if invalid_action not in INVALID_ACTION_POLICIES:
            raise ValueError(f"invalid_action must be one of {INVALID_ACTION_POLICIES}, "
                             f"but got invalid_action={invalid_action!r}")
        if invalid_action == "flag" and not game.enforces_mask:
            raise ValueError(f"invalid_action='flag' applies to games whose action mask is binding, and "
                             f"{game.name}'s is not (it declares no enforce_mask): every action it accepts is stepped")
        if mask_format not in MASK_FORMATS:
            raise ValueError(f"mask_format must be one of {MASK_FORMATS}, but got mask_format={mask_format!r}")
        if mask_format == "packed" and not game.has(PACKED_MASK_FN):
            raise ValueError(f"mask_format='packed' needs a game that writes packed masks ({PACKED_MASK_FN}), and "
                             f"{game.name} has none; use mask_format='bool' (packed_masks() packs those)")
        self.invalid_action = invalid_action
        #: ``"bool"`` or ``"packed"``: what ``masks`` holds (see the class docstring).
        self.mask_format = mask_format
        self.game = game
        self.num_envs = int(num_envs)
        self.precision = precision
        self.max_episode_steps = None if max_episode_steps is None else int(max_episode_steps)
        self._max_steps = 0 if self.max_episode_steps is None else self.max_episode_steps
        self._float = np.float32 if precision == "float32" else np.float64
        params, opponent = split_opponent(game, params)
        self._read_game(params)
        capacity = check_capacity(telemetry, game.name, game.telemetry_events)
        #: Every output array this engine writes, versioned (``vecsim.engine.abi.BufferSpec``).
        self.buffer_spec = buffer_spec(game, self.params_scalar, precision, capacity, mask_format)
        self._allocate(buffers, capacity)
        self._parallel_choice = parallel
        self._load_kernels(parallel)
        #: The ``CallableOpponent`` playing the seats but seat 0, or ``None`` (seats in the kernel).
        self.opponent = None if opponent is None else CallableOpponent(self, opponent)
        if self.opponent is not None:
            # The opponents' moves belong to the learner's step, which truncates only once they
            # have played, as a step with the opponents in the kernel does (CallableOpponent.play).
            self._max_steps = 0
        #: Extra per-step arrays of the game (info key -> (num_envs, ...) view of its state).
        self.info_arrays = {key: getattr(self.state, field)
                            for key, field in game.info_fields(self.params_scalar).items()}
        self.result = StepResult(self.obs, self.rewards, self.terminals, self.truncations, self.masks,
                                 self.events, self.event_names, self.info_arrays)

    # -- construction, one job a part ------------------------------------------------------
    def _read_game(self, params: dict) -> None:
        """The batch's constants, spaces, observation layout and state, from the game."""
        game, n = self.game, self.num_envs
        self.params, self._P, self.params_scalar = build_params(game, n, self._float, params)
        self.single_observation_space = game.observation_space(self.params_scalar)
        self.single_action_space = game.action_space(self.params_scalar)
        self._setup_actions()
        obs_space = self.single_observation_space
        if not isinstance(obs_space, spaces.Box):
            obs_space = spaces.flatten_space(obs_space)
        self.obs_dim = int(np.prod(obs_space.shape))
        self.obs_dtype = obs_space.dtype
        check_state_fits(game, n, game.allocate_state(1, self._float, self.params_scalar))
        self.state = game.allocate_state(n, self._float, self.params_scalar)
        #: The game's event names, then the engine's ``invalid_action`` where the mask is binding.
        self.event_names = engine_event_names(game)
        if game.has_action_mask and not self._discrete:
            raise TypeError(f"{game.name} writes an action mask, which needs a Discrete action space, but its "
                            f"action space is {self.single_action_space}")
        self.n_mask = int(self.single_action_space.n) if game.has_action_mask else 0
        #: Players taking turns (``GameSpec.seats``); with more than one, ``acting_seat`` and
        #: ``seat_rewards`` are the state's arrays of the seat to act and each seat's last reward.
        self.num_seats = game.seats
        if game.seats > 1:
            self._check_seat_fields(n, game.seats)
        #: The stand-ins the game chose for this batch's kernels (``GameSpec.kernel_functions``):
        #: ``(contract name, stand-in name)`` pairs, shared with the collector's kernels.
        self.kernel_functions = game.kernel_functions(self.params_scalar)
        if self.mask_format == "packed":
            if dict(self.kernel_functions).get("write_mask", "write_mask") != "write_mask":
                raise ValueError(f"{game.name} chose its own mask writer for these constants "
                                 f"({dict(self.kernel_functions)['write_mask']}), which has no packed form; "
                                 f"use mask_format='bool'")
            self.kernel_functions = tuple(sorted(self.kernel_functions + (("write_mask", PACKED_MASK_FN),)))
        if self.invalid_action == "flag":
            self.kernel_functions = tuple(sorted(self.kernel_functions + (("invalid_action", "flag"),)))

    def _check_seat_fields(self, n: int, seats: int) -> None:
        acting, rewards = self.state.acting_seat, self.state.seat_rewards
        if not (isinstance(acting, np.ndarray) and acting.shape == (n,) and acting.dtype.kind in "iu"):
            raise TypeError(f"{self.game.name}'s State.acting_seat must be a ({n},) integer array, but got "
                            f"{getattr(acting, 'shape', acting)} {getattr(acting, 'dtype', '')}")
        if not (isinstance(rewards, np.ndarray) and rewards.shape == (n, seats) and rewards.dtype.kind == "f"):
            raise TypeError(f"{self.game.name}'s State.seat_rewards must be a ({n}, {seats}) float array, but got "
                            f"{getattr(rewards, 'shape', rewards)} {getattr(rewards, 'dtype', '')}")

    @property
    def acting_seat(self) -> np.ndarray:
        """Whose turn it is in each env, ``(num_envs,)`` integers (a view; all 0 for a
        single-seat game)."""
        if self.num_seats == 1:
            return np.zeros(self.num_envs, dtype=np.int64)
        return self.state.acting_seat

    @property
    def seat_rewards(self) -> np.ndarray:
        """Each seat's reward of the last step, ``(num_envs, num_seats)`` floats (a view; the
        step's rewards as one column for a single-seat game)."""
        if self.num_seats == 1:
            return self.rewards[:, None]
        return self.state.seat_rewards

    def _allocate(self, buffers, capacity: int) -> None:
        """The output buffers (or the caller's), the kernels' scratch and the bookkeeping."""
        n = self.num_envs
        # Column-major observations (KernelHints.obs_order "F") let the vectorised step loop
        # store consecutive envs at consecutive addresses. Gymnasium's copy=True copies them
        # in their own layout (order="K"), a plain memcpy.
        order = self.game.hints.obs_order
        # Placed apart within a page (vecsim.core.buffers): the step loop walks them in lockstep.
        self.obs = placed.zeros((n, self.obs_dim), self.obs_dtype, order=order)
        self.rewards = placed.zeros(n, self._float)
        self.terminals = placed.zeros(n, np.bool_)
        self.truncations = placed.zeros(n, np.bool_)
        self.final_obs = placed.zeros((n, self.obs_dim), self.obs_dtype, order=order)
        # Zero-padded to whole 64-env words, so the step kernel can read it 8 flags at a time.
        self._needs_pad = placed.zeros((n + 63) // 64 * 64, np.bool_)
        self.needs_reset = self._needs_pad[:n]
        self.has_final = placed.zeros(n, np.bool_)
        self.elapsed = placed.zeros(n, np.int32)  # steps in the episode (saturating)
        self.rng = placed.zeros((n, 2), np.uint64)
        self.events = placed.zeros((n, len(self.event_names)), np.int64)
        if self.mask_format == "packed":
            all_legal_row = np.packbits(np.ones(self.n_mask, np.bool_), bitorder="little")
            self.masks = placed.zeros((n, all_legal_row.shape[0]), np.uint8)
            self.masks[:] = all_legal_row
        else:
            self.masks = placed.ones((n, self.n_mask), np.bool_)
        # Kernel scratch: the envs due for reset, zero-padded like needs_reset (copied 8 flags at a time).
        self._was_pad = placed.zeros(self._needs_pad.shape, np.bool_)
        self._acts32 = placed.zeros(n, np.int32)  # kernel scratch: checked discrete actions
        # Filled by every step_no_reset: the envs that finished, for StepResult.to_reset_mask.
        self._done_mask = ResetMask(n)
        self._seeds = np.full(n, -1, dtype=np.int64)
        self._all_words = ResetMask.all(n).words
        self._bool_words = np.zeros_like(self._all_words)
        self._bool_pad = np.zeros(self._bool_words.shape[0] * 64, dtype=np.bool_)
        self._seeded = False
        self._has_reset = False
        self._closed = False
        # The fast paths of step and step_no_reset: the compiled step while nothing but the
        # actions needs a look, else None (_arm_fast_step). Both: the engine open and started,
        # no kernel chooser, no opponent, no detached outputs; step's: no packed done mask.
        self._fast_step = self._fast_no_reset = None
        self._fills_rows = bool(self.game.hints.write_obs_fills_row)
        self._detached = None  # the outputs of the last step_mode_fresh, while the engine's buffers are behind
        self._packed = None  # packed_masks' buffer, made at its first call
        self._buffers_given = bool(buffers)
        # Whether the step may write only what each env's step changed of its observation
        # (0: obs holds the last step's observations), or must write them whole: 1 until a step
        # has (after new arrays took the outputs), 2 always (the caller's buffers, which the
        # caller may write into). See the template's step_table.
        self._obs_stale = np.array([2 if buffers else 1], dtype=np.uint8)
        ring = self._adopt_buffers(buffers) if buffers else {}
        #: The telemetry rings and their reader (``vecsim.core.telemetry.Telemetry``), or None.
        self.telemetry = None if not capacity else Telemetry(
            n, capacity, self.game.telemetry_events, self.elapsed, ring.get("telemetry_records"),
            ring.get("telemetry_written"))
        self._fresh_specs = ((self.obs.shape, self.obs.dtype, "F" if self.obs.flags.f_contiguous else "C"),
                             n, self.rewards.dtype)

    def _load_kernels(self, parallel) -> None:
        """The generated kernels for this batch, their address tables, and the serial or
        parallel choice."""
        game, P = self.game, self._P
        state = tuple(self.state)
        # The step and reset kernels take what changes between calls (mode, max_steps and the
        # actions; the mask's words and the seed mode) and rebuild every other array, the
        # step's four outputs included, from a table of addresses
        # (vecsim.engine.codegen.address_table), which is cheaper than unboxing each array.
        # Each array with the name errors give it, in the order of the template's VIEWS lines.
        named_state = tuple((f"state.{name}", arr) for name, arr in zip(game.state_cls._fields, state))
        step_named = (("obs", self.obs), ("rewards", self.rewards), ("terminals", self.terminals),
                      ("truncations", self.truncations), ("needs_reset", self._needs_pad),
                      ("has_final", self.has_final), ("final_obs", self.final_obs), ("elapsed", self.elapsed),
                      ("rng", self.rng), ("params", P), ("events", self.events), ("masks", self.masks),
                      ("was_done", self._was_pad), ("acts32", self._acts32),
                      ("done_words", self._done_mask.words), ("obs_stale", self._obs_stale)) + named_state
        if self.telemetry is not None:
            step_named += (("telemetry_records", self.telemetry.records), ("telemetry_written", self.telemetry.written))
        reset_named = (("seeds", self._seeds), ("obs", self.obs), ("rewards", self.rewards),
                       ("terminals", self.terminals), ("truncations", self.truncations),
                       ("needs_reset", self.needs_reset), ("has_final", self.has_final), ("elapsed", self.elapsed),
                       ("rng", self.rng), ("params", P), ("events", self.events), ("masks", self.masks)) + named_state
        # These tuples also keep the tables' arrays alive.
        self._step_names, self._step_arrays = (tuple(x) for x in zip(*step_named))
        self._reset_names, self._reset_arrays = (tuple(x) for x in zip(*reset_named))
        kernels = self._kernels = load_kernels(game, self.precision, self._discrete, self.kernel_functions,
                                               tables={"step_table": table_specs(self._step_arrays),
                                                       "reset_table": table_specs(self._reset_arrays)},
                                               telemetry=self.telemetry is not None,
                                               box_width=None if self._discrete else self._act_shape[1])
        self._step_table = address_table(self._step_arrays)
        # step_mode_fresh's copy, whose first four rows point_outputs aims at new arrays.
        self._fresh_table = self._step_table.copy()
        self._masks_row = self._step_names.index("masks")  # the row step_mode_fresh(masks=True) aims elsewhere
        # What the step kernels take: the tables' addresses (the arrays above keep them alive).
        self._step_table_at, self._fresh_table_at = self._step_table.ctypes.data, self._fresh_table.ctypes.data
        self._point_outputs = kernels.point_outputs
        self._reset_table = address_table(self._reset_arrays)
        self._choose_kernels(parallel)

    def _choose_kernels(self, parallel) -> None:
        """Serial or parallel kernels, and for ``parallel="auto"`` the online chooser."""
        kernels, n = self._kernels, self.num_envs
        threads = numba_threads()  # a serial engine leaves Numba's thread pool unstarted
        if parallel == "auto":
            threshold = parallel_min_envs(self.game, n, self.precision, threads)
            self.parallel = threshold is not None and n >= threshold
        else:
            self.parallel = bool(parallel)
        if self.parallel:
            start_thread_pool()
        suffix = "parallel" if self.parallel else "serial"
        self._step_kernel = getattr(kernels, f"step_{suffix}")
        self._reset_kernel = getattr(kernels, f"reset_{suffix}")
        self._step_entry = self._sparse_reset_entry = self._fast_step = self._fast_no_reset = None
        # reset_envs usually gets a sparse mask (the few envs that just finished): the serial
        # kernel skips empty words without the cost of starting threads. A parallel engine
        # uses the parallel kernel for PARALLEL_MIN_RESETS envs or more, times the threading
        # layer's launch_factor (_reset_envs_kernel).
        self._reset_sparse_kernel = kernels.reset_serial
        self._min_parallel_resets = PARALLEL_MIN_RESETS * launch_factor() if self.parallel else 0
        self._parallel_resets = self._min_parallel_resets
        self._observe_kernel = getattr(kernels, f"observe_{suffix}")
        #: The online choice between the parallel and the serial step kernels
        #: (``vecsim.engine.chooser.KernelChooser``) of an engine that ``parallel="auto"`` made
        #: parallel on two threads or more, else ``None`` (the kernels stay as chosen).
        self.kernel_chooser = None
        if parallel == "auto" and self.parallel and threads > 1 and adapt_enabled():
            self.kernel_chooser = KernelChooser(self._use_parallel)

    def _use_parallel(self, flag: bool) -> None:
        """Step (and reset many envs) with the parallel kernels or the serial ones from the
        next call on: ``kernel_chooser`` switches so. Both give the same results."""
        kernels = self._kernels
        if flag:
            start_thread_pool()
        self._step_kernel = kernels.step_parallel if flag else kernels.step_serial
        self._reset_kernel = kernels.reset_parallel if flag else kernels.reset_serial
        self._step_entry = self._fast_step = self._fast_no_reset = None
        self._min_parallel_resets = self._parallel_resets if flag else sys.maxsize

    def _bind_step(self):
        """The step kernel's compiled function for the engine's argument types with actions of
        any layout (compiled, or loaded from the cache, at the first call): called directly,
        it skips the dispatcher's typing of every argument, and the kernel checks the actions'
        row count and contiguity itself (``step_MODE`` in the batch template). The dispatcher
        itself where Numba's JIT is disabled."""
        kernel = self._step_kernel
        if getattr(kernel, "overloads", None) is None:  # NUMBA_DISABLE_JIT left a plain function
            return kernel
        actions_type = numba.types.Array(numba.from_dtype(self._act_dtype), len(self._act_shape), "A")
        try:
            self._step_entry = kernel.compile((numba.typeof(NEXT_STEP), numba.typeof(self._max_steps),
                                               actions_type, numba.typeof(self._step_table_at)))
        except numba.core.errors.TypingError:
            # A game's step function of the wrong form fails deep inside the fused kernel: say which.
            params = self.game.module.Params(*self._P)
            plain = self.game.step_return_error(self.state, params, self._act_buf, self.events, self.rng)
            if plain is None:
                raise
            raise plain from None
        return self._step_entry

    def _arm_fast_step(self, no_reset: bool) -> None:
        """After a successful step in the general path: let ``step_no_reset`` (and, after a
        ``step``, ``step`` too: ``no_reset`` False) call the compiled step after checking only
        the actions' type, dtype and ndim, until a call that changes what they skip disarms them."""
        entry = self._step_entry
        if entry is not None and self.kernel_chooser is None and self.opponent is None:
            self._outputs = (self.obs, self.rewards, self.terminals, self.truncations)
            self._fast_no_reset = entry
            if not no_reset:
                self._fast_step = entry

    def _bind_sparse_reset(self, words: np.ndarray):
        """``_bind_step`` for the serial reset kernel, called with a packed mask's ``words``."""
        entry = compiled_entry(self._reset_sparse_kernel, words, 0, 0, self._reset_table)
        if entry is not self._reset_sparse_kernel:
            self._sparse_reset_entry = entry
        return entry

    def _timed_step(self, mode: int, acts: np.ndarray, table_at: int):
        """The step kernel's call, timed for ``kernel_chooser``."""
        chooser = self.kernel_chooser
        clock = chooser.clock
        start = clock()
        out = (self._step_entry or self._bind_step())(mode, self._max_steps, acts, table_at)
        chooser.observe(clock() - start)
        return out

    def _setup_actions(self):
        space = self.single_action_space
        n = self.num_envs
        if isinstance(space, spaces.Discrete):
            if int(space.start) != 0:
                raise TypeError("vecsim games use Discrete action spaces starting at 0")
            self._discrete = True
            self._act_shape = (n,)
            self._act_dtype = np.dtype(np.int64)
            self._quick_ndim = 1
        elif isinstance(space, spaces.Box) and len(space.shape) == 1:
            self._discrete = False
            self._act_shape = (n, space.shape[0])
            self._act_dtype = np.dtype(space.dtype)
            self._quick_ndim = 2
        else:
            raise TypeError(f"unsupported action space {space}")
        self._act_buf = np.zeros(self._act_shape, dtype=self._act_dtype)

    def _adopt_buffers(self, buffers) -> dict:
        """Take the caller's arrays (checked by ``buffer_spec``) in place of the engine's own,
        each given the engine's starting values; returns the telemetry ring's, by field name."""
        ring = {}
        for name, arr in self.buffer_spec.check(buffers, self.num_envs).items():
            field = self.buffer_spec[name]
            if field.home == STATE:
                np.copyto(arr, getattr(self.state, field.state_field))
                self.state = self.state._replace(**{field.state_field: arr})
            elif field.home == OUTPUT:
                np.copyto(arr, getattr(self, name))
                setattr(self, name, arr)
            elif field.home == RING:
                ring[name] = arr
        return ring

    # -- validation ----------------------------------------------------------------------
    def check_open(self) -> None:
        """Raise ``RuntimeError`` if the engine is closed."""
        if self._closed:
            raise RuntimeError(f"this {self.game.name} engine is closed")

    def coerce_actions(self, actions) -> np.ndarray:
        """Check ``actions`` and return them as the kernel's array (no copy when they already are)."""
        # What the kernel's compiled signature takes (carray: C-contiguous, aligned, writeable);
        # anything else is checked and copied into the engine's own action array.
        if (type(actions) is _NDARRAY and actions.dtype == self._act_dtype and actions.shape == self._act_shape
                and actions.flags.carray):
            return actions
        try:
            arr = np.asarray(actions)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"actions must be array-like, but got {type(actions).__name__}: {exc}") from None
        if arr.shape != self._act_shape:
            raise ValueError(f"actions must have shape {self._act_shape} for {self.single_action_space} "
                             f"and num_envs={self.num_envs}, but got shape {arr.shape}")
        if self._discrete:
            if arr.dtype.kind not in "iu":
                raise TypeError(f"{'action' if self._one_env_api else 'actions'} for {self.single_action_space} "
                                f"must be integers, but got dtype {arr.dtype}")
            if arr.dtype.kind == "u" or arr.dtype.itemsize > 8:
                big = np.flatnonzero(arr > np.iinfo(np.int64).max)
                if big.size:
                    i = int(big[0])
                    raise ValueError(f"{self._action_named(i, arr[i])} is out of range for {self.single_action_space}")
        elif arr.dtype.kind not in "fiu":
            raise TypeError(f"{'action' if self._one_env_api else 'actions'} for {self.single_action_space} "
                            f"must be numbers, but got dtype {arr.dtype}")
        with np.errstate(over="ignore"):  # a float64 too large for float32 is reported below
            np.copyto(self._act_buf, arr, casting="unsafe")
        if not self._discrete:
            bad = ~np.isfinite(arr.astype(np.float64, copy=False)).all(axis=1)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ValueError(f"{self._action_named(i, arr[i])} is not finite")
            self._check_float_cast()
        return self._act_buf

    def quick_actions(self, actions):
        """``actions`` as they are where the step kernel checks the rest of their form (an
        ndarray of the batch's action dtype and ``ndim``), else
        ``coerce_actions(actions)``: what ``step_mode_coerced`` and ``step_mode_fresh`` take."""
        if type(actions) is _NDARRAY and actions.dtype is self._act_dtype and actions.ndim == self._quick_ndim:
            return actions
        return self.coerce_actions(actions)

    def _after_refusal(self, mode: int, value: int, acts: np.ndarray, table_at: int) -> int:
        """After the step kernel refused ``acts`` (``value`` < 0): for their form (row count,
        contiguity, alignment; ``quick_actions`` passed them as they are), the step again on
        the checked and converted actions, returning its value; otherwise the error."""
        status, index = split_status(value)
        if status in FORM_REFUSALS:
            acts = self.coerce_actions(acts)
            value = (self._step_entry or self._bind_step())(mode, self._max_steps, acts, table_at)
            if value >= 0:
                return value
            status, index = split_status(value)
        self._raise_step_error(status, index, acts)

    def _check_float_cast(self) -> None:
        if not np.isfinite(self._act_buf).all():  # a float64 too large for float32
            i = int(np.flatnonzero(~np.isfinite(self._act_buf).all(axis=1))[0])
            raise ValueError(f"{self._action_named(i)} overflows {self._act_dtype}")

    def _action_named(self, index: int, value=None) -> str:
        """Action ``index`` (with its ``value``), as the API the user called names it: an
        element of ``actions``, or the one ``action`` of a single env (``vecsim.gym.single``)."""
        if value is None:
            return "action" if self._one_env_api else f"actions[{index}]"
        value = value.tolist() if hasattr(value, "tolist") else value
        return f"action {value!r}" if self._one_env_api else f"actions[{index}] = {value!r}"

    def _raise_step_error(self, status: int, index: int, actions: np.ndarray):
        if status == BAD_ACTION:
            raise ValueError(f"{self._action_named(index, actions[index].tolist())} is out of range for "
                             f"{self.single_action_space}{'' if self._one_env_api else f' (env {index})'}")
        if status == ILLEGAL_ACTION:
            if self._one_env_api:
                raise ValueError(f"{self._action_named(index, actions[index].tolist())} is not a legal action "
                                 f"(the action mask is False there; see action_masks()); nothing was stepped")
            raise ValueError(f"actions[{index}] = {actions[index].tolist()!r} is not a legal action for env {index} "
                             f"(its action mask is False there; see action_masks()); nothing was stepped "
                             f"(invalid_action='flag' steps the others and flags it instead)")
        if status == ALIASED_ARRAY:
            raise ValueError(f"actions share memory with this engine's own {self._step_names[index]} array; "
                             f"pass a separate array (nothing was stepped)")
        if status == FINISHED_ENV:
            raise FinishedEnvError(index, bool(self.terminals[index]), bool(self.truncations[index]),
                                   "reset it with reset_envs before stepping it")
        raise RuntimeError(f"kernel returned unknown status {status}")

    def _seed_args(self, seed, span_envs: bool = True):
        """(seed_mode, base_seed) for the reset kernel; fills ``self._seeds`` for lists."""
        if seed is None:
            if not self._seeded:
                self._seeded = True
                return 1, check_seed(_random_seed(), span=self.num_envs)
            return 0, 0
        if isinstance(seed, (list, tuple, np.ndarray)):
            if len(seed) != self.num_envs:
                raise ValueError(f"a list of seeds must have length num_envs={self.num_envs}, but got length {len(seed)}")
            for i, s in enumerate(seed):
                self._seeds[i] = -1 if s is None else check_seed(s, what=f"seed[{i}]")
            if any(s is None for s in seed) and not self._seeded:
                base = _random_seed()
                for i, s in enumerate(seed):
                    if s is None:
                        self._seeds[i] = (base + i) % MAX_SEED
            self._seeded = True
            return 2, 0
        base = check_seed(seed, span=self.num_envs)
        self._seeded = True  # only once the seed is valid: a rejected seed seeds nothing
        return 1, base

    def _words_of(self, mask, what: str = "reset mask") -> np.ndarray:
        if isinstance(mask, ResetMask):
            if mask.num_envs != self.num_envs:
                raise ValueError(f"{what} covers {mask.num_envs} envs, but num_envs={self.num_envs}")
            return mask.words
        if not isinstance(mask, np.ndarray):
            raise TypeError(f"{what} must be a ResetMask or a numpy bool array, but got {type(mask).__name__}")
        if mask.dtype != np.bool_:
            raise TypeError(f"{what} must have dtype bool, but got dtype {mask.dtype}")
        if mask.shape != (self.num_envs,):
            raise ValueError(f"{what} must have shape ({self.num_envs},), but got shape {mask.shape}")
        self._bool_pad[: self.num_envs] = mask  # preallocated: saves a num_envs-sized temporary per call
        self._bool_words[:] = np.packbits(self._bool_pad, bitorder="little").view("<u8")
        return self._bool_words

    # -- public API ----------------------------------------------------------------------
    def zero_actions(self) -> np.ndarray:
        """A new array of well-formed actions (all zeros) with the batch's action shape and dtype.

        Zero may still be outside an env's action mask (Tetris's reach mode, where action 0 is
        a pose high above the stack): where that raises, pick from ``masks``."""
        return np.zeros(self._act_shape, dtype=self._act_dtype)

    def supports_no_reset(self) -> bool:
        """Always True: every vecsim game supports ``step_no_reset`` and ``reset_envs``."""
        return True

    def reset(self, seed=None) -> np.ndarray:
        """Reset every env.

        Parameters
        ----------
        seed : int, list of (int or None), or None
            ``int``: env ``i`` is seeded with ``seed + i``. A list gives each env its own seed
            (``None`` keeps that env's stream). ``None`` continues every env's stream (a
            first reset without a seed draws a random base seed).

        Returns
        -------
        ndarray, shape (num_envs, obs_dim)
            A view of the observation buffer.
        """
        self.check_open()
        mode, base = self._seed_args(seed)
        self._forget_done()
        self._check_reset(self._reset_kernel(self._all_words, mode, base, self._reset_table))
        self._detached = None
        self._has_reset = True
        if self.opponent is not None:
            self.opponent.play(same_step=False, add_rewards=False)
        return self.obs

    def reset_envs(self, mask, seed=None, **params) -> np.ndarray:
        """Reset only the envs in ``mask`` (a ``ResetMask`` or a ``(num_envs,)`` bool array).

        ``seed`` as for ``reset``: with an int, env ``i`` of the mask gets seed ``seed + i``
        (the seed it would get from ``reset(seed)``); a list gives each masked env its entry;
        ``None`` continues each env's stream. An empty mask changes nothing. Returns the
        observation buffer (a view).

        ``**params``: reset specs, new game constants for the masked envs from this reset on
        (a level, a speed, a target): each a scalar, or a ``(num_envs,)`` array of which the
        masked entries are taken. Checked as the constructor checks them (a constant that
        shapes the spaces or kernels cannot change); nothing is reset when one is refused.
        The first per-env constant of a batch made with scalar ones switches its kernels to
        per-env constants (compiled once, then cached; a game with
        ``KernelHints.call_by_symbol`` reads its constants per env from the start) and
        replaces ``kernel_params``.
        """
        result = self.result
        if (mask is result.done_mask and seed is None and not params and not self._closed and self._seeded
                and self._detached is None and self.opponent is None):
            # The operant loop (step_no_reset, then reset_envs(result.to_reset_mask())): the mask
            # the step kernel packed and counted, each env continuing its stream. Nothing to
            # check or convert; what the general path below would do, minus its Python (and the
            # kernel choice of _reset_envs_kernel, inlined). No env finished: no call at all
            # (most steps of MountainCar, Pendulum and Acrobot, half of 16 CartPole envs').
            if result.num_done == 0:
                return self.obs
            if self.parallel and result.num_done >= self._min_parallel_resets:
                self._reset_kernel(mask.words, 0, 0, self._reset_table)  # the engine's own words
            else:
                (self._sparse_reset_entry or self._bind_sparse_reset(mask.words))(mask.words, 0, 0, self._reset_table)
            return self.obs
        self.check_open()
        words = self._words_of(mask)
        if params:
            flags = np.unpackbits(words.view(np.uint8), bitorder="little")[:self.num_envs].astype(bool)
            new_params = params_after_reset(self.game, build_params, self.params, flags, params, self._float)
        mode, base = self._seed_args(seed)
        if params:
            self._set_params(*new_params)
        self._attach_outputs()
        self._check_reset(self._reset_envs_kernel(mask)(words, mode, base, self._reset_table))
        if not self._has_reset:
            self._has_reset = bool(np.array_equal(words, self._all_words))
        if self.opponent is not None:
            self.opponent.play(same_step=False, add_rewards=False)
        return self.obs

    def _set_params(self, public, P: np.ndarray, scalar) -> None:
        """Make checked constants (``build_params``' triple) the batch's: in place where the
        kernels' array keeps its shape, else with the kernels of the new shape."""
        if P.ndim == 2 and self._P.ndim == 1 and np.all(P == P[:, :1]):
            P = P[:, 0]  # the same for every env: the scalar kernels still serve
        self.params, self.params_scalar = public, scalar
        if P.shape == self._P.shape:
            self._P[...] = P
        elif P.ndim == 1:
            self._P[...] = P[:, None]
        else:
            self._P = P
            self._load_kernels(self._parallel_choice)

    def _check_reset(self, aliased: int) -> None:
        """Raise for a reset kernel that declined a mask sharing memory with the engine's arrays."""
        if aliased >= 0:
            raise ValueError(f"the reset mask's words share memory with this engine's own "
                             f"{self._reset_names[aliased]} array; pass a separate mask (nothing was reset)")

    def _reset_envs_kernel(self, mask):
        """The reset kernel for ``reset_envs`` of a checked ``mask``: the serial one unless
        this engine is parallel and the mask holds at least ``PARALLEL_MIN_RESETS`` envs (times
        ``launch_factor()``). Both give the same results: an env's reset touches only that env."""
        if not self.parallel:
            return self._reset_sparse_kernel
        if mask is self.result.done_mask:
            count = self.result.num_done  # counted by the step kernel that packed the mask
        elif isinstance(mask, ResetMask):
            count = mask.count()
        else:
            count = int(np.count_nonzero(mask))
        return self._reset_kernel if count >= self._min_parallel_resets else self._reset_sparse_kernel

    def _forget_done(self) -> None:
        """Drop the kernel-packed mask of the last ``step_no_reset`` (another step or a full
        reset follows; ``StepResult.to_reset_mask`` then reads the flags)."""
        self.result.done_mask = None
        self.result.num_done = -1

    def check_started(self) -> None:
        """Raise ``RuntimeError`` if no full ``reset`` has happened yet."""
        if not self._has_reset:
            raise RuntimeError("call reset() before stepping")

    def step_no_reset(self, actions) -> StepResult:
        """Step every env once without resetting any.

        An env that finished must be reset with ``reset_envs`` before it is stepped again
        (``ValueError`` otherwise). Returns ``self.result``, whose arrays are views
        overwritten by the next call.
        """
        entry = self._fast_no_reset
        if (entry is not None and type(actions) is _NDARRAY and actions.dtype is self._act_dtype
                and actions.ndim == self._quick_ndim):
            # The kernel checks the rest of the actions' form and refuses before writing anything.
            self._fast_step = None  # step must clear the packed mask
            value = entry(NO_RESET, self._max_steps, actions, self._step_table_at)
            result = self.result
            if value >= 0:
                result.done_mask = self._done_mask
                result.num_done = value
                return result
            result.done_mask = None
            result.num_done = -1
            status, index = split_status(value)
            if status not in FORM_REFUSALS:
                self._raise_step_error(status, index, actions)
            # Another row count, not C-contiguous or not aligned: checked and converted below.
        if self._closed or not self._has_reset:
            self.check_open()
            self.check_started()
        acts = (actions if type(actions) is _NDARRAY and actions.dtype == self._act_dtype
                and actions.shape == self._act_shape and actions.flags.carray else self.coerce_actions(actions))
        result = self.result
        result.done_mask = None  # until the kernel has filled the mask again
        result.num_done = -1
        self._fast_step = None
        if self.kernel_chooser is None:
            value = (self._step_entry or self._bind_step())(NO_RESET, self._max_steps, acts, self._step_table_at)
        else:
            value = self._timed_step(NO_RESET, acts, self._step_table_at)
        if value < 0:
            self._raise_step_error(*split_status(value), acts)
        self._detached = None
        if self.opponent is not None:
            self.opponent.play(same_step=False)
            return result  # done_mask None: to_reset_mask reads the flags
        result.done_mask = self._done_mask
        result.num_done = value
        self._arm_fast_step(no_reset=True)
        return result

    def step(self, actions):
        """Step every env, resetting on the next step the envs that finished (Gymnasium's NEXT_STEP).

        Returns views ``(obs, rewards, terminals, truncations)`` overwritten by the next call.
        The next call updates ``obs`` in place, rewriting only what each env's step changed
        where the game has a ``write_obs_changes``: a caller that writes into ``obs`` calls
        ``refresh`` before stepping again (as after writing ``state``).
        """
        entry = self._fast_step
        if (entry is not None and type(actions) is _NDARRAY and actions.dtype is self._act_dtype
                and actions.ndim == self._quick_ndim):
            # The kernel checks the rest of the actions' form and refuses before writing anything.
            value = entry(NEXT_STEP, self._max_steps, actions, self._step_table_at)
            if not value:
                return self._outputs
            status, index = split_status(value)
            if status not in FORM_REFUSALS:
                self._raise_step_error(status, index, actions)
            # Another row count, not C-contiguous or not aligned: checked and converted below.
        if self._closed or not self._has_reset:
            self.check_open()
            self.check_started()
        acts = (actions if type(actions) is _NDARRAY and actions.dtype == self._act_dtype
                and actions.shape == self._act_shape and actions.flags.carray else self.coerce_actions(actions))
        result = self.result  # _forget_done, inlined
        result.done_mask = None
        result.num_done = -1
        if self.kernel_chooser is None:
            value = (self._step_entry or self._bind_step())(NEXT_STEP, self._max_steps, acts, self._step_table_at)
        else:
            value = self._timed_step(NEXT_STEP, acts, self._step_table_at)
        if value:
            self._raise_step_error(*split_status(value), acts)
        self._detached = None
        if self.opponent is not None:
            self.opponent.play(same_step=False)
        else:
            self._arm_fast_step(no_reset=False)
        return self.obs, self.rewards, self.terminals, self.truncations

    def step_mode(self, mode: int, actions) -> None:
        """Step every env once in kernel ``mode`` (``NEXT_STEP``, ``SAME_STEP`` or ``NO_RESET``
        of ``vecsim.engine``): the step the Gymnasium front ends make for each autoreset mode.
        The outputs are in the engine's buffers."""
        if mode not in (NEXT_STEP, SAME_STEP, NO_RESET):
            raise ValueError(f"mode must be NEXT_STEP ({NEXT_STEP}), SAME_STEP ({SAME_STEP}) or NO_RESET "
                             f"({NO_RESET}), but got mode={mode!r}")
        self.check_open()
        self.check_started()
        self.step_mode_coerced(mode, self.coerce_actions(actions))

    def step_mode_coerced(self, mode: int, acts: np.ndarray) -> None:
        """``step_mode`` on actions that ``quick_actions`` (or ``coerce_actions``) returned:
        for front ends that have checked the engine's state themselves (once, in their own
        words)."""
        result = self.result  # _forget_done, inlined
        result.done_mask = None
        result.num_done = -1
        if self.kernel_chooser is None:
            value = (self._step_entry or self._bind_step())(mode, self._max_steps, acts, self._step_table_at)
        else:
            value = self._timed_step(mode, acts, self._step_table_at)
        if value < 0:
            self._after_refusal(mode, value, acts, self._step_table_at)
        self._detached = None
        if self.opponent is not None:
            self.opponent.play(same_step=mode == SAME_STEP)

    @property
    def fresh_outputs_ok(self) -> bool:
        """Whether ``step_mode_fresh`` may be used: the game's ``write_obs`` fills whole rows
        (``KernelHints.write_obs_fills_row``), no caller-supplied buffer must receive the outputs
        and no seat is played out of the kernel (whose steps continue in the engine's buffers)."""
        return self._fills_rows and not self._buffers_given and self.opponent is None

    def step_envs(self, mask, actions, *, counted: bool = True) -> StepResult:
        """Step once, without resetting any, only the envs in ``mask`` (a ``ResetMask`` or a
        ``(num_envs,)`` bool array); the others keep their state and outputs.

        ``actions`` has the batch's full shape; only the masked envs' entries are read and
        checked. A finished env in the mask raises ``ValueError`` (reset it first), as does an
        action outside its binding mask; nothing is stepped then. ``counted=False``: a move
        that is part of an earlier step (a seat played out of the kernel), which neither
        counts toward ``max_episode_steps`` nor truncates. Returns ``self.result`` (views;
        ``to_reset_mask`` reads the flags).
        """
        self.check_open()
        self.check_started()
        if not isinstance(counted, (bool, np.bool_)):
            raise TypeError(f"counted must be a bool, but got counted={counted!r}")
        acts = self.coerce_actions(actions)
        words = self._words_of(mask, "step_envs mask")
        self._attach_outputs()
        self._forget_done()
        limit = (self.max_episode_steps or 0) if counted else -1
        status, index = self._kernels.step_envs(words, limit, acts, self._step_table)
        if status:
            self._raise_step_error(status, index, acts)
        return self.result

    def reset_same_step(self, mask) -> None:
        """Reset the envs in ``mask`` as a SAME_STEP step resets a finished env: the
        observation goes to ``final_obs`` (``has_final`` set), the reward, flags and events stay."""
        self._kernels.reset_same_step(self._words_of(mask), self._step_table)

    @property
    def fresh_masks_ok(self) -> bool:
        """Whether ``step_mode_fresh(..., masks=True)`` may be used: ``fresh_outputs_ok``, and a
        game whose binding mask the kernels check against the state (``action_legal``), never
        reading the mask back."""
        return self.fresh_outputs_ok and self.n_mask > 0 and self.game.has("action_legal")

    def step_mode_fresh(self, mode: int, actions, masks: bool = False):
        """Run the step kernel in ``mode`` (``NEXT_STEP`` or ``SAME_STEP``) on ``actions``,
        writing this step's observations, rewards and flags into new arrays instead of the
        engine's buffers; returns them as ``(obs, rewards, terminals, truncations)``, and with
        ``masks`` (only where ``fresh_masks_ok``) the action masks too, as a fifth new array
        in the engine's mask format (``engine.masks``' shape and dtype).

        For front ends that return new arrays each step (the VectorEnv with ``copy=True``): in
        these modes the kernel writes every env's outputs, so new uninitialised arrays come
        back whole, and the step needs no copies (at 4096 CartPole envs, copying the four
        outputs took a tenth of a float64 step; at 256 Blokus envs, copying the masks took a
        third of the loop). Only where ``fresh_outputs_ok``. The engine's own buffers (and
        ``masks``) are left as they were: ``reset_envs``, ``refresh``, ``action_masks`` and
        ``packed_masks`` bring them up to date first (``_attach_outputs``), and ``step``,
        ``step_no_reset`` and ``reset`` rewrite them whole.
        """
        if not isinstance(masks, (bool, np.bool_)):
            raise TypeError(f"step_mode_fresh's masks must be a bool, but got masks={masks!r}")
        if masks and not self.fresh_masks_ok:
            raise ValueError(f"step_mode_fresh(masks=True) needs fresh_outputs_ok and a game whose mask the kernels "
                             f"never read back (action_legal); {self.game.name} has fresh_masks_ok=False")
        if mode not in (NEXT_STEP, SAME_STEP) or not self.fresh_outputs_ok:
            raise ValueError(f"step_mode_fresh needs NEXT_STEP or SAME_STEP mode and a game whose write_obs fills "
                             f"whole rows, without caller buffers (mode={mode}, fresh_outputs_ok={self.fresh_outputs_ok})")
        if self._closed or not self._has_reset:
            self.check_open()
            self.check_started()
        acts = self.quick_actions(actions)
        (obs_shape, obs_dtype, obs_order), n, float_dtype = self._fresh_specs
        out = (np.empty(obs_shape, obs_dtype, order=obs_order), np.empty(n, float_dtype), np.empty(n, np.bool_),
               np.empty(n, np.bool_))
        self._forget_done()
        table = self._fresh_table_at
        self._point_outputs(self._fresh_table, *out)
        if masks:
            new_masks = np.empty_like(self.masks)
            self._fresh_table[self._masks_row, 0] = new_masks.ctypes.data
            out += (new_masks,)
        else:
            self._fresh_table[self._masks_row, 0] = self._step_table[self._masks_row, 0]
        self._fast_step = self._fast_no_reset = None  # they would leave the outputs detached
        # The new arrays get whole observations, and the engine's own are a step behind after.
        self.state_written()
        try:
            if self.kernel_chooser is None:
                value = (self._step_entry or self._bind_step())(mode, self._max_steps, acts, table)
            else:
                value = self._timed_step(mode, acts, table)
        finally:
            self.state_written()
        if value < 0:
            self._after_refusal(mode, value, acts, table)
        self._detached = out
        return out

    def _attach_outputs(self) -> None:
        """After ``step_mode_fresh``: bring the engine's own output buffers up to date (the
        observations recomputed from the state, the rewards and flags from the step's arrays)
        before a call that rewrites only some envs."""
        if self._detached is None:
            return
        _, rewards, terminals, truncations = self._detached[:4]
        self._detached = None
        np.copyto(self.rewards, rewards)
        np.copyto(self.terminals, terminals)  # before observing: a terminated env's mask is all True
        np.copyto(self.truncations, truncations)
        self._observe_kernel(self._reset_table)

    def _attach_masks(self) -> None:
        """After ``step_mode_fresh(..., masks=True)``: the engine's own masks brought up to date
        (with its other outputs) before they are read."""
        if self._detached is not None and len(self._detached) > 4:
            self._attach_outputs()

    def kernel_source(self) -> str:
        """The Python source of this engine's kernel module, as ``vecsim.engine.codegen``
        generated it from ``vecsim/engine/templates/batch.py`` for this game, precision and
        batch (``vecsim kernels GAME`` prints it): what Numba compiles, and caches."""
        return pathlib.Path(self._kernels.__file__).read_text()

    def state_written(self) -> None:
        """Say that ``state`` changed outside the engine's steps (a kernel of the caller's, the
        episode collector's): the next step writes every observation whole rather than only
        what each env's step changed. ``refresh`` instead also rewrites them now."""
        self._obs_stale[0] = max(self._obs_stale[0], 1)

    def refresh(self) -> None:
        """Recompute observations and masks after writing ``state`` directly."""
        self.check_open()
        self._attach_outputs()
        self._observe_kernel(self._reset_table)

    def action_masks(self) -> np.ndarray:
        """Legal-action masks, shape (num_envs, n_actions) bool (a view; with
        ``mask_format="packed"`` a new array unpacked from ``masks``)."""
        self.check_open()
        self._attach_masks()
        if self.n_mask == 0:
            return np.ones((self.num_envs, getattr(self.single_action_space, "n", 0)), dtype=bool)
        if self.mask_format == "packed":
            return np.unpackbits(self.masks, axis=1, count=self.n_mask, bitorder="little").view(np.bool_)
        return self.masks

    def packed_masks(self, out: np.ndarray | None = None) -> np.ndarray:
        """The legal-action masks packed eight actions a byte (``vecsim.engine.packed_masks``):
        ``(num_envs, ceil(n_actions / 8))`` uint8, action ``a`` of env ``i`` at bit ``a % 8``
        of byte ``a // 8`` of row ``i``, equal to ``numpy.packbits(action_masks(), axis=1,
        bitorder="little")``.

        Written into ``out`` (a C-contiguous uint8 array of that shape: the caller's rollout
        storage, say) and returned, or into a buffer of the engine's that the next call
        overwrites (a view). Packed from the bool masks of the last step or reset; with
        ``mask_format="packed"``, ``masks`` itself (a view) or a copy of it in ``out``."""
        self.check_open()
        self._attach_masks()
        n_actions = getattr(self.single_action_space, "n", 0)
        if out is not None:
            out = check_packed_out(out, self.num_envs, n_actions)
        if self.mask_format == "packed":
            if out is None:
                return self.masks
            np.copyto(out, self.masks)
            return out
        if out is None and self._packed is None:
            self._packed = placed.zeros((self.num_envs, packed_width(n_actions)), np.uint8)
        out = self._packed if out is None else out
        pack_mask_rows(self.action_masks(), out)
        return out

    def env_index(self, i) -> int:
        """``i`` as an env index, or ``TypeError``/``IndexError`` naming it."""
        if not _is_int(i):
            raise TypeError(f"env index must be an int, but got {i!r}")
        if not 0 <= i < self.num_envs:
            raise IndexError(f"env index {i} is out of range for num_envs={self.num_envs}")
        return int(i)

    def env_values(self, i: int) -> dict:
        """Env ``i``'s state fields as a dict of Python scalars / small arrays (for rendering)."""
        i = self.env_index(i)
        return {name: (arr[i].item() if arr.ndim == 1 else arr[i].copy())
                for name, arr in zip(self.state._fields, self.state) if name not in self.game.scratch_state}

    def params_of(self, i: int):
        """The game's ``Params`` with env ``i``'s constants as scalars."""
        i = self.env_index(i)
        cls = self.game.params_cls
        return cls(*(float(v) if np.ndim(v) == 0 else float(v[i]) for v in self.params))

    def render_rgb(self, i: int = 0) -> np.ndarray:
        """Env ``i`` as an RGB image (uint8, (H, W, 3))."""
        self.check_open()
        return self.game.render_rgb(self.env_values(i), self.params_of(i))

    def render_text(self, i: int = 0) -> str:
        """Env ``i`` as text."""
        self.check_open()
        return self.game.render_text(self.env_values(i), self.params_of(i))

    def close(self) -> None:
        """Release the engine; every later call raises ``RuntimeError``. Idempotent."""
        self._closed = True
        self._fast_step = self._fast_no_reset = None

    @property
    def closed(self) -> bool:
        """Whether ``close`` was called."""
        return self._closed

    @property
    def has_reset(self) -> bool:
        """Whether every env has been reset at least once (``reset``, or ``reset_envs`` of all)."""
        return self._has_reset

    @property
    def seeded(self) -> bool:
        """Whether the envs' random streams have been seeded (by a seed, or a first reset)."""
        return self._seeded

    @property
    def action_buffer(self) -> np.ndarray:
        """The engine's checked-actions array (``coerce_actions`` copies into it): shape
        ``(num_envs,)`` int64 or ``(num_envs, d)`` of the Box dtype. Kernels that run the game
        on the engine's arrays (the collector) take it as scratch."""
        return self._act_buf

    @property
    def narrowed_action_buffer(self) -> np.ndarray:
        """The step kernels' int32 copy of discrete actions, shape ``(num_envs,)``: the array a
        game's fused step reads them from. The collector narrows into it before it steps a run
        of slots with the engine's fused step (one compile of the rules for both)."""
        return self._acts32

    @property
    def kernel_params(self) -> np.ndarray:
        """The game constants as the kernels read them: ``(n_params,)``, or ``(n_params,
        num_envs)`` with per-env constants or for a game with ``KernelHints.call_by_symbol``,
        in the engine's float dtype (row order: the fields of ``Params``)."""
        return self._P

    @property
    def max_steps_for_kernels(self) -> int:
        """``max_episode_steps`` as the kernels take it: 0 for no limit."""
        return self._max_steps

    def __repr__(self) -> str:
        return (f"Engine({self.game.env_id}, num_envs={self.num_envs}, precision={self.precision!r}, "
                f"parallel={self.parallel})")
