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
``sincos_small``
    ``(sin x, cos x, sure)``: for ``2**-24 <= |x| <= 0.25`` the values glibc's ``sin`` and
    ``cos`` return, in plain arithmetic that vectorises; ``sure`` is False where that cannot be
    promised (the caller then calls the library). How: both values are computed to about
    ``2**-60`` relative (the square of ``x`` exactly by Dekker's product, the Taylor series
    summed after the leading term), so the correctly rounded result is known unless the exact
    value lies near the midpoint between two doubles. glibc is not correctly rounded
    everywhere: its sin is off by up to 0.518 ulp (its own bound; 0.516 seen here against
    ``long double`` references over 4e8 arguments), its cos by up to 0.501 seen, and only where
    the exact value is that close to a midpoint. So a value is ``sure`` when its distance from
    the nearest midpoint exceeds this code's own error bound plus a margin: 0.015 ulp for sin
    below 0.126 (glibc's Taylor path, 0.0068 seen), 0.03 ulp above (0.0156 seen), 0.005 ulp
    for cos (0.001 seen). Outside the range, for NaN and for a power of two, ``sure`` is
    False. Of arguments uniform on ``|x| < 0.21`` about 6% come back unsure (4% on 0.05). ``LIBM_IS_GLIBC``
    says whether the margins apply (they were measured on glibc 2.36; sin and cos are the same
    code from 2.28 on, and older versions round correctly); elsewhere a game calls libm.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import platform

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


def _bitcast(source, target, llvm_type):
    """An intrinsic reinterpreting the bits of a ``source`` value as a ``target`` one."""

    @intrinsic
    def cast(typingctx, x):
        if x != source:
            return None

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], llvm_type)

        return target(source), codegen

    return cast


#: ``float_bits(x)``: the IEEE-754 bits of a float64 as an int64 (a register move, vectorises);
#: ``bits_float(b)``: the float64 with those bits.
float_bits = _bitcast(types.float64, types.int64, ir.IntType(64))
bits_float = _bitcast(types.int64, types.float64, ir.DoubleType())


#: Whether the C library is glibc, whose sin/cos errors ``sincos_small``'s margins cover.
LIBM_IS_GLIBC = platform.libc_ver()[0] == "glibc"

_EPS = 2.0**-53  # half an ulp of 1.0
_EXPONENT = 0x7FF0000000000000
_MANTISSA = 0x000FFFFFFFFFFFFF
_SPLIT = 134217729.0  # 2**27 + 1: Dekker's split of a double into two 26-bit halves
# Taylor coefficients of sin(x) / x - 1 and (cos(x) - 1 + x**2 / 2) / x**4 in x**2: on
# |x| <= 0.25 the first term left out is below 2**-70 of the result.
_S1, _S3, _S5, _S7, _S9, _S11, _S13 = ((-1.0) ** k / math.factorial(2 * k + 1) for k in range(1, 8))
_C4, _C6, _C8, _C10, _C12, _C14 = ((-1.0) ** k / math.factorial(2 * k) for k in range(2, 8))
# Margins for glibc's own error, in half-ulps of the result (see the module docstring).
_SIN_MARGIN_TAYLOR = 0.03  # |x| < 0.126
_SIN_MARGIN_TABLE = 0.06
_COS_MARGIN = 0.005 * _EPS  # 0.005 ulp: cos lies in [0.96, 1], where an ulp is _EPS


@exact
def sincos_small(x):
    """``(sin x, cos x, sure)`` for float64 ``x``: glibc's values where ``sure``, branch-free.

    See the module docstring: ``sure`` is False outside ``2**-24 <= |x| <= 0.25``, for NaN,
    and for the few percent of arguments whose exact values lie too near a rounding midpoint.
    """
    ax = abs(x)
    z = x * x
    c = _SPLIT * x
    xh = c - (c - x)
    xl = x - xh
    zl = ((xh * xh - z) + 2.0 * xh * xl) + xl * xl  # x * x == z + zl exactly
    # sin x = x + t, t = x**3 * (-1/6 + ...); |t| <= |x| / 96, summed to within 6 roundings of t
    series = _S1 + z * (_S3 + z * (_S5 + z * (_S7 + z * (_S9 + z * (_S11 + z * _S13)))))
    t = x * (z * series + zl * _S1)
    sin_hi = x + t
    sin_lo = t - (sin_hi - x)  # sin_hi + sin_lo == x + t exactly (|x| >= |t|)
    bits = float_bits(sin_hi)
    half_ulp = bits_float(bits & _EXPONENT) * _EPS
    margin = _SIN_MARGIN_TAYLOR if ax < 0.126 else _SIN_MARGIN_TABLE
    sin_sure = (half_ulp - abs(sin_lo) > 6.0 * _EPS * abs(t) + margin * half_ulp) & ((bits & _MANTISSA) != 0)
    # cos x = (1 - z / 2) + (x**4 * (1/24 - ...) - zl / 2), the first sum split exactly
    series = _C4 + z * (_C6 + z * (_C8 + z * (_C10 + z * (_C12 + z * _C14))))
    half_z = 0.5 * z
    one_hi = 1.0 - half_z
    one_lo = (1.0 - one_hi) - half_z
    u = one_lo + (z * z * series - 0.5 * zl)
    cos_hi = one_hi + u
    cos_lo = u - (cos_hi - one_hi)
    cos_sure = 0.5 * _EPS - abs(cos_lo) > 0.4 * _EPS * (z * z) + _COS_MARGIN
    sure = sin_sure & cos_sure & (ax >= 2.0**-24) & (ax <= 0.25)
    return sin_hi, cos_hi, sure
