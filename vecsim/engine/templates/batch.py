"""Template of the batched kernels, written once for every game.

This file is never imported. ``vecsim.engine.codegen`` substitutes the game module, its step and
mask functions (``STEP_ENV``, ``WRITE_MASK``: the contract's or the stand-ins its
``kernel_functions`` chose), the state field names, the number of constants and the
precision, writes the result as a real module
in vecsim's cache folder, and imports it. A real file on disk is what lets Numba cache the
kernels (a kernel that receives a jitted function as an argument, or a closure over one, is
recompiled in every process: see docs/numba-workarounds.md). The section between the KERNELS
markers is instantiated twice, ``_serial`` and ``_parallel``: one body, two compilations,
identical results. A parallel region that would pass every State array into Numba's parfor
machinery calls serial code instead, compiled once and called by symbol with the address table
and a thread's share (``_step_share``, ``_reset_words``, ``_observe_envs``): the region passes a
few numbers, and its compile is a fraction of what a region over the arrays costs. The regions
are functions of their own (``_step_shares``, ``_reset_shares``, ``_observe_shares``), the only
code compiled with Numba's parallel passes: the kernels, their checks included, are serial code
in both variants. The serial kernels call the shares' functions for every env, so the steps and
resets compile once for both.

The step and reset kernels take as arguments only what changes from call to call (mode,
actions, the four step outputs; the reset mask's words and seed mode) and one int64 address
table (``vecsim.engine.codegen.address_table``) of every other array: each ``# VIEWS OF <table>``
line becomes one ``c_array_at``/``f_array_at`` view per array, in the table's row order, with
the dtype and layout of the engine's arrays rendered in. Numba's dispatch unboxes every array
argument on every call; a view built from an address costs nearly nothing. A view of an
array that shares no memory with the others is a ``c_distinct_array_at`` one, which lets LLVM
put the serial kernel's step loop on SIMD lanes; the ``FIRST VIEW OF ... OVERLAPPING`` line
checks the per-call array argument against them first (``vecsim.engine.codegen.render_table_views``).

Buffers (``N = num_envs``):
    actions   (N,) int64 or (N, d) float32
    obs       (N, obs_dim), the game's observation dtype
    rewards   (N,) float64 (float32 in precision="float32")
    term, trunc, needs_reset, has_final   (N,) bool each
    needs_pad (8 * len(done_words),) bool: ``needs_reset`` zero-padded to whole 64-env words
              (the step table holds it; the step kernel slices ``needs_reset`` from it and
              views it as ``needs_u64``, so the three are known to share memory)
    was_done  (8 * len(done_words),) bool: ``needs_reset`` as the step began, zero-padded like
              ``needs_u64`` (only its first N flags are envs)
    final_obs like ``obs``: terminal observations in SAME_STEP mode
    elapsed   (N,) int32 steps in the current episode (saturates at 2**31 - 1; 32-bit so that
              the float32 step loop keeps 8 lanes)
    rng       (N, 2) uint64 per-env stream key and counter
    P         (n_params,) or (n_params, N) game constants
    events    (N, n_events) int64
    masks     (N, n_actions) bool (or (N, 0) for games without masks)
    acts32    (N,) int32: the checked discrete actions, narrowed for the step loops (an
              8-lane float32 loop over envs vectorises only if its integer loads are 32-bit
              too; with int64 actions LLVM picks 4 lanes). Unused for Box actions.
    obs_stale (1,) uint8: 0 while ``obs`` holds every env's observation as the last step left
              it (a run step then writes only what each env's step changed:
              ``write_obs_changes``), 1 where it may not (set by the engine; a step clears it),
              2 for buffers that are always written whole (the caller's)
    done_words ((N + 63) // 64,) uint64: after a NO_RESET step, bit i is env i's
              ``terminated | truncated`` (what ``StepResult.to_reset_mask`` returns)
    needs_u64 (8 * len(done_words),) uint64: the bytes of ``needs_reset`` and its zero padding
    seeds     (N,) int64: per-env seeds of a reset in seed_mode 2 (-1: continue the stream)
"""

import numpy as np
from numba import njit, prange

from vecsim.core.contract import box_finite, discrete_ok, no_mask
from vecsim.core.jit import kernel_options
from vecsim.engine.fusion import (action_allowed_for, all_legal_for, finish_step, pre_step_draft_run,
                                  reset_and_write, step_and_write, step_run_and_write)
