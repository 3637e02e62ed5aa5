"""CPU kernels of ``nn.softmax``, ``nn.log_softmax`` and the inference forms of
``nn.batch_norm``, ``nn.layer_norm`` and ``nn.group_norm``.

The norms work on ``(A, R, B)`` views (``R`` the normalised axis), one ``prange`` task per
row of ``A``, with float64 statistics. Softmax is exp-bound: it stays in numpy (see
:func:`_softmax_kernel`).
"""

from __future__ import annotations

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


def _softmax_kernel(op_name: str, log: bool):
    def kernel(data, axis=-1, **_):
        if not is_float(data) or data.ndim == 0 or data.size == 0:
            return reference(op_name, (data,), dict(axis=axis))
        # numpy's exp is SIMD (AVX-512); numba's is scalar libm here (no SVML), ~10x slower
        # on this op, so the kernel is numpy in place: one output buffer, no temporaries.
        axis = int(axis) % data.ndim
        out = np.subtract(data, data.max(axis=axis, keepdims=True))
        if log:
            out -= np.log(np.exp(out).sum(axis=axis, keepdims=True))
        else:
            np.exp(out, out=out)
            out /= out.sum(axis=axis, keepdims=True)
        return (out,)
    kernel.__name__ = op_name.replace(".", "_")
    kernel.__doc__ = (f"``{op_name}`` on CPU: numpy in place (its exp is vectorised; "
                      f"numba's is not on this build).")
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
