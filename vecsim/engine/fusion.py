"""Per-game functions that the batched kernels call once per env or run of envs: a game's step,
observation and mask fused into one call, its reset with a fresh episode's outputs, and its
pre-step draft over a run of envs. One of each per game, step, mask and precision, shared by
every kernel module of the process."""

from __future__ import annotations

import threading

import numpy as np
from numba import njit

from vecsim.core.jit import EXACT_OPTIONS, kernel_options
from vecsim.core.contract import no_mask
from vecsim.engine.game import PACKED_MASK_FN, contract_function
from vecsim.engine.packed_masks import mask_allows

_FUSED: dict = {}
_FUSED_LOCK = threading.RLock()  # reentrant: a factory here may call another (_refusal, action_allowed_for)
#: ``flag_invalid`` of a step shared by ``invalid_action="raise"`` and ``"flag"`` batches: it
#: flags where the engine's events have the ``invalid_action`` column (``"flag"``) and refuses
#: nothing where they do not (``"raise"``: every action was checked before the step).
FLAG_BY_EVENTS = "by_events"


def _named_for(key: tuple):
    """A decorator giving a function that a factory here makes a qualified name spelling
    ``key``, the factory's cache key, before Numba compiles it.

    Numba names a compiled function's symbol after its module, qualified name, argument types,
    flags and a per-process counter. Two closures of one factory (a Tetris reset that writes
    its mask with the planner, and one without) compiled by two processes can thus get the same
    symbol, and a process that loads both kernels from the cache runs the first one loaded for
    both (LLVM merges same-named weak symbols)."""
    def rename(fn):
        fn.__qualname__ = f"{fn.__qualname__}[{','.join(str(part) for part in key)}]"
        return fn

    return rename


def _inline_copy(fn, opts: dict):
    """A copy of the njit function ``fn`` compiled with ``opts`` and ``inline="always"``."""
    return njit(**dict(opts, inline="always"))(fn.py_func)


def _float_semantics(opts: dict) -> tuple:
    fm = opts.get("fastmath", False)
    return (frozenset(fm) if isinstance(fm, (set, frozenset)) else bool(fm), opts.get("error_model", "python"))


def inline_if_same_semantics(fn, opts: dict):
    """A copy of the njit function ``fn`` that Numba inlines into callers compiled with
    ``opts``, or ``fn`` itself when its fast-math flags or error model differ from ``opts``'.

    Inlined code is compiled with its caller's flags, so a policy written ``@exact`` inside a
    ``precision="float32"`` kernel would otherwise silently compute with fast math."""
    if _float_semantics(fn.targetoptions) != _float_semantics(opts):
        return fn
    opts = {k: v for k, v in fn.targetoptions.items() if k != "nopython"}  # njit's own
    return njit(**dict(opts, cache=False, inline="always"))(fn.py_func)


def step_parts(game_module, step_name: str, precision: str, mask_name: str = "write_mask"):
    """``(step, write_obs, write_mask)`` of a game for ``step_and_write`` and
    ``step_run_and_write``: copies of its step (``step_name``) and mask (``mask_name``: its
    ``write_mask`` or the stand-in its ``kernel_functions`` chose) that Numba inlines into
    their caller, and its ``write_obs`` (one per game, step, mask and precision)."""
    key = (game_module.__name__, step_name, mask_name, precision, "parts")
    with _FUSED_LOCK:
        if key not in _FUSED:
            opts = dict(kernel_options(precision, False), cache=False)
            _FUSED[key] = (_inline_copy(getattr(game_module, step_name), opts), game_module.write_obs,
                           _inline_copy(contract_function(game_module, mask_name), opts))
        return _FUSED[key]


def obs_changes_writer(game_module):
    """The game's ``write_obs_changes(s, p, i, obs)`` (what env ``i``'s last step changed of its
    observation, ``obs[i]`` holding the observation before that step), or its ``write_obs``
    for a game without one."""
    return getattr(game_module, "write_obs_changes", game_module.write_obs)


@njit(**EXACT_OPTIONS)
def all_legal(i, masks):
    """Env ``i``'s mask all True: the mask of an env whose episode has terminated, in every
    masked game (the next action only resets it, and a masked policy never sees a row without
    a legal action)."""
    for k in range(masks.shape[1]):
        masks[i, k] = True


