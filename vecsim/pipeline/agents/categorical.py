"""A categorical policy over logits with an optional legal-action mask, in NumPy.

Illegal actions get the logit ``MASKED_LOGIT`` (finite, so that ``p * log p`` is 0, not NaN):
their probability is exactly 0, they are never drawn, and they add nothing to the entropy or
to the gradients (the masking of MaskablePPO, Huang and Ontañón, "A closer look at invalid
action masking in policy gradient algorithms", 2022).
"""

from __future__ import annotations

import numpy as np

MASKED_LOGIT = -1e9


def log_softmax(logits: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """Log-probabilities ``(B, A)``; ``mask`` ``(B, A)`` bool or ``None``."""
    if mask is not None:
        logits = np.where(mask, logits, logits.dtype.type(MASKED_LOGIT))
    z = logits - logits.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def sample(logp: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One action per row, by inverse CDF with uniforms ``u`` ``(B,)``: ``(B,)`` int64. An
    action of probability 0 is never drawn."""
    cum = np.cumsum(np.exp(logp), axis=1)
    return (cum <= (u * cum[:, -1])[:, None]).sum(axis=1).astype(np.int64)


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
