"""The one place that sets Numba compilation options for the whole project.

Every kernel in ``vecsim``, ``games`` and ``planners`` is compiled through the decorators
defined here, so cache, GIL and floating-point policy are uniform:

* ``cache=True`` on the batched kernels (``kernel_options``): a warm process loads their
  machine code from disk, callees included. The kernel module's file name carries a digest
  of every source it depends on, as Numba's cache does not notice when a callee changes (see
  ``vecsim.engine.codegen`` and docs/numba-workarounds.md).
* ``cache=True`` on every ``@exact``/``@fast`` function defined at the top level of a module
  file, too (``cacheable``): a kernel variant compiled in a later process (another
  precision, ``invalid_action="flag"``, a telemetry ring, other buffers) loads the game's
  and planner's typed and lowered functions from disk and compiles only itself. Each entry's
  stamp carries the digest of its module's reach (``vecsim.core.kernel_cache.guard_cache``),
  so a changed callee in another file recompiles it. A function of a notebook cell, of
  ``exec``'d text or of a closure is compiled in each process, as before.
* ``nogil=True``: kernels release the GIL, so stepping can overlap inference in threads.
* ``error_model="numpy"``: division by zero gives ``inf``/``nan`` as NumPy does, with no
  per-division Python exception check.
* ``_nrt=False``: no reference counting. A per-env function that reads an array out of
  the ``State`` tuple would otherwise increment and decrement its reference count for every
  env (many times slower, and atomic contention between threads; see
  docs/numba-workarounds.md). The price: kernels never allocate; scratch space lives in the
  game's ``State``. That is also the rule "no allocation per step".
* ``exact`` kernels use no fast-math flag at all: the float64 physics must match
  Gymnasium bit for bit, and FMA contraction or reassociation would change the last bit.
* ``fast`` kernels (``precision="float32"``) use ``FAST_MATH``. It keeps NaN/Inf semantics
  (no ``nnan``/``ninf``) and leaves out ``contract`` and ``reassoc`` because those let the
  vectorised loop body and its scalar remainder round differently, which would make an
  env's result depend on where a thread's chunk of the batch begins.
"""

from __future__ import annotations

import sys

from numba import njit, types

from vecsim.core.kernel_cache import guard_cache

FAST_MATH = frozenset({"nsz", "arcp", "afn"})

_COMMON = dict(cache=False, nogil=True, error_model="numpy", boundscheck=False, _nrt=False)
EXACT_OPTIONS = dict(_COMMON, fastmath=False)
FAST_OPTIONS = dict(_COMMON, fastmath=set(FAST_MATH))


def compile_for_plain_types(dispatcher):
    """Make jitted code that calls ``dispatcher`` compile it for its arguments' plain types.

    Called from jitted code with a constant (``plan(..., 0, 1)`` in one place and
    ``plan(..., base, extra)`` in another), Numba compiles a function once for the literal
    value and once more for its type (Tetris's reach planner compiled twice so).
    Here a literal argument is typed as its plain type (``Literal[int](0)`` as ``int64``), so
    every call site shares one compilation. An argument left out keeps its default's type."""
    resolve = dispatcher.get_call_template

    def get_call_template(args, kws):
        return resolve(tuple(types.unliteral(a) for a in args), {k: types.unliteral(v) for k, v in kws.items()})

    dispatcher.get_call_template = get_call_template
    return dispatcher


def cacheable(fn) -> bool:
    """Whether Numba can cache ``fn`` and vecsim can stamp its entries with the digest of its
    module's reach: a top-level function of a module imported from its ``.py`` file (not a
    closure, nor a function of a notebook cell or of ``exec``'d text)."""
    module = sys.modules.get(fn.__module__)
    return (fn.__closure__ is None and "<locals>" not in fn.__qualname__
            and getattr(module, "__file__", None) == fn.__code__.co_filename)


def _jit(options: dict, extra: dict):
    extra = dict(extra)
    per_constant = extra.pop("per_constant", False)
    asked = extra.pop("cache", None)

    def compile_with(fn):
        cache = cacheable(fn) if asked is None else asked
        dispatcher = njit(**dict(options, **extra, cache=cache))(fn)
        if not per_constant:
            compile_for_plain_types(dispatcher)
        if cache:
            # Numba checks only this file's time: key the entry by everything the module reaches too.
            guard_cache(dispatcher, stamp_reach=True)
        return dispatcher
    return compile_with


def exact(fn=None, **extra):
    """Compile ``fn`` with the bit-exact options (usable as ``@exact`` or ``@exact(...)``).
    ``per_constant=True``: compile it once per value of each constant argument its callers
    pass, for a function whose constants pick its code (``compile_for_plain_types``)."""
    compile_with = _jit(EXACT_OPTIONS, extra)
    return compile_with if fn is None else compile_with(fn)


def fast(fn=None, **extra):
    """Compile ``fn`` with the fast float32 options (usable as ``@fast`` or ``@fast(...)``)."""
    compile_with = _jit(FAST_OPTIONS, extra)
    return compile_with if fn is None else compile_with(fn)


def kernel_options(precision: str, parallel: bool) -> dict:
    """Options for a batched kernel of the given precision, serial or parallel."""
    base = FAST_OPTIONS if precision == "float32" else EXACT_OPTIONS
    return dict(base, parallel=parallel, cache=True)
