"""CPU kernels of the reductions ``sum``, ``mean``, ``max``, ``min``, ``prod`` and
``variance``.

The input is viewed as ``(A, R, B)`` (see :func:`jitkernels._geometry.as_arb`) and reduced
over ``R`` with a float64 accumulator; the ``B`` loop is innermost so it vectorises.
``prange`` runs over ``A`` for inputs of at least :data:`PARALLEL_MIN_ELEMENTS`; smaller
ones (a layer norm's row statistics in a decode step) run serially: waking numba's pool
costs more than they do, and a parallel region between two BLAS calls starts the thread
pools' spin fight (see :mod:`jitkernels.threads`).

Each kernel also has a destination-passing form ``kernel.into(out, *inputs, **attrs)``
(True once it wrote ``out``), which the graph executor calls to skip the result copy.
``variance`` (what SimplifyInference leaves of a layer norm) has a kernel for float data
reduced over trailing axes with one mean per row; anything else goes to its reference.
"""

from __future__ import annotations

import math

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


@njit(cache=True, fastmath={"reassoc", "nsz"})
def reduce_rows_serial(x, out, kind):
    """:func:`reduce_rows` without the thread pool, for small inputs."""
    rows, extent = x.shape
    for a in range(rows):
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


PARALLEL_MIN_ELEMENTS = 1 << 16
"""Inputs with fewer elements are reduced serially (see the module docstring)."""


def reduce_arb(x, out, kind):
    """Reduce ``x (A, R, B)`` over ``R`` into ``out (A, B)`` (see :func:`reduce_arb_core`;
    serially for one ``A`` row or fewer than :data:`PARALLEL_MIN_ELEMENTS` elements)."""
    if x.shape[2] == 1:
        rows = reduce_rows if x.size >= PARALLEL_MIN_ELEMENTS else reduce_rows_serial
        rows(x.reshape(x.shape[0], x.shape[1]), out.reshape(-1), kind)
    elif x.shape[0] < 2 or x.size < PARALLEL_MIN_ELEMENTS:
        reduce_arb_serial(x, out, kind)
    else:
        reduce_arb_core(x, out, kind)


@njit(cache=True, fastmath={"reassoc", "nsz"})
def variance_rows(x, mean, out, divisor):
    """``out[a] = sum((x[a, r] - mean[a])**2) / divisor`` with a float64 accumulator."""
    rows, extent = x.shape
    for a in range(rows):
        centre = np.float64(mean[a])
        acc = 0.0
        for r in range(extent):
            delta = np.float64(x[a, r]) - centre
            acc += delta * delta
        out[a] = acc / divisor


@njit(cache=True, inline="always")
def _reduce_slab(x, out, a, kind):
    """``out[a] = reduce(x[a, r] for r)`` (a row of ``B`` values), float64 accumulator."""
    extent, inner = x.shape[1], x.shape[2]
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


@njit(cache=True, parallel=True)
def reduce_arb_core(x, out, kind):
    """Reduce ``x (A, R, B)`` over ``R`` into ``out (A, B)``, a ``prange`` over ``A``.

    Args:
        kind: 0 sum, 1 mean, 2 max, 3 min, 4 prod.
    """
    for a in prange(x.shape[0]):
        _reduce_slab(x, out, a, kind)


@njit(cache=True)
def reduce_arb_serial(x, out, kind):
    """:func:`reduce_arb_core` on the calling thread (one ``A`` row, as a channels-last
    global pool at batch 1 has, or a small input: a parallel region for it costs more than
    it saves)."""
    for a in range(x.shape[0]):
        _reduce_slab(x, out, a, kind)


def _reduce_axes(data, axis, exclude) -> tuple:
    axes = normalize_axes(axis, data.ndim)
    if exclude:
        axes = tuple(a for a in range(data.ndim) if a not in axes)
    return axes


