"""Template of the per-step collection kernels, for policies that run outside the kernel.

Never imported. ``vecsim.engine.codegen.load_collect_step_kernels`` substitutes the game module
(and the stand-ins its ``kernel_functions`` chose), the state fields, the precision and the
action kind (``discrete`` or ``box``), writes the result into vecsim's cache folder and imports
it, so the kernels are cached on disk like the batched kernels (see
docs/numba-workarounds.md). The section between the KERNELS markers is instantiated twice,
``_serial`` and ``_parallel``: one body, two compilations, identical results (each slot
touches only its own state row, its own RNG row and the rows of its own job). Only the step
of the running slots and the start of many jobs at once run in parallel: the job hand-out is
serial (jobs go to slots in slot order), and so are the packing and the start of the few jobs
of a usual step.

``advance_MODE`` does all of ``EpisodeCollector``'s bookkeeping between two policy calls:
it takes the actions of the running slots (given by the policy, read from an action table,
or drawn uniformly over the legal actions), checks them all before stepping any, steps the
running slots without reset, writes each step into the job's row of the episode arrays, gives
every slot whose episode ended the next job at once (seeded ``seeds[j]``), and lists the
running slots, with their observations and masks packed in slot order for the next policy
call. Nothing allocates.

Buffers (``W`` slots, ``B`` jobs, ``K`` steps):
    ctl        (N_CTL,) int64: next job, jobs finished, running slots, jobs ended in this
               call, status, index (in the running list) of the bad action
    job_of     (W,) int64 job of each slot (-1: idle);  step_of (W,) int64 its next step
    run        (W,) int64 the running slots in slot order (``ctl[N_RUN]`` of them)
    fin        (W,) bool scratch: the slot's episode ended in this step
    idle       (W,) bool the slot has no job;  r_of (W,) int64 index of a running slot in ``run``
    fresh      (W,) int64 scratch: slots that took a job in this step
    ended      (B,) int64 the jobs that ended in this call, in the order they ended
    seeds      (B,) int64 reset seed of each job
    pol_rng    (W, 2) uint64 the random policy's stream of each slot (see ``_start_job``)
    *_out      the episode arrays ``[B, K, ...]`` of ``EpisodeBatch``; ``mask_out``,
               ``lp_out``, ``val_out`` have a zero leading axis when they are not kept
    pol_obs    (W, obs_dim), pol_masks (W, n_mask): observations and masks of the running
               slots, packed, when some slots are idle
    actions, acts32, obs, masks, events, rng, elapsed, rewards, term, trunc, needs_reset, P, state: the
               engine's buffers (its step outputs are scratch: a game with
               ``KernelHints.call_by_symbol`` steps its runs of slots with the engine's fused run,
               compiled once for both)
"""

import numpy as np
from numba import njit, prange

from vecsim.core.contract import box_finite, discrete_ok, no_mask, no_pre_step
from vecsim.core.jit import kernel_options
from vecsim.engine.episode_rows import pad_tail, record_inputs
from vecsim.engine.fusion import all_legal, step_and_write, step_parts  # INLINED STEP ONLY
from vecsim.core.rng import mix64, randint, seed_env, uniform
from vecsim.core.symbol_call import by_symbol  # BY SYMBOL ONLY

import GAME_MODULE as _game
# Parfor lowering looks these names up here (see docs/numba-workarounds.md).
from GAME_MODULE import Params, State

# The engine's fused step of one env and of a run of envs (vecsim.engine.codegen.fused_source),
# compiled once for the game's engines and collectors.
from FUSED_STEP_MODULE import step_and_write as _fused_one, step_run as _fused_run  # BY SYMBOL ONLY

OPTS_SERIAL = kernel_options("PRECISION", False)
OPTS_PARALLEL = kernel_options("PRECISION", True)
# INLINED STEP BEGIN (kept for games without KernelHints.call_by_symbol: the rules compiled into the kernels)
_step_and_write = step_and_write(_game, "STEP_ENV", "PRECISION", "WRITE_MASK")
# Its step and mask as copies inlined into _step_slots, and write_obs (vecsim.engine.fusion.step_parts).
_step_inline, _write_obs, _mask_inline = step_parts(_game, "STEP_ENV", "PRECISION", "WRITE_MASK")
# INLINED STEP END

