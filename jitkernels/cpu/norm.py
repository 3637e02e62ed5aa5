"""CPU kernels of ``nn.softmax``, ``nn.log_softmax`` and the inference forms of
``nn.batch_norm``, ``nn.layer_norm`` and ``nn.group_norm``.

The norms work on ``(A, R, B)`` views (``R`` the normalised axis), one ``prange`` task per
row of ``A``, with float64 statistics. Softmax is exp-bound: large inputs stay in numpy,
small ones run one scalar numba loop (see :func:`_softmax_kernel`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .. import register_kernel
from .._geometry import as_arb, is_float, reference


@njit(cache=True, parallel=True)
def scale_shift_arb(x, out, scale, shift):
    """``out[a, r, b] = x[a, r, b] * scale[r] + shift[r]`` (batch_norm's inference form)."""
    rows, extent, inner = x.shape
    for a in prange(rows):
        for r in range(extent):
            s = scale[r]
            t = shift[r]
            for b in range(inner):
                out[a, r, b] = x[a, r, b] * s + t


@njit(cache=True, parallel=True)
def layer_norm_arb(x, out, gamma, beta, epsilon):
    """Normalise ``x (A, R, B)`` over ``R`` then apply ``gamma[r]``, ``beta[r]``."""
    rows, extent, inner = x.shape
    for a in prange(rows):
        for b in range(inner):
            mean = 0.0
            for r in range(extent):
                mean += x[a, r, b]
            mean /= extent
            var = 0.0
            for r in range(extent):
                d = x[a, r, b] - mean
                var += d * d
            inv = 1.0 / np.sqrt(var / extent + epsilon)
            for r in range(extent):
                out[a, r, b] = (x[a, r, b] - mean) * inv * gamma[r] + beta[r]


@njit(cache=True, parallel=True)
def group_norm_agb(x, out, gamma, beta, groups, epsilon):
    """Group norm of ``x (A, C, B)`` with ``C = groups * (C / groups)`` channels."""
    rows, channels, inner = x.shape
    per_group = channels // groups
    for task in prange(rows * groups):
        a = task // groups
        g = task % groups
        lo = g * per_group
        count = per_group * inner
        mean = 0.0
        for c in range(lo, lo + per_group):
            for b in range(inner):
                mean += x[a, c, b]
        mean /= count
        var = 0.0
        for c in range(lo, lo + per_group):
            for b in range(inner):
                d = x[a, c, b] - mean
                var += d * d
        inv = 1.0 / np.sqrt(var / count + epsilon)
        for c in range(lo, lo + per_group):
            s = inv * gamma[c]
            for b in range(inner):
                out[a, c, b] = (x[a, c, b] - mean) * s + beta[c]


_FLOATS = (np.dtype("float32"), np.dtype("float64"))

SMALL_SOFTMAX = 4096
"""Softmax inputs up to this many elements run on the scalar numba loop (:func:`softmax_arb`):
numpy's five vectorised passes cost ~1 µs of dispatch each, more than the loop itself."""


@njit(cache=True)
def softmax_arb(x, out, log):
    """Softmax (or log-softmax) of ``x (A, R, B)`` over ``R`` into ``out``, float64 sums.

    A NaN anywhere in a row makes the whole row NaN, as numpy's max-subtract form does.
    """
    rows, extent, inner = x.shape
    for a in range(rows):
        for b in range(inner):
            peak = -np.inf
            has_nan = False
            for r in range(extent):
                value = x[a, r, b]
                if value != value:
                    has_nan = True
                elif value > peak:
                    peak = value
            if has_nan:
                peak = np.nan
            total = 0.0
            for r in range(extent):
                total += math.exp(np.float64(x[a, r, b]) - peak)
            if log:
                shift = peak + math.log(total)
                for r in range(extent):
                    out[a, r, b] = np.float64(x[a, r, b]) - shift
            else:
                for r in range(extent):
                    out[a, r, b] = math.exp(np.float64(x[a, r, b]) - peak) / total


def _softmax_kernel(op_name: str, log: bool):
    def usable(data) -> bool:
        return is_float(data) and data.ndim > 0 and data.size > 0

    def run_numpy(data, axis):
        # numpy's exp is SIMD (AVX-512); numba's is scalar libm here (no SVML), ~10x slower
        # on large inputs, so those run numpy in place: one output buffer, no temporaries.
        out = np.subtract(data, data.max(axis=axis, keepdims=True))
        if log:
            out -= np.log(np.exp(out).sum(axis=axis, keepdims=True))
        else:
            np.exp(out, out=out)
            out /= out.sum(axis=axis, keepdims=True)
        return out

    def kernel(data, axis=-1, **_):
        if not usable(data):
            return reference(op_name, (data,), dict(axis=axis))
        axis = int(axis) % data.ndim
        if data.size > SMALL_SOFTMAX:
            return (run_numpy(data, axis),)
        out = np.empty(data.shape, data.dtype)
        softmax_arb(as_arb(data, (axis,)), out.reshape(as_arb(data, (axis,)).shape), log)
        return (out,)

    def into(out, data, axis=-1, **_) -> bool:
        """Write the result into ``out`` (C-contiguous, same shape and dtype as ``data``);
        False (nothing written) when it cannot."""
        # NOTE: kept lean: on small inputs (a classifier's last op) the Python here is most
        # of the cost.
        dtype = data.dtype
        if dtype not in _FLOATS or out.dtype != dtype or out.shape != data.shape \
                or not out.flags.c_contiguous or data.ndim == 0 or data.size == 0:
            return False
        axis = int(axis) % data.ndim
        if data.size > SMALL_SOFTMAX:
            out[...] = run_numpy(data, axis)
            return True
        shape = data.shape
        arb = (math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:]))
        softmax_arb(np.ascontiguousarray(data).reshape(arb), out.reshape(arb), log)
        return True
    kernel.__name__ = op_name.replace(".", "_")
    kernel.__doc__ = (f"``{op_name}`` on CPU: a numba loop for small inputs, numpy in place "
                      f"for large ones (its exp is vectorised; numba's is not on this "
                      f"build).")
    kernel.into = into
    return kernel


