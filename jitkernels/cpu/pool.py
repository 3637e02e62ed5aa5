"""CPU kernels of the pools: max/avg pool 1-3d, adaptive max/avg pool 1-3d, global pools.

Windowed pools run in one of two forms, both with vectorisable innermost loops:

* channels-first ``(N, C, D, H, W)`` (:func:`pool_ncdhw`): one ``prange`` task per
  ``(n, c, output depth)``; each output row first combines the window's input rows into a
  padded row buffer (a contiguous loop over the width), then pools that buffer along the
  width;
* channels-last ``(N, D, H, W, C)`` (:func:`pool_ndhwc`): :mod:`jitkernels.cpu.pool_nhwc`,
  one task per ``(n, output depth, output row, channel chunk)``, each window reduced in
  16-channel vector registers along runs of output pixels.

Other layouts are transposed into the channels-first form and back. Adaptive bins run
channels-first, one task per ``(n, c)`` plane. The window rules are Relay's: padding (and
the extra positions ``ceil_mode`` reaches) never wins a max; an average divides by the number
of real positions in the window, or with ``count_include_pad`` by the number of positions
inside the explicitly padded input.

Each windowed kernel also has a destination-passing form, ``kernel.into(out, data, **attrs)``
(see :func:`_pool_kernel`), which the fused-group code generator uses to pool into a buffer
it keeps between calls.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .. import register_kernel
from .._geometry import (SPATIAL, PoolWindow, adaptive_bins, as_ncdhw, from_canonical,
                         is_float, reference, to_canonical)
from .pool_nhwc import axis_counts, pool_ndhwc_blocked, run_window, task_split, window_tuple
from .reduce import reduce_arb


@njit(cache=True)
def _combine_row(row, src, is_max):
    """``row = max(row, src)`` or ``row += src``, elementwise (slices: no index wraparound,
    so the loop vectorises)."""
    if is_max:
        for k in range(src.shape[0]):
            row[k] = max(row[k], src[k])
    else:
        for k in range(src.shape[0]):
            row[k] += src[k]


@njit(cache=True)
def _strided_pool(row, dst, stride, taps, dilation, is_max):
    """``dst[t]`` = max (or sum) of ``row[t*stride + e*dilation]`` for ``e < taps``.

    Strides 1 and 2 get loops with a constant stride, which LLVM vectorises.
    """
    count = dst.shape[0]
    for e in range(taps):
        view = row[e * dilation:]
        if e == 0:
            if stride == 1:
                for t in range(count):
                    dst[t] = view[t]
            elif stride == 2:
                for t in range(count):
                    dst[t] = view[2 * t]
            else:
                for t in range(count):
                    dst[t] = view[stride * t]
        elif is_max:
            if stride == 1:
                for t in range(count):
                    dst[t] = max(dst[t], view[t])
            elif stride == 2:
                for t in range(count):
                    dst[t] = max(dst[t], view[2 * t])
            else:
                for t in range(count):
                    dst[t] = max(dst[t], view[stride * t])
        else:
            if stride == 1:
                for t in range(count):
                    dst[t] += view[t]
            elif stride == 2:
                for t in range(count):
                    dst[t] += view[2 * t]
            else:
                for t in range(count):
                    dst[t] += view[stride * t]


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
    kd, kh, kw = pool
    sw, dw, pw = strides[2], dilation[2], pads[2]
    # row[u] holds the window rows combined at input column u - pw; u < span covers every
    # column an output reads (ceil_mode may reach past the padded input).
    span = (ow - 1) * sw + (kw - 1) * dw + 1
    hi_x = max(min(width, span - pw), 0)
    counts_d = axis_counts(od, strides[0], dilation[0], pads[0], after[0], depth, kd,
                            include_pad)
    counts_h = axis_counts(oh, strides[1], dilation[1], pads[1], after[1], height, kh,
                            include_pad)
    counts_w = axis_counts(ow, sw, dw, pw, after[2], width, kw, include_pad)
    for task in prange(batch * channels * od):
        n = task // (channels * od)
        c = (task // od) % channels
        i = task % od
        row = np.empty(span, x.dtype)
        inner = row[pw:pw + hi_x]
        for j in range(oh):
            row[:] = -np.inf if is_max else 0.0
            for a in range(kd):
                z = i * strides[0] - pads[0] + a * dilation[0]
                if z < 0 or z >= depth:
                    continue
                for b in range(kh):
                    y = j * strides[1] - pads[1] + b * dilation[1]
                    if 0 <= y < height:
                        _combine_row(inner, x[n, c, z, y, :hi_x], is_max)
            dst = out[n, c, i, j]
            _strided_pool(row, dst, sw, kw, dw, is_max)
            if not is_max:
                for t in range(ow):
                    dst[t] = dst[t] / max(counts_d[i] * counts_h[j] * counts_w[t], 1)


def pool_ndhwc(x, out, pool, strides, dilation, pads, after, is_max, include_pad):
    """Max or average pooling of channels-last ``(N, D, H, W, C)`` into ``(N, OD, OH, OW, C)``
    (:func:`jitkernels.cpu.pool_nhwc.pool_ndhwc_blocked`: 16-channel vector blocks).

    Args: as :func:`pool_ncdhw`.
    """
    pool_ndhwc_blocked(x, out, pool, strides, dilation, pads, after, is_max, include_pad)


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


class _Window(PoolWindow):
    """A windowed pool call's geometry (:class:`PoolWindow`) and how the CPU runs it."""

    def __init__(self, shape: tuple, attrs: dict, n: int):
        super().__init__(shape, attrs, n)
        self.geometry = self.as3()
        self.nhwc = self.layout == self.out_layout == self.channels_last
        if self.nhwc:
            self.window = window_tuple(*self.geometry)
            self.x5, self.out5 = _ndhwc_shape(shape), _ndhwc_shape(self.out_shape)
            self.split = task_split(self.x5, self.out5, self.window)

    def run(self, data: np.ndarray, out: np.ndarray, is_max: bool) -> None:
        """Pool ``data`` into ``out`` (C-contiguous, ``out_shape``)."""
        if self.nhwc:
            run_window(np.ascontiguousarray(data).reshape(self.x5), out.reshape(self.out5),
                       self.window, is_max, self.count_include_pad, split=self.split)
            return
        geometry = self.geometry + (is_max, self.count_include_pad)
        x = self.canonical_data(data)
        if self.out_layout == self.canonical:
            pool_ncdhw(as_ncdhw(x), as_ncdhw(out), *geometry)
            return
        order = [self.out_layout.index(letter) for letter in self.canonical]
        staged = np.empty(tuple(out.shape[k] for k in order), out.dtype)
        pool_ncdhw(as_ncdhw(x), as_ncdhw(staged), *geometry)
        out[...] = from_canonical(staged, self.canonical, self.out_layout)


