"""Depthwise 2-D convolutions (one input channel per group), destination-passing.

A depthwise convolution has too little work per channel for a GEMM; these are direct loops
whose innermost loop is contiguous and vectorises:

* channels-first (:func:`depthwise_nchw`): one ``prange`` task per ``(n, output channel)``.
  The task copies its input plane once into a zero-padded buffer, so the tap loops need no
  bounds checks; each output row then accumulates ``KH*KW`` scaled rows of that buffer.
  A horizontal stride of 2 first splits the buffer's even and odd columns (one
  interleaved pass), so each tap is again a contiguous loop; small stride-1 planes
  accumulate each tap over the whole flattened plane at once (:func:`_accumulate_flat`).
* channels-last (:func:`depthwise_nhwc`): :mod:`jitkernels.cpu.depthwise_nhwc`, whole
  16-channel vector blocks with the nine taps summed in registers, along output rows or
  through zero-padded per-block planes, a fused epilogue (bias, ReLU, ...) applied before
  each block is stored.

Both overwrite ``out``. Accumulation is in the data's dtype, tap by tap (so results may
differ from a float64 reference in the last bits).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .depthwise_nhwc import depthwise_nhwc_blocked
from .epilogue import empty

__all__ = ["depthwise_nchw", "depthwise_nhwc"]

_CHUNKS = 64
"""Channel chunks of :func:`depthwise_nchw` (several per thread, for balance)."""

HALVES_MIN_WIDTH = 24
"""Stride-2 outputs at least this wide split the padded buffer into even/odd columns first
(:func:`_deinterleave`); on narrower rows the extra pass costs more than the strided loads
it saves (measured on the MobileNet shapes)."""

FLAT_MAX = 4096
"""Stride-1 planes whose output rows (padded width) fit in this many elements accumulate
as one flat loop per tap (:func:`_accumulate_flat`): short rows vectorise badly one by one,
while a larger plane's flat accumulator would fall out of L1."""


@njit(cache=True)
def _accumulate_taps(dst, padded, w, i, strides, dilation):
    """``dst[t] = sum_{b,e} w[b, e] * padded[i*sh + b*dh, t*sw + e*dw]`` for one output row."""
    kh, kw = w.shape
    sh, sw = strides
    dh, dw = dilation
    count = dst.shape[0]
    for t in range(count):
        dst[t] = 0
    for b in range(kh):
        row = padded[i * sh + b * dh]
        for e in range(kw):
            weight = w[b, e]
            view = row[e * dw:]
            if sw == 1:
                for t in range(count):
                    dst[t] += weight * view[t]
            elif sw == 2:
                for t in range(count):
                    dst[t] += weight * view[2 * t]
            else:
                for t in range(count):
                    dst[t] += weight * view[sw * t]


@njit(cache=True)
def _accumulate_flat(dst, padded, w, wide, dilation):
    """All output rows of one stride-1 plane at once: with the padded plane flattened,
    output ``(i, t)`` reads ``flat[i*span_w + t + tap offset]``, so each tap is one long
    contiguous loop over ``wide`` (rows of ``span_w``, the last ``span_w - ow`` columns
    of each row are junk) instead of ``OH`` short ones."""
    kh, kw = w.shape
    oh, ow = dst.shape
    span_w = padded.shape[1]
    flat = padded.reshape(-1)
    count = (oh - 1) * span_w + ow
    if kh == 3 and kw == 3 and dilation[0] == 1 and dilation[1] == 1:
        s1, s2 = span_w, 2 * span_w
        _row_3x3(wide[:count], (flat, flat[1:], flat[2:], flat[s1:], flat[s1 + 1:],
                                flat[s1 + 2:], flat[s2:], flat[s2 + 1:], flat[s2 + 2:]), w)
    else:
        for k in range(count):
            wide[k] = 0
        for b in range(kh):
            for e in range(kw):
                weight = w[b, e]
                view = flat[b * dilation[0] * span_w + e * dilation[1]:]
                for k in range(count):
                    wide[k] += weight * view[k]
    for i in range(oh):
        row = wide[i * span_w:]
        target = dst[i]
        for t in range(ow):
            target[t] = row[t]


@njit(cache=True)
def _row_3x3(dst, taps, w):
    """``dst[t] = sum_k w[k] * taps[k][t]`` over the 9 taps of a 3x3 window: all taps in
    registers, one store per output (a tap at a time costs a load and a store of ``dst``
    per tap)."""
    w0, w1, w2, w3, w4, w5, w6, w7, w8 = (w[0, 0], w[0, 1], w[0, 2], w[1, 0], w[1, 1],
                                          w[1, 2], w[2, 0], w[2, 1], w[2, 2])
    a0, a1, a2, a3, a4, a5, a6, a7, a8 = taps
    for t in range(dst.shape[0]):
        dst[t] = (w0 * a0[t] + w1 * a1[t] + w2 * a2[t] + w3 * a3[t] + w4 * a4[t]
                  + w5 * a5[t] + w6 * a6[t] + w7 * a7[t] + w8 * a8[t])


