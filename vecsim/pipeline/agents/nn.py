"""Multi-layer perceptrons, their gradients and Adam, in plain NumPy, for the example agents.

A network is a tuple ``(W0, b0, W1, b1, ...)`` (``W`` of shape (in, out), ``b`` (out,)),
tanh between layers and a linear output, initialised as CleanRL's PPO does (orthogonal
weights, ``sqrt(2)`` gain in hidden layers, a chosen gain for the output, zero biases). A set
of parameters is a dict of such tuples; gradients and Adam's moments have the same shape.
The matrix products release the GIL, so they overlap with env stepping in other threads; the
elementwise work of a gradient step (tanh's derivative, clipping and Adam) runs in compiled
calls that release it too, one per array instead of a dozen NumPy calls that each take the GIL.
"""

from __future__ import annotations

import numpy as np

from vecsim.core.jit import exact


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
            _times_tanh_derivative(d.reshape(-1), np.ascontiguousarray(h).reshape(-1))  # d: a fresh C-ordered product
    return tuple(grads)


@exact(cache=True)
def _times_tanh_derivative(d, h):
    """``d *= 1 - h * h`` in ``h``'s dtype (tanh' from tanh's output), as NumPy rounds it."""
    one = h.dtype.type(1)
    for i in range(d.shape[0]):
        d[i] *= one - h[i] * h[i]


def global_norm(grads: dict) -> float:
    return float(np.sqrt(sum(float(np.vdot(g, g)) for net in grads.values() for g in net)))


def clip_scale(norm: float, max_norm: float) -> float:
    """The factor that brings gradients of global norm ``norm`` to at most ``max_norm``."""
    return 1.0 if norm <= max_norm else max_norm / (norm + 1e-6)


def adam_init(params: dict) -> dict:
    """Adam's state for ``params``: zero moments, step 0."""
    zeros = {name: tuple(np.zeros_like(p) for p in net) for name, net in params.items()}
    return {"m": zeros, "v": {name: tuple(np.zeros_like(p) for p in net) for name, net in params.items()}, "t": 0}


@exact(cache=True)
def _adam(p, g, m, v, grad_scale, b1, one_minus_b1, b2, one_minus_b2, step, eps, p_out, m_out, v_out):
    """One Adam step of flat arrays of one dtype (the scalars in that dtype too, ``step``
    float64): the gradient is ``g * grad_scale``; the moments in the arrays' dtype, the update in
    float64, as NumPy 2 rounds ``p - step * m / (sqrt(v) + eps)`` with a float64 ``step``."""
    for i in range(p.shape[0]):
        gi = g[i] * grad_scale
        mi = b1 * m[i] + one_minus_b1 * gi
        vi = b2 * v[i] + one_minus_b2 * (gi * gi)
        p_out[i] = np.float64(p[i]) - step * np.float64(mi) / np.float64(np.sqrt(vi) + eps)
        m_out[i] = mi
        v_out[i] = vi


def _flat(a: np.ndarray, dtype) -> np.ndarray:
    """``a`` as a flat C-ordered array of ``dtype`` (a view where it already is one)."""
    return np.ascontiguousarray(a, dtype=dtype).reshape(-1)


def adam_update(params: dict, grads: dict, state: dict, lr: float, b1: float = 0.9, b2: float = 0.999,
                eps: float = 1e-5, grad_scale: float = 1.0) -> tuple[dict, dict]:
    """One Adam step (Kingma and Ba, 2015) on the gradients ``grads`` times ``grad_scale``; new
    parameter arrays (the old ones stay as they were, for the actors still using them) and the
    new state. Each array is updated in one compiled call that releases the GIL."""
    t = state["t"] + 1
    step = lr * np.sqrt(1.0 - b2**t) / (1.0 - b1**t)
    new_p, new_m, new_v = {}, {}, {}
    for name, net in params.items():
        ps, ms, vs = [], [], []
        for p, g, m, v in zip(net, grads[name], state["m"][name], state["v"][name]):
            for label, a in (("gradient", g), ("first moment", m), ("second moment", v)):
                if np.shape(a) != p.shape:
                    raise ValueError(f"adam_update: the {label} of a {name!r} parameter of shape {p.shape} "
                                     f"has shape {np.shape(a)}")
            kind = p.dtype.type
            p_out, m_out, v_out = (np.empty(p.shape, dtype=p.dtype) for _ in range(3))
            _adam(_flat(p, kind), _flat(g, kind), _flat(m, kind), _flat(v, kind), kind(grad_scale), kind(b1),
                  kind(1.0 - b1), kind(b2), kind(1.0 - b2), np.float64(step), kind(eps), p_out.reshape(-1),
                  m_out.reshape(-1), v_out.reshape(-1))
            ps.append(p_out)
            ms.append(m_out)
            vs.append(v_out)
        new_p[name], new_m[name], new_v[name] = tuple(ps), tuple(ms), tuple(vs)
    return new_p, {"m": new_m, "v": new_v, "t": t}
