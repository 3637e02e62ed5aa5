"""Integer matrix products on the float BLAS, exactly (ONNX MatMulInteger / quantized
Linear layers: int8/uint8 values shifted by their zero points, multiplied in int32).

numpy multiplies integer matrices with a plain loop (no BLAS): a quantized MiniLM's
128x384x384 products ran at well under 1 GMAC/s. When every partial sum is an integer
below the float type's exact range the float GEMM computes the same integers: with
``K * max|a| * max|b| < 2**24`` float32 is exact, below ``2**31`` float64 is (and the result
still fits int32, so no wrap-around of the integer product is skipped). int8 data shifted by
a zero point is at most 255 in magnitude: K up to 258 runs in float32, up to ~33,000 in
float64. Larger bounds return None and the caller keeps the integer reference.
"""

from __future__ import annotations

import numpy as np

EXACT_FLOAT32 = 2 ** 24
"""Below this, integers and their sums are exact in float32."""

INT32_RANGE = 2 ** 31
"""Bound up to which the float64 path is used (exact, and the result fits int32)."""


def _magnitude(array: np.ndarray) -> int:
    if array.size == 0:
        return 0
    return max(abs(int(array.max())), abs(int(array.min())))


def exact_float_dtype(a: np.ndarray, b: np.ndarray):
    """The float dtype in which ``a @ b`` (2-D integer arrays) is computed exactly, or None.

    Args:
        a: ``(M, K)`` integers.
        b: ``(K, N)`` integers.
    """
    bound = a.shape[1] * _magnitude(a) * _magnitude(b)
    if bound < EXACT_FLOAT32:
        return np.dtype(np.float32)
    if bound < INT32_RANGE:
        return np.dtype(np.float64)
    return None


def exact_product(a: np.ndarray, b: np.ndarray, out_dtype, product):
    """``a @ b`` of 2-D integer arrays through a float GEMM when that is exact, else None.

    Args:
        a: ``(M, K)`` integers.
        b: ``(K, N)`` integers.
        out_dtype: the result's dtype (an integer dtype, or a float one).
        product: ``product(a, b, out)``, the float GEMM (:func:`jitkernels.cpu.gemm.product`).

    Returns:
        A new ``(M, N)`` array of ``out_dtype``, or None (the caller keeps the reference).
    """
    if a.dtype.kind not in "iu" or b.dtype.kind not in "iu":
        return None
    dtype = exact_float_dtype(a, b)
    if dtype is None:
        return None
    out = np.empty((a.shape[0], b.shape[1]), dtype)
    product(np.ascontiguousarray(a, dtype=dtype), np.ascontiguousarray(b, dtype=dtype), out)
    return out.astype(out_dtype)
