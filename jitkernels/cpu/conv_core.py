"""Cores of the convolutions, destination-passing (they write into ``out``).

Strategy (see docs/kernels.md): a convolution is GEMMs on numpy's BLAS, called from Python
(:mod:`jitkernels.cpu.blas`), which owns the threading (see :mod:`jitkernels.threads`);
the copies around them are single numpy calls, so no numba thread pool runs next to BLAS.
Per image, a 1-D or 2-D stride-1 convolution is an *implicit GEMM* when it pays
(:func:`taps_pay`): the image is zero-padded once and every kernel tap is one accumulating
GEMM that reads its window of the padded image in place, as a strided view, over all
``Wp`` columns of each output row (the extra columns are cropped away). Any other
convolution is im2col (:func:`im2col_chw` in 2-D, one strided numpy copy from the padded
image in 3-D) + one GEMM per group. A 1x1 convolution with stride 1 and no padding needs no
copy at all. Depthwise convolutions (one input channel per group) have too little work per
GEMM; they run the direct loops of :mod:`jitkernels.cpu.depthwise` instead. Work buffers
are kept between calls (:func:`scratch`).
"""

from __future__ import annotations

import math
import threading

import numpy as np
from numba import njit, uint64

from .blas import HAVE_CBLAS, gemm, gemm_strided
from .epilogue import RESIDUAL, apply_rows, gemm_rows
from .packed_gemm import conv_product

_SCRATCH = threading.local()

SCRATCH_LIMIT = 64 << 20
"""Largest work array (bytes) :func:`scratch` keeps between calls."""


def scratch(name: str, shape: tuple, dtype) -> np.ndarray:
    """A C-contiguous work array kept between calls (one per ``name`` and thread).

    Fresh multi-megabyte arrays cost a page fault per page on first touch (measured: 0.5 ms
    for a 3 MB matmul output, more than the copy that fills it), so the im2col, padding,
    repacked-weight and wide-output buffers are reused; a buffer only grows, up to
    :data:`SCRATCH_LIMIT` bytes (larger arrays are allocated per call and not kept).

    Args:
        name: which buffer; arrays with different names may be live at the same time.
        shape, dtype: of the returned array (its contents are left over from earlier use).
    """
    buffers = _SCRATCH.__dict__
    dtype = np.dtype(dtype)
    size = math.prod(shape) * dtype.itemsize
    buffer = buffers.get(name)
    if size > SCRATCH_LIMIT:
        array = np.empty(shape, dtype)
    else:
        if buffer is None or buffer.size < size:
            buffer = buffers[name] = np.empty(max(size, 1), np.uint8)
        array = buffer[:size].view(dtype).reshape(shape)
    return array


@njit(cache=True, inline="always")
def valid_range(offset, stride, size, count):
    """The ``t`` in ``[lo, hi)`` with ``0 <= t*stride + offset < size``, clipped to
    ``count``: the positions along one axis whose window tap falls inside (im2col) or
    whose output a tap reaches (col2im).

    Args:
        offset: the tap's offset (``e*dilation - padding``); stride: the stride;
        size: the length the positions must land in; count: the positions there are.
    """
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


def pad_image(x: np.ndarray, before, after) -> np.ndarray:
    """``x`` with zeros around its trailing axes, or ``x`` itself when none are needed.

    Args:
        x: a C-contiguous array.
        before, after: the zeros before/after each of the trailing ``len(before)`` axes.

    Returns:
        A C-contiguous array (a :func:`scratch` buffer when padded).
    """
    if not any(before) and not any(after):
        return x
    lead = x.ndim - len(before)
    shape = x.shape[:lead] + tuple(size + lo + hi for size, lo, hi
                                   in zip(x.shape[lead:], before, after))
    padded = scratch("padded", shape, x.dtype)
    inside = tuple(slice(lo, lo + size) for size, lo in zip(x.shape[lead:], before))
    padded[(Ellipsis,) + inside] = x
    for axis, (lo, hi) in enumerate(zip(before, after)):     # zero only the borders
        head = (slice(None),) * (lead + axis)
        padded[head + (slice(0, lo),)] = 0
        padded[head + (slice(lo + x.shape[lead + axis], None),)] = 0
    return padded


