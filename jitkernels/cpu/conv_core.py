"""Cores of the convolutions, destination-passing (they write into ``out``).

Strategy (see docs/kernels.md): a convolution is one GEMM per image and group,
``weight[O/G, I*K] @ columns[I*K, P]``. Columns come from a *serial* numba im2col into a
buffer allocated once per call, and the GEMM is numpy's (:func:`jitkernels.cpu.blas.gemm`,
called from Python), which owns the threading: see :mod:`jitkernels.threads`. A 1x1
convolution with stride 1 and no padding needs no im2col at all. Depthwise convolutions
(one input channel per group) have too little work per GEMM; they run a direct ``prange``
loop instead.

The im2col/col2im and depthwise loops are ``@njit`` functions; the drivers that call BLAS
are plain Python.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .blas import gemm


@njit(cache=True, inline="always")
def _valid_range(offset, stride, size, count):
    """The ``t`` in ``[lo, hi)`` with ``0 <= t*stride + offset < size``, clipped to count."""
    lo = 0
    if offset < 0:
        lo = (-offset + stride - 1) // stride
    hi = 0
    if size - 1 - offset >= 0:
        hi = (size - 1 - offset) // stride + 1
    if hi > count:
        hi = count
    if lo > hi:
        lo = hi
    return lo, hi


@njit(cache=True, parallel=True)
def im2col_cdhw(x, cols, kernel, strides, dilation, pads, out_size):
    """Fill ``cols[(c, a, b, e), (i, j, t)]`` from one ``(C, D, H, W)`` image.

    Args:
        x: the image, C-contiguous ``(C, D, H, W)``.
        cols: ``(C*KD*KH*KW, OD*OH*OW)`` buffer, overwritten.
        kernel, strides, dilation, pads: 3-tuples (pads are the "before" amounts).
        out_size: ``(OD, OH, OW)``.
    """
    channels, depth, height, width = x.shape
    kd, kh, kw = kernel
    od, oh, ow = out_size
    for row in prange(channels * kd * kh * kw):     # one row of cols per (c, a, b, e)
        e = row % kw
        b = (row // kw) % kh
        a = (row // (kw * kh)) % kd
        c = row // (kw * kh * kd)
        x_off = e * dilation[2] - pads[2]
        lo, hi = _valid_range(x_off, strides[2], width, ow)
        col = 0
        for i in range(od):
            z = i * strides[0] - pads[0] + a * dilation[0]
            for j in range(oh):
                y = j * strides[1] - pads[1] + b * dilation[1]
                if z < 0 or z >= depth or y < 0 or y >= height:
                    for t in range(ow):
                        cols[row, col + t] = 0
                else:
                    for t in range(lo):
                        cols[row, col + t] = 0
                    if strides[2] == 1:
                        for t in range(lo, hi):
                            cols[row, col + t] = x[c, z, y, t + x_off]
                    else:
                        for t in range(lo, hi):
                            cols[row, col + t] = x[c, z, y, t * strides[2] + x_off]
                    for t in range(hi, ow):
                        cols[row, col + t] = 0
                col += ow


def conv_ncdhw(x, w, out, cols, kernel, strides, dilation, pads, out_size, groups):
    """Grouped convolution of ``(N, C, D, H, W)`` data by im2col + one GEMM per group.

    Args:
        x: C-contiguous ``(N, C, D, H, W)``.
        w: C-contiguous ``(O, (C/groups)*KD*KH*KW)``.
        out: ``(N, O, OD*OH*OW)``, overwritten.
        cols: ``(C*KD*KH*KW, OD*OH*OW)`` scratch buffer.
        kernel, strides, dilation, pads, out_size: 3-tuples (pads: the "before" amounts).
        groups: the group count.
    """
    out_channels = w.shape[0]
    per_group_out = out_channels // groups
    rows = cols.shape[0] // groups
    for n in range(x.shape[0]):
        im2col_cdhw(x[n], cols, kernel, strides, dilation, pads, out_size)
        for g in range(groups):
            gemm(w[g * per_group_out:(g + 1) * per_group_out], cols[g * rows:(g + 1) * rows],
                 out[n, g * per_group_out:(g + 1) * per_group_out])


def conv_pointwise(x, w, out, groups):
    """A 1x1, stride-1, unpadded grouped convolution: ``out[n] = w @ x[n]`` per group.

    Args:
        x: ``(N, C, P)``; w: ``(O, C/groups)``; out: ``(N, O, P)``, overwritten.
    """
    if groups == 1:
        gemm(w, x, out)             # one call: BLAS broadcasts w over the images
        return
    per_group_out = w.shape[0] // groups
    per_group_in = w.shape[1]
    for n in range(x.shape[0]):
        for g in range(groups):
            gemm(w[g * per_group_out:(g + 1) * per_group_out],
                 x[n, g * per_group_in:(g + 1) * per_group_in],
                 out[n, g * per_group_out:(g + 1) * per_group_out])


@njit(cache=True, parallel=True)
def depthwise_nchw(x, w, out, strides, dilation, pads):
    """Depthwise convolution: output channel ``o`` reads input channel ``o // multiplier``.

    Args:
        x: ``(N, C, H, W)``; w: ``(O, KH, KW)`` with ``O = C * multiplier``;
        out: ``(N, O, OH, OW)``, overwritten.
        strides, dilation, pads: pairs (pads are top, left).
    """
    batch, channels, height, width = x.shape
    out_channels, kh, kw = w.shape
    oh, ow = out.shape[2], out.shape[3]
    multiplier = out_channels // channels
    for task in prange(batch * out_channels):
        n = task // out_channels
        o = task % out_channels
        c = o // multiplier
        for i in range(oh):
            for t in range(ow):
                out[n, o, i, t] = 0
            for b in range(kh):
                y = i * strides[0] - pads[0] + b * dilation[0]
                if y < 0 or y >= height:
                    continue
                for e in range(kw):
                    weight = w[o, b, e]
                    x_off = e * dilation[1] - pads[1]
                    lo, hi = _valid_range(x_off, strides[1], width, ow)
                    for t in range(lo, hi):
                        out[n, o, i, t] += weight * x[n, c, y, t * strides[1] + x_off]


@njit(cache=True)
def im2col_hwc(x, cols, kernel, strides, dilation, pads, out_size):
    """Fill ``cols[(i, j), (b, e, c)]`` from one ``(H, W, C)`` image (channels-last)."""
    height, width, channels = x.shape
    kh, kw = kernel
    oh, ow = out_size
    for i in range(oh):
        for j in range(ow):
            row = i * ow + j
            for b in range(kh):
                y = i * strides[0] - pads[0] + b * dilation[0]
                for e in range(kw):
                    xx = j * strides[1] - pads[1] + e * dilation[1]
                    base = (b * kw + e) * channels
                    if y < 0 or y >= height or xx < 0 or xx >= width:
                        for c in range(channels):
                            cols[row, base + c] = 0
                    else:
                        for c in range(channels):
                            cols[row, base + c] = x[y, xx, c]


def conv_nhwc(x, w, out, cols, kernel, strides, dilation, pads, out_size):
    """Ungrouped NHWC/HWIO convolution: ``out[n] = columns(x[n]) @ w``.

    Args:
        x: ``(N, H, W, C)``; w: ``(KH*KW*C, O)`` (an HWIO weight reshaped);
        out: ``(N, OH*OW, O)``, overwritten; cols: ``(OH*OW, KH*KW*C)`` scratch.
    """
    for n in range(x.shape[0]):
        im2col_hwc(x[n], cols, kernel, strides, dilation, pads, out_size)
        gemm(cols, w, out[n])


def conv_nhwc_pointwise(x, w, out):
    """1x1 NHWC convolution: ``out[n] = x[n] @ w`` with x ``(N, P, C)``, w ``(C, O)``."""
    gemm(x, w, out)


@njit(cache=True)
def col2im_add(cols, out, kernel, strides, dilation, pads, in_size):
    """Scatter-add ``cols[(o, b, e), (i, j)]`` into ``out[o, y, x]`` (transposed conv).

    Args:
        cols: ``(O*KH*KW, H*W)``; out: ``(O, OH, OW)``, accumulated into.
        kernel, strides, dilation, pads: pairs (pads: top, left); in_size: ``(H, W)``.
    """
    out_channels, oh, ow = out.shape
    kh, kw = kernel
    height, width = in_size
    for o in range(out_channels):
        for b in range(kh):
            for e in range(kw):
                row = (o * kh + b) * kw + e
                x_off = e * dilation[1] - pads[1]
                # Input columns j whose target column j*stride + x_off lies inside [0, OW).
                lo, hi = _valid_range(x_off, strides[1], ow, width)
                for i in range(height):
                    y = i * strides[0] - pads[0] + b * dilation[0]
                    if y < 0 or y >= oh:
                        continue
                    for j in range(lo, hi):
                        out[o, y, j * strides[1] + x_off] += cols[row, i * width + j]


def conv2d_transpose_nchw(x, wt, out, cols, kernel, strides, dilation, pads, groups):
    """Transposed convolution by one GEMM per image and group plus a col2im scatter.

    Args:
        x: ``(N, Cin, H, W)``; wt: ``(G, (O/G)*KH*KW, Cin/G)`` (the IOHW weight per group,
            transposed); out: ``(N, O, OH, OW)``, overwritten; cols: ``((O/G)*KH*KW, H*W)``.
    """
    batch, in_channels, height, width = x.shape
    per_group_in = in_channels // groups
    per_group_out = out.shape[1] // groups
    out[:] = 0
    for n in range(batch):
        flat = x[n].reshape(in_channels, height * width)
        for g in range(groups):
            gemm(wt[g], flat[g * per_group_in:(g + 1) * per_group_in], cols)
            col2im_add(cols, out[n, g * per_group_out:(g + 1) * per_group_out], kernel,
                       strides, dilation, pads, (height, width))