#: Where the actions come from.
SOURCE_POLICY, SOURCE_TABLE, SOURCE_RANDOM = 0, 1, 2
#: Slots of ``ctl``.
NEXT_JOB, FINISHED, N_RUN, N_ENDED, STATUS, BAD_INDEX = range(6)
N_CTL = 6
#: Values of ``ctl[STATUS]``.
OK, BAD_ACTION, NO_LEGAL_ACTION = 0, 1, 2
#: Jobs started in one step from which the parallel kernel starts them in parallel.
PARALLEL_MIN_STARTS = 64
#: Keys the random policy's stream apart from the env's own stream of the same seed.
_POLICY_SALT = np.uint64(0x2545F4914F6CDD1D)


@njit(**OPTS_SERIAL)
def _take_discrete(actions, w, src, r):
    actions[w] = src[r]


@njit(**OPTS_SERIAL)
def _take_box(actions, w, src, r):
    for k in range(actions.shape[1]):
        actions[w, k] = src[r, k]


@njit(**OPTS_SERIAL)
def _lookup_discrete(actions, w, table, j, t):
    actions[w] = table[j, t]


@njit(**OPTS_SERIAL)
def _lookup_box(actions, w, table, j, t):
    for k in range(actions.shape[1]):
        actions[w, k] = table[j, t, k]


@njit(**OPTS_SERIAL)
def _draw_discrete(actions, w, masks, n_actions, low, high, pol_rng):
    """A uniform legal action for slot ``w``; False when no action is legal."""
    n_mask = masks.shape[1]
    if n_mask == 0:
        actions[w] = randint(pol_rng, np.uint64(w), n_actions)
        return True
    count = 0
    for a in range(n_mask):
        count += np.int64(masks[w, a])
    if count == 0:
        return False
    k = randint(pol_rng, np.uint64(w), count)
    for a in range(n_mask):
        if masks[w, a]:
            if k == 0:
                actions[w] = a
                return True
            k -= 1
    return False


@njit(**OPTS_SERIAL)
def _draw_box(actions, w, masks, n_actions, low, high, pol_rng):
    """A uniform action in ``[low, high)`` for slot ``w``."""
    for k in range(actions.shape[1]):
        actions[w, k] = uniform(pol_rng, np.uint64(w), low[k], high[k])
    return True


@njit(**OPTS_SERIAL)
def _legal_discrete(p, actions, w, mask_out, j, t):
    """In range, and allowed by the mask recorded for the step (policies cannot alter it)."""
    return ACTION_OK(p, actions, w) and (mask_out.shape[0] == 0 or mask_out[j, t, actions[w]])


@njit(**OPTS_SERIAL)
def _legal_box(p, actions, w, mask_out, j, t):
    return ACTION_OK(p, actions, w)


@njit(**OPTS_SERIAL)
def _record_discrete(act_out, j, t, actions, w):
    act_out[j, t] = actions[w]


@njit(**OPTS_SERIAL)
def _record_box(act_out, j, t, actions, w):
    for k in range(actions.shape[1]):
        act_out[j, t, k] = actions[w, k]


@by_symbol  # BY SYMBOL ONLY (called in the serial loop, the parallel loop and the parallel region's body)
@njit(**OPTS_SERIAL)
def _start_job(w, j, seeds, pol_rng, obs_out, mask_out, obs, masks, rng, P, STATE_ARGS):
    """Reset slot ``w`` for job ``j`` (seeded ``seeds[j]``) and record its first observation."""
    s, p = State(STATE_ARGS), Params(PARAM_ROWS)
    seed_env(rng, w, seeds[j])
    # The random policy's stream: a function of the job's seed, apart from the env's.
    pol_rng[w, 0] = mix64(rng[w, 0] ^ _POLICY_SALT)
    pol_rng[w, 1] = 0
    i = np.uint64(w)  # the env index type of the kernels' calls (templates/batch.py)
    _game.RESET_ENV(s, p, i, rng)
    _game.write_obs(s, p, i, obs)
    MASK_FN(s, p, i, masks)
    record_inputs(j, 0, w, obs, masks, obs_out, mask_out)