def view(base: np.ndarray, offset: int, shape: tuple, steps: tuple) -> np.ndarray:
    """A view of the C-contiguous ``base`` from flat element ``offset`` with element steps."""
    item = base.itemsize
    return np.ndarray(shape, base.dtype, buffer=base, offset=offset * item,
                      strides=tuple(step * item for step in steps))


COPY_FLOPS = 20
"""GEMM flops that take as long as copying one element into a channels-first im2col buffer
(fitted on a 2-core Xeon, ~150-250 GFLOP/s GEMMs, so that :func:`taps_pay` picks the faster
path on the 3x3 layers of ResNet-50 and VGG-16: see docs/kernels.md)."""

COPY_FLOPS_NHWC = 16
"""The same for the channels-last im2col (:func:`im2col_hwc` copies about twice as fast)."""

MIN_TAP_FLOPS = 4e6
"""Smallest GEMM per kernel tap worth a BLAS call (each call costs some microseconds)."""

MIN_TAP_CHANNELS = 16
"""Fewest input channels per group for per-tap GEMMs (their inner dimension)."""

MIN_NHWC_RUN = 16
"""Fewest channels for the channels-last im2col (it copies runs of ``KW*C`` elements;
shorter ones go through channels-first columns instead)."""


def taps_pay(out_channels, per_group_in, out_rows, out_width, padded_width, images,
             copy_flops: float, repack: bool) -> bool:
    """Whether the implicit GEMM (one accumulating GEMM per tap) beats im2col + one GEMM.

    Only stride-1 convolutions qualify (callers check). The implicit GEMM computes ``Wp``
    positions per output row instead of ``OW`` and (channels-first) repacks the weight once
    per call; im2col copies every element of its ``C*KH*KW x OH*OW`` matrix. Both costs are
    counted per input channel and tap, in GEMM flops (``copy_flops`` per copied element).
    """
    if not HAVE_CBLAS or per_group_in < MIN_TAP_CHANNELS:
        return False
    if 2.0 * out_channels * per_group_in * out_rows * padded_width < MIN_TAP_FLOPS:
        return False
    extra = 2.0 * out_channels * (padded_width - out_width) * out_rows * images
    if repack:
        extra += copy_flops * out_channels
    return extra < copy_flops * out_rows * out_width * images


def conv_ncdhw(x, w, out, kernel, strides, dilation, before, after, out_size, groups):
    """Grouped convolution of ``(N, C, D, H, W)`` data: implicit GEMM or im2col + GEMM.

    Args:
        x: C-contiguous ``(N, C, D, H, W)``.
        w: C-contiguous ``(O, C/groups, KD, KH, KW)``.
        out: ``(N, O, OD*OH*OW)``, overwritten.
        kernel, strides, dilation: 3-tuples; before, after: 3-tuples of padding.
        out_size: ``(OD, OH, OW)``.
        groups: the group count.
    """
    two_d = x.shape[2] == 1 and kernel[0] == 1 and not before[0] and not after[0]
    if (two_d and strides[1:] == (1, 1) and out.size
            and taps_pay(w.shape[0], w.shape[1], out_size[1], out_size[2],
                         x.shape[4] + before[2] + after[2], x.shape[0], COPY_FLOPS, True)):
        _conv_nchw_taps(x[:, :, 0], w[:, :, 0], out, dilation[1:], before[1:], after[1:],
                        out_size[1:], groups)
        return
    cols = scratch("cols", (x.shape[1] * int(np.prod(kernel)), int(np.prod(out_size))),
                   x.dtype)
    weight = w.reshape(w.shape[0], -1)
    for n in range(x.shape[0]):
        if two_d:
            im2col_chw(x[n, :, 0], cols, kernel[1:], strides[1:], dilation[1:], before[1:],
                       out_size[1:])
        else:
            fill_columns(pad_image(x[n], before, after), cols, kernel, strides, dilation,
                         out_size)
        _gemm_groups(weight, cols, out[n], groups)


