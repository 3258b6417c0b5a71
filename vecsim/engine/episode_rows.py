"""Rows of an episode batch ``[B, K, ...]`` as the collection kernels write them: what the
policy saw at a step, and the padding after an episode ends. One copy for both collection
templates (``templates/collect.py`` and ``templates/collect_step.py``), inlined into each."""

from __future__ import annotations

from numba import njit

from vecsim.core.jit import EXACT_OPTIONS

_ROW_OPTIONS = dict(EXACT_OPTIONS, inline="always")


@njit(**_ROW_OPTIONS)
def record_inputs(j, t, w, obs, masks, obs_out, mask_out):
    """Step ``t`` of job ``j`` gets slot ``w``'s observation, and its mask when
    ``mask_out`` has rows (an empty ``mask_out`` keeps no masks)."""
    for k in range(obs.shape[1]):
        obs_out[j, t, k] = obs[w, k]
    if mask_out.shape[0] > 0:
        for k in range(masks.shape[1]):
            mask_out[j, t, k] = masks[w, k]


@njit(**_ROW_OPTIONS)
def pad_tail(j, n_steps, obs_out, act_out, rew_out, done_out, mask_out, len_out):
    """Steps ``n_steps`` on of job ``j``'s row back to padding; its length set to ``n_steps``.

    Reused arrays are not cleared before a collection: ``len_out[j]`` still holds the length
    of the episode the row held before, so only the steps that longer episode wrote are
    cleared, not the whole ``[B, K]`` block. ``act_out`` is ``(B, K)`` or ``(B, K, act_dim)``."""
    for t in range(n_steps, len_out[j]):
        for k in range(obs_out.shape[2]):
            obs_out[j, t, k] = 0
        act_out[j, t] = 0
        rew_out[j, t] = 0
        done_out[j, t] = True
        if mask_out.shape[0] > 0:
            for k in range(mask_out.shape[2]):
                mask_out[j, t, k] = False
    len_out[j] = n_steps