@njit(cache=True)
def _deinterleave(padded, halves):
    """``halves[0][y, j] = padded[y, 2j]``, ``halves[1][y, j] = padded[y, 2j + 1]``: one
    loop touching both lanes, which LLVM vectorises as an interleaved access."""
    span_h, span_w = padded.shape
    pairs = span_w // 2
    for y in range(span_h):
        row = padded[y]
        even = halves[0, y]
        odd = halves[1, y]
        for j in range(pairs):
            even[j] = row[2 * j]
            odd[j] = row[2 * j + 1]
        if span_w % 2:
            even[pairs] = row[span_w - 1]


@njit(cache=True)
def _accumulate_halves(dst, halves, w, i, stride_h, dilation):
    """One output row of a horizontal-stride-2 plane: column ``2t + c`` of the padded plane
    is ``halves[c % 2][., t + c // 2]``, so every tap is a contiguous loop."""
    kh, kw = w.shape
    dh, dw = dilation
    count = dst.shape[0]
    if kh == 3 and kw == 3 and dh == 1 and dw == 1:
        y = i * stride_h
        even, odd = halves[0], halves[1]
        _row_3x3(dst, (even[y], odd[y], even[y, 1:], even[y + 1], odd[y + 1],
                       even[y + 1, 1:], even[y + 2], odd[y + 2], even[y + 2, 1:]), w)
        return
    for t in range(count):
        dst[t] = 0
    for b in range(kh):
        y = i * stride_h + b * dh
        for e in range(kw):
            column = e * dw
            weight = w[b, e]
            view = halves[column % 2, y, column // 2:]
            for t in range(count):
                dst[t] += weight * view[t]


@njit(cache=True, parallel=True)
def depthwise_nchw(x, w, out, strides, dilation, pads):
    """Depthwise convolution: output channel ``o`` reads input channel ``o // multiplier``.

    Args:
        x: ``(N, C, H, W)``; w: ``(O, KH, KW)`` with ``O = C * multiplier``;
        out: ``(N, O, OH, OW)``, overwritten.
        strides, dilation, pads: pairs (pads are top, left; the bottom/right padding is
            implied by ``out``'s shape).
    """
    batch, channels, height, width = x.shape
    out_channels, kh, kw = w.shape
    oh, ow = out.shape[2], out.shape[3]
    multiplier = out_channels // channels
    # The padded plane covers exactly the rows/columns the outputs read.
    span_h = (oh - 1) * strides[0] + (kh - 1) * dilation[0] + 1
    span_w = (ow - 1) * strides[1] + (kw - 1) * dilation[1] + 1
    rows = max(min(height, span_h - pads[0]), 0)
    cols = max(min(width, span_w - pads[1]), 0)
    tasks = batch * out_channels
    # A few tasks per thread, each with one padded buffer: only its interior is rewritten
    # per channel, so the zero border is set once.
    chunks = min(tasks, _CHUNKS)
    flat = strides[0] == 1 and strides[1] == 1 and oh * span_w <= FLAT_MAX
    halved = strides[1] == 2 and ow >= HALVES_MIN_WIDTH
    plain_3x3 = kh == 3 and kw == 3 and strides[1] == 1 and dilation[0] == 1 \
        and dilation[1] == 1
    for chunk in prange(chunks):
        padded = np.zeros((span_h, span_w), x.dtype)
        wide = np.empty(oh * span_w if flat else 0, x.dtype)
        halves = np.empty((2, span_h, (span_w + 1) // 2) if halved else (2, 0, 0), x.dtype)
        for task in range(chunk * tasks // chunks, (chunk + 1) * tasks // chunks):
            n = task // out_channels
            o = task % out_channels
            c = o // multiplier
            for y in range(rows):
                src = x[n, c, y]
                dst = padded[y + pads[0], pads[1]:pads[1] + cols]
                for k in range(cols):
                    dst[k] = src[k]
            if flat:
                _accumulate_flat(out[n, o], padded, w[o], wide, dilation)
            elif halved:
                _deinterleave(padded, halves)
                for i in range(oh):
                    _accumulate_halves(out[n, o, i], halves, w[o], i, strides[0], dilation)
            elif plain_3x3:
                for i in range(oh):
                    y = i * strides[0]
                    r0, r1, r2 = padded[y], padded[y + 1], padded[y + 2]
                    _row_3x3(out[n, o, i], (r0, r0[1:], r0[2:], r1, r1[1:], r1[2:], r2,
                                            r2[1:], r2[2:]), w[o])
            else:
                for i in range(oh):
                    _accumulate_taps(out[n, o, i], padded, w[o], i, strides, dilation)


def depthwise_nhwc(x, w, out, strides, dilation, pads, epilogue=None):
    """Channels-last depthwise convolution with multiplier 1, with ``epilogue``'s steps or
    none (:func:`jitkernels.cpu.depthwise_nhwc.depthwise_nhwc_blocked`).

    Args:
        x: C-contiguous ``(N, H, W, C)``; w: C-contiguous ``(KH, KW, C)``;
        out: C-contiguous ``(N, OH, OW, C)``, overwritten.
        strides, dilation, pads: pairs (pads are top, left).
        epilogue: a :class:`~jitkernels.cpu.epilogue.Epilogue`, or None.
    """
    steps = epilogue if epilogue is not None else empty(out.dtype)
    depthwise_nhwc_blocked(x, w, out, strides, dilation, pads, steps.kinds, steps.vectors,
                           steps.residual)
