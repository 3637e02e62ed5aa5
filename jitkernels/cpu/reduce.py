"""CPU kernels of the reductions ``sum``, ``mean``, ``max``, ``min`` and ``prod``.

The input is viewed as ``(A, R, B)`` (see :func:`jitkernels._geometry.as_arb`) and reduced
over ``R`` with a float64 accumulator; the ``B`` loop is innermost so it vectorises.
``prange`` runs over ``A`` when there is more than one row: it pays on 2 cores for the large
reductions and costs nothing for the small ones.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .. import register_kernel
from .._geometry import as_arb, is_float, normalize_axes, reduce_arb_kinds, reduced_shape, \
    reference

SUM, MEAN, MAX, MIN, PROD = reduce_arb_kinds()


@njit(cache=True, parallel=True, fastmath={"reassoc", "nsz"})
def reduce_rows(x, out, kind):
    """Reduce each row of ``x (A, R)`` into ``out (A,)``; a register accumulator that LLVM
    may reassociate, so the loop vectorises (NaN inputs of max/min never get here)."""
    rows, extent = x.shape
    for a in prange(rows):
        if kind == 2:
            acc = -np.inf
        elif kind == 3:
            acc = np.inf
        elif kind == 4:
            acc = 1.0
        else:
            acc = 0.0
        for r in range(extent):
            value = np.float64(x[a, r])
            if kind <= 1:
                acc += value
            elif kind == 2:
                acc = max(acc, value)
            elif kind == 3:
                acc = min(acc, value)
            else:
                acc *= value
        if kind == 1:
            acc /= extent
        out[a] = acc


def reduce_arb(x, out, kind):
    """Reduce ``x (A, R, B)`` over ``R`` into ``out (A, B)`` (see :func:`reduce_arb_core`)."""
    if x.shape[2] == 1:
        reduce_rows(x.reshape(x.shape[0], x.shape[1]), out.reshape(-1), kind)
    else:
        reduce_arb_core(x, out, kind)


@njit(cache=True, parallel=True)
def reduce_arb_core(x, out, kind):
    """Reduce ``x (A, R, B)`` over ``R`` into ``out (A, B)``.

    Args:
        kind: 0 sum, 1 mean, 2 max, 3 min, 4 prod.
    """
    rows, extent, inner = x.shape
    for a in prange(rows):
        acc = np.empty(inner, np.float64)
        if kind == 2:
            acc[:] = -np.inf
        elif kind == 3:
            acc[:] = np.inf
        elif kind == 4:
            acc[:] = 1.0
        else:
            acc[:] = 0.0
        for r in range(extent):
            if kind <= 1:
                for b in range(inner):
                    acc[b] += x[a, r, b]
            elif kind == 2:
                for b in range(inner):
                    acc[b] = max(acc[b], x[a, r, b])
            elif kind == 3:
                for b in range(inner):
                    acc[b] = min(acc[b], x[a, r, b])
            else:
                for b in range(inner):
                    acc[b] *= x[a, r, b]
        if kind == 1:
            for b in range(inner):
                acc[b] /= extent
        for b in range(inner):
            out[a, b] = acc[b]


def _reduce_kernel(op_name: str, kind: int):
    def kernel(data, axis=None, keepdims=False, exclude=False, **_):
        attrs = dict(axis=axis, keepdims=keepdims, exclude=exclude)
        if not is_float(data) or data.ndim == 0:
            return reference(op_name, (data,), attrs)
        axes = normalize_axes(axis, data.ndim)
        if exclude:
            axes = tuple(a for a in range(data.ndim) if a not in axes)
        extent = int(np.prod([data.shape[a] for a in axes]))
        if extent == 0 or data.size == 0 or (kind in (MAX, MIN) and np.isnan(data).any()):
            # Empty reductions (identity or error) and NaN propagation: the reference's rules.
            return reference(op_name, (data,), attrs)
        x = as_arb(data, axes)
        out = np.empty((x.shape[0], x.shape[2]), data.dtype)
        reduce_arb(x, out, kind)
        return (out.reshape(reduced_shape(data.shape, axes, keepdims)),)
    kernel.__name__ = op_name
    kernel.__doc__ = f"``{op_name}`` on CPU (same contract as the reference implementation)."
    return kernel


for _name, _kind in (("sum", SUM), ("mean", MEAN), ("max", MAX), ("min", MIN), ("prod", PROD)):
    register_kernel(_name)(_reduce_kernel(_name, _kind))