@njit(**dict(EXACT_OPTIONS, inline="always"))
def _all_legal_bool(s, p, i, masks):
    all_legal(i, masks)


def all_legal_for(game_module, mask_name: str):
    """The njit function ``f(s, p, i, masks)`` that makes env ``i``'s mask all legal: ``all_legal``
    for bool masks, the game's ``all_legal_packed`` for its packed writer (only the game knows
    its number of actions, hence which bits of a packed row's last byte are actions)."""
    if mask_name == PACKED_MASK_FN:
        return contract_function(game_module, "all_legal_packed")
    return _all_legal_bool


@njit(**dict(EXACT_OPTIONS, inline="always"))
def _allowed_by_mask(s, p, i, masks, a):
    return mask_allows(masks, i, a)


def action_allowed_for(game_module):
    """The njit function ``f(s, p, i, masks, a) -> bool`` that the checks of a binding mask
    call: the game's ``action_legal(s, p, i, a)`` where it declares one (env ``i``'s state
    decides, and the mask is an output the kernels never read back), else whether row ``i``
    of ``masks`` allows ``a`` (``mask_allows``; ``s`` unused)."""
    legal = getattr(game_module, "action_legal", None)
    if legal is None:
        return _allowed_by_mask
    key = (game_module.__name__, "action_legal")
    with _FUSED_LOCK:
        if key not in _FUSED:
            def allowed(s, p, i, masks, a):
                return legal(s, p, i, np.int64(a))  # int64 whether the caller holds int32 or int64 actions

            _FUSED[key] = njit(**dict(EXACT_OPTIONS, inline="always"))(_named_for(key)(allowed))
        return _FUSED[key]


def _has_mask(game_module, mask_name: str) -> bool:
    return contract_function(game_module, mask_name) is not no_mask


@njit(**dict(EXACT_OPTIONS, inline="always"))
def _never_refused(s, p, i, actions, events, masks):
    return False


def _refusal(game_module, opts: dict, by_events: bool = False):
    """For ``invalid_action="flag"``: the njit function ``f(s, p, i, actions, events, masks) ->
    bool``, whether env ``i``'s action lies outside its binding mask (the game's
    ``enforce_mask``; the test of ``action_allowed_for``). Then the env is not stepped: its
    events are zero but for the engine's ``invalid_action`` column (after the game's own),
    which is 1, and the game's ``refuse_env`` marks the step's outputs it keeps in the state;
    else that column is 0. With ``by_events`` (``FLAG_BY_EVENTS``), ``f`` refuses nothing
    where ``events`` has no such column."""
    enforce = _inline_copy(game_module.enforce_mask, opts)
    allowed = action_allowed_for(game_module)
    refuse_env = _inline_copy(contract_function(game_module, "refuse_env"), opts)
    n_events = len(getattr(game_module, "EVENTS", ()))

    @njit(**dict(opts, inline="always"))
    @_named_for((game_module.__name__, by_events))
    def refused(s, p, i, actions, events, masks):
        if by_events and events.shape[1] == n_events:
            return False
        if enforce(p, i) and not allowed(s, p, i, masks, actions[i]):
            for k in range(n_events):
                events[i, k] = 0
            events[i, n_events] = 1
            refuse_env(s, p, i)
            return True
        events[i, n_events] = 0
        return False

    return refused


