"""Scalar operations exactly as NumPy and the C library compute them, for bit-exact ports.

``pow64``/``pow32``
    Gymnasium squares with ``x**2`` on NumPy and Python scalars, which calls the C library's
    ``pow(x, 2.0)`` (``powf`` for ``np.float32``). glibc's ``pow`` is not correctly rounded:
    for about 1 value in 1,000 its result is one ulp away from ``x * x``. Numba's ``x ** 2``
    and ``math.pow(x, 2.0)`` compile to ``x * x`` (LLVM rewrites ``pow`` with a constant
    exponent), so a game that must match Gymnasium bit for bit calls the library function
    (see docs/numba-workarounds.md).
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
    everywhere: its sin is off by up to 0.518 ulp (its own bound), its cos by slightly more
    than half an ulp, and only where the exact value is that close to a midpoint. So a value
    is ``sure`` when its distance from the nearest midpoint exceeds this code's own error
    bound plus a margin above glibc's largest error measured against higher-precision
    references: 0.015 ulp for sin below 0.126 (glibc's Taylor path), 0.03 ulp above, 0.005
    ulp for cos. Outside the range, for NaN and for a power of two, ``sure`` is False.
    ``LIBM_IS_GLIBC`` says whether the margins apply (sin and cos are the same code from
    glibc 2.28 on, and older versions round correctly); elsewhere a game calls libm.
``cos_wide``
    ``(cos x, sure)`` the same way for ``|x| <= 4`` (MountainCar's ``cos(3 * position)``):
    ``x`` less the nearest multiple of pi/2 (pi/2 in four parts, the result in two doubles),
    then the series of sin or cos with their leading terms in double-double arithmetic. glibc's
    cos there stays within its sin bound of 0.518 ulp; the margin, 0.03 ulp, is above its
    largest error measured against ``mpmath``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import platform
from fractions import Fraction

import numpy as np
from llvmlite import binding as _llvm
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from vecsim.core.jit import exact

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


# -- cos on [-4, 4]: reduction by pi/2 and a double-double series ----------------------------
_TWO_OVER_PI = 0.6366197723675814
_ROUND = 6755399441055744.0  # 1.5 * 2**52: adding it rounds a double of magnitude < 2**51 to an integer
# pi/2 in four parts (the first three with 33 significant bits, so k * part is exact for small k)
_PIO2_1 = 1.57079632673412561417e00
_PIO2_2 = 6.07710050630396597660e-11
_PIO2_3 = 2.02226624871116645580e-21
_PIO2_3T = 8.47842766036889956997e-32


def _double_double(q: Fraction) -> tuple[float, float]:
    """``(hi, lo)``: ``hi`` the double nearest ``q``, ``lo`` the double nearest ``q - hi``."""
    hi = float(q)
    return hi, float(q - Fraction(hi))


# -1/6 and 1/24 to about 2**-106: the series' leading terms need more than a double
_SIXTH_HI, _SIXTH_LO = _double_double(Fraction(-1, 6))
_TWENTYFOURTH_HI, _TWENTYFOURTH_LO = _double_double(Fraction(1, 24))
# the rest of each series, from x**5 / 5! (sin) and x**6 / 6! (cos) up to x**21 / 21! and x**20 / 20!:
# on |r| <= pi/4 the first term left out is below 2**-70 of the result
_SW5, _SW7, _SW9, _SW11, _SW13, _SW15, _SW17, _SW19, _SW21 = ((-1.0) ** k / math.factorial(2 * k + 1) for k in range(2, 11))
_CW6, _CW8, _CW10, _CW12, _CW14, _CW16, _CW18, _CW20 = ((-1.0) ** k / math.factorial(2 * k) for k in range(3, 11))
_COS_WIDE_MARGIN = 0.03  # ulp: above glibc's largest measured excess over 0.5 ulp on [-4, 4] (see above)


@exact(inline="always")
def two_product(a, b):
    """``(p, e)`` with ``p = fl(a * b)`` and ``p + e == a * b`` exactly (Dekker; no FMA needed)."""
    p = a * b
    c = _SPLIT * a
    ah = c - (c - a)
    al = a - ah
    c = _SPLIT * b
    bh = c - (c - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


@exact(inline="always")
def two_sum(a, b):
    """``(s, e)`` with ``s = fl(a + b)`` and ``s + e == a + b`` exactly (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@exact(inline="always")
def cos_wide(x):
    """``(cos x, sure)`` for float64 ``x``: glibc's ``cos`` where ``sure``, branch-free.

    For ``|x| <= 4``: ``x`` is reduced by the nearest multiple ``k`` of pi/2 to ``r`` (as two
    doubles, pi/2 in four parts), then sin or cos of ``r`` is summed with its leading terms in
    double-double arithmetic, to about ``2**-62`` of the result. ``sure`` as for
    ``sincos_small`` (margin ``_COS_WIDE_MARGIN`` ulp); False outside the range, for NaN, and
    where the result is a power of two.
    """
    t = x * _TWO_OVER_PI + _ROUND
    kf = t - _ROUND  # the nearest integer to x * 2 / pi
    quadrant = float_bits(t) & 3  # k mod 4, from the integer's low bits
    y = x - kf * _PIO2_1  # exact: k * _PIO2_1 has at most 35 significant bits, and lies near x
    rh, rl = two_sum(y, -(kf * _PIO2_2))  # kf * _PIO2_2 exact
    rl -= kf * _PIO2_3 + kf * _PIO2_3T
    r = rh + rl
    rl = rl - (r - rh)
    rh = r
    z, zl = two_product(rh, rh)  # rh**2 == z + zl
    # sin r = r - r**3 / 6 + r**5 * (...): r**3 ~ rh * z + (rh * zl + 3 * z * rl)
    p, pl = two_product(rh, z)
    q = pl + (rh * zl + 3.0 * z * rl)
    th, tl = two_product(p, _SIXTH_HI)
    tl += p * _SIXTH_LO + q * _SIXTH_HI
    sin_rest = p * z * (_SW5 + z * (_SW7 + z * (_SW9 + z * (_SW11 + z * (_SW13 + z * (_SW15 + z * (_SW17 + z * (_SW19 + z * _SW21))))))))
    s, e = two_sum(rh, th)
    lo = e + (rl + tl + sin_rest)
    sin_hi = s + lo
    sin_lo = lo - (sin_hi - s)
    # cos r = 1 - r**2 / 2 + r**4 / 24 + r**6 * (...): r**2 ~ z + w, w = zl + 2 * rh * rl
    w = zl + 2.0 * rh * rl
    a = 1.0 - 0.5 * z
    ae = (1.0 - a) - 0.5 * z  # exact: 0.5 * z <= 1
    q2, q2l = two_product(z, z)
    q2l += 2.0 * z * w
    uh, ul = two_product(q2, _TWENTYFOURTH_HI)
    ul += q2 * _TWENTYFOURTH_LO + q2l * _TWENTYFOURTH_HI
    cos_rest = q2 * z * (_CW6 + z * (_CW8 + z * (_CW10 + z * (_CW12 + z * (_CW14 + z * (_CW16 + z * (_CW18 + z * _CW20)))))))
    b, be = two_sum(a, uh)
    lo = (ae + be) + (ul - 0.5 * w + cos_rest)
    cos_hi = b + lo
    cos_lo = lo - (cos_hi - b)
    # cos x: cos r, -sin r, -cos r, sin r in quadrants 0..3
    odd = (quadrant & 1) != 0
    hi = sin_hi if odd else cos_hi
    lo = sin_lo if odd else cos_lo
    err = 8.0 * _EPS * abs(sin_rest if odd else cos_rest) + 2.0**-100
    negative = (quadrant == 1) | (quadrant == 2)
    hi = -hi if negative else hi
    bits = float_bits(hi)
    half_ulp = bits_float(bits & _EXPONENT) * _EPS
    sure = (half_ulp - abs(lo) > err + 2.0 * _COS_WIDE_MARGIN * half_ulp) & ((bits & _MANTISSA) != 0)
    return hi, sure & (abs(x) <= 4.0)