@njit(**OPTS_SERIAL)
def _finish_slot_KIND(r, w, j, t, reward, terminated, max_steps, env_max_steps, keep_extras, given_lp, given_val,
                      obs_out, act_out, rew_out, done_out, term_out, len_out, mask_out, lp_out, val_out, actions, obs,
                      masks, step_of, fin):
    """After slot ``w`` (running slot ``r``) stepped job ``j``'s step ``t``: the step into the
    job's row, its end by termination, truncation or ``max_steps``, and the slot's next step;
    the one place both per-step loops (runs of slots and one slot a call) write it."""
    _record_KIND(act_out, j, t, actions, w)
    rew_out[j, t] = reward
    if keep_extras:
        lp_out[j, t] = given_lp[r]
        val_out[j, t] = given_val[r]
    truncated = env_max_steps > 0 and t + 1 >= env_max_steps
    done = terminated or truncated or t + 1 >= max_steps
    done_out[j, t] = done
    step_of[w] = t + 1
    fin[w] = done
    if done:
        pad_tail(j, t + 1, obs_out, act_out, rew_out, done_out, mask_out, len_out)
        term_out[j] = terminated
    else:
        record_inputs(j, t + 1, w, obs, masks, obs_out, mask_out)


# INLINED STEP BEGIN
@njit(**OPTS_SERIAL)
def _step_slots(lo, hi, s, p, run, job_of, step_of, fin, max_steps, env_max_steps, keep_extras, given_lp, given_val,
                obs_out, act_out, rew_out, done_out, term_out, len_out, mask_out, lp_out, val_out, actions, obs, masks,
                events, rng):
    """Step the running slots ``run[lo:hi]`` once and write each step into its job's row (the
    kernels of a game with ``KernelHints.envs_per_call > 1``, one call per that many slots: the ``State``
    arrays are passed once a call; the per-slot loop of ``advance_MODE`` does the same)."""
    for r in range(lo, hi):
        w = run[r]
        j = job_of[w]
        t = step_of[w]
        i = np.uint64(w)
        PRE_STEP(s, p, i, actions)
        # Observation and mask are written even at the end (one call; a finished slot's next
        # job overwrites them).
        reward, terminated = _step_inline(s, p, i, actions, events, rng)  # as _step_and_write
        _write_obs(s, p, i, obs)
        if terminated:
            all_legal(w, masks)
        else:
            _mask_inline(s, p, i, masks)
        _finish_slot_KIND(r, w, j, t, reward, terminated, max_steps, env_max_steps, keep_extras, given_lp,
                          given_val, obs_out, act_out, rew_out, done_out, term_out, len_out, mask_out, lp_out, val_out,
                          actions, obs, masks, step_of, fin)
# INLINED STEP END


@njit(**OPTS_SERIAL)
def _place_actions_KIND(source, n_run, run, job_of, step_of, actions, acts32, given, table, masks, n_actions, low,
                        high, pol_rng, mask_out, P):
    """Place the action of every running slot (from the policy's ``given``, the ``table`` or
    drawn) and check it, before any slot is stepped. Returns ``(OK, -1)``, or the status and
    the index in ``run`` of the first slot with no legal action or an illegal one."""
    for r in range(n_run):
        w = run[r]
        j = job_of[w]
        t = step_of[w]
        p = Params(PARAM_ROWS)
        if source == SOURCE_POLICY:
            _take_KIND(actions, w, given, r)
        elif source == SOURCE_TABLE:
            _lookup_KIND(actions, w, table, j, t)
        elif not _draw_KIND(actions, w, masks, n_actions, low, high, pol_rng):
            return NO_LEGAL_ACTION, r
        if not _legal_KIND(p, actions, w, mask_out, j, t):
            return BAD_ACTION, r
        acts32[w] = actions[w]  # NARROW ACTIONS (Discrete, call_by_symbol: the engine's step reads int32)
    return OK, -1


