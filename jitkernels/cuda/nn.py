"""CUDA kernels of conv1d/2d/3d, dense/matmul/batch_matmul, the pools and softmax.

Each kernel computes one output element per thread in canonical channels-first form; the host
wrapper transposes other layouts in and out (numpy, on the host) with the same geometry
helpers as the CPU kernels.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from .. import register_kernel
from .._geometry import (AFTER, BEFORE, DILATION, EXTRA, SPATIAL, STRIDES, WINDOW, PoolWindow,
                         Window3, as_arb, as_ncdhw, conv_out, from_canonical, is_float, ntuple,
                         padding_pairs, reference, to3, to_canonical)
from ._launch import launch, run, to_device


@cuda.jit
def conv_ncdhw_kernel(x, w, geometry, out):
    """Direct grouped convolution; ``geometry`` is the kernel's :class:`Window3` flattened
    with the group count as its extra int (:meth:`Window3.flat`)."""
    index = cuda.grid(1)
    batch, out_channels, od, oh, ow = out.shape
    if index >= out.size:
        return
    t = index % ow
    j = (index // ow) % oh
    i = (index // (ow * oh)) % od
    o = (index // (ow * oh * od)) % out_channels
    n = index // (ow * oh * od * out_channels)
    per_group_in = w.shape[1]
    groups = geometry[EXTRA]
    c0 = (o // (out_channels // groups)) * per_group_in
    acc = 0.0
    for ci in range(per_group_in):
        for a in range(geometry[WINDOW]):
            z = i * geometry[STRIDES] - geometry[BEFORE] + a * geometry[DILATION]
            if z < 0 or z >= x.shape[2]:
                continue
            for b in range(geometry[WINDOW + 1]):
                y = j * geometry[STRIDES + 1] - geometry[BEFORE + 1] + b * geometry[DILATION + 1]
                if y < 0 or y >= x.shape[3]:
                    continue
                for e in range(geometry[WINDOW + 2]):
                    xx = (t * geometry[STRIDES + 2] - geometry[BEFORE + 2]
                          + e * geometry[DILATION + 2])
                    if 0 <= xx < x.shape[4]:
                        acc += x[n, c0 + ci, z, y, xx] * w[o, ci, a, b, e]
    out[n, o, i, j, t] = acc


def _conv_kernel(op_name: str, n: int):
    canonical, kernel_canonical = "NC" + SPATIAL[n], "OI" + SPATIAL[n]

    def kernel(data, weight, **attrs):
        if not is_float(data, weight) or data.ndim != n + 2:
            return reference(op_name, (data, weight), attrs)
        strides = ntuple(attrs.get("strides", 1), n)
        dilation = ntuple(attrs.get("dilation", 1), n)
        before, after = padding_pairs(attrs.get("padding", 0), n)
        layout = attrs.get("data_layout") or canonical
        x = to_canonical(data, layout, canonical)
        w = to_canonical(weight, attrs.get("kernel_layout") or kernel_canonical,
                         kernel_canonical)
        out_size = tuple(conv_out(x.shape[2 + i], w.shape[2 + i], strides[i], dilation[i],
                                  before[i], after[i]) for i in range(n))
        geometry = Window3(to3(w.shape[2:], 1), to3(strides, 1), to3(dilation, 1),
                           to3(before, 0), to3(after, 0)).flat(int(attrs.get("groups", 1)))
        out = run(conv_ncdhw_kernel, (x.shape[0], w.shape[0]) + to3(out_size, 1), x.dtype,
                  as_ncdhw(x), as_ncdhw(w), geometry)
        out = from_canonical(out.reshape((x.shape[0], w.shape[0]) + out_size), canonical,
                             attrs.get("out_layout") or layout)
        return (out.astype(attrs.get("out_dtype") or data.dtype, copy=False),)
    kernel.__name__ = op_name.replace(".", "_")
    kernel.__doc__ = f"``{op_name}`` on CUDA (same contract as the reference implementation)."
    return kernel


for _n in (1, 2, 3):
    register_kernel(f"nn.conv{_n}d", "cuda")(_conv_kernel(f"nn.conv{_n}d", _n))


@cuda.jit
def batch_matmul_kernel(a, b, out):
    """``out[i] = a[i or 0] @ b[i or 0]``, one thread per output element."""
    index = cuda.grid(1)
    batch, rows, cols = out.shape
    if index >= out.size:
        return
    c = index % cols
    r = (index // cols) % rows
    i = index // (cols * rows)
    ia = min(i, a.shape[0] - 1)
    ib = min(i, b.shape[0] - 1)
    acc = 0.0
    for k in range(a.shape[2]):
        acc += a[ia, r, k] * b[ib, k, c]
    out[i, r, c] = acc


def _bmm(a, b):
    batch = max(a.shape[0], b.shape[0])
    return run(batch_matmul_kernel, (batch, a.shape[1], b.shape[2]), a.dtype, a, b)


@register_kernel("nn.dense", "cuda")
def dense(data, weight, units=None, out_dtype="", **_):
    """``nn.dense`` on CUDA."""
    if not is_float(data, weight) or weight.ndim != 2:
        return reference("nn.dense", (data, weight), dict(units=units, out_dtype=out_dtype))
    out = _bmm(data.reshape(1, -1, data.shape[-1]), weight.T[None])
    return (out.reshape(data.shape[:-1] + (weight.shape[0],)).astype(
        out_dtype or data.dtype, copy=False),)


@register_kernel("nn.matmul", "cuda")
def matmul(tensor_a, tensor_b, units=None, out_dtype="", transpose_a=False, transpose_b=False,
           **_):
    """``nn.matmul`` on CUDA (2-D operands)."""
    if not is_float(tensor_a, tensor_b) or tensor_a.ndim != 2 or tensor_b.ndim != 2:
        return reference("nn.matmul", (tensor_a, tensor_b),
                         dict(units=units, out_dtype=out_dtype, transpose_a=transpose_a,
                              transpose_b=transpose_b))
    a = tensor_a.T if transpose_a else tensor_a
    b = tensor_b.T if transpose_b else tensor_b
    return (_bmm(a[None], b[None])[0].astype(out_dtype or tensor_a.dtype, copy=False),)


@register_kernel("nn.batch_matmul", "cuda")
def batch_matmul(tensor_a, tensor_b, out_dtype="", transpose_a=False, transpose_b=True, **_):
    """``nn.batch_matmul`` on CUDA (a batch of 1 broadcasts)."""
    if not is_float(tensor_a, tensor_b) or tensor_a.ndim != 3 or tensor_b.ndim != 3:
        return reference("nn.batch_matmul", (tensor_a, tensor_b),
                         dict(out_dtype=out_dtype, transpose_a=transpose_a,
                              transpose_b=transpose_b))
    a = np.swapaxes(tensor_a, 1, 2) if transpose_a else tensor_a
    b = np.swapaxes(tensor_b, 1, 2) if transpose_b else tensor_b
    return (_bmm(a, b).astype(out_dtype or tensor_a.dtype, copy=False),)


@cuda.jit
def pool_kernel(x, geometry, out):
    """Max or average pooling; ``geometry`` is the pool's :class:`Window3` flattened with
    the extra ints is_max and count_include_pad (:meth:`Window3.flat`)."""
    index = cuda.grid(1)
    batch, channels, od, oh, ow = out.shape
    if index >= out.size:
        return
    t = index % ow
    j = (index // ow) % oh
    i = (index // (ow * oh)) % od
    c = (index // (ow * oh * od)) % channels
    n = index // (ow * oh * od * channels)
    is_max = geometry[EXTRA] == 1
    acc = -math.inf if is_max else 0.0
    count = 1
    position = (i, j, t)
    for axis in range(3):
        taps = 0
        low = -geometry[BEFORE + axis] if geometry[EXTRA + 1] == 1 else 0
        high = x.shape[2 + axis] + (geometry[AFTER + axis] if geometry[EXTRA + 1] == 1 else 0)
        for a in range(geometry[WINDOW + axis]):
            z = (position[axis] * geometry[STRIDES + axis] - geometry[BEFORE + axis]
                 + a * geometry[DILATION + axis])
            if low <= z < high:
                taps += 1
        count *= taps
    for a in range(geometry[WINDOW]):
        z = i * geometry[STRIDES] - geometry[BEFORE] + a * geometry[DILATION]
        if z < 0 or z >= x.shape[2]:
            continue
        for b in range(geometry[WINDOW + 1]):
            y = j * geometry[STRIDES + 1] - geometry[BEFORE + 1] + b * geometry[DILATION + 1]
            if y < 0 or y >= x.shape[3]:
                continue
            for e in range(geometry[WINDOW + 2]):
                xx = t * geometry[STRIDES + 2] - geometry[BEFORE + 2] + e * geometry[DILATION + 2]
                if 0 <= xx < x.shape[4]:
                    if is_max:
                        acc = max(acc, x[n, c, z, y, xx])
                    else:
                        acc += x[n, c, z, y, xx]
    if not is_max:
        acc /= max(count, 1)
    out[n, c, i, j, t] = acc


def _pool_kernel(op_name: str, n: int, kind: str):
    def kernel(data, **attrs):
        if not is_float(data) or data.ndim != n + 2 or data.size == 0:
            return reference(op_name, (data,), attrs)
        window = PoolWindow(data.shape, attrs, n)
        geometry = window.as3().flat(kind == "max", window.count_include_pad)
        x = window.canonical_data(data)
        out = run(pool_kernel, x.shape[:2] + to3(window.out_size, 1), x.dtype, as_ncdhw(x),
                  geometry)
        return (window.finish(out.reshape(x.shape[:2] + window.out_size)),)
    kernel.__name__ = op_name.replace(".", "_")
    kernel.__doc__ = f"``{op_name}`` on CUDA (same contract as the reference implementation)."
    return kernel


for _n in (1, 2, 3):
    for _kind in ("max", "avg"):
        register_kernel(f"nn.{_kind}_pool{_n}d", "cuda")(
            _pool_kernel(f"nn.{_kind}_pool{_n}d", _n, _kind))


@cuda.jit
def softmax_kernel(x, log, out):
    """Softmax (``log == 1``: log-softmax) of ``x (A, R, B)`` over ``R``, one thread per
    ``(a, b)``."""
    index = cuda.grid(1)
    rows, extent, inner = x.shape
    if index >= rows * inner:
        return
    a = index // inner
    b = index % inner
    peak = -math.inf
    for r in range(extent):
        peak = max(peak, x[a, r, b])
    total = 0.0
    for r in range(extent):
        total += math.exp(x[a, r, b] - peak)
    for r in range(extent):
        if log == 1:
            out[a, r, b] = x[a, r, b] - peak - math.log(total)
        else:
            out[a, r, b] = math.exp(x[a, r, b] - peak) / total


def _softmax(op_name: str, log: int):
    def kernel(data, axis=-1, **_):
        if not is_float(data) or data.ndim == 0 or data.size == 0:
            return reference(op_name, (data,), dict(axis=axis))
        x = as_arb(data, (int(axis) % data.ndim,))
        out = cuda.device_array(x.shape, x.dtype)
        launch(softmax_kernel, x.shape[0] * x.shape[2], to_device(x), log, out)
        return (out.copy_to_host().reshape(data.shape),)
    kernel.__name__ = op_name.replace(".", "_")
    kernel.__doc__ = f"``{op_name}`` on CUDA (same contract as the reference implementation)."
    return kernel


register_kernel("nn.softmax", "cuda")(_softmax("nn.softmax", 0))
register_kernel("nn.log_softmax", "cuda")(_softmax("nn.log_softmax", 1))