def step_and_write(game_module, step_name: str, precision: str, mask_name: str = "write_mask",
                   flag_invalid: bool = False, telemetry: bool = False):
    """The njit function ``f(s, p, i, actions, events, rng, obs, masks) -> (reward, terminated)``
    of a game: its step (``step_name``: ``"step_env"`` or ``"step_env_fast"``), then
    ``write_obs`` and its mask (``mask_name``, as for ``step_parts``) of env ``i``, in one call.

    The batched kernels call it once per env instead of calling the three functions: every
    call passes each ``State`` array's pointer, shape and strides by value, which for a game
    of many arrays costs more than a small function's work. The step and the mask are inlined
    into this function rather than into a kernel's prange body, where inlining them changes
    the parallel kernel's results (see docs/numba-workarounds.md). One function per game,
    step, mask and precision, shared by every kernel module; not cached on its own: the kernels
    compile it in (their file names hash the game's sources), or for a game with
    ``KernelHints.call_by_symbol`` call it compiled once in a cached module of its own
    (``vecsim.engine.codegen.fused_source``).

    ``flag_invalid`` (``invalid_action="flag"``): an env whose action lies outside its binding
    mask is not stepped (reward 0, not terminated, its observation and mask written again) and
    flagged in the engine's ``invalid_action`` event column; ``FLAG_BY_EVENTS``: so where
    ``events`` has that column, one compile for both policies.

    ``telemetry``: ``f`` takes a last argument, the ``vecsim.core.telemetry.TelemetryRing`` it
    passes to the game's step (a game that declares ``TELEMETRY``)."""
    step, write_obs, mask = step_parts(game_module, step_name, precision, mask_name)  # takes _FUSED_LOCK itself
    fill = all_legal_for(game_module, mask_name)
    key = (game_module.__name__, step_name, mask_name, precision, flag_invalid, telemetry)
    with _FUSED_LOCK:
        if key not in _FUSED:
            opts = dict(kernel_options(precision, False), cache=False)

            refused = _refusal(game_module, opts, flag_invalid == FLAG_BY_EVENTS) if flag_invalid else _never_refused
            if telemetry:
                whole = njit(**dict(opts, inline="always"))(
                    _named_for(key)(_step_with_ring(step, write_obs, write_obs, mask, refused, fill)))

                @njit(**opts)
                @_named_for(key)
                def fused(s, p, i, actions, events, rng, obs, masks, ring):
                    return whole(s, p, i, actions, events, rng, obs, True, masks, ring)
            elif _has_mask(game_module, mask_name):
                @njit(**opts)
                @_named_for(key)
                def fused(s, p, i, actions, events, rng, obs, masks):
                    if refused(s, p, i, actions, events, masks):
                        reward, terminated = 0.0, False
                    else:
                        reward, terminated = step(s, p, i, actions, events, rng)
                    write_obs(s, p, i, obs)
                    if terminated:
                        fill(s, p, i, masks)
                    else:
                        mask(s, p, i, masks)
                    return reward, terminated
            else:  # no branch in a step loop that vectorises
                @njit(**opts)
                @_named_for(key)
                def fused(s, p, i, actions, events, rng, obs, masks):
                    reward, terminated = step(s, p, i, actions, events, rng)
                    write_obs(s, p, i, obs)
                    mask(s, p, i, masks)
                    return reward, terminated

            _FUSED[key] = fused
        return _FUSED[key]


def pre_step_draft_run(game_module, precision: str):
    """The njit function ``f(s, p, lo, hi, actions)``: a game's ``pre_step_draft_env`` for
    envs ``lo`` to ``hi - 1``, inlined into the loop by Numba so that LLVM vectorises it.

    The batched step kernels call it once (serial) or once a run of envs (parallel) instead of
    calling the draft per env: LLVM declines to inline a draft as large as
    ``vecsim.core.exactmath.cos_wide`` into a kernel's loop, and Numba's own inlining into a
    ``prange`` body drops its stores (see docs/numba-workarounds.md). The loop reads and writes
    few arrays, so LLVM's run-time overlap check stays cheap. One function per game and
    precision."""
    key = (game_module.__name__, "pre_step_draft_run", precision)
    with _FUSED_LOCK:
        if key not in _FUSED:
            opts = dict(kernel_options(precision, False), cache=False)
            draft = _inline_copy(game_module.pre_step_draft_env, opts)

            @njit(**opts)
            @_named_for(key)
            def run(s, p, lo, hi, actions):
                for i in range(lo, hi):
                    draft(s, p, np.uint64(i), actions)

            _FUSED[key] = run
        return _FUSED[key]


#: Where an episode's step count saturates (``elapsed`` is int32).
MAX_ELAPSED = 2**31 - 1


