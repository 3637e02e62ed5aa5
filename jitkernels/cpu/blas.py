"""The GEMM every CPU kernel uses: numpy's ``matmul`` writing into a given array.

Called from Python, not from inside numba code, so that the product runs on numpy's BLAS
and its thread pool, the only BLAS pool that runs multi-threaded (see
:mod:`jitkernels.threads` for why there must be one).
"""

from __future__ import annotations

import numpy as np


def gemm(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[...] = a @ b`` with numpy broadcasting over leading axes; returns ``out``.

    Args:
        a: ``(..., M, K)``; b: ``(..., K, N)`` (transposed views are fine: BLAS reads them
            with a transpose flag, no copy).
        out: ``(..., M, N)`` of the result dtype, overwritten.
    """
    return np.matmul(a, b, out=out)
