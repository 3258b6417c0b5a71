"""The example agents' acting step as compiled calls that release the GIL: features, the tanh
MLP, the masked log-softmax, each env's draw and the inverse-CDF sample in one call, the value
network in another.

An actor thread then holds the GIL for a few microseconds a step instead of the dozen NumPy
calls of ``nn.predict`` and ``categorical``, so that it overlaps the learner's thread (and
another actor's) rather than taking turns with it. The matrix products are BLAS's ``sgemm``
(Numba's ``np.dot``, through SciPy); otherwise the same arithmetic as the NumPy path in the same
order, except ``tanh`` (``tanh32`` below: the C library's is ten times slower than NumPy's SIMD
loop) and the ``exp`` and ``log`` of the softmax (the C library's). NumPy's float32 ``tanh``,
``exp`` and ``log`` are SIMD approximations of their own, so the two paths may differ in the last
bit: which of the two an agent acts with depends on the rows of its batch alone
(``base.COMPILED_ACTING_ROWS``); the learner's NumPy recomputes what it needs.
"""

from __future__ import annotations

import math
import threading

import numpy as np
# Numba's np.dot calls SciPy's BLAS; loaded here, at import, so that a caller's threadpoolctl
# limits set after importing the agents cover it as they cover NumPy's.
import scipy.linalg.cython_blas  # noqa: F401

from vecsim.core.jit import exact
from vecsim.pipeline.agents.categorical import MASKED_LOGIT, _inverse_cdf
from vecsim.pipeline.agents.streams import _fill_uniforms


@exact
def tanh32(x):
    """``tanh`` of a float32, rounded from a float64 evaluation (within one unit in the last place;
    branch-free, so that a loop of it vectorises): ``E / (E + 2)`` with ``E = expm1(2|x|)``, from
    the Taylor series of ``expm1(2|x| / 64)`` doubled six times (``expm1(2y) = E (E + 2)``)."""
    a = min(abs(np.float64(x)), 9.5)  # float32(tanh(a)) is 1 from 9.01 on
    y = a * (2.0 / 64.0)
    e = 1.0 / 3628800.0
    for c in (1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0):
        e = e * y + c
    e = e * y
    for _ in range(6):
        e = e * (e + 2.0)
    return np.float32(math.copysign(e / (e + 2.0), np.float64(x)))


@exact(cache=True, _nrt=True)
def _features(obs, scale):
    """``obs`` ``(B, obs_dim)`` as float32 times ``scale`` ``(obs_dim,)`` float32."""
    x = np.empty(obs.shape, dtype=np.float32)
    for i in range(obs.shape[0]):
        for j in range(obs.shape[1]):
            x[i, j] = np.float32(obs[i, j]) * scale[j]
    return x


@exact(cache=True, _nrt=True)
def _mlp(weights, biases, x):
    """The output ``(B, out)`` float32 of the tanh MLP ``weights[k]`` ``(in, out)``, ``biases[k]`` ``(out,)``."""
    h = x
    last = len(weights) - 1
    for k in range(len(weights)):
        z = np.dot(h, weights[k])
        b = biases[k]
        for i in range(z.shape[0]):
            for j in range(z.shape[1]):
                if k < last:
                    z[i, j] = tanh32(z[i, j] + b[j])
                else:
                    z[i, j] += b[j]
        h = z
    return h


@exact(cache=True, _nrt=True)
def _sample_policy(weights, biases, obs, scale, mask, keys, counter, actions, log_probs):
    """Features of ``obs``, the policy's log-probabilities (illegal actions at ``MASKED_LOGIT``),
    draw ``counter`` of each env's stream and the action it picks; fills ``actions`` ``(B,)``
    int64 and ``log_probs`` ``(B,)`` float32 (of the picked actions); returns the features."""
    x = _features(obs, scale)
    logp = _mlp(weights, biases, x)
    B, A = logp.shape
    masked = np.float32(MASKED_LOGIT)
    for b in range(B):
        if mask is not None:
            for a in range(A):
                if not mask[b, a]:
                    logp[b, a] = masked
        top = logp[b, 0]
        for a in range(1, A):
            top = max(top, logp[b, a])
        total = np.float32(0)
        for a in range(A):
            logp[b, a] -= top
            total += np.exp(logp[b, a])
        log_total = np.log(total)
        for a in range(A):
            logp[b, a] -= log_total
    u = np.empty(B, dtype=np.float64)
    _fill_uniforms(keys, counter, u)
    _inverse_cdf(np.exp(logp), u, actions)
    for b in range(B):
        log_probs[b] = logp[b, actions[b]]
    return x


