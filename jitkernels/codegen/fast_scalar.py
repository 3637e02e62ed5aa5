"""Scalar functions the generated kernels call where numba's own would not vectorise.

numba has no vector math library here (no SVML), so ``math.erf`` in a generated loop is a
scalar libm call per element: a BERT layer's GELU (``x * 0.5 * (1 + erf(x / sqrt 2))`` over
128 x 1536 values, the epilogue of the up-projection) spent ~1.7 ms in it, more than the
GEMM before it. :func:`erf32` is a branch-free rational approximation that LLVM inlines
and vectorises in the loop nest (measured 4-7x faster on that epilogue).

:func:`exp32`, :func:`tanh32` and :func:`sigmoid32` do the same for the float32 ``exp``,
``tanh`` and ``sigmoid`` of generated loops (an LSTM step's gates: five of them per hidden
unit, ~10 ns each as libm calls, were most of silero-vad's kernel time). The templates of
:mod:`jitkernels.codegen.scalar_ops` name them ``_exp32`` ... and :func:`add_imports` adds
the import lines a generated source needs. ``IRLIB_FAST_SCALAR=0`` (``off``/``false``/
``no``) makes the generator emit the libm calls instead (read when a group is compiled;
erf included).
"""

from __future__ import annotations

import math
import os

import numpy as np
from numba import njit

__all__ = ["erf32", "exp32", "tanh32", "sigmoid32", "add_imports", "enabled", "ENV_SWITCH",
           "HELPERS"]

ENV_SWITCH = "IRLIB_FAST_SCALAR"
"""Environment variable: ``0`` (``off``/``false``/``no``) keeps libm's scalar functions in
generated kernels."""


