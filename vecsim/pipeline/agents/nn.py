"""Multi-layer perceptrons, their gradients and Adam, in plain NumPy, for the example agents.

A network is a tuple ``(W0, b0, W1, b1, ...)`` (``W`` of shape (in, out), ``b`` (out,)),
tanh between layers and a linear output, initialised as CleanRL's PPO does (orthogonal
weights, ``sqrt(2)`` gain in hidden layers, a chosen gain for the output, zero biases). A set
of parameters is a dict of such tuples; gradients and Adam's moments have the same shape.
The matrix products release the GIL, so they overlap with env stepping in other threads.
"""

from __future__ import annotations

import numpy as np


def orthogonal(rng: np.random.Generator, shape: tuple[int, int], gain: float, dtype) -> np.ndarray:
    a = rng.standard_normal((max(shape), min(shape)))
    q, r = np.linalg.qr(a)
    q *= np.sign(np.diag(r))
    if shape[0] < shape[1]:
        q = q.T
    return (gain * q[: shape[0], : shape[1]]).astype(dtype)


def init_mlp(rng: np.random.Generator, sizes, out_gain: float, dtype=np.float32) -> tuple:
    """A network with layer widths ``sizes`` (input, hidden..., output)."""
    layers = []
    for k, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        gain = out_gain if k == len(sizes) - 2 else np.sqrt(2.0)
        layers += [orthogonal(rng, (fan_in, fan_out), gain, dtype), np.zeros(fan_out, dtype=dtype)]
    return tuple(layers)


def forward(net: tuple, x: np.ndarray) -> tuple[np.ndarray, list]:
    """The output ``(B, out)`` and the activations ``[x, h1, ...]`` that ``backward`` needs."""
    acts = [x]
    h = x
    last = len(net) - 2
    for k in range(0, len(net), 2):
        z = h @ net[k]
        z += net[k + 1]
        if k < last:
            np.tanh(z, out=z)
            acts.append(z)
        h = z
    return h, acts


def predict(net: tuple, x: np.ndarray) -> np.ndarray:
    """The output alone (inference)."""
    return forward(net, x)[0]


def backward(net: tuple, acts: list, d_out: np.ndarray) -> tuple:
    """Gradients of a loss with ``d_out = dloss/doutput`` ``(B, out)`` w.r.t. ``net``."""
    grads = [None] * len(net)
    d = d_out
    for k in range(len(net) - 2, -1, -2):
        h = acts[k // 2]
        grads[k] = h.T @ d
        grads[k + 1] = d.sum(axis=0)
        if k:
            d = d @ net[k].T
            d *= 1.0 - h * h  # tanh' of the layer below, from its output
    return tuple(grads)


def global_norm(grads: dict) -> float:
    return float(np.sqrt(sum(float(np.vdot(g, g)) for net in grads.values() for g in net)))


def clip_by_global_norm(grads: dict, max_norm: float) -> tuple[dict, float]:
    """``grads`` scaled so that their global norm is at most ``max_norm``; and the norm before."""
    norm = global_norm(grads)
    if norm <= max_norm:
        return grads, norm
    scale = max_norm / (norm + 1e-6)
    return {name: tuple(g * scale for g in net) for name, net in grads.items()}, norm


def adam_init(params: dict) -> dict:
    """Adam's state for ``params``: zero moments, step 0."""
    zeros = {name: tuple(np.zeros_like(p) for p in net) for name, net in params.items()}
    return {"m": zeros, "v": {name: tuple(np.zeros_like(p) for p in net) for name, net in params.items()}, "t": 0}


def adam_update(params: dict, grads: dict, state: dict, lr: float, b1: float = 0.9, b2: float = 0.999,
                eps: float = 1e-5) -> tuple[dict, dict]:
    """One Adam step (Kingma and Ba, 2015); new parameter arrays (the old ones stay as they were,
    for the actors still using them) and the new state."""
    t = state["t"] + 1
    step = lr * np.sqrt(1.0 - b2**t) / (1.0 - b1**t)
    new_p, new_m, new_v = {}, {}, {}
    for name, net in params.items():
        ps, ms, vs = [], [], []
        for p, g, m, v in zip(net, grads[name], state["m"][name], state["v"][name]):
            m = b1 * m + (1.0 - b1) * g
            v = b2 * v + (1.0 - b2) * (g * g)
            ps.append((p - (step * m / (np.sqrt(v) + eps))).astype(p.dtype, copy=False))
            ms.append(m.astype(p.dtype, copy=False))
            vs.append(v.astype(p.dtype, copy=False))
        new_p[name], new_m[name], new_v[name] = tuple(ps), tuple(ms), tuple(vs)
    return new_p, {"m": new_m, "v": new_v, "t": t}