@njit(**EXACT_OPTIONS)
def finish_step(i, reward, terminated, max_steps, elapsed, rewards, term, trunc, needs_reset):
    """After env ``i``'s step: its step count (saturating), truncation by ``max_steps`` (0: none),
    reward and flags; the one place every step kernel writes them. Small enough for LLVM to
    inline into a vectorised loop (no float arithmetic, so one set of options serves both
    precisions)."""
    t = min(elapsed[i] + 1, MAX_ELAPSED)
    elapsed[i] = t
    truncated = max_steps > 0 and t >= max_steps
    rewards[i] = reward
    term[i] = terminated
    trunc[i] = truncated
    needs_reset[i] = terminated | truncated


def step_run_and_write(game_module, step_name: str, precision: str, mask_name: str = "write_mask",
                       flag_invalid: bool = False, telemetry: bool = False):
    """The njit function ``f(s, p, lo, hi, skip_due, max_steps, actions, events, rng, obs,
    whole_obs, masks, elapsed, rewards, term, trunc, needs_reset, was_done)`` of a game: one
    step of each env ``lo <= i < hi`` as the step kernels make it (the game's step, ``write_obs``,
    ``write_mask``, then the step count, reward and flags), skipping the envs with
    ``was_done[i]`` when ``skip_due``. Without ``whole_obs`` (``obs`` holds every env's
    observation before the step) the game's ``write_obs_changes`` writes the observation
    instead of ``write_obs``, where the game has one (``obs_changes_writer``).

    The kernels of a game with ``KernelHints.envs_per_call > 1`` call it once per run of that many envs
    instead of calling ``step_and_write`` once per env: the ``State`` arrays are passed once
    a run. The same step, observation and mask as ``step_and_write``'s, inlined here, so
    the same results (``flag_invalid`` and ``telemetry`` as there: with ``telemetry``, ``f``
    takes the ring last)."""
    if telemetry:
        return _step_run_with_telemetry(game_module, step_name, precision, mask_name, flag_invalid)
    # The step and mask themselves are inlined into the loop, not an inlined step_and_write:
    # Numba copies an inlined function's IR at each site, and an inlined function that
    # itself inlines the step would be copied whole once more (see docs/numba-workarounds.md).
    step, write_obs, mask = step_parts(game_module, step_name, precision, mask_name)  # takes _FUSED_LOCK itself
    fill = all_legal_for(game_module, mask_name)
    key = (game_module.__name__, step_name, mask_name, precision, "run", flag_invalid)
    with _FUSED_LOCK:
        if key not in _FUSED:
            opts = dict(kernel_options(precision, False), cache=False)
            refused = _refusal(game_module, opts, flag_invalid == FLAG_BY_EVENTS) if flag_invalid else _never_refused

            write_changes = obs_changes_writer(game_module)

            @njit(**opts)
            @_named_for(key)
            def run(s, p, lo, hi, skip_due, max_steps, actions, events, rng, obs, whole_obs, masks, elapsed, rewards,
                    term, trunc, needs_reset, was_done):
                for e in range(lo, hi):
                    i = np.uint64(e)  # the env index type of every other call of the game's functions
                    if skip_due and was_done[i]:
                        continue
                    if refused(s, p, i, actions, events, masks):
                        reward, terminated = 0.0, False
                    else:
                        reward, terminated = step(s, p, i, actions, events, rng)  # as step_and_write
                    if whole_obs:
                        write_obs(s, p, i, obs)
                    else:
                        write_changes(s, p, i, obs)
                    if terminated:
                        fill(s, p, i, masks)  # a no-op for a game without masks (masks has no columns)
                    else:
                        mask(s, p, i, masks)
                    finish_step(i, reward, terminated, max_steps, elapsed, rewards, term, trunc, needs_reset)

            _FUSED[key] = run
        return _FUSED[key]


def _step_with_ring(step, write_obs, write_changes, mask, refused, fill):
    """The Python function ``f(s, p, i, actions, events, rng, obs, whole_obs, masks, ring)`` of
    ``step_and_write`` for a batch with a telemetry ring, to be compiled by the caller: the
    masked form (a game with telemetry is not one whose step loop vectorises); the observation
    written by ``write_obs`` where ``whole_obs``, else by ``write_changes`` (as
    ``step_run_and_write``)."""
    def fused(s, p, i, actions, events, rng, obs, whole_obs, masks, ring):
        if refused(s, p, i, actions, events, masks):
            reward, terminated = 0.0, False
        else:
            reward, terminated = step(s, p, i, actions, events, rng, ring)
        if whole_obs:
            write_obs(s, p, i, obs)
        else:
            write_changes(s, p, i, obs)
        if terminated:
            fill(s, p, i, masks)
        else:
            mask(s, p, i, masks)
        return reward, terminated

    return fused


