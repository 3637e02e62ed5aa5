"""The fused layer norm of the graph executor (functions made by
:class:`irlib.transform.fuse_layer_norm.FuseLayerNorm`) on CPU.

Strategy (:func:`_norm_row`, :func:`_layer_norm_parallel`): the input is viewed as ``(rows, C)`` (the normalised
axis last and contiguous); one ``prange`` task per block of rows (serial below
:data:`PARALLEL_MIN_ELEMENTS`); each row is read once for
its mean and variance (float64 sums of the values and their squares around the row's first
value, which keeps the one-pass variance exact enough for rows whose mean is large against
their spread), then written once as ``(x - mean) * rsqrt(var + eps) * gamma + beta``. That
replaces FuseOps' four passes (mean, centring, mean of squares, scaling), each a graph node.
The numpy formula of the tests (tests/transform/test_fuse_layer_norm.py) is the oracle.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

__all__ = ["layer_norm_rows", "fused_function"]

ROW_BLOCK = 16
"""Rows per parallel task (a (16, 384) float32 block is 24 KiB)."""


@njit(cache=True)
def _norm_row(x, out, gamma, beta, eps, r):
    """Normalise row ``r`` of ``x`` into ``out``."""
    length = x.shape[1]
    pivot = np.float64(x[r, 0])
    total = 0.0
    squares = 0.0
    for c in range(length):
        d = np.float64(x[r, c]) - pivot
        total += d
        squares += d * d
    mean_shift = total / length
    variance = max(squares / length - mean_shift * mean_shift, 0.0)
    mean = pivot + mean_shift
    inv = 1.0 / math.sqrt(variance + eps)
    for c in range(length):
        out[r, c] = (x[r, c] - mean) * inv * gamma[c] + beta[c]


@njit(cache=True, parallel=True)
def _layer_norm_parallel(x, out, gamma, beta, eps):
    rows = x.shape[0]
    for block in prange((rows + ROW_BLOCK - 1) // ROW_BLOCK):
        for r in range(block * ROW_BLOCK, min(rows, (block + 1) * ROW_BLOCK)):
            _norm_row(x, out, gamma, beta, eps, r)


@njit(cache=True)
def _layer_norm_serial(x, out, gamma, beta, eps):
    for r in range(x.shape[0]):
        _norm_row(x, out, gamma, beta, eps, r)


PARALLEL_MIN_ELEMENTS = 65536
"""Inputs smaller than this run serially: a decode step's one-row norm between two GEMMs
must not wake numba's thread pool (see the reductions in docs/kernels.md)."""


def layer_norm_rows(x, out, gamma, beta, eps: float) -> None:
    """``out = (x - mean) / sqrt(var + eps) * gamma + beta`` over the last axis of the 2-D
    ``x`` (rows, C), into ``out`` of the same shape; ``gamma``/``beta`` 1-D of length C."""
    kernel = _layer_norm_parallel if x.size >= PARALLEL_MIN_ELEMENTS else _layer_norm_serial
    kernel(x, out, gamma, beta, float(eps))


def fused_function(func):
    """A destination-passing callable ``fn(x, out, *sizes)`` for a fused layer norm
    function (the leading axes may be symbolic; the last is static), or
    None when its body is not one :func:`irlib.transform.fuse_layer_norm.describe_layer_norm`
    understands (the caller then runs the body op by op)."""
    from irlib.transform.fuse_layer_norm import describe_layer_norm
    plan = describe_layer_norm(func)
    if plan is None:
        return None
    ty = func.params[0].checked_type
    dtype = np.dtype(ty.dtype)
    length = int(ty.shape[-1])
    gamma = np.ones(length, dtype) if plan.gamma is None else plan.gamma.astype(dtype)
    beta = np.zeros(length, dtype) if plan.beta is None else plan.beta.astype(dtype)
    if func.body.checked_type.dtype != ty.dtype:
        return None

    def run(x, out, *sizes):
        # a symbolic graph passes the values of its size variables last; the rows are
        # counted from the array, so they are not needed here
        if not (x.flags.c_contiguous and out.flags.c_contiguous) or length == 0:
            np.copyto(out, _reference(x, gamma, beta, plan.epsilon))
            return
        layer_norm_rows(x.reshape(-1, length), out.reshape(-1, length), gamma, beta,
                        plan.epsilon)

    run.plan = plan
    return run


def _reference(x, gamma, beta, eps):
    mean = x.mean(axis=-1, keepdims=True)
    d = x - mean
    return d / np.sqrt((d * d).mean(axis=-1, keepdims=True) + eps) * gamma + beta