_WINDOWS: dict = {}
"""``(op name, input shape, dtype, attrs items)`` -> its :class:`_Window`, for inputs the
kernel pools itself (float, the op's rank, not empty): a graph pools one shape every call,
and building the window (attribute parsing, output size, task split) and checking the input
cost ~20 us of a 40-130 us channels-last pool inside a graph."""

_WINDOWS_MAX = 512
"""Entries :data:`_WINDOWS` holds before it is emptied."""


def _window(op_name: str, data: np.ndarray, attrs: dict, n: int):
    """The :class:`_Window` of a call (from :data:`_WINDOWS` when the attributes hash), or
    None when the kernel leaves ``data`` to the reference."""
    try:
        key = (op_name, data.shape, data.dtype, tuple(attrs.items()))
        window = _WINDOWS.get(key)
    except TypeError:               # an unhashable attribute value (a list)
        key, window = None, None
    if window is not None:
        return window
    if not (is_float(data) and data.ndim == n + 2 and data.size > 0):
        return None
    window = _Window(data.shape, attrs, n)
    if key is not None:
        if len(_WINDOWS) >= _WINDOWS_MAX:
            _WINDOWS.clear()
        _WINDOWS[key] = window
    return window


def _ndhwc_shape(shape: tuple) -> tuple:
    """A channels-last shape with 1-3 spatial axes as ``(N, D, H, W, C)``."""
    return tuple(shape[:1]) + (1,) * (5 - len(shape)) + tuple(shape[1:])