def _reduce_kernel(op_name: str, kind: int):
    def into(out, data, axis=None, keepdims=False, exclude=False, **_) -> bool:
        """Write the reduction into ``out`` (C-contiguous, the result's shape and dtype);
        False (nothing written) where the kernel would call the reference."""
        if data.dtype not in _FLOATS or out.dtype != data.dtype or data.ndim == 0 \
                or data.size == 0 or not out.flags.c_contiguous:
            return False
        axes = _reduce_axes(data, axis, exclude)
        if not axes or out.shape != reduced_shape(data.shape, axes, keepdims):
            return False
        if kind in (MAX, MIN):          # numpy's reduction, as kernel() (see there)
            (np.max if kind == MAX else np.min)(data, axis=axes, keepdims=keepdims, out=out)
            return True
        x = as_arb(data, axes)
        reduce_arb(x, out.reshape(x.shape[0], x.shape[2]), kind)
        return True

    def kernel(data, axis=None, keepdims=False, exclude=False, **_):
        attrs = dict(axis=axis, keepdims=keepdims, exclude=exclude)
        if not is_float(data) or data.ndim == 0 or kind in (MAX, MIN):
            # max/min: numpy's SIMD reductions (its NaN rule is the reference's) ran 2-10x
            # faster than the loop below on every shape measured (a full max of 128x384:
            # 4 vs 43 us; quantize_dynamic's DynamicQuantizeLinear takes one per Linear).
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
    kernel.into = into
    return kernel


for _name, _kind in (("sum", SUM), ("mean", MEAN), ("max", MAX), ("min", MIN), ("prod", PROD)):
    register_kernel(_name)(_reduce_kernel(_name, _kind))

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _variance_rows(data, mean, axes):
    """``(x (A, R), mean (A,))`` when ``axes`` are the trailing axes of a float ``data`` and
    ``mean`` holds one value per row; else None."""
    if data.dtype not in _FLOATS or mean.dtype != data.dtype or not axes \
            or axes != tuple(range(data.ndim - len(axes), data.ndim)) or data.size == 0:
        return None
    if mean.ndim > data.ndim:
        return None
    aligned = (1,) * (data.ndim - mean.ndim) + mean.shape
    kept = data.ndim - len(axes)
    if aligned[:kept] != data.shape[:kept] or any(d != 1 for d in aligned[kept:]):
        return None             # not one mean per row (the reference broadcasts or fails)
    rows = math.prod(data.shape[:kept])
    x = np.ascontiguousarray(data).reshape(rows, -1)
    return x, np.ascontiguousarray(mean).reshape(rows)


@register_kernel("variance")
def variance(data, mean, axis=None, keepdims=False, exclude=False, unbiased=False, **_):
    """``variance`` on CPU: one float64 pass per row for trailing-axes reductions."""
    attrs = dict(axis=axis, keepdims=keepdims, exclude=exclude, unbiased=unbiased)
    axes = _reduce_axes(data, axis, exclude) if data.ndim else ()
    rows = _variance_rows(data, mean, axes)
    count = rows[0].shape[1] if rows is not None else 0
    if rows is None or count - (1 if unbiased else 0) <= 0:
        return reference("variance", (data, mean), attrs)
    out = np.empty(rows[0].shape[0], data.dtype)
    variance_rows(rows[0], rows[1], out, count - (1 if unbiased else 0))
    return (out.reshape(reduced_shape(data.shape, axes, keepdims)),)


def _variance_into(out, data, mean, axis=None, keepdims=False, exclude=False, unbiased=False,
                   **_) -> bool:
    """Destination-passing ``variance``: False where the kernel would call the reference."""
    if data.ndim == 0 or out.dtype != data.dtype or not out.flags.c_contiguous:
        return False
    axes = _reduce_axes(data, axis, exclude)
    rows = _variance_rows(data, mean, axes)
    if rows is None or out.shape != reduced_shape(data.shape, axes, keepdims):
        return False
    divisor = rows[0].shape[1] - (1 if unbiased else 0)
    if divisor <= 0:
        return False
    variance_rows(rows[0], rows[1], out.reshape(-1), divisor)
    return True


variance.into = _variance_into