@njit(**OPTS_SERIAL)
def _next_jobs(ctl, fin, ended, job_of, step_of, fresh, n_jobs):
    """Slots whose episode ended hand their job to ``ended`` and take the next jobs, in slot
    order; returns how many slots took one (listed in ``fresh``)."""
    n_fresh = 0
    for w in range(job_of.shape[0]):
        if fin[w]:
            fin[w] = False
            ended[ctl[N_ENDED]] = job_of[w]
            ctl[N_ENDED] += 1
            ctl[FINISHED] += 1
            job_of[w] = -1
        if job_of[w] < 0 and ctl[NEXT_JOB] < n_jobs:
            job_of[w] = ctl[NEXT_JOB]
            ctl[NEXT_JOB] += 1
            step_of[w] = 0
            fresh[n_fresh] = w
            n_fresh += 1
    return n_fresh


@njit(**OPTS_SERIAL)
def _running_slots(job_of, run, idle, r_of):
    """The slots with a job, in slot order, into ``run``; returns how many. ``idle[w]``: slot
    ``w`` has no job; ``r_of[w]``: the index of running slot ``w`` in ``run``."""
    n_run = 0
    for w in range(job_of.shape[0]):
        idle[w] = job_of[w] < 0
        if not idle[w]:
            r_of[w] = n_run
            run[n_run] = w
            n_run += 1
    return n_run


@njit(**OPTS_SERIAL)
def _pack_for_policy(n_run, run, obs, masks, pol_obs, pol_masks):
    """The running slots' observations and masks, packed in ``run`` order for the policy."""
    for r in range(n_run):
        w = run[r]
        for k in range(obs.shape[1]):
            pol_obs[r, k] = obs[w, k]
        for k in range(masks.shape[1]):
            pol_masks[r, k] = masks[w, k]


# KERNELS BEGIN