register_kernel("nn.softmax")(_softmax_kernel("nn.softmax", False))
register_kernel("nn.log_softmax")(_softmax_kernel("nn.log_softmax", True))


def _affine(vector, use, length, default):
    return (np.asarray(vector, np.float64).reshape(-1) if use
            else np.full(length, default, np.float64))


@register_kernel("nn.batch_norm")
def batch_norm(data, gamma, beta, moving_mean, moving_var, axis=1, epsilon=1e-5, center=True,
               scale=True, **_):
    """``nn.batch_norm`` (inference form) on CPU: one scale and shift per channel."""
    attrs = dict(axis=axis, epsilon=epsilon, center=center, scale=scale)
    if not is_float(data) or data.ndim == 0 or data.size == 0:
        return reference("nn.batch_norm", (data, gamma, beta, moving_mean, moving_var), attrs)
    axis = int(axis) % data.ndim
    channels = data.shape[axis]
    inv = 1.0 / np.sqrt(np.asarray(moving_var, np.float64) + epsilon)
    g = _affine(gamma, scale, channels, 1.0)
    b = _affine(beta, center, channels, 0.0)
    x = as_arb(data, (axis,))
    out = np.empty_like(x)
    scale_vec = inv * g
    scale_shift_arb(x, out, scale_vec, b - np.asarray(moving_mean, np.float64) * scale_vec)
    return (out.reshape(data.shape), moving_mean, moving_var)


@register_kernel("nn.layer_norm")
def layer_norm(data, gamma, beta, axis=-1, epsilon=1e-5, center=True, scale=True, **_):
    """``nn.layer_norm`` on CPU: statistics over one axis, then ``gamma``/``beta``."""
    if not is_float(data) or data.ndim == 0 or data.size == 0:
        return reference("nn.layer_norm", (data, gamma, beta),
                         dict(axis=axis, epsilon=epsilon, center=center, scale=scale))
    axis = int(axis) % data.ndim
    extent = data.shape[axis]
    x = as_arb(data, (axis,))
    out = np.empty_like(x)
    layer_norm_arb(x, out, _affine(gamma, scale, extent, 1.0),
                   _affine(beta, center, extent, 0.0), float(epsilon))
    return (out.reshape(data.shape),)


@register_kernel("nn.group_norm")
def group_norm(data, gamma, beta, num_groups=1, axis=1, epsilon=1e-5, center=True, scale=True,
               **_):
    """``nn.group_norm`` on CPU: statistics per (leading index, channel group)."""
    # Relay's group_norm reduces every axis but 0 and the group axis: only axis 1 is the
    # (A, C, B) form this kernel has.
    if (not is_float(data) or data.ndim < 2 or data.size == 0 or int(axis) % data.ndim != 1
            or data.shape[1] % int(num_groups)):
        return reference("nn.group_norm", (data, gamma, beta),
                         dict(num_groups=num_groups, axis=axis, epsilon=epsilon, center=center,
                              scale=scale))
    axis = int(axis) % data.ndim
    channels = data.shape[axis]
    x = as_arb(data, (axis,))
    out = np.empty_like(x)
    group_norm_agb(x, out, _affine(gamma, scale, channels, 1.0),
                   _affine(beta, center, channels, 0.0), int(num_groups),
                   float(epsilon))
    return (out.reshape(data.shape),)