@njit(cache=True)
def im2col_chw(x, cols, kernel, strides, dilation, before, out_size):
    """Channels-first 2-D im2col straight from the unpadded ``(C, H, W)`` image.

    Fills ``cols[(c, b, e), (i, j)] = x[c, i*sh + b*dh - top, j*sw + e*dw - left]`` (zero
    outside the image), one output row segment at a time. Serial, so no thread pool runs
    next to BLAS; the flat unsigned indices let LLVM vectorise the segment copies (signed
    ones keep a negative-index check in the loop), which makes it faster than padding plus
    numpy's strided copy (measured 0.32 vs 0.51 ms for ResNet-50's 3x3/2 128-channel
    layer).

    Args:
        x: C-contiguous ``(C, H, W)``; cols: C-contiguous ``(C*KH*KW, OH*OW)``, overwritten.
        kernel, strides, dilation: pairs (H, W); before: the zeros above and left of the
            image; out_size: ``(OH, OW)``.
    """
    channels, height, width = x.shape
    kh, kw = kernel
    sw = strides[1]
    oh, ow = out_size
    source = x.reshape(-1)
    target = cols.reshape(-1)
    zero = target.dtype.type(0)
    for c in range(channels):
        for b in range(kh):
            for e in range(kw):
                first = ((c * kh + b) * kw + e) * oh * ow
                x_offset = e * dilation[1] - before[1]
                lo, hi = valid_range(x_offset, sw, width, ow)
                count = uint64(hi - lo)
                for i in range(oh):
                    y = i * strides[0] + b * dilation[0] - before[0]
                    row = uint64(first + i * ow)
                    if y < 0 or y >= height:
                        for j in range(uint64(ow)):
                            target[row + j] = zero
                        continue
                    for j in range(uint64(lo)):
                        target[row + j] = zero
                    for j in range(uint64(hi), uint64(ow)):
                        target[row + j] = zero
                    into = row + uint64(lo)
                    start = uint64((c * height + y) * width + lo * sw + x_offset)
                    if sw == 1:
                        for j in range(count):
                            target[into + j] = source[start + j]
                    elif sw == 2:                   # a constant stride vectorises
                        for j in range(count):
                            target[into + j] = source[start + uint64(2) * j]
                    else:
                        for j in range(count):
                            target[into + j] = source[start + uint64(sw) * j]


def fill_columns(padded, cols, kernel, strides, dilation, out_size) -> None:
    """Channels-first im2col: one strided numpy copy from the zero-padded image.

    Args:
        padded: the zero-padded image, C-contiguous ``(C, Dp, Hp, Wp)``.
        cols: C-contiguous ``(C*KD*KH*KW, OD*OH*OW)``, overwritten (rows ``(c, a, b, e)``).
        kernel, strides, dilation, out_size: 3-tuples (D, H, W).
    """
    channels, depth, height, width = padded.shape
    shape = (channels,) + tuple(kernel) + tuple(out_size)
    steps = (depth * height * width, dilation[0] * height * width, dilation[1] * width,
             dilation[2], strides[0] * height * width, strides[1] * width, strides[2])
    np.copyto(cols.reshape(shape), view(padded, 0, shape, steps))