def enabled() -> bool:
    """Whether generated float32 kernels use this module's functions (:data:`ENV_SWITCH`)."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "off", "false", "no")

# Odd numerator / even denominator of a rational minimax fit of erf on [-4, 4] (the form of
# Eigen's and XLA's float32 erf); |error| <= 3e-7 against the exact erf there, and
# erf(+-4) rounds to +-1 in float32, so clamping the argument loses nothing.
_A = tuple(np.float32(c) for c in (-2.72614225801306e-10, 2.77068142495902e-08,
                                   -2.10102402082508e-06, -5.69250639462346e-05,
                                   -7.34990630326855e-04, -2.95459980854025e-03,
                                   -1.60960333262415e-02))
_B = tuple(np.float32(c) for c in (-1.45660718464996e-05, -2.13374055278905e-04,
                                   -1.68282697438203e-03, -7.37332916720468e-03,
                                   -1.42647390514189e-02))
_A1, _A3, _A5, _A7, _A9, _A11, _A13 = _A
_B0, _B2, _B4, _B6, _B8 = _B
_LOW, _HIGH = np.float32(-4.0), np.float32(4.0)


@njit(cache=True, inline="always")
def erf32(x):
    """erf of a float32 ``x``, within 3e-7 (absolute) of the exact value; NaN stays NaN.

    Args:
        x: a float32 scalar.
    """
    if x != x:
        return x
    c = min(max(x, _LOW), _HIGH)
    c2 = c * c
    p = ((((((_A1 * c2 + _A3) * c2 + _A5) * c2 + _A7) * c2 + _A9) * c2 + _A11) * c2
         + _A13) * c
    q = (((_B0 * c2 + _B2) * c2 + _B4) * c2 + _B6) * c2 + _B8
    return p / q


# exp: x = k ln2 + r with |r| <= ln2 / 2 (k rounded from x log2 e; ln2 split in two so that
# k ln2 is exact enough), e^r by Cephes' degree-6 expf polynomial (relative error ~1e-7),
# 2^k built from exponent bits in two halves so that k from -150 to 128 neither underflows
# early (denormal results) nor overflows early (e^88.7 is finite).
_LOG2E = np.float32(1.44269504088896341)
_LN2_HI, _LN2_LO = np.float32(0.693359375), np.float32(-2.12194440e-4)
_E0, _E1, _E2 = np.float32(1.9875691500e-4), np.float32(1.3981999507e-3), \
    np.float32(8.3334519073e-3)
_E3, _E4, _E5 = np.float32(4.1665795894e-2), np.float32(1.6666665459e-1), \
    np.float32(5.0000001201e-1)
_EXP_LOW, _EXP_HIGH = np.float32(-104.0), np.float32(89.0)
_F_HALF, _F_ONE = np.float32(0.5), np.float32(1.0)


@njit(cache=True, inline="always", error_model="numpy")
def exp32(x):
    """e**x of a float32 ``x`` within ~1.2e-7 relative of the exact value for normal
    results (denormal results are approximate, below -104 it is 0, above 88.73 inf); NaN
    stays NaN. Branch-free apart from the NaN test, so a loop of it vectorises.

    Args:
        x: a float32 scalar.
    """
    if x != x:
        return x
    c = min(max(x, _EXP_LOW), _EXP_HIGH)
    k = np.float32(math.floor(c * _LOG2E + _F_HALF))
    r = c - k * _LN2_HI - k * _LN2_LO
    poly = ((((_E0 * r + _E1) * r + _E2) * r + _E3) * r + _E4) * r + _E5
    value = poly * r * r + r + _F_ONE
    whole = np.int32(k)
    half = whole >> np.int32(1)
    first = np.int32((half + np.int32(127)) << np.int32(23)).view(np.float32)
    second = np.int32((whole - half + np.int32(127)) << np.int32(23)).view(np.float32)
    return value * first * second


@njit(cache=True, inline="always", error_model="numpy")
def sigmoid32(x):
    """``1 / (1 + e**-x)`` of a float32 ``x`` (through :func:`exp32`: ~2e-7 relative); NaN
    stays NaN.

    Args:
        x: a float32 scalar.
    """
    return _F_ONE / (_F_ONE + exp32(-x))


# tanh: an odd/even rational minimax fit on [-7.9, 7.9] (the form of Eigen's float32 tanh);
# |relative error| <= 3.3e-7 against the exact tanh, and tanh(+-7.9) is +-1 in float32.
_T1, _T3, _T5, _T7 = np.float32(4.89352455891786e-03), np.float32(6.37261928875436e-04), \
    np.float32(1.48572235717979e-05), np.float32(5.12229709037114e-08)
_T9, _T11, _T13 = np.float32(-8.60467152213735e-11), np.float32(2.00018790482477e-13), \
    np.float32(-2.76076847742355e-16)
_U0, _U2, _U4, _U6 = np.float32(4.89352518554385e-03), np.float32(2.26843463243900e-03), \
    np.float32(1.18534705686654e-04), np.float32(1.19825839466702e-06)
_TANH_CLAMP, _TANH_TINY = np.float32(7.90531110763549805), np.float32(0.0004)


@njit(cache=True, inline="always", error_model="numpy")
def tanh32(x):
    """tanh of a float32 ``x`` within 3.3e-7 relative of the exact value (``x`` itself
    below 4e-4 in magnitude, where that is exact to float32); NaN stays NaN.

    Args:
        x: a float32 scalar.
    """
    if x != x:
        return x
    c = min(max(x, -_TANH_CLAMP), _TANH_CLAMP)
    c2 = c * c
    p = ((((((_T13 * c2 + _T11) * c2 + _T9) * c2 + _T7) * c2 + _T5) * c2 + _T3) * c2
         + _T1) * c
    q = ((_U6 * c2 + _U4) * c2 + _U2) * c2 + _U0
    return x if abs(x) < _TANH_TINY else p / q


HELPERS = {"_erf32": "erf32", "_exp32": "exp32", "_tanh32": "tanh32",
           "_sigmoid32": "sigmoid32"}
"""Name a generated source calls -> the function of this module it imports."""


def add_imports(source: str) -> str:
    """``source`` (a generated kernel module) with an import line for each of
    :data:`HELPERS` it calls and does not import yet, after its first line.

    Args:
        source: the generated source.
    """
    lines = source.split("\n")
    missing = [f"from jitkernels.codegen.fast_scalar import {target} as {name}"
               for name, target in HELPERS.items()
               if f"{name}(" in source and f" as {name}\n" not in source]
    if not missing:
        return source
    return "\n".join(lines[:1] + missing + lines[1:])