from vecsim.engine.threads import parallel_threads
from vecsim.engine.step_status import (ALIASED_ARRAY, BAD_ACTION, BAD_SHAPE, FINISHED_ENV, ILLEGAL_ACTION,
                                       NOT_CARRAY, OK, step_status)
from vecsim.engine.views import (address_of, as_c_layout, c_array_at, c_distinct_array_at, f_array_at,
                                 f_distinct_array_at, is_c_contiguous, overlaps_span)
from vecsim.core.rng import seed_env
from vecsim.core.bits import ctz
from vecsim.core.symbol_call import by_symbol
from vecsim.core.telemetry import TelemetryRing  # TELEMETRY ONLY

import GAME_MODULE as _game
# Parfor lowering looks these names up here (see docs/numba-workarounds.md).
from GAME_MODULE import Params, State

OPTS_SERIAL = kernel_options("PRECISION", False)
OPTS_PARALLEL = kernel_options("PRECISION", True)
PARALLEL_serial, PARALLEL_parallel = False, True  # the kernel's own kind, a compile-time constant

NEXT_STEP, SAME_STEP, NO_RESET = 0, 1, 2
_ONE = np.uint64(1)
_ZERO = np.uint64(0)  # a word compared with an int64 0 is compared in float64 (docs/numba-workarounds.md)
_GATHER_BITS = np.uint64(0x0102040810204080)  # byte j's bit 0 -> bit 56 + j
_SUM_BYTES = np.uint64(0x0101010101010101)  # sum of the 8 bytes -> top byte
_S56 = np.uint64(56)

# The step, observation and mask of one env in one call (see vecsim.engine.fusion.step_and_write).
_step_and_write = step_and_write(_game, "STEP_ENV", "PRECISION", "WRITE_MASK", FLAG_INVALID, TELEMETRY_ON)
# Its reset, fresh-episode outputs, observation and mask in one call (vecsim.engine.fusion.reset_and_write).
# Its last argument is passed as np.bool_(...): literal True and False would type as two
# signatures and compile it twice (see docs/numba-workarounds.md).
_reset_and_write = reset_and_write(_game, "WRITE_MASK", "RESET_ENV")
_all_legal = all_legal_for(_game, "WRITE_MASK")  # a terminated env's mask, bool or packed
_action_allowed = action_allowed_for(_game)  # the binding mask's test: the game's action_legal, or the mask
# The steps of a run of KernelHints.envs_per_call envs in one call (vecsim.engine.fusion.step_run_and_write).
_step_run = step_run_and_write(_game, "STEP_ENV", "PRECISION", "WRITE_MASK", FLAG_INVALID, TELEMETRY_ON)
_draft_run = pre_step_draft_run(_game, "PRECISION")  # DRAFT RUN (kept for games with a pre_step_fix_env)
# CALLS BY SYMBOL BEGIN (kept for games with KernelHints.call_by_symbol: vecsim.engine.codegen.fused_source)
from FUSED_STEP_MODULE import step_and_write as _step_and_write, step_run as _step_run  # noqa: E402
from FUSED_RESET_MODULE import reset_and_write as _reset_and_write  # noqa: E402
# CALLS BY SYMBOL END


@njit(**OPTS_SERIAL)
def point_outputs(step_table, obs, rewards, term, trunc):
    """Point the first four rows of a copy of the step table at new arrays of the outputs'
    shapes, dtypes and layouts (``Engine.step_mode_fresh``: the step writes into them). Numba
    unboxes the four arrays here as it would for a kernel taking them, cheaper than reading
    each address from Python."""
    step_table[0, 0] = address_of(obs)
    step_table[1, 0] = address_of(rewards)
    step_table[2, 0] = address_of(term)
    step_table[3, 0] = address_of(trunc)


