"""Per-env random streams for an agent's draws: draw ``c`` of env ``k`` depends only on env
``k``'s seed and ``c``, never on how the envs are split between actors.

The construction of ``vecsim.core.rng`` (SplitMix64 of a key plus ``c`` times the golden
gamma; Steele, Lea and Flood, OOPSLA 2014), vectorised over envs, with a salt of its own so
that the agent's stream differs from the env's. The draws of a step are one compiled call
(an actor calls it every step, holding the GIL for a microsecond instead of a dozen NumPy calls).
"""

from __future__ import annotations

import numpy as np

from vecsim.core.jit import exact

GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_AGENT_SALT = np.uint64(0xD1B54A32D192ED03)
_S11, _S27, _S30, _S31 = np.uint64(11), np.uint64(27), np.uint64(30), np.uint64(31)
_TWO_M53 = 1.0 / 9007199254740992.0


def mix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser over a uint64 array (wrapping arithmetic)."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


def env_keys(env_seeds: np.ndarray) -> np.ndarray:
    """The stream keys, ``(n,)`` uint64, of envs seeded ``env_seeds`` (``(n,)`` int64)."""
    return mix64(np.asarray(env_seeds, dtype=np.int64).astype(np.uint64) ^ _AGENT_SALT)


@exact(cache=True)
def _fill_uniforms(keys, counter, out):
    """out[i] = draw ``counter`` of stream ``keys[i]`` (SplitMix64, 53 bits)."""
    offset = counter * GAMMA
    for i in range(keys.shape[0]):
        z = keys[i] + offset
        z = (z ^ (z >> _S30)) * _M1
        z = (z ^ (z >> _S27)) * _M2
        z = z ^ (z >> _S31)
        out[i] = np.float64(z >> _S11) * _TWO_M53


def uniforms(keys: np.ndarray, counter: int, out: np.ndarray | None = None) -> np.ndarray:
    """Draw ``counter`` of every stream: ``(n,)`` float64 uniforms on [0, 1).

    ``keys`` ``(n,)`` uint64 from ``env_keys``; ``counter`` an int >= 0; ``out`` an optional
    ``(n,)`` float64 array to write them into.
    """
    if type(keys) is not np.ndarray or keys.dtype != np.uint64 or keys.ndim != 1:
        raise TypeError(f"keys must be a (n,) uint64 array from env_keys, but got {getattr(keys, 'dtype', type(keys))} "
                        f"of shape {np.shape(keys)}")
    if not isinstance(counter, (int, np.integer)) or counter < 0:
        raise ValueError(f"counter must be an int >= 0, but got counter={counter!r}")
    if out is None:
        out = np.empty(keys.shape[0], dtype=np.float64)
    elif type(out) is not np.ndarray or out.dtype != np.float64 or out.shape != keys.shape:
        raise ValueError(f"out must be a float64 array of shape {keys.shape}, but got "
                         f"{getattr(out, 'dtype', type(out))} of shape {np.shape(out)}")
    _fill_uniforms(keys, np.uint64(counter), out)
    return out
