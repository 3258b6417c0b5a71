"""A categorical policy over logits with an optional legal-action mask, in NumPy.

Illegal actions get the logit ``MASKED_LOGIT`` (finite, so that ``p * log p`` is 0, not NaN):
their probability is exactly 0, they are never drawn, and they add nothing to the entropy or
to the gradients (the masking of MaskablePPO, Huang and Ontañón, "A closer look at invalid
action masking in policy gradient algorithms", 2022).
"""

from __future__ import annotations

import numpy as np

from vecsim.core.jit import exact

MASKED_LOGIT = -1e9


def log_softmax(logits: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """Log-probabilities ``(B, A)``; ``mask`` ``(B, A)`` bool or ``None``."""
    if mask is not None:
        logits = np.where(mask, logits, logits.dtype.type(MASKED_LOGIT))
    z = logits - logits.max(axis=1, keepdims=True)
    total = np.exp(z).sum(axis=1, keepdims=True)
    z -= np.log(total, out=total)
    return z


@exact(cache=True)
def _inverse_cdf(probs, u, out):
    """out[b] = the number of actions whose cumulative probability is <= u[b] times the row's total."""
    for b in range(probs.shape[0]):
        total = probs.dtype.type(0)
        for a in range(probs.shape[1]):
            total += probs[b, a]
        threshold = u[b] * np.float64(total)
        cum = probs.dtype.type(0)
        count = 0
        for a in range(probs.shape[1]):
            cum += probs[b, a]
            count += np.float64(cum) <= threshold
        out[b] = count


def sample(logp: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One action per row, by inverse CDF with uniforms ``u`` ``(B,)`` float64: ``(B,)`` int64.
    An action of probability 0 is never drawn. ``logp`` ``(B, A)`` float32 or float64."""
    logp, u = np.asarray(logp), np.asarray(u, dtype=np.float64)
    if logp.ndim != 2 or logp.dtype not in (np.float32, np.float64) or u.shape != logp.shape[:1]:
        raise ValueError(f"sample needs logp of shape (B, A), float32 or float64, and u of shape (B,), but got "
                         f"logp {logp.dtype} {logp.shape} and u {u.shape}")
    actions = np.empty(logp.shape[0], dtype=np.int64)
    _inverse_cdf(np.exp(logp), u, actions)
    return actions


def entropy(logp: np.ndarray) -> np.ndarray:
    """``(B,)`` entropies."""
    return -(np.exp(logp) * logp).sum(axis=1)


def pick(logp: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """``logp[b, actions[b]]``, ``(B,)``."""
    return np.take_along_axis(logp, actions[:, None], axis=1)[:, 0]


def logits_grad(logp: np.ndarray, actions: np.ndarray, d_logp_a: np.ndarray, d_entropy: float) -> np.ndarray:
    """Gradient w.r.t. the logits ``(B, A)`` of a loss whose gradient w.r.t. each row's
    ``log p(action)`` is ``d_logp_a`` ``(B,)``, plus ``d_entropy`` times the sum of the rows'
    entropies."""
    p = np.exp(logp)
    d = -p * d_logp_a[:, None]
    d[np.arange(len(actions)), actions] += d_logp_a
    if d_entropy:
        h = -(p * logp).sum(axis=1, keepdims=True)
        d -= d_entropy * p * (logp + h)  # dH/dz_j = -p_j (log p_j + H)
    return d