@njit(**OPTS_SERIAL)
def _check_step(mode, actions, acts32, needs_reset, needs_u64, was_done, masks, P, CHECK_STATE_ARGS):
    """The step kernels' first pass, before anything changes: every action well formed (and
    narrowed into ``acts32``), no finished env stepped in NO_RESET mode, no action outside a
    binding mask (unless ``invalid_action="flag"``); ``was_done`` = ``needs_reset``. Returns
    ``(status, env index, number of envs due for reset)``. The State arrays come only for a
    game whose ``action_legal`` reads them (``CHECK_STATE``)."""
    n = needs_reset.shape[0]
    # Checks run serially: a parallel reduction would need NRT allocation (kernels have none),
    # and a counting loop without early exit vectorises anyway.
    nbad = 0
    for i in range(n):
        p = Params(PARAM_ROWS)
        nbad += not ACTION_OK(p, actions, i)
        acts32[i] = actions[i]  # NARROW ACTIONS (kept only for Discrete actions)
    # was_done = needs_reset (here rather than in the step loop, which vectorises only with few
    # arrays), counting the envs due for reset: 8 flags a word rather than one at a time, both
    # arrays being zero-padded to whole words.
    was_u64 = was_done.view(np.uint64)
    ndue = _ZERO
    for w in range(needs_u64.shape[0]):
        v = needs_u64[w]
        was_u64[w] = v
        ndue += (v * _SUM_BYTES) >> _S56
    nfinished = np.int64(ndue)
    if nbad > 0:
        for i in range(n):
            p = Params(PARAM_ROWS)
            if not ACTION_OK(p, actions, i):
                return BAD_ACTION, i, 0
    if mode == NO_RESET and nfinished > 0:
        for i in range(n):
            if needs_reset[i]:
                return FINISHED_ENV, i, 0
    # MASK CHECK BEGIN (kept only for games that declare enforce_mask)
    nillegal = 0
    for i in range(n):
        s, p = CHECK_STATE, Params(PARAM_ROWS)
        allowed = _action_allowed(s, p, np.uint64(i), masks, actions[i])
        nillegal += (not needs_reset[i]) and _game.enforce_mask(p, i) and not allowed
    if nillegal > 0 and not FLAG_INVALID:  # "flag": the step loop skips and flags those envs
        for i in range(n):
            s, p = CHECK_STATE, Params(PARAM_ROWS)
            if (not needs_reset[i]) and _game.enforce_mask(p, i) and not _action_allowed(s, p, np.uint64(i), masks,
                                                                                          actions[i]):
                return ILLEGAL_ACTION, i, 0
    # MASK CHECK END
    return OK, -1, nfinished


# Envs a share of a parallel step is a multiple of: the share's flags and narrowed actions then
# fill whole 64-byte cache lines (no line written by two threads) and whole 8-env words of was_u64.
_SHARE_ALIGN = SHARE_ALIGN
# The finer multiple used where whole cache lines would leave a thread without envs: whole runs
# and whole 8-env words of was_u64 (a few envs a thread of a costly game outweigh a shared line).
_SHARE_MIN_ALIGN = SHARE_MIN_ALIGN


@njit(**OPTS_SERIAL)
def _thread_share(n):
    """Envs a thread takes in a parallel step (or observation) of ``n`` envs: ``n`` split evenly
    between Numba's threads, rounded up to whole ``_SHARE_ALIGN`` envs, so that each thread makes
    one call of ``_step_share`` and its rows start on whole cache lines of the per-env flag
    arrays; rounded up to whole ``_SHARE_MIN_ALIGN`` envs instead where whole cache lines would
    leave a thread nothing to step."""
    threads = parallel_threads()
    share = (n + threads - 1) // threads
    aligned = (share + _SHARE_ALIGN - 1) // _SHARE_ALIGN * _SHARE_ALIGN
    if aligned * (threads - 1) >= n:
        aligned = (share + _SHARE_MIN_ALIGN - 1) // _SHARE_MIN_ALIGN * _SHARE_MIN_ALIGN
    return max(_SHARE_MIN_ALIGN, aligned)