# Each thread's last few networks as kernel arguments: an actor passes the same network every
# step of a cycle, and converting it again took about half of the step's GIL-held Python.
_recent = threading.local()
_RECENT_NETS = 4


def _layers(net: tuple) -> tuple[tuple, tuple]:
    """A network ``(W0, b0, W1, b1, ...)`` as its weights and its biases, C-contiguous float32
    (for a network seen lately by this thread, the conversion made then: networks are not
    changed in place, as the pipeline's parameters are not)."""
    entries = getattr(_recent, "entries", None)
    if entries is None:
        entries = _recent.entries = {}
    hit = entries.get(id(net))
    if hit is not None and hit[0] is net:  # the entry holds net, so its id cannot have been reused
        return hit[1]
    arrays = [np.ascontiguousarray(p, dtype=np.float32) for p in net]
    weights, biases = arrays[0::2], arrays[1::2]
    if not weights or len(weights) != len(biases):
        raise ValueError(f"a network must be (W0, b0, W1, b1, ...), but got {len(arrays)} arrays")
    for k, (w, b) in enumerate(zip(weights, biases)):
        fed = weights[k - 1].shape[1] if k and weights[k - 1].ndim == 2 else None
        if w.ndim != 2 or b.shape != (w.shape[1],) or (k and w.shape[0] != fed):
            raise ValueError(f"layer {k} of the network: weights of shape {w.shape} and biases of shape {b.shape} "
                             f"do not make a layer (weights (in, out), biases (out,)) after the layer before")
    layers = tuple(weights), tuple(biases)
    if len(entries) >= _RECENT_NETS:
        entries.clear()
    entries[id(net)] = (net, layers)
    return layers


def sample_policy(net: tuple, obs: np.ndarray, scale: np.ndarray, mask, keys: np.ndarray, counter: int):
    """``(actions (B,) int64, log_probs (B,) float32, features (B, obs_dim) float32)``: actions
    drawn from the policy network ``net`` (``vecsim.pipeline.agents.nn``) over ``obs``
    ``(B, obs_dim)`` scaled by ``scale`` ``(obs_dim,)`` float32, legal where ``mask``
    ``(B, A)`` bool (or ``None``), with draw ``counter`` of the streams ``keys`` ``(B,)`` uint64."""
    obs = np.ascontiguousarray(obs)
    if obs.ndim != 2 or obs.shape[1] != scale.shape[0]:
        raise ValueError(f"obs must have shape (B, {scale.shape[0]}), but got {obs.shape}")
    if keys.shape != obs.shape[:1]:
        raise ValueError(f"keys must have shape ({obs.shape[0]},) (one stream per row of obs), but got {keys.shape}")
    weights, biases = _layers(net)
    if weights[0].shape[0] != obs.shape[1]:
        raise ValueError(f"the policy network takes {weights[0].shape[0]} features, but obs has shape {obs.shape}")
    if mask is not None:
        mask = np.ascontiguousarray(mask, dtype=np.bool_)
        if mask.shape != (obs.shape[0], biases[-1].shape[0]):
            raise ValueError(f"mask must have shape ({obs.shape[0]}, {biases[-1].shape[0]}) (a row of legal actions "
                             f"per row of obs), but got {mask.shape}")
    actions = np.empty(obs.shape[0], dtype=np.int64)
    log_probs = np.empty(obs.shape[0], dtype=np.float32)
    features = _sample_policy(weights, biases, obs, scale, mask, keys, np.uint64(counter), actions, log_probs)
    return actions, log_probs, features


def predict(net: tuple, features: np.ndarray) -> np.ndarray:
    """The output ``(B, out)`` float32 of the network ``net`` over ``features`` ``(B, in)`` float32."""
    weights, biases = _layers(net)
    features = np.ascontiguousarray(features, dtype=np.float32)
    if features.ndim != 2 or features.shape[1] != weights[0].shape[0]:
        raise ValueError(f"features must have shape (B, {weights[0].shape[0]}), but got {features.shape}")
    return _mlp(weights, biases, features)