def _conv_nchw_taps(x, w, out, dilation, before, after, out_size, groups):
    """Stride-1 2-D convolution as one accumulating GEMM per kernel tap, no im2col.

    Each image is zero-padded once to ``(C, Hp + 1, Wp)``; output row ``i`` is computed
    over all ``Wp`` padded columns, so tap ``(b, e)`` reads the ``(C, OH*Wp)`` matrix that
    starts at element ``b*dh*Wp + e*dw`` of each channel (a strided view, no copy). The
    spare row keeps the last taps' reads inside the buffer; the wide result is cropped.
    """
    out_channels, per_group_in, kh, kw = w.shape
    per_group_out = out_channels // groups
    oh, ow = out_size
    padded_w = x.shape[3] + before[1] + after[1]
    taps = scratch("taps", (kh * kw, out_channels, per_group_in), w.dtype)
    taps[...] = w.reshape(out_channels, per_group_in, kh * kw).transpose(2, 0, 1)
    wide = scratch("wide", (out_channels, oh, padded_w), x.dtype)
    wide_flat = wide.reshape(out_channels, -1)
    for n in range(x.shape[0]):
        padded = pad_image(x[n], before, (after[0] + 1, after[1]))
        channel = padded[0].size
        for g in range(groups):
            rows = slice(g * per_group_out, (g + 1) * per_group_out)
            for tap in range(kh * kw):
                b, e = divmod(tap, kw)
                start = g * per_group_in * channel + b * dilation[0] * padded_w \
                    + e * dilation[1]
                gemm_strided(taps[tap, rows],
                             view(padded, start, (per_group_in, oh * padded_w), (channel, 1)),
                             wide_flat[rows], tap > 0)
        out[n].reshape(out_channels, oh, ow)[...] = wide[:, :, :ow]


def _gemm_groups(w, cols, out, groups):
    """``out[g] = w[g] @ cols[g]`` over the row blocks of each group."""
    per_group_out = w.shape[0] // groups
    per_group_rows = cols.shape[0] // groups
    for g in range(groups):
        gemm(w[g * per_group_out:(g + 1) * per_group_out],
             cols[g * per_group_rows:(g + 1) * per_group_rows],
             out[g * per_group_out:(g + 1) * per_group_out])


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


def conv_nhwc(x, w, out, kernel, strides, dilation, before, after, out_size, epilogue=None):
    """Ungrouped NHWC/HWIO convolution: implicit GEMM or ``out[n] = columns(x[n]) @ w``.

    With few channels (runs of ``KW*C`` elements are too short to copy fast) the columns
    are built channels-first, from a transposed copy of the (small) image, and multiplied
    transposed.

    Args:
        x: C-contiguous ``(N, H, W, C)``; w: C-contiguous HWIO ``(KH, KW, C, O)``;
        out: ``(N, OH*OW, O)``, overwritten.
        kernel, strides, dilation, before, after, out_size: pairs (H, W).
        epilogue: a :class:`~jitkernels.cpu.epilogue.Epilogue` applied to each block of
            output rows right after its GEMM (its residual shaped like ``out``), or None.
    """
    batch, _, width, channels = x.shape
    out_channels = w.shape[3]
    residual = None if epilogue is None else _residual_rows(epilogue, out.shape)
    if (strides == (1, 1) and out.size
            and taps_pay(out_channels, channels, out_size[0], out_size[1],
                         width + before[1] + after[1], batch, COPY_FLOPS_NHWC, False)):
        _conv_nhwc_taps(x, w, out, dilation, before, after, out_size)
        if epilogue is not None:
            for n in range(batch):
                apply_rows(out[n], 0, out.shape[1], epilogue.kinds, epilogue.vectors,
                           residual[n])
        return
    oh, ow = out_size
    kh, kw = kernel
    if channels < MIN_NHWC_RUN:
        cols = scratch("cols", (channels * kh * kw, oh * ow), x.dtype)
        weight = np.ascontiguousarray(w.transpose(2, 0, 1, 3)).reshape(-1, out_channels)
        for n in range(batch):
            image = np.ascontiguousarray(np.moveaxis(x[n], -1, 0))
            im2col_chw(image, cols, kernel, strides, dilation, before, out_size)
            gemm_rows(cols.T, weight, out[n], epilogue, gemm,
                      None if residual is None else residual[n])
        return
    cols = scratch("cols", (oh * ow, kh * kw * channels), x.dtype)
    weight = w.reshape(-1, out_channels)
    for n in range(batch):
        im2col_hwc(x[n], cols, kernel, strides, dilation, before, out_size)
        rows = None if residual is None else residual[n]
        if not conv_product(cols, weight, out[n], epilogue, _packed_residual(epilogue, rows)):
            gemm_rows(cols, weight, out[n], epilogue, gemm, rows)