@njit(**OPTS_SERIAL)
def _word_share(n_words):
    """Words of a reset mask each thread of a parallel reset takes: an equal share, at least one."""
    threads = parallel_threads()
    return max(1, (n_words + threads - 1) // threads)


@by_symbol
@njit(**OPTS_SERIAL)
def _reset_words(words, w_lo, w_hi, seed_mode, seed, reset_table):
    """The resets of ``reset_MODE`` for the envs of ``words[w_lo:w_hi]``. Plain views: the loop
    visits a few envs at random, where distinct views gain little for their compile time."""
    # PLAIN VIEWS OF reset_table: seeds, obs, rewards, term, trunc, needs_reset, has_final, elapsed, rng, P, events, masks, STATE_ARGS
    # Over words, then over their set bits only: a sparse mask (a few finished envs) costs
    # one test per 64 envs and no unpredictable branch per env.
    n = elapsed.shape[0]
    for w in range(w_lo, w_hi):
        word = words[w]
        while word != _ZERO:
            i = w * 64 + ctz(word)
            word &= word - _ONE
            if i >= n:
                break
            s, p = State(STATE_ARGS), Params(PARAM_ROWS)
            if seed_mode == 1:
                seed_env(rng, i, seed + i)
            elif seed_mode == 2 and seeds[i] >= 0:
                seed_env(rng, i, seeds[i])
            _reset_and_write(s, p, np.uint64(i), rng, events, rewards, elapsed, term, trunc, needs_reset, has_final,
                             obs, masks, obs, np.bool_(False))


@by_symbol
@njit(**OPTS_SERIAL)
def _observe_envs(lo, hi, reset_table):
    """``observe_MODE`` for envs ``lo`` to ``hi - 1``; the mask of an env whose episode
    terminated and awaits its reset is all True, as the step left it."""
    # PLAIN VIEWS OF reset_table: seeds, obs, rewards, term, trunc, needs_reset, has_final, elapsed, rng, P, events, masks, STATE_ARGS
    for i in range(lo, hi):
        s, p = State(STATE_ARGS), Params(PARAM_ROWS)
        _game.write_obs(s, p, np.uint64(i), obs)
        if term[i] and needs_reset[i]:
            _all_legal(s, p, np.uint64(i), masks)
        else:
            MASK_FN(s, p, np.uint64(i), masks)


# The games' functions get the env index as np.uint64(i) from every caller (steps, resets, checks,
# runs and the collectors' slots; Numba types a prange index as int64 when it types the kernel and
# as uint64 when it compiles the parallel loop): one signature of each callee, compiled once.
# uint64 rather than int64: indexing with it needs no check for negative indices (see
# docs/numba-workarounds.md).


@njit(inline="always", **OPTS_SERIAL)  # typed into its caller: a function taking the State compiles for seconds
def _reset_due(s, p, was_u64, lo, hi, rng, events, rewards, elapsed, term, trunc, needs_reset, has_final, obs, masks):
    """Reset the envs of ``lo`` to ``hi - 1`` whose flag is set in ``was_u64`` (``needs_reset``
    as the step began, 8 flags a word: the few set ones without a branch per env)."""
    for w in range(lo // 8, (hi + 7) // 8):
        due = was_u64[w]
        while due != _ZERO:
            i = w * 8 + (ctz(due) >> 3)
            due &= due - _ONE
            _reset_and_write(s, p, np.uint64(i), rng, events, rewards, elapsed, term, trunc, needs_reset,
                             has_final, obs, masks, obs, np.bool_(False))


@by_symbol
@njit(**OPTS_SERIAL)
def _step_share(mode, max_steps, actions, step_table_at, nfinished, whole_obs, lo, hi):
    """Envs ``lo`` to ``hi - 1`` of a step (``step_MODE``): the serial kernel calls it once for
    every env, the parallel one once a thread's share (``_thread_share``: whole runs and whole
    8-env words of ``was_u64``). Envs due for reset reset before the step where the step draws
    (an env's draws must not shift its stream), after it where it draws nothing (stepped from
    their final state, then reset: what resetting instead would have left); then the pre-step
    passes, the steps (one env a call, or the run function's one call), and SAME_STEP's
    resets. An env's reset and step touch only its own rows, so the order between envs changes
    nothing. Called by symbol with the table's address: the steps compile once for both kernels,
    and the parallel region passes a few numbers instead of every State array.

    One env a call, the step loop has no reset branch (the few envs due for reset are fixed up
    in another pass), so it vectorises: LLVM vectorises it only if it can tell the arrays
    apart, so the table's views are distinct here (``vecsim.engine.views.c_distinct_array_at``;
    the kernels check ``actions`` against them first) and plain for a game stepped in runs,
    which has no loop to vectorise; the overlap checks between the arguments the loop touches
    (Box ``actions``) stay few enough to make at run time. Keep the loop's own array accesses
    few (``was_done`` is written in the kernels' check pass for that reason;
    tests/engine/test_vectorised.py guards the loops of CartPole, Pendulum and the MountainCars)."""
    # step_table = TABLE step_table AT step_table_at
    # VIEWS OF step_table: obs, rewards, term, trunc, needs_pad, has_final, final_obs, elapsed, rng, P, events, masks, was_done, acts32, done_words, obs_stale, STATE_ARGS, TELEMETRY_VIEWS
    needs_reset = needs_pad[:elapsed.shape[0]]
    was_u64 = was_done.view(np.uint64)
    s, p = State(STATE_ARGS), Params(PARAM_ROWS)
    # RESETS BEFORE STEP BEGIN (kept for games whose step draws)
    if mode == NEXT_STEP and nfinished > 0:
        _reset_due(s, p, was_u64, lo, hi, rng, events, rewards, elapsed, term, trunc, needs_reset, has_final, obs, masks)
    # RESETS BEFORE STEP END
    # PRE STEP BEGIN (kept only for games with a pre_step_env and no pre_step_fix_env)
    for i in range(lo, hi):
        _game.pre_step_env(s, p, np.uint64(i), STEP_ACTIONS)
    # PRE STEP END
    # PRE STEP DRAFT BEGIN (kept only for games with a pre_step_fix_env: the draft, then the fix)
    _draft_run(s, p, lo, hi, STEP_ACTIONS)
    for i in range(lo, hi):
        _game.pre_step_fix_env(s, p, np.uint64(i), STEP_ACTIONS)
    # PRE STEP DRAFT END
    # STEP PER ENV BEGIN (kept for games with KernelHints.envs_per_call = 1: this loop vectorises)
    for i in range(lo, hi):
        if not (mode == NEXT_STEP and STEP_USES_RNG and was_done[i]):
            reward, terminated = _step_and_write(s, p, np.uint64(i), STEP_ACTIONS, events, rng, obs, masks, TELEMETRY_RING)
            finish_step(np.uint64(i), reward, terminated, max_steps, elapsed, rewards, term, trunc, needs_reset)
    # STEP PER ENV END
    # STEP RUNS BEGIN (kept for games with KernelHints.envs_per_call > 1: the same steps in one call)
    _step_run(s, p, lo, hi, mode == NEXT_STEP and STEP_USES_RNG, max_steps, STEP_ACTIONS, events, rng, obs,
              whole_obs, masks, elapsed, rewards, term, trunc, needs_reset, was_done, TELEMETRY_RING)
    # STEP RUNS END
    # RESETS AFTER STEP BEGIN (kept for games whose step draws nothing)
    if mode == NEXT_STEP and nfinished > 0:
        _reset_due(s, p, was_u64, lo, hi, rng, events, rewards, elapsed, term, trunc, needs_reset, has_final, obs, masks)
    # RESETS AFTER STEP END
    if mode == SAME_STEP:
        for i in range(lo, hi):
            done = needs_reset[i]
            has_final[i] = done
            if done:
                _reset_and_write(s, p, np.uint64(i), rng, events, rewards, elapsed, term, trunc, needs_reset,
                                 has_final, obs, masks, final_obs, np.bool_(True))


@njit(**OPTS_PARALLEL)
def _step_shares(mode, max_steps, actions, step_table_at, nfinished, whole_obs, n, share):
    """The parallel step kernel's one parallel region: ``_step_share`` once a thread's share of the
    envs, alone in a function so that Numba's parallel passes compile this loop only."""
    for c in prange((n + share - 1) // share):
        _step_share(mode, max_steps, actions, step_table_at, nfinished, whole_obs, c * share, min(n, (c + 1) * share))


@njit(**OPTS_PARALLEL)
def _reset_shares(words, seed_mode, seed, reset_table, share):
    """The parallel reset kernel's region: ``_reset_words`` once a thread's share of the words."""
    n_words = words.shape[0]
    for c in prange((n_words + share - 1) // share):
        _reset_words(words, c * share, min(n_words, (c + 1) * share), seed_mode, seed, reset_table)


@njit(**OPTS_PARALLEL)
def _observe_shares(reset_table, n, share):
    """The parallel observe kernel's region: ``_observe_envs`` once a thread's share of the envs."""
    for c in prange((n + share - 1) // share):
        _observe_envs(c * share, min(n, (c + 1) * share), reset_table)


# KERNELS BEGIN


@njit(**OPTS_SERIAL)
def step_MODE(mode, max_steps, given_actions, step_table_at):
    """Step every env; returns one int64: with OK, 0, or in NO_RESET mode the number of envs
    that finished (their bits are in ``done_words``); otherwise ``-(8 * value + status)``
    (``step_status``), status being BAD_ACTION, FINISHED_ENV, ILLEGAL_ACTION, ALIASED_ARRAY,
    BAD_SHAPE or NOT_CARRAY and value the offending env's index (with ALIASED_ARRAY: the row
    of the table whose array shares memory with the actions; with BAD_SHAPE and NOT_CARRAY:
    0). Nothing is written before a refusal.

    ``step_table_at`` is the address of the step table (an int64 is cheaper to pass from
    Python than an array). ``given_actions`` is typed with any layout (``Engine`` calls the compiled function
    directly, after checking only its type, dtype and ``ndim``): its row count and its
    C-contiguity and alignment are checked here, and the rest of the kernel reads a C view.
    The steps and resets are ``_step_share``'s.
    """
    # step_table = TABLE step_table AT step_table_at
    # PLAIN VIEWS OF step_table: obs, rewards, term, trunc, needs_pad, has_final, final_obs, elapsed, rng, P, events, masks, was_done, acts32, done_words, obs_stale, STATE_ARGS, TELEMETRY_VIEWS
    if given_actions.shape[0] != elapsed.shape[0]:
        return -BAD_SHAPE
    # BOX WIDTH CHECK
    if not is_c_contiguous(given_actions):
        return -NOT_CARRAY
    actions = as_c_layout(given_actions)
    # aliased = FIRST VIEW OF step_table OVERLAPPING actions
    if aliased >= 0:
        return step_status(ALIASED_ARRAY, aliased)
    n = elapsed.shape[0]
    needs_reset = needs_pad[:n]
    needs_u64 = needs_pad.view(np.uint64)
    status, index, nfinished = _check_step(mode, actions, acts32, needs_reset, needs_u64, was_done, masks, P,
                                           CHECK_STATE_ARGS)
    if status != OK:
        return step_status(status, index)
    # One call of _step_share for every env (serial), or for each thread's share (parallel).
    whole_obs = obs_stale[0] != 0
    if PARALLEL_MODE:
        _step_shares(mode, max_steps, actions, step_table_at, nfinished, whole_obs, n, _thread_share(n))
    else:
        _step_share(mode, max_steps, actions, step_table_at, nfinished, whole_obs, 0, n)
    if obs_stale[0] == 1:  # every env's observation was written (a step or a reset): obs is current
        obs_stale[0] = 0
    if mode == NO_RESET:
        # Pack the flags 8 at a time: ``needs_u64`` views ``needs_reset`` (zero-padded to whole
        # words) as uint64, 8 bool bytes each; a multiply gathers their low bits into a byte.
        ndone = _ZERO
        for w in range(done_words.shape[0]):
            word = _ZERO
            for k in range(8):
                v = needs_u64[w * 8 + k]
                word |= ((v * _GATHER_BITS) >> _S56) << np.uint64(8 * k)
                ndone += (v * _SUM_BYTES) >> _S56
            done_words[w] = word
        return np.int64(ndone)
    return OK


@njit(**OPTS_SERIAL)
def reset_MODE(words, seed_mode, seed, reset_table):
    """Reset the envs whose bit is set in ``words``; returns -1, or without resetting any env
    the row of the table whose array shares memory with ``words``. A parallel kernel gives each
    thread an equal share of the words (``_reset_words``, called by symbol: the resets are
    compiled once, not again into a parallel region).

    seed_mode 0: continue each env's stream; 1: env i gets seed ``seed + i``;
    2: env i gets ``seeds[i]`` where that is >= 0 and continues its stream otherwise.
    """
    # PLAIN VIEWS OF reset_table: seeds, obs, rewards, term, trunc, needs_reset, has_final, elapsed, rng, P, events, masks, STATE_ARGS
    # aliased = FIRST VIEW OF reset_table OVERLAPPING words
    if aliased >= 0:
        return aliased
    if PARALLEL_MODE:
        _reset_shares(words, seed_mode, seed, reset_table, _word_share(words.shape[0]))
    else:
        _reset_words(words, 0, words.shape[0], seed_mode, seed, reset_table)
    return -1


@njit(**OPTS_SERIAL)
def observe_MODE(reset_table):
    """Rewrite every env's observation and mask from its state (after a state write): a
    parallel kernel gives each thread a share of the envs (``_observe_envs``, by symbol)."""
    # PLAIN VIEWS OF reset_table: seeds, obs, rewards, term, trunc, needs_reset, has_final, elapsed, rng, P, events, masks, STATE_ARGS
    n = obs.shape[0]
    if PARALLEL_MODE:
        _observe_shares(reset_table, n, _thread_share(n))
    else:
        _observe_envs(0, n, reset_table)


# KERNELS END


# Steps of a subset of the envs (vecsim.engine.opponents: the envs whose turn belongs to a seat
# played out of the kernel), serial only: the envs of a subset wait on a Python call anyway.


@njit(**OPTS_SERIAL)
def step_envs(words, max_steps, actions, step_table):
    """Step once, without resetting any, only the envs whose bit is set in ``words``; the
    others keep their state and outputs. Returns ``(status, env index)`` as ``step_serial``
    does, ``(OK, -1)`` once stepped; nothing is stepped unless every action of the subset
    passes. ``max_steps`` -1: moves that belong to an earlier step (seats played out of the
    kernel), which leave the step count as it was and never truncate."""
    # PLAIN VIEWS OF step_table: obs, rewards, term, trunc, needs_pad, has_final, final_obs, elapsed, rng, P, events, masks, was_done, acts32, done_words, obs_stale, STATE_ARGS, TELEMETRY_VIEWS
    n = elapsed.shape[0]
    needs_reset = needs_pad[:n]
    for w in range(words.shape[0]):
        word = words[w]
        while word != _ZERO:
            i = w * 64 + ctz(word)
            word &= word - _ONE
            if i >= n:
                break
            s, p = State(STATE_ARGS), Params(PARAM_ROWS)
            if not ACTION_OK(p, actions, i):
                return BAD_ACTION, i
            if needs_reset[i]:
                return FINISHED_ENV, i
            # MASK CHECK BEGIN (kept only for games that declare enforce_mask)
            if not FLAG_INVALID and _game.enforce_mask(p, i) and not _action_allowed(s, p, np.uint64(i), masks,
                                                                                     actions[i]):
                return ILLEGAL_ACTION, i
            # MASK CHECK END
            acts32[i] = actions[i]  # NARROW ACTIONS (kept only for Discrete actions)
    for w in range(words.shape[0]):
        word = words[w]
        while word != _ZERO:
            i = w * 64 + ctz(word)
            word &= word - _ONE
            if i >= n:
                break
            s, p = State(STATE_ARGS), Params(PARAM_ROWS)
            # PRE STEP BEGIN (kept only for games with a pre_step_env and no pre_step_fix_env)
            _game.pre_step_env(s, p, np.uint64(i), STEP_ACTIONS)
            # PRE STEP END
            # PRE STEP DRAFT BEGIN (kept only for games with a pre_step_fix_env: the draft, then the fix)
            _draft_run(s, p, i, i + 1, STEP_ACTIONS)
            _game.pre_step_fix_env(s, p, np.uint64(i), STEP_ACTIONS)
            # PRE STEP DRAFT END
            steps_before = elapsed[i]
            reward, terminated = _step_and_write(s, p, np.uint64(i), STEP_ACTIONS, events, rng, obs, masks, TELEMETRY_RING)
            finish_step(np.uint64(i), reward, terminated, max_steps, elapsed, rewards, term, trunc, needs_reset)
            if max_steps < 0:
                elapsed[i] = steps_before
    return OK, -1


@njit(**OPTS_SERIAL)
def reset_same_step(words, step_table):
    """Reset the envs whose bit is set in ``words`` as a SAME_STEP step resets a finished env:
    its observation to ``final_obs``, its reward, flags and events kept, ``has_final`` set."""
    # PLAIN VIEWS OF step_table: obs, rewards, term, trunc, needs_pad, has_final, final_obs, elapsed, rng, P, events, masks, was_done, acts32, done_words, obs_stale, STATE_ARGS, TELEMETRY_VIEWS
    n = elapsed.shape[0]
    needs_reset = needs_pad[:n]
    for w in range(words.shape[0]):
        word = words[w]
        while word != _ZERO:
            i = w * 64 + ctz(word)
            word &= word - _ONE
            if i >= n:
                break
            s, p = State(STATE_ARGS), Params(PARAM_ROWS)
            _reset_and_write(s, p, np.uint64(i), rng, events, rewards, elapsed, term, trunc, needs_reset, has_final,
                             obs, masks, final_obs, np.bool_(True))
