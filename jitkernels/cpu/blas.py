"""The GEMMs every CPU kernel uses, all on numpy's BLAS, called from Python.

Called from Python, not from inside numba code, so that the products run on numpy's BLAS
and its thread pool, the only BLAS pool that runs multi-threaded (see
:mod:`jitkernels.threads` for why there must be one).

:func:`gemm` is ``np.matmul(out=)``. :func:`gemm_strided` adds what ``np.matmul`` cannot
do: accumulate into ``out`` (BLAS's ``beta = 1``) and read operands that are strided views
(a row stride larger than the row) without copying them. It calls the ``cblas_?gemm`` that
numpy's bundled OpenBLAS exports, through ctypes; :data:`HAVE_CBLAS` says whether that
library was found (without it, :func:`gemm_strided` still works, through ``np.matmul`` and
a temporary).
"""

from __future__ import annotations

import ctypes
import glob
import os

import numpy as np

__all__ = ["gemm", "gemm_strided", "HAVE_CBLAS"]

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112


def gemm(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[...] = a @ b`` with numpy broadcasting over leading axes; returns ``out``.

    Args:
        a: ``(..., M, K)``; b: ``(..., K, N)`` (transposed views are fine: BLAS reads them
            with a transpose flag, no copy).
        out: ``(..., M, N)`` of the result dtype, overwritten.
    """
    return np.matmul(a, b, out=out)


def _bind(lib, name: str, real, index):
    function = getattr(lib, name, None)
    if function is None:
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, index, index, index, real,
                         ctypes.c_void_p, index, ctypes.c_void_p, index, real,
                         ctypes.c_void_p, index]
    function.restype = None
    return function


def _works(functions) -> bool:
    """A 2x3 @ 3x2 product per dtype against numpy (catches a wrong integer width)."""
    for dtype, function in functions.items():
        a = np.arange(6, dtype=dtype).reshape(2, 3)
        b = np.arange(6, dtype=dtype).reshape(3, 2) - 2
        out = np.ones((2, 2), dtype)
        function(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, 2, 2, 3, 1.0, a.ctypes.data, 3,
                 b.ctypes.data, 2, 1.0, out.ctypes.data, 2)
        if not np.array_equal(out, a @ b + 1):
            return False
    return True


def _find_cblas() -> dict:
    """``{dtype: cblas_?gemm}`` from the OpenBLAS bundled with numpy, or ``{}``."""
    base = os.path.dirname(np.__file__)
    paths = sorted({path for folder in (base + ".libs", os.path.join(base, ".dylibs"))
                    for path in glob.glob(os.path.join(folder, "*openblas*"))})
    # (symbol pattern, integer type): ILP64 builds suffix their symbols with "64_".
    conventions = (("scipy_cblas_{}gemm64_", ctypes.c_int64), ("cblas_{}gemm64_", ctypes.c_int64),
                   ("scipy_cblas_{}gemm", ctypes.c_int), ("cblas_{}gemm", ctypes.c_int))
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for pattern, index in conventions:
            functions = {np.dtype(np.float32): _bind(lib, pattern.format("s"), ctypes.c_float,
                                                     index),
                         np.dtype(np.float64): _bind(lib, pattern.format("d"), ctypes.c_double,
                                                     index)}
            if all(functions.values()) and _works(functions):
                return functions
    return {}


_CBLAS = _find_cblas()
HAVE_CBLAS = bool(_CBLAS)
"""Whether :func:`gemm_strided` runs on cblas (else on ``np.matmul`` plus a temporary)."""


def _operand(array: np.ndarray):
    """``(transpose flag, leading dimension)`` BLAS reads ``array`` with, or None."""
    item = array.itemsize
    rows, cols = array.shape
    row_stride, col_stride = array.strides
    if (col_stride == item or cols == 1) and row_stride % item == 0 \
            and (rows == 1 or row_stride >= cols * item):
        return _NO_TRANS, max(row_stride // item if rows > 1 else cols, 1)
    if (row_stride == item or rows == 1) and col_stride % item == 0 \
            and (cols == 1 or col_stride >= rows * item):
        return _TRANS, max(col_stride // item if cols > 1 else rows, 1)
    return None


def gemm_strided(a: np.ndarray, b: np.ndarray, out: np.ndarray, accumulate: bool) -> None:
    """``out = a @ b`` or ``out += a @ b`` for 2-D operands, strided views read in place.

    Args:
        a: ``(M, K)``; b: ``(K, N)``: views whose elements along one axis are adjacent
            (the other stride may be anything at least that long, e.g. a tap of a padded
            image), else they are copied first.
        out: ``(M, N)`` with adjacent elements along its rows; must not overlap ``a``/``b``.
        accumulate: add the product to ``out`` instead of overwriting it.
    """
    function = _CBLAS.get(out.dtype)
    out_layout = _operand(out)
    if function is None or a.dtype != out.dtype or b.dtype != out.dtype \
            or out_layout is None or out_layout[0] != _NO_TRANS:
        if accumulate:
            out += np.matmul(a, b)
        else:
            np.matmul(a, b, out=out)
        return
    layouts = []
    for operand in (a, b):
        layout = _operand(operand)
        if layout is None:
            operand = np.ascontiguousarray(operand)
            layout = _operand(operand)
        layouts.append((operand, layout))
    (a, (trans_a, lda)), (b, (trans_b, ldb)) = layouts
    rows, inner = a.shape
    function(_ROW_MAJOR, trans_a, trans_b, rows, b.shape[1], inner, 1.0, a.ctypes.data, lda,
             b.ctypes.data, ldb, 1.0 if accumulate else 0.0, out.ctypes.data, out_layout[1])
