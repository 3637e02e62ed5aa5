"""CPU kernels of the pools: max/avg pool 1-3d, adaptive max/avg pool 1-3d, global pools.

Windows and adaptive bins run in canonical ``(N, C, D, H, W)`` form, one ``prange`` task per
``(n, c)`` plane; other layouts are transposed in and out. The window rules are Relay's:
padding (and the extra positions ``ceil_mode`` reaches) never wins a max; an average divides
by the number of real positions in the window, or with ``count_include_pad`` by the number of
positions inside the explicitly padded input.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .. import register_kernel
from .._geometry import (SPATIAL, PoolWindow, adaptive_bins, as_ncdhw, from_canonical, is_float,
                         reference, to_canonical)
from .reduce import reduce_arb


@njit(cache=True)
def _axis_count(index, stride, dilation, pad, size, low, high, pool):
    """Taps of window ``index`` along one axis that land in ``[low, high)`` (input coords)."""
    count = 0
    for a in range(pool):
        z = index * stride - pad + a * dilation
        if low <= z < high:
            count += 1
    return count


@njit(cache=True, parallel=True)
def pool_ncdhw(x, out, pool, strides, dilation, pads, after, is_max, include_pad):
    """Max or average pooling of ``(N, C, D, H, W)`` into ``out (N, C, OD, OH, OW)``.

    Args:
        pool, strides, dilation, pads, after: 3-tuples (pads/after: padding before/after).
        is_max: max pooling when True, else average.
        include_pad: average over positions inside the explicit padding too.
    """
    batch, channels, depth, height, width = x.shape
    od, oh, ow = out.shape[2], out.shape[3], out.shape[4]
    size = (depth, height, width)
    for task in prange(batch * channels):
        n = task // channels
        c = task % channels
        for i in range(od):
            for j in range(oh):
                for t in range(ow):
                    index = (i, j, t)
                    if is_max:
                        acc = -np.inf
                    else:
                        acc = 0.0
                    for a in range(pool[0]):
                        z = i * strides[0] - pads[0] + a * dilation[0]
                        if z < 0 or z >= depth:
                            continue
                        for b in range(pool[1]):
                            y = j * strides[1] - pads[1] + b * dilation[1]
                            if y < 0 or y >= height:
                                continue
                            for e in range(pool[2]):
                                xx = t * strides[2] - pads[2] + e * dilation[2]
                                if xx < 0 or xx >= width:
                                    continue
                                value = x[n, c, z, y, xx]
                                if is_max:
                                    if value > acc:
                                        acc = value
                                else:
                                    acc += value
                    if not is_max:
                        count = 1
                        for axis in range(3):
                            low, high = 0, size[axis]
                            if include_pad:
                                low, high = -pads[axis], size[axis] + after[axis]
                            count *= _axis_count(index[axis], strides[axis], dilation[axis],
                                                 pads[axis], size[axis], low, high, pool[axis])
                        acc = acc / max(count, 1)
                    out[n, c, i, j, t] = acc


@njit(cache=True, parallel=True)
def adaptive_pool_ncdhw(x, out, starts_d, ends_d, starts_h, ends_h, starts_w, ends_w, is_max):
    """Adaptive pooling: output ``(i, j, t)`` pools the bin ``[starts, ends)`` on each axis."""
    batch, channels = x.shape[0], x.shape[1]
    od, oh, ow = out.shape[2], out.shape[3], out.shape[4]
    for task in prange(batch * channels):
        n = task // channels
        c = task % channels
        for i in range(od):
            for j in range(oh):
                for t in range(ow):
                    if is_max:
                        acc = -np.inf
                    else:
                        acc = 0.0
                    for z in range(starts_d[i], ends_d[i]):
                        for y in range(starts_h[j], ends_h[j]):
                            for xx in range(starts_w[t], ends_w[t]):
                                value = x[n, c, z, y, xx]
                                if is_max:
                                    if value > acc:
                                        acc = value
                                else:
                                    acc += value
                    if not is_max:
                        acc /= ((ends_d[i] - starts_d[i]) * (ends_h[j] - starts_h[j])
                                * (ends_w[t] - starts_w[t]))
                    out[n, c, i, j, t] = acc


def _pool_kernel(op_name: str, n: int, kind: str):
    def kernel(data, **attrs):
        if not is_float(data) or data.ndim != n + 2 or data.size == 0:
            return reference(op_name, (data,), attrs)
        window = PoolWindow(data, attrs, n)
        out = np.empty(window.x.shape[:2] + window.out_size, window.x.dtype)
        pool_ncdhw(as_ncdhw(window.x), as_ncdhw(out), *window.as3(), kind == "max",
                   window.count_include_pad)
        return (window.finish(out),)
    kernel.__name__ = op_name.replace(".", "_")
    kernel.__doc__ = f"``{op_name}`` on CPU (same contract as the reference implementation)."
    return kernel


def _adaptive_kernel(op_name: str, n: int, kind: str):
    canonical = "NC" + SPATIAL[n]

    def kernel(data, output_size=None, layout=canonical, out_layout="", **_):
        if not is_float(data) or data.ndim != n + 2 or data.size == 0:
            return reference(op_name, (data,), dict(output_size=output_size, layout=layout,
                                                    out_layout=out_layout))
        x = to_canonical(data, layout, canonical)
        sizes = (None,) * n if output_size is None else tuple(output_size)
        if len(sizes) == 1:
            sizes = sizes * n
        out_size = tuple(x.shape[2 + i] if s is None else int(s) for i, s in enumerate(sizes))
        x5 = as_ncdhw(x)
        out = np.empty(x.shape[:2] + out_size, x.dtype)
        out5 = as_ncdhw(out)
        bins = []
        for axis in range(3):
            bins.extend(adaptive_bins(x5.shape[2 + axis], out5.shape[2 + axis]))
        adaptive_pool_ncdhw(x5, out5, *bins, kind == "max")
        return (from_canonical(out, canonical, out_layout or layout),)
    kernel.__name__ = op_name.replace(".", "_")
    kernel.__doc__ = f"``{op_name}`` on CPU (same contract as the reference implementation)."
    return kernel


def _global_kernel(op_name: str, kind: str):
    def kernel(data, layout="NCHW", out_layout="", **_):
        if not is_float(data) or data.ndim != 4 or data.size == 0 or sorted(layout) != \
                sorted("NCHW") or layout.index("H") + 1 != layout.index("W"):
            return reference(op_name, (data,), dict(layout=layout, out_layout=out_layout))
        h_axis = layout.index("H")
        outer = int(np.prod(data.shape[:h_axis]))
        inner = int(np.prod(data.shape[h_axis + 2:]))
        x = np.ascontiguousarray(data).reshape(outer, -1, inner)
        out = np.empty((outer, inner), data.dtype)
        reduce_arb(x, out, 1 if kind == "avg" else 2)
        shape = list(data.shape)
        shape[h_axis] = shape[h_axis + 1] = 1
        return (out.reshape(shape),)
    kernel.__name__ = op_name.replace(".", "_")
    kernel.__doc__ = f"``{op_name}`` on CPU: a mean/max reduction over the spatial axes."
    return kernel


for _n in (1, 2, 3):
    for _kind in ("max", "avg"):
        _name = f"nn.{_kind}_pool{_n}d"
        register_kernel(_name)(_pool_kernel(_name, _n, _kind))
        _name = f"nn.adaptive_{_kind}_pool{_n}d"
        register_kernel(_name)(_adaptive_kernel(_name, _n, _kind))
register_kernel("nn.global_avg_pool2d")(_global_kernel("nn.global_avg_pool2d", "avg"))
register_kernel("nn.global_max_pool2d")(_global_kernel("nn.global_max_pool2d", "max"))
