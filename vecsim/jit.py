"""The one place that sets Numba compilation options for the whole project.

Every kernel in ``vecsim``, ``games`` and ``planners`` is compiled through the decorators
defined here, so cache, GIL and floating-point policy are uniform:

* ``cache=True``: a warm process loads machine code from disk instead of compiling.
* ``nogil=True``: kernels release the GIL, so stepping can overlap inference in threads.
* ``error_model="numpy"``: division by zero gives ``inf``/``nan`` as NumPy does, with no
  per-division Python exception check.
* ``exact`` kernels use no fast-math flag at all: the float64 physics must match
  Gymnasium bit for bit, and FMA contraction or reassociation would change the last bit.
* ``fast`` kernels (``precision="float32"``) use ``FAST_MATH``. It keeps NaN/Inf semantics
  (no ``nnan``/``ninf``) and leaves out ``contract`` and ``reassoc`` because those let the
  vectorised loop body and its scalar remainder round differently, which would make an
  env's result depend on where a thread's chunk of the batch begins.
"""

from __future__ import annotations

from numba import njit

FAST_MATH = frozenset({"nsz", "arcp", "afn"})

_COMMON = dict(cache=True, nogil=True, error_model="numpy", boundscheck=False)
EXACT_OPTIONS = dict(_COMMON, fastmath=False)
FAST_OPTIONS = dict(_COMMON, fastmath=set(FAST_MATH))


def exact(fn=None, **extra):
    """Compile ``fn`` with the bit-exact options (usable as ``@exact`` or ``@exact(...)``)."""
    if fn is None:
        return lambda f: njit(**dict(EXACT_OPTIONS, **extra))(f)
    return njit(**EXACT_OPTIONS)(fn)


def fast(fn=None, **extra):
    """Compile ``fn`` with the fast float32 options (usable as ``@fast`` or ``@fast(...)``)."""
    if fn is None:
        return lambda f: njit(**dict(FAST_OPTIONS, **extra))(f)
    return njit(**FAST_OPTIONS)(fn)


def kernel_options(precision: str, parallel: bool) -> dict:
    """Options for a batched kernel of the given precision, serial or parallel."""
    base = FAST_OPTIONS if precision == "float32" else EXACT_OPTIONS
    return dict(base, parallel=parallel)
