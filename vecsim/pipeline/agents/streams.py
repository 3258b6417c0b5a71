"""Per-env random streams for an agent's draws, in NumPy: draw ``c`` of env ``k`` depends only
on env ``k``'s seed and ``c``, never on how the envs are split between actors.

The construction of ``vecsim.core.rng`` (SplitMix64 of a key plus ``c`` times the golden
gamma; Steele, Lea and Flood, OOPSLA 2014), vectorised over envs, with a salt of its own so
that the agent's stream differs from the env's.
"""

from __future__ import annotations

import numpy as np

GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_AGENT_SALT = np.uint64(0xD1B54A32D192ED03)
_TWO_M53 = 1.0 / 9007199254740992.0


def mix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser over a uint64 array (wrapping arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def env_keys(env_seeds: np.ndarray) -> np.ndarray:
    """The stream keys, ``(n,)`` uint64, of envs seeded ``env_seeds`` (``(n,)`` int64)."""
    return mix64(np.asarray(env_seeds, dtype=np.int64).astype(np.uint64) ^ _AGENT_SALT)


def uniforms(keys: np.ndarray, counter: int) -> np.ndarray:
    """Draw ``counter`` of every stream: ``(n,)`` float64 uniforms on [0, 1)."""
    offset = np.array([counter], dtype=np.uint64) * GAMMA  # an array: wraps without a warning
    return (mix64(keys + offset) >> np.uint64(11)) * _TWO_M53