def _pool_kernel(op_name: str, n: int, kind: str):
    is_max = kind == "max"

    def kernel(data, **attrs):
        window = _window(op_name, data, attrs, n)
        if window is None:
            return reference(op_name, (data,), attrs)
        out = np.empty(window.out_shape, data.dtype)
        window.run(data, out, is_max)
        return (out,)

    def into(out, data, **attrs) -> bool:
        """Pool ``data`` into ``out`` (C-contiguous, the result's shape and dtype).

        Returns:
            False (and writes nothing) when the kernel would use the reference; True else.
        """
        window = _window(op_name, data, attrs, n)
        if window is None or out.shape != window.out_shape or out.dtype != data.dtype \
                or not out.flags.c_contiguous:
            return False
        window.run(data, out, is_max)
        return True
    kernel.__name__ = op_name.replace(".", "_")
    kernel.__doc__ = f"``{op_name}`` on CPU (same contract as the reference implementation)."
    kernel.into = into
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
    code = 1 if kind == "avg" else 2        # reduce_arb's mean / max
    plans: dict = {}        # (shape, dtype, layout) -> ((A, R, B), out shape), or None

    def plan(data, layout):
        """``((A, R, B), out shape)``: ``data`` viewed for :func:`reduce_arb` and the
        result's shape, or None when the kernel leaves ``data`` to the reference (kept per
        shape, dtype and layout: working it out took ~40 us of a ~60 us call inside a
        graph)."""
        key = (data.shape, data.dtype, layout)
        found = plans.get(key, False)
        if found is not False:
            return found
        found = None
        if (is_float(data) and data.ndim == 4 and data.size > 0
                and sorted(layout) == sorted("NCHW")
                and layout.index("H") + 1 == layout.index("W")):
            h_axis = layout.index("H")
            outer, inner = math.prod(data.shape[:h_axis]), math.prod(data.shape[h_axis + 2:])
            shape = list(data.shape)
            shape[h_axis] = shape[h_axis + 1] = 1
            found = ((outer, data.shape[h_axis] * data.shape[h_axis + 1], inner), tuple(shape))
        if len(plans) >= _WINDOWS_MAX:
            plans.clear()
        plans[key] = found
        return found

    def run(data, out, views) -> None:
        x = np.ascontiguousarray(data).reshape(views[0])
        reduce_arb(x, out.reshape(x.shape[0], x.shape[2]), code)

    def kernel(data, layout="NCHW", out_layout="", **_):
        views = plan(data, layout)
        if views is None or out_layout not in ("", layout):
            return reference(op_name, (data,), dict(layout=layout, out_layout=out_layout))
        out = np.empty(views[1], data.dtype)
        run(data, out, views)
        return (out,)

    def into(out, data, layout="NCHW", out_layout="", **_) -> bool:
        """Pool ``data`` into ``out`` (C-contiguous); False (nothing written) if it cannot."""
        views = plan(data, layout)
        if views is None or out.shape != views[1] or out.dtype != data.dtype \
                or not out.flags.c_contiguous or out_layout not in ("", layout):
            return False
        run(data, out, views)
        return True
    kernel.__name__ = op_name.replace(".", "_")
    kernel.__doc__ = f"``{op_name}`` on CPU: a mean/max reduction over the spatial axes."
    kernel.into = into
    return kernel


for _n in (1, 2, 3):
    for _kind in ("max", "avg"):
        _name = f"nn.{_kind}_pool{_n}d"
        register_kernel(_name)(_pool_kernel(_name, _n, _kind))
        _name = f"nn.adaptive_{_kind}_pool{_n}d"
        register_kernel(_name)(_adaptive_kernel(_name, _n, _kind))
register_kernel("nn.global_avg_pool2d")(_global_kernel("nn.global_avg_pool2d", "avg"))
register_kernel("nn.global_max_pool2d")(_global_kernel("nn.global_max_pool2d", "max"))
