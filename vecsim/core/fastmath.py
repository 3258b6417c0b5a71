"""Vectorisable float32 trigonometry for ``precision="float32"`` kernels.

Numba calls libm for ``math.sin``/``math.cos``; those calls never vectorise (llvmlite ships
no SVML: see docs/numba-workarounds.md), so a loop over envs that uses them runs one env at a
time. These polynomials are plain arithmetic that LLVM turns into SIMD code. Range reduction
is Cody-Waite in three parts to the nearest multiple of pi/2; the polynomials on [-pi/4, pi/4]
are the single-precision minimax fits of Cephes ``sinf``/``cosf`` (S. L. Moshier), accurate to
about 1 ulp there.
"""

from __future__ import annotations

import math

import numpy as np
from numba.core import types
from numba.extending import overload

from vecsim.core.jit import fast

_TWO_OVER_PI = np.float32(0.636619772367581343)
_PIO2_1 = np.float32(1.5703125)
_PIO2_2 = np.float32(4.837512969970703125e-4)
_PIO2_3 = np.float32(7.54978995489188216e-8)
_S1 = np.float32(-1.6666654611e-1)
_S2 = np.float32(8.3321608736e-3)
_S3 = np.float32(-1.9515295891e-4)
_C1 = np.float32(4.166664568298827e-2)
_C2 = np.float32(-1.388731625493765e-3)
_C3 = np.float32(2.443315711809948e-5)
_HALF = np.float32(0.5)
_ROUNDER = np.float32(12582912.0)  # 1.5 * 2**23: adding it rounds a float32 to an integer
_ONE = np.float32(1.0)


@fast
def sincos_f32(x):
    """(sin x, cos x) for float32 ``x`` with |x| < 2**21, branch-free."""
    q = (x * _TWO_OVER_PI + _ROUNDER) - _ROUNDER  # round to nearest without a libm call
    r = ((x - q * _PIO2_1) - q * _PIO2_2) - q * _PIO2_3
    z = r * r
    s = r + r * z * (_S1 + z * (_S2 + z * _S3))
    c = _ONE - _HALF * z + z * z * (_C1 + z * (_C2 + z * _C3))
    quadrant = np.int32(q)
    swap = (quadrant & 1) != 0
    sin_v = c if swap else s
    cos_v = s if swap else c
    sin_sign = _ONE - np.float32(quadrant & 2)  # +1 for quadrants 0, 1; -1 for 2, 3
    cos_sign = _ONE - np.float32((quadrant + 1) & 2)  # +1 for quadrants 0, 3; -1 for 1, 2
    return sin_v * sin_sign, cos_v * cos_sign


def sincos(x):
    """``(sin x, cos x)`` in the precision of ``x``: the C library's ``sin`` and ``cos`` for
    float64 (bit for bit what Gymnasium's ``np.sin``/``np.cos`` give), ``sincos_f32`` for
    float32. For functions shared by both precisions, such as a game's ``write_obs``, so that
    a float32 kernel's loop over envs still vectorises."""
    return math.sin(x), math.cos(x)


@overload(sincos)
def _sincos_overload(x):
    if isinstance(x, types.Float) and x.bitwidth == 32:
        return lambda x: sincos_f32(x)
    if isinstance(x, types.Float):
        return lambda x: (math.sin(x), math.cos(x))
    return None