@njit(**OPTS_MODE)
def advance_MODE(source, n_iters, max_steps, env_max_steps, n_actions, given, given_lp, given_val, table, low, high,
                 ctl, job_of, step_of, run, fin, idle, r_of, fresh, ended, seeds, pol_rng, obs_out, act_out, rew_out,
                 done_out, term_out, len_out, mask_out, lp_out, val_out, pol_obs, pol_masks, actions, acts32, obs,
                 masks, events, rng, elapsed, rewards, term, trunc, needs_reset, P, STATE_ARGS):
    """Play up to ``n_iters`` steps of every running slot (see the module docstring).

    ``given`` (with ``given_lp``, ``given_val`` when ``lp_out`` is kept) holds one action per
    running slot, in ``run`` order, for ``source == SOURCE_POLICY`` (then ``n_iters`` is 1).
    An illegal action stops the call before that step: ``ctl[STATUS]`` says why and
    ``ctl[BAD_INDEX]`` is its index in ``run``.
    """
    n_jobs = seeds.shape[0]
    n_slots = job_of.shape[0]
    keep_extras = lp_out.shape[0] > 0 and given_lp.shape[0] > 0
    ctl[N_ENDED] = 0
    ctl[STATUS] = OK
    for _ in range(n_iters):
        n_run = ctl[N_RUN]
        if n_run > 0:
            status, r = _place_actions_KIND(source, n_run, run, job_of, step_of, actions, acts32, given, table, masks,
                                            n_actions, low, high, pol_rng, mask_out, P)
            if status != OK:
                ctl[STATUS] = status
                ctl[BAD_INDEX] = r
                return
            # FUSED RUNS BEGIN (kept for games with KernelHints.call_by_symbol and envs_per_call > 1: runs of
            # slots stepped by the engine's fused run, the idle slots skipped, then written into their jobs' rows)
            for c in prange((n_slots + RUN_LENGTH - 1) // RUN_LENGTH):
                s, p = State(STATE_ARGS), Params(PARAM_ROWS)
                lo = c * RUN_LENGTH
                hi = min(n_slots, lo + RUN_LENGTH)
                for w in range(lo, hi):
                    if not idle[w]:
                        PRE_STEP(s, p, np.uint64(w), STEP_ACTIONS)
                _fused_run(s, p, lo, hi, True, 0, STEP_ACTIONS, events, rng, obs, True, masks, elapsed, rewards, term,
                           trunc, needs_reset, idle)
                for w in range(lo, hi):
                    if not idle[w]:
                        _finish_slot_KIND(r_of[w], w, job_of[w], step_of[w], rewards[w], term[w], max_steps,
                                          env_max_steps, keep_extras, given_lp, given_val, obs_out, act_out, rew_out,
                                          done_out, term_out, len_out, mask_out, lp_out, val_out, actions, obs, masks,
                                          step_of, fin)
            # FUSED RUNS END
            # FUSED PER SLOT BEGIN (kept for games with KernelHints.call_by_symbol and envs_per_call = 1: the
            # engine's fused step of one env, called as the engine calls it)
            for r in prange(n_run):
                w = run[r]
                s, p = State(STATE_ARGS), Params(PARAM_ROWS)
                PRE_STEP(s, p, np.uint64(w), STEP_ACTIONS)
                reward, terminated = _fused_one(s, p, np.uint64(w), STEP_ACTIONS, events, rng, obs, masks)
                _finish_slot_KIND(r, w, job_of[w], step_of[w], reward, terminated, max_steps, env_max_steps, keep_extras,
                                  given_lp, given_val, obs_out, act_out, rew_out, done_out, term_out, len_out, mask_out,
                                  lp_out, val_out, actions, obs, masks, step_of, fin)
            # FUSED PER SLOT END
            # SLOT RUNS BEGIN (kept for other games with KernelHints.envs_per_call > 1)
            for c in prange((n_run + RUN_LENGTH - 1) // RUN_LENGTH):
                s, p = State(STATE_ARGS), Params(PARAM_ROWS)
                lo = c * RUN_LENGTH
                _step_slots(lo, min(n_run, lo + RUN_LENGTH), s, p, run, job_of, step_of, fin, max_steps,
                            env_max_steps, keep_extras, given_lp, given_val, obs_out, act_out, rew_out, done_out,
                            term_out, len_out, mask_out, lp_out, val_out, actions, obs, masks, events, rng)
            # SLOT RUNS END
            # PER SLOT BEGIN (kept for other games, with KernelHints.envs_per_call = 1: faster for CartPole's small
            # state than runs of 16; the body is _step_slots')
            for r in prange(n_run):
                w = run[r]
                j = job_of[w]
                t = step_of[w]
                s, p = State(STATE_ARGS), Params(PARAM_ROWS)
                PRE_STEP(s, p, np.uint64(w), actions)
                reward, terminated = _step_and_write(s, p, np.uint64(w), actions, events, rng, obs,
                                                     masks)
                _finish_slot_KIND(r, w, j, t, reward, terminated, max_steps, env_max_steps, keep_extras, given_lp,
                                  given_val, obs_out, act_out, rew_out, done_out, term_out, len_out, mask_out, lp_out, val_out,
                                  actions, obs, masks, step_of, fin)
            # PER SLOT END
        n_fresh = _next_jobs(ctl, fin, ended, job_of, step_of, fresh, n_jobs)
        # Most steps start a few jobs: serially, as one parallel launch per step costs less
        # than two (a launch can wait for a busy core). The first call starts one per slot.
        if n_fresh >= PARALLEL_MIN_STARTS:
            for q in prange(n_fresh):
                _start_job(fresh[q], job_of[fresh[q]], seeds, pol_rng, obs_out, mask_out, obs, masks, rng, P,
                           STATE_ARGS)
        else:
            for q in range(n_fresh):
                _start_job(fresh[q], job_of[fresh[q]], seeds, pol_rng, obs_out, mask_out, obs, masks, rng, P,
                           STATE_ARGS)
        n_run = _running_slots(job_of, run, idle, r_of)
        ctl[N_RUN] = n_run
        if n_run == 0:
            break
    n_run = ctl[N_RUN]
    if source == SOURCE_POLICY and n_run < n_slots:
        # With every slot running the policy reads the engine's buffers; else they are packed.
        _pack_for_policy(n_run, run, obs, masks, pol_obs, pol_masks)


# KERNELS END
