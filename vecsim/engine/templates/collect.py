"""Template of the episode-collection kernel for an in-kernel (jitted) policy.

Never imported. ``vecsim.engine.codegen.load_collect_kernel`` substitutes the game module (and
the stand-ins its ``kernel_functions`` chose), the policy's module and name, the state fields
and the precision, writes the result into vecsim's cache folder and imports it, so the kernel
is cached on disk like the batched kernels (a jitted function passed as an argument would be
recompiled in every process: see docs/numba-workarounds.md).

Slot ``w`` of ``W`` plays jobs ``w, w + W, w + 2W, ...`` to the end, entirely inside the
kernel: the policy, the step, the observation and the mask of every step, with no Python
in between. Job ``j`` is seeded with ``seeds[j]``, so its episode does not depend on which
slot or thread plays it.
"""

import numpy as np
from numba import njit, prange

from vecsim.core.contract import box_finite, discrete_ok, no_mask, no_pre_step
from vecsim.engine.episode_rows import pad_tail, record_inputs
from vecsim.engine.fusion import all_legal, inline_if_same_semantics, step_parts
from vecsim.core.jit import kernel_options
from vecsim.core.rng import seed_env

import GAME_MODULE as _game
# Parfor lowering looks these names up here (see docs/numba-workarounds.md).
from GAME_MODULE import Params, State
from POLICY_MODULE import POLICY_NAME as _policy

OPTS = kernel_options("PRECISION", True)
OPTS_SLOT = kernel_options("PRECISION", False)
# The game's step and mask, and the policy, as copies inlined into _play_slot (see there);
# a policy compiled with other float semantics than this precision's is called instead.
_step_inline, _write_obs, _mask_inline = step_parts(_game, "STEP_ENV", "PRECISION", "WRITE_MASK")
_policy_inline = inline_if_same_semantics(_policy, OPTS_SLOT)


@njit(**dict(OPTS_SLOT, inline="always"))
def _start_job(s, p, w, seed, rng, obs, masks):
    """Reset slot ``w`` for a job seeded ``seed``: its first observation and mask."""
    seed_env(rng, w, seed)
    _game.RESET_ENV(s, p, w, rng)
    _game.write_obs(s, p, w, obs)
    MASK_FN(s, p, w, masks)


@njit(**OPTS_SLOT)
def _play_slot(s, p, w, seeds, max_steps, env_max_steps, obs_out, act_out, rew_out, done_out, term_out, len_out,
               mask_out, bad, actions, obs, masks, events, rng):
    """Slot ``w`` plays jobs ``w, w + W, w + 2W, ...`` (``W`` slots) to the end.

    One call a slot, with the policy and the step inlined: a call passes every ``State``
    array by value (pointer, shape, strides), which two calls a step (policy, then step)
    would pay twice. Not in the prange body itself, where inlining the step changes the
    parallel kernel's results (see docs/numba-workarounds.md)."""
    n_mask = masks.shape[1]
    bad[w, 0] = 0
    for j in range(w, seeds.shape[0], actions.shape[0]):
        if bad[w, 0] != 0:
            break
        _start_job(s, p, w, seeds[j], rng, obs, masks)
        t = 0
        terminated = False
        while True:
            record_inputs(j, t, w, obs, masks, obs_out, mask_out)
            a = _policy_inline(s, p, w, rng)
            actions[w] = a
            if not (ACTION_OK(p, actions, w) and (n_mask == 0 or masks[w, a])):
                bad[w, 0] = j + 1
                bad[w, 1] = a
                break
            act_out[j, t] = a
            PRE_STEP(s, p, w, actions)
            reward, terminated = _step_inline(s, p, w, actions, events, rng)  # as vecsim.engine.fusion.step_and_write
            _write_obs(s, p, w, obs)
            if terminated:
                all_legal(w, masks)  # as vecsim.engine.fusion.step_and_write
            else:
                _mask_inline(s, p, w, masks)
            rew_out[j, t] = reward
            t += 1
            done = terminated or (env_max_steps > 0 and t >= env_max_steps) or t >= max_steps
            done_out[j, t - 1] = done
            if done:
                break
        pad_tail(j, t, obs_out, act_out, rew_out, done_out, mask_out, len_out)
        term_out[j] = terminated


@njit(**OPTS)
def collect(seeds, max_steps, env_max_steps, obs_out, act_out, rew_out, done_out, term_out, len_out, mask_out,
            bad, actions, obs, masks, events, rng, P, STATE_ARGS):
    """Play every job. When slot ``w``'s policy returns a malformed or illegal action ``a`` in
    job ``j``, ``bad[w] = (j + 1, a)`` and that slot stops (``bad[w, 0] == 0``: no error)."""
    for w in prange(actions.shape[0]):
        s, p = State(STATE_ARGS), Params(PARAM_ROWS)
        # np.uint64(w): a plain prange index compiles the callee twice (see templates/batch.py).
        _play_slot(s, p, np.uint64(w), seeds, max_steps, env_max_steps, obs_out, act_out, rew_out, done_out, term_out,
                   len_out, mask_out, bad, actions, obs, masks, events, rng)
