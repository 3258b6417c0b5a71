"""Scalar operations exactly as NumPy and the C library compute them, for bit-exact ports.

``pow64``/``pow32``
    Gymnasium squares with ``x**2`` on NumPy and Python scalars, which calls the C library's
    ``pow(x, 2.0)`` (``powf`` for ``np.float32``). glibc's ``pow`` is not correctly rounded:
    for about 1 value in 1,000 its result is one ulp away from ``x * x``. Numba's ``x ** 2``
    and ``math.pow(x, 2.0)`` compile to ``x * x`` (LLVM rewrites ``pow`` with a constant
    exponent), so a game that must match Gymnasium bit for bit calls the library function.
    It is registered with LLVM under a private name (``vecsim_libm_pow``) that LLVM does not
    recognise as a library call. Compiled code refers to it by name, so it is cached on disk
    like any other kernel; the name is registered when this module is imported, before any
    kernel that uses it is loaded.
``np_clip``
    ``np.clip`` of one value as NumPy's clip loop computes it.
"""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np
from llvmlite import binding as _llvm
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from vecsim.jit import exact

_POW = "vecsim_libm_pow"
_POWF = "vecsim_libm_powf"


def _c_math_library() -> ctypes.CDLL:
    for name in ("m", "c", "ucrtbase", "msvcrt"):
        path = ctypes.util.find_library(name)
        if path:
            lib = ctypes.CDLL(path)
            if hasattr(lib, "pow") and hasattr(lib, "powf"):
                return lib
    raise OSError("no C math library with pow and powf was found")


_lib = _c_math_library()
_llvm.add_symbol(_POW, ctypes.cast(_lib.pow, ctypes.c_void_p).value)
_llvm.add_symbol(_POWF, ctypes.cast(_lib.powf, ctypes.c_void_p).value)


def _external_call(symbol: str, llvm_type, nb_type):
    @intrinsic
    def call(typingctx, x, y):
        sig = nb_type(nb_type, nb_type)

        def codegen(context, builder, signature, args):
            fnty = ir.FunctionType(llvm_type, [llvm_type, llvm_type])
            fn = cgutils.get_or_insert_function(builder.module, fnty, symbol)
            return builder.call(fn, args)

        return sig, codegen

    return call


_pow = _external_call(_POW, ir.DoubleType(), types.float64)
_powf = _external_call(_POWF, ir.FloatType(), types.float32)


@exact
def pow64(x, y):
    """``pow(x, y)`` of the C library in float64 (what ``np.float64(x) ** y`` computes)."""
    return _pow(np.float64(x), np.float64(y))


@exact
def pow32(x, y):
    """``powf(x, y)`` of the C library in float32 (what ``np.float32(x) ** y`` computes)."""
    return _powf(np.float32(x), np.float32(y))


@exact
def np_clip(x, lo, hi):
    """``np.clip(x, lo, hi)`` of one value: ``min(max(x, lo), hi)`` with NaN passed through."""
    if x != x:
        return x
    y = x if x > lo else lo
    return y if y < hi else hi