def _residual_rows(epilogue, shape):
    """The epilogue's residual as ``shape`` (``(N, rows, O)``), or a placeholder per image
    when it has none."""
    if epilogue.residual.size == int(np.prod(shape)):
        return epilogue.residual.reshape(shape)
    return np.zeros((shape[0], 1, 1), epilogue.vectors.dtype)


@njit(cache=True)
def im2col_hwc(x, cols, kernel, strides, dilation, pads, out_size):
    """Fill ``cols[(i, j), (b, e, c)]`` from one ``(H, W, C)`` image (channels-last).

    Serial on purpose (no thread pool next to BLAS); with runs of ``C`` contiguous
    elements it is faster than numpy's strided copy from a padded image (measured).
    """
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


def _conv_nhwc_taps(x, w, out, dilation, before, after, out_size):
    """Stride-1 NHWC convolution as one accumulating GEMM per tap, no im2col.

    Padded to ``(Hp + 1, Wp, C)``, the image's positions over the padded width are the rows
    of a ``(OH*Wp, C)`` matrix; tap ``(b, e)`` is that matrix shifted by ``b*dh*Wp + e*dw``
    positions (a view) and multiplies the HWIO weight's ``(C, O)`` block as stored,
    accumulating into a wide ``(OH, Wp, O)`` result that is cropped into ``out``.
    """
    channels = x.shape[3]
    kh, kw, _, out_channels = w.shape
    oh, ow = out_size
    padded_w = x.shape[2] + before[1] + after[1]
    wide = scratch("wide", (oh, padded_w, out_channels), x.dtype)
    wide_flat = wide.reshape(-1, out_channels)
    for n in range(x.shape[0]):
        padded = pad_image(x[n], before + (0,), (after[0] + 1, after[1], 0))
        for tap in range(kh * kw):
            b, e = divmod(tap, kw)
            start = (b * dilation[0] * padded_w + e * dilation[1]) * channels
            gemm_strided(view(padded, start, (oh * padded_w, channels), (channels, 1)),
                         w[b, e], wide_flat, tap > 0)
        out[n].reshape(oh, ow, out_channels)[...] = wide[:, :ow]


def _packed_residual(epilogue, rows):
    """The residual rows :func:`~jitkernels.cpu.packed_gemm.conv_product` needs: ``rows``
    when the epilogue has a RESIDUAL step, else None."""
    if epilogue is None or RESIDUAL not in epilogue.kinds:
        return None
    return rows


def conv_nhwc_pointwise(x, w, out, epilogue=None):
    """1x1 NHWC convolution: ``out[n] = x[n] @ w`` with x ``(N, P, C)``, w ``(C, O)``; with
    an epilogue, by blocks of rows each finished while in cache.

    All ``N*P`` pixels are the rows of one product: on irlib's packed micro-kernel
    (:func:`~jitkernels.cpu.packed_gemm.conv_product`, epilogue per 6x64 block) where its
    cost rule says so, else on BLAS (:func:`~jitkernels.cpu.epilogue.gemm_rows`)."""
    rows = out.shape[0] * out.shape[1]
    flat_x, flat_out = x.reshape(rows, -1), out.reshape(rows, -1)
    residual = None if epilogue is None else _residual_rows(epilogue, out.shape)
    residual = (residual.reshape(rows, -1) if residual is not None
                and residual.shape == out.shape else None)
    if conv_product(flat_x, w, flat_out, epilogue, _packed_residual(epilogue, residual)):
        return
    if epilogue is None:
        gemm(x, w, out)
        return
    gemm_rows(flat_x, w, flat_out, epilogue, gemm, residual)


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
                lo, hi = valid_range(x_off, strides[1], ow, width)
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
            transposed: a transposed view is fine); out: ``(N, O, OH, OW)``, overwritten; cols: ``((O/G)*KH*KW, H*W)``.
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