def _step_run_with_telemetry(game_module, step_name: str, precision: str, mask_name: str, flag_invalid: bool):
    """``step_run_and_write``'s function for a batch with a telemetry ring (its last argument):
    the same loop, the ring passed to the game's step (inlined here: a call per env would pass
    every ``State`` array per env)."""
    step, write_obs, mask = step_parts(game_module, step_name, precision, mask_name)  # takes _FUSED_LOCK itself
    fill = all_legal_for(game_module, mask_name)
    key = (game_module.__name__, step_name, mask_name, precision, "run", flag_invalid, True)
    with _FUSED_LOCK:
        if key not in _FUSED:
            opts = dict(kernel_options(precision, False), cache=False)
            refused = _refusal(game_module, opts, flag_invalid == FLAG_BY_EVENTS) if flag_invalid else _never_refused
            changes = obs_changes_writer(game_module)
            one = njit(**dict(opts, inline="always"))(
                _named_for(key)(_step_with_ring(step, write_obs, changes, mask, refused, fill)))

            @njit(**opts)
            @_named_for(key)
            def run(s, p, lo, hi, skip_due, max_steps, actions, events, rng, obs, whole_obs, masks, elapsed, rewards,
                    term, trunc, needs_reset, was_done, ring):
                for e in range(lo, hi):
                    i = np.uint64(e)  # as in run above
                    if not (skip_due and was_done[i]):
                        reward, terminated = one(s, p, i, actions, events, rng, obs, whole_obs, masks, ring)
                        finish_step(i, reward, terminated, max_steps, elapsed, rewards, term, trunc, needs_reset)

            _FUSED[key] = run
        return _FUSED[key]


def reset_and_write(game_module, mask_name: str = "write_mask", reset_name: str = "reset_env"):
    """The njit function ``f(s, p, i, rng, events, rewards, elapsed, term, trunc, needs_reset,
    has_final, obs, masks, final_obs, same_step)`` of a game: its ``reset_env`` (``reset_name``:
    or the stand-in its ``kernel_functions`` chose) of env ``i``, then ``write_obs`` and its mask
    (``mask_name``, as for ``step_parts``).

    With ``same_step`` False, the outputs of a fresh episode (no reward, flags or events,
    step 0). With ``same_step`` True (Gymnasium's SAME_STEP autoreset), env ``i``'s
    observation first goes to ``final_obs`` and the step's reward, flags and events stay,
    with ``has_final`` set; ``final_obs`` is not touched otherwise.

    One call per reset env instead of four, for the reason given in ``step_and_write`` (games
    with many State arrays gain most), and one place for a fresh episode's outputs instead of
    three copies in the kernel template. One function for both kinds of reset, so that the
    game's functions are compiled once for both. Compiled with the exact options whatever the
    precision: resets draw in float64 either way."""
    key = (game_module.__name__, reset_name, mask_name, "exact")
    with _FUSED_LOCK:
        if key not in _FUSED:
            opts = dict(EXACT_OPTIONS, cache=False)
            reset = _inline_copy(getattr(game_module, reset_name), opts)
            write_obs = _inline_copy(game_module.write_obs, opts)
            mask = _inline_copy(contract_function(game_module, mask_name), opts)

            @njit(**opts)
            @_named_for(key)
            def fused(s, p, i, rng, events, rewards, elapsed, term, trunc, needs_reset, has_final, obs, masks,
                      final_obs, same_step):
                if same_step:
                    write_obs(s, p, i, final_obs)
                reset(s, p, i, rng)
                if not same_step:
                    for k in range(events.shape[1]):
                        events[i, k] = 0
                    rewards[i] = 0.0
                    term[i] = False
                    trunc[i] = False
                elapsed[i] = 0
                needs_reset[i] = False
                has_final[i] = same_step
                write_obs(s, p, i, obs)
                mask(s, p, i, masks)

            _FUSED[key] = fused
        return _FUSED[key]
