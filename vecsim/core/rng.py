"""Counter-based per-env random numbers (SplitMix64 over a per-env key and counter).

Each env owns two ``uint64`` words in an ``rng`` array of shape ``(num_envs, 2)``:
``rng[i, 0]`` is the stream key derived from the env's seed and ``rng[i, 1]`` counts the
draws made so far. Draw ``k`` of a stream is ``mix(key + k * GAMMA)`` (Steele, Lea and
Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014), so a draw depends
only on the env's own seed and how many draws it made: never on threads, batch size or
which other envs exist. Seeding env ``i`` with ``s + i`` is Gymnasium's and EnvPool's
convention for batched seeds.
"""

from __future__ import annotations

import numpy as np

from vecsim.core.jit import exact

GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_KEY_SALT = np.uint64(0x5851F42D4C957F2D)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_TWO_M53 = 1.0 / 9007199254740992.0
MAX_SEED = 2**63 - 1


@exact
def mix64(z):
    """SplitMix64 finaliser: a bijection of uint64 with full avalanche."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@exact
def seed_env(rng, i, seed):
    """Start env ``i``'s stream for integer ``seed`` (0 <= seed < 2**63)."""
    rng[i, 0] = mix64(np.uint64(seed) ^ _KEY_SALT)
    rng[i, 1] = _ZERO


@exact
def next_u64(rng, i):
    """Next 64 random bits of env ``i``'s stream."""
    rng[i, 1] += _ONE
    return mix64(rng[i, 0] + rng[i, 1] * GAMMA)


@exact
def next_double(rng, i):
    """A float64 uniform on [0, 1) with 53 random bits."""
    return np.float64(next_u64(rng, i) >> _S11) * _TWO_M53


@exact
def uniform(rng, i, low, high):
    """A float64 uniform on [low, high)."""
    return low + (high - low) * next_double(rng, i)


@exact
def randint(rng, i, n):
    """An unbiased integer uniform on [0, n) for 1 <= n < 2**63 (rejection sampling)."""
    un = np.uint64(n)
    limit = np.uint64(0xFFFFFFFFFFFFFFFF) - (np.uint64(0xFFFFFFFFFFFFFFFF) % un)
    while True:
        r = next_u64(rng, i)
        if r < limit:
            return np.int64(r % un)


def seed_stream_key(seed: int) -> np.uint64:
    """The stream key of ``seed`` computed in Python (for tests and tools)."""
    rng = np.zeros((1, 2), dtype=np.uint64)
    seed_env(rng, 0, seed)
    return rng[0, 0]
