"""Channels-last depthwise 2-D convolution (multiplier 1) near memory speed, destination-passing.

Strategy (issue #17: MobileNet's depthwise layers ran at 7-17 GFLOP/s, 3-5x the time of a
copy of their bytes):

* **Vector blocks.** Channels go in blocks of 16 (:data:`~jitkernels.cpu.simd.LANES`, one
  AVX-512 register of float32). A block's 3x3 window is summed in registers by
  :func:`~jitkernels.cpu.simd.row_dot` along a run of output pixels: the nine weight
  vectors and the epilogue's scale and shift are loaded once per run, then each pixel costs
  nine vector loads, nine fused multiply-adds and one store. numba's own loops stayed scalar
  here (LLVM cannot rule out that the output overlaps the nine inputs), which is why the
  previous kernel (one tap at a time over whole rows, the output row read and written per
  tap) ran at 3-5x a copy.
* **Two strategies**, chosen by :func:`use_planes` (``IRLIB_DEPTHWISE_NHWC=rows|planes``
  forces one):

  - *rows*: one task per ``(n, output row, channel chunk)`` reading the NHWC input in
    place. The row's interior pixels (whole window inside the image) are one run per
    block; the border pixels are runs of one whose taps outside the image are masked
    (counted as zeros, their loads moved to an inside tap), so no element is
    bounds-checked. Channels are cut into chunks only when there are too few rows for
    every thread to get several tasks.
  - *planes*: one task per image and group of up to :data:`PLANE_GROUP` channel blocks:
    the blocks are first copied into zero-padded ``(rows, columns, 16)`` planes (64-byte
    aligned; 64 contiguous channels read per pixel), then every output row is one run over
    a plane. With 512 or 1024 channels a pixel is 2-4 KiB, so the nine taps
    of a block read lines 2-4 KiB apart that share one L1 set (eight ways): reading them
    in place thrashes L1, the plane does not, and its padding removes the border cases.
* **Columns carried along a run.** When every tap of a 3x3 window is inside the image and
  the stride equals the dilation (twice it), the next output pixel's first two columns
  (first column) of the window are this pixel's last ones: :func:`row_dot3x3` keeps them in
  registers and loads 3 (6) blocks per pixel instead of 9, both in the rows strategy's
  interior runs and in every planes row. One thread, median CPU µs of each layer inside
  MobileNet's graph (interleaved with the previous kernel): 112x112x32 264 -> 215,
  56x56x128 182 -> 139, 28x28x256 145 -> 130, 14x14x512 78 -> 71 (five layers), 7x7x1024
  66 -> 62; the kernel alone (``benchmarks/dw_pool_kernels.py``, rows strategy) 154 -> 100,
  150 -> 98, 86 -> 60. Of a layer's time in the graph, 30-40 µs is Python before the kernel
  runs (the conv's fused-epilogue dispatch, then this module's; the latter is a cached plan
  per layer shape, :func:`_plan`).
* **Epilogue in registers.** A fused epilogue (:mod:`jitkernels.cpu.epilogue`) that is a
  chain of per-channel ADD/MUL steps followed by ReLUs (bias, batch norm, ReLU: every
  MobileNet layer) is composed into one ``max(floor, v * scale + shift)`` applied to each
  block before it is stored. Other chains (a residual, a ReLU in the middle) run step by
  step on each block's output row right after it is computed, while it is in L1.
* Channels past the last whole block (``C % 16``) take a plain scalar loop. Layers with
  less work than :data:`SERIAL_MAX_WORK` run on the calling thread; the others split their
  tasks into one contiguous range per numba thread.

Accumulation is in the data's dtype, tap by tap in window order (fused multiply-adds where
the CPU has them), so results may differ from a float64 reference in the last bits.
"""

from __future__ import annotations

import math
import os

import numpy as np
from numba import get_num_threads, njit, prange

from numba.core import cgutils, types
from numba.extending import intrinsic

from .epilogue import ADD, MUL, RELU, RESIDUAL
from .simd import (_CONTRACT, LANES, _Emitter, _flat, _ints, _numbers, _taps, row_add_into,
                   row_affine, row_copy, row_dot, row_fill, row_fma, row_mul_into)
from .window_taps import inside_bits, inside_index, tap_mask

__all__ = ["depthwise_nhwc_blocked", "layer_plan", "run_planned", "row_dot3x3",
           "carried_columns", "ENV_STRATEGY", "SERIAL_MAX_WORK", "MIN_TASKS",
           "PLANE_MAX_BYTES", "PLANE_GROUP", "PLANE_GROUP_BYTES", "channel_chunks",
           "plane_shape", "use_planes"]

SERIAL_MAX_WORK = 1 << 16
"""Multiply-adds (output elements x window taps) below which the kernel runs on the calling
thread: a parallel launch and its closing barrier cost ~2 us on an idle machine but tens of
us when the worker thread has been descheduled; the whole layer takes ~10 us below this."""

ENV_STRATEGY = "IRLIB_DEPTHWISE_NHWC"
"""Environment variable: ``rows`` or ``planes`` forces that strategy (read when the module
is imported); anything else, or unset, leaves the choice to :func:`use_planes`."""

PLANE_MAX_BYTES = 64 << 10
"""Largest zero-padded channel-block plane (bytes) for which the planes strategy is chosen
(it stays in L1/L2 while the block's output is computed from it)."""

PLANE_GROUP = 4
"""Most channel blocks one planes task copies and convolves (their 64 contiguous channels
per pixel are read in one go: 1.3x faster on 7x7x1024 than one block per task)."""

PLANE_GROUP_BYTES = 64 << 10
"""Most bytes of planes one planes task holds."""

MIN_TASKS = 16
"""Fewest tasks the channel chunking aims for (several per thread, for balance)."""


@intrinsic
def row_dot3x3(typingctx, out, at, out_step, x, x_offsets, step, w, w_offsets, count, scale,
               shift, ss_at, floor, carried):
    """:func:`~jitkernels.cpu.simd.row_dot` for a 3x3 window with every tap inside the image
    (``x_offsets`` row by row) whose next pixel's first ``carried`` columns are this pixel's
    last ones (:func:`carried_columns`: 2 when the stride equals the dilation, 1 when it is
    twice it): per pixel and window row ``3 - carried`` blocks are loaded, the others kept
    in registers (a stride-1 run loads 3 blocks per pixel instead of 9). The taps are summed
    in ``row_dot``'s order (which products LLVM fuses into multiply-adds may differ, so the
    last bit may too). ``count >= 1``."""
    if not (_flat(out, x, w, scale, shift) and _ints(at, out_step, step, count, ss_at, carried)
            and _taps(x_offsets, w_offsets) and x_offsets.count == 9 and _numbers(floor)):
        return None

    def codegen(context, builder, signature, args):
        e = _Emitter(context, builder, signature, args, out.dtype)
        weights = [e.load(e.data(6), wo) for wo in e.offsets(7)]
        epilogue = (e.load(e.data(9), e.intp(11)), e.load(e.data(10), e.intp(11)),
                    e.splat(e.value(12)))
        two = builder.icmp_signed("==", e.intp(13), e.intp(13).type(2))
        with builder.if_else(two) as (stride_one, stride_two):
            with stride_one:
                _carried_run(e, weights, epilogue, 2)
            with stride_two:
                _carried_run(e, weights, epilogue, 1)
        return context.get_dummy_value()
    return types.void(out, at, out_step, x, x_offsets, step, w, w_offsets, count, scale,
                      shift, ss_at, floor, carried), codegen


def _carried_run(e, weights, epilogue, kept):
    """Emit :func:`row_dot3x3`'s run loop keeping ``kept`` columns of each window row in
    registers (allocas that LLVM promotes) from one pixel to the next."""
    builder = e.builder
    out_data, x_data, xs = e.data(0), e.data(3), e.offsets(4)
    first, out_step, step = e.intp(1), e.intp(2), e.intp(5)
    factor, offset, lowest = epilogue
    slots = [[cgutils.alloca_once(builder, e.vector) for _ in range(kept)] for _ in range(3)]
    for r in range(3):
        for k in range(kept):
            builder.store(e.load(x_data, xs[3 * r + k]), slots[r][k])

    def body(p):
        moved = builder.mul(p, step)
        total = None
        for r in range(3):
            columns = [builder.load(slots[r][k]) for k in range(kept)]
            columns += [e.load(x_data, builder.add(xs[3 * r + k], moved))
                        for k in range(kept, 3)]
            for k, value in enumerate(columns):
                product = builder.fmul(weights[3 * r + k], value, flags=_CONTRACT)
                total = product if total is None else builder.fadd(total, product,
                                                                   flags=_CONTRACT)
            for k in range(kept):
                builder.store(columns[3 - kept + k], slots[r][k])
        total = builder.fadd(builder.fmul(total, factor, flags=_CONTRACT), offset,
                             flags=_CONTRACT)
        e.store(e.clamp(total, lowest), out_data, e.moved(first, out_step, p))
    e.run(8, body)


@njit(cache=True, inline="always")
def carried_columns(stride, dilation):
    """How many window columns the next output pixel along a row shares with this one (for
    :func:`row_dot3x3`): 2 when ``stride == dilation``, 1 when ``stride == 2 * dilation``,
    else 0 (no carry: use ``row_dot``)."""
    if stride == dilation:
        return 2
    if stride == 2 * dilation:
        return 1
    return 0


def channel_chunks(rows: int, channels: int) -> int:
    """How many channel chunks each output row is cut into: enough for :data:`MIN_TASKS`
    tasks, at most one per whole block of :data:`~jitkernels.cpu.simd.LANES` channels.

    Args:
        rows: output rows over the batch (``N * OH``).
        channels: the channels ``C``.
    """
    blocks = max(1, channels // LANES)
    wanted = -(-MIN_TASKS // max(rows, 1))
    return max(1, min(blocks, wanted))


@njit(cache=True)
def _compose(kinds, vectors, channels):
    """``(scale, shift, floor, rest)``: an epilogue chain of ADD/MUL steps then ReLUs as
    ``max(floor, v * scale + shift)`` with ``rest`` empty; any other chain as the identity
    (``scale = 1, shift = 0, floor = -inf``) with ``rest = kinds`` (run step by step)."""
    dtype = vectors.dtype
    scale = np.ones(channels, dtype)
    if kinds.shape[0] and vectors.shape[1] != channels:
        raise ValueError("epilogue vectors must be (steps, channels)")
    shift = np.zeros(channels, dtype)
    steps = kinds.shape[0]
    end = steps
    while end > 0 and kinds[end - 1] == RELU:
        end -= 1
    for s in range(end):
        if kinds[s] != ADD and kinds[s] != MUL:
            return scale, shift, -np.inf, kinds
    for s in range(end):
        for c in range(channels):
            if kinds[s] == ADD:
                shift[c] += vectors[s, c]
            else:
                scale[c] *= vectors[s, c]
                shift[c] *= vectors[s, c]
    floor = 0.0 if end < steps else -np.inf
    return scale, shift, floor, kinds[:0]


@njit(cache=True)
def _aligned_zeros(count, like):
    """``count`` zeros of ``like``'s dtype starting at a 64-byte boundary (a block of 16
    float32 is then one cache line)."""
    raw = np.zeros(count + 64 // like.itemsize, like.dtype)
    skip = (-raw.ctypes.data) % 64 // like.itemsize
    return raw[skip:skip + count]


@njit(cache=True)
def _tap_columns(j0, j1, stride, offset, width):
    """The output columns ``[lo, hi)`` within ``[j0, j1)`` whose input column
    ``j*stride + offset`` lies in ``[0, width)`` (``lo == hi`` when none do)."""
    lo = j0
    if lo * stride + offset < 0:
        lo = (-offset + stride - 1) // stride
    hi = j1
    if (hi - 1) * stride + offset >= width:
        hi = (width - 1 - offset) // stride + 1 if width - 1 - offset >= 0 else 0
    return lo, max(lo, hi)


@njit(cache=True)
def _row_blocks(source, weights, target, geometry, n, i, c_lo, blocks, col_lo, col_hi,
                scale, shift, floor, rest, vflat, rflat):
    """Output row ``(n, i)``, the ``blocks`` whole channel blocks from ``c_lo``, epilogue
    included. Nothing inside the loops calls a function that takes arrays (each such call
    would cost atomic reference-count updates)."""
    height, width, channels, oh, ow, kh, kw, sh, sw, dh, dw, top, left = geometry
    c = channels
    y0 = i * sh - top
    out_row = (n * oh + i) * ow * c
    row_bits = inside_bits(y0, dh, kh, height)
    if kh == 3 and kw == 3 and row_bits:
        # Every pixel through row_dot: the interior columns as one run, the border
        # columns one by one, with the taps outside the image masked off (and their
        # offsets replaced by inside ones).
        plane = n * height
        l0 = (plane + y0 + inside_index(row_bits, 0) * dh) * width * c + c_lo
        l1 = (plane + y0 + inside_index(row_bits, 1) * dh) * width * c + c_lo
        l2 = (plane + y0 + inside_index(row_bits, 2) * dh) * width * c + c_lo
        interior = col_lo < col_hi
        j = 0
        while j < ow:
            count = 1
            if interior and j == col_lo:
                count = col_hi - col_lo
            x0 = j * sw - left
            col_bits = inside_bits(x0, dw, 3, width)
            at = out_row + j * c + c_lo
            if col_bits == 0:
                for q in range(blocks):
                    row_fill(target, at + q * LANES, c, 0.0, count)
                    row_affine(target, at + q * LANES, c, scale, shift, c_lo + q * LANES,
                               floor, count)
                j += count
                continue
            mask = tap_mask(row_bits, col_bits, 3, 3)
            e0 = (x0 + inside_index(col_bits, 0) * dw) * c
            e1 = (x0 + inside_index(col_bits, 1) * dw) * c
            e2 = (x0 + inside_index(col_bits, 2) * dw) * c
            carried = carried_columns(sw, dw) if mask == 511 and count > 1 else 0
            for q in range(blocks):
                s = q * LANES
                w0 = c_lo + s
                taps = (l0 + e0 + s, l0 + e1 + s, l0 + e2 + s, l1 + e0 + s, l1 + e1 + s,
                        l1 + e2 + s, l2 + e0 + s, l2 + e1 + s, l2 + e2 + s)
                taps_w = (w0, w0 + c, w0 + 2 * c, w0 + 3 * c, w0 + 4 * c, w0 + 5 * c,
                          w0 + 6 * c, w0 + 7 * c, w0 + 8 * c)
                if carried:
                    row_dot3x3(target, at + s, c, source, taps, sw * c, weights, taps_w,
                               count, scale, shift, w0, floor, carried)
                else:
                    row_dot(target, at + s, c, source, taps, sw * c, weights, taps_w,
                            count, scale, shift, w0, floor, mask)
            j += count
    else:
        # Other windows: tap by tap over the columns where the tap is inside the image.
        at = out_row + c_lo
        for q in range(blocks):
            row_fill(target, at + q * LANES, c, 0.0, ow)
        for b in range(kh):
            y = y0 + b * dh
            if y < 0 or y >= height:
                continue
            for e in range(kw):
                offset = e * dw - left
                lo, hi = _tap_columns(0, ow, sw, offset, width)
                if lo == hi:
                    continue
                start = ((n * height + y) * width + lo * sw + offset) * c + c_lo
                tap = (b * kw + e) * c + c_lo
                into = out_row + lo * c + c_lo
                for q in range(blocks):
                    row_fma(target, into + q * LANES, c, source, start + q * LANES, sw * c,
                            weights, tap + q * LANES, hi - lo)
        for q in range(blocks):
            row_affine(target, at + q * LANES, c, scale, shift, c_lo + q * LANES, floor, ow)
    for s in range(rest.shape[0]):
        kind = rest[s]
        for q in range(blocks):
            ch = c_lo + q * LANES
            if kind == ADD:
                row_add_into(target, out_row + ch, c, vflat, s * c + ch, 0, ow)
            elif kind == MUL:
                row_mul_into(target, out_row + ch, c, vflat, s * c + ch, 0, ow)
            elif kind == RESIDUAL:
                row_add_into(target, out_row + ch, c, rflat, out_row + ch, c, ow)
            else:
                row_affine(target, out_row + ch, c, scale, shift, ch, 0.0, ow)


@njit(cache=True)
def _row_scalar(source, weights, target, geometry, n, i, c_lo, c_hi, scale, shift, floor,
                rest, vflat, rflat):
    """Output row ``(n, i)``, channels ``c_lo:c_hi`` (fewer than a block), element by
    element."""
    height, width, channels, oh, ow, kh, kw, sh, sw, dh, dw, top, left = geometry
    zero = target.dtype.type(0)
    for j in range(ow):
        at = ((n * oh + i) * ow + j) * channels
        for c in range(c_lo, c_hi):
            total = zero
            for b in range(kh):
                y = i * sh - top + b * dh
                if y < 0 or y >= height:
                    continue
                for e in range(kw):
                    xx = j * sw - left + e * dw
                    if 0 <= xx < width:
                        total += (weights[(b * kw + e) * channels + c]
                                  * source[((n * height + y) * width + xx) * channels + c])
            value = total * scale[c] + shift[c]
            target[at + c] = floor if value < floor else value
            for s in range(rest.shape[0]):
                kind = rest[s]
                if kind == ADD:
                    target[at + c] += vflat[s * channels + c]
                elif kind == MUL:
                    target[at + c] *= vflat[s * channels + c]
                elif kind == RESIDUAL:
                    target[at + c] += rflat[at + c]
                elif target[at + c] < zero:
                    target[at + c] = zero


def plane_shape(geometry) -> tuple:
    """``(rows, columns)`` of the zero-padded plane the planes strategy copies a channel
    block into: exactly the input rows/columns (padding included) the outputs read.

    Args:
        geometry: ``(H, W, C, OH, OW, KH, KW, sh, sw, dh, dw, top, left)``.
    """
    height, width, channels, oh, ow, kh, kw, sh, sw, dh, dw, top, left = geometry
    return (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1


@njit(cache=True)
def _plane_group(source, weights, target, geometry, planes, n, first_block, count, scale,
                 shift, floor, rest, vflat, rflat):
    """One planes task: channel blocks ``first_block:first_block + count`` of image ``n``
    copied into as many zero-padded planes (one pass over the input pixels, ``count * 16``
    contiguous channels each; the planes' padding is already zero), then every output row
    of each plane as one run."""
    height, width, channels, oh, ow, kh, kw, sh, sw, dh, dw, top, left = geometry
    c = channels
    span_h = (oh - 1) * sh + (kh - 1) * dh + 1
    span_w = (ow - 1) * sw + (kw - 1) * dw + 1
    rows = max(min(height, span_h - top), 0)
    cols = max(min(width, span_w - left), 0)
    line = span_w * LANES
    size = span_h * line
    for y in range(rows):
        into = ((y + top) * span_w + left) * LANES
        start = ((n * height + y) * width) * c + first_block * LANES
        for xx in range(cols):
            row_copy(planes, into + xx * LANES, size, source, start + xx * c, LANES, count)
    e1, e2 = dw * LANES, 2 * dw * LANES
    carried = carried_columns(sw, dw) if ow > 1 else 0
    for g in range(count):
        ch = (first_block + g) * LANES
        base = g * size
        for i in range(oh):
            out_at = (n * oh + i) * ow * c + ch
            r0 = base + i * sh * line
            if kh == 3 and kw == 3:
                r1, r2 = r0 + dh * line, r0 + 2 * dh * line
                taps = (r0, r0 + e1, r0 + e2, r1, r1 + e1, r1 + e2, r2, r2 + e1, r2 + e2)
                taps_w = (ch, c + ch, 2 * c + ch, 3 * c + ch, 4 * c + ch, 5 * c + ch,
                          6 * c + ch, 7 * c + ch, 8 * c + ch)
                if carried:
                    row_dot3x3(target, out_at, c, planes, taps, sw * LANES, weights, taps_w,
                               ow, scale, shift, ch, floor, carried)
                else:
                    row_dot(target, out_at, c, planes, taps, sw * LANES, weights, taps_w, ow,
                            scale, shift, ch, floor, 511)
            else:
                row_fill(target, out_at, c, 0.0, ow)
                for b in range(kh):
                    for e in range(kw):
                        row_fma(target, out_at, c, planes,
                                r0 + b * dh * line + e * dw * LANES, sw * LANES, weights,
                                (b * kw + e) * c + ch, ow)
                row_affine(target, out_at, c, scale, shift, ch, floor, ow)
            for s in range(rest.shape[0]):
                kind = rest[s]
                if kind == ADD:
                    row_add_into(target, out_at, c, vflat, s * c + ch, 0, ow)
                elif kind == MUL:
                    row_mul_into(target, out_at, c, vflat, s * c + ch, 0, ow)
                elif kind == RESIDUAL:
                    row_add_into(target, out_at, c, rflat, out_at, c, ow)
                else:
                    row_affine(target, out_at, c, scale, shift, ch, 0.0, ow)


@njit(cache=True)
def _run(x, w, out, kinds, vectors, residual, params, first, last, split, planes):
    """Tasks ``first:last`` of the chosen strategy (``split``: the rows strategy's channel
    chunks, or the planes strategy's blocks per task); ``params`` is ``(sh, sw, dh, dw,
    top, left)``."""
    batch, height, width, channels = x.shape
    kh, kw = w.shape[0], w.shape[1]
    oh, ow = out.shape[1], out.shape[2]
    sh, sw, dh, dw, top, left = params
    geometry = (height, width, channels, oh, ow, kh, kw, sh, sw, dh, dw, top, left)
    scale, shift, floor, rest = _compose(kinds, vectors, channels)
    source, target = x.reshape(-1), out.reshape(-1)
    weights, vflat, rflat = w.reshape(-1), vectors.reshape(-1), residual.reshape(-1)
    blocks = channels // LANES
    if planes:
        # Tasks (n, group of `split` blocks), then one per output row for the channels
        # past the whole blocks. The planes' padding is zeroed once per call.
        groups = (blocks + split - 1) // split
        span_h = (oh - 1) * sh + (kh - 1) * dh + 1
        span_w = (ow - 1) * sw + (kw - 1) * dw + 1
        planes_ = _aligned_zeros(split * span_h * span_w * LANES, target)
        for task in range(first, last):
            if task < batch * groups:
                first_block = task % groups * split
                _plane_group(source, weights, target, geometry, planes_, task // groups,
                             first_block, min(split, blocks - first_block), scale, shift,
                             floor, rest, vflat, rflat)
            else:
                row = task - batch * groups
                _row_scalar(source, weights, target, geometry, row // oh, row % oh,
                            blocks * LANES, channels, scale, shift, floor, rest, vflat,
                            rflat)
        return
    # Tasks (n, output row, channel chunk), the chunk fastest (`split` chunks).
    col_lo = min(ow, (left + sw - 1) // sw)
    last_start = width - 1 - (kw - 1) * dw + left
    col_hi = max(col_lo, min(ow, last_start // sw + 1 if last_start >= 0 else 0))
    for task in range(first, last):
        chunk = task % split
        n = task // split // oh
        i = task // split % oh
        c_lo = chunk * blocks // split * LANES
        c_hi = channels if chunk == split - 1 else (chunk + 1) * blocks // split * LANES
        whole = (c_hi - c_lo) // LANES
        _row_blocks(source, weights, target, geometry, n, i, c_lo, whole, col_lo, col_hi,
                    scale, shift, floor, rest, vflat, rflat)
        if c_lo + whole * LANES < c_hi:
            _row_scalar(source, weights, target, geometry, n, i, c_lo + whole * LANES, c_hi,
                        scale, shift, floor, rest, vflat, rflat)


@njit(cache=True, parallel=True)
def _parallel(x, w, out, kinds, vectors, residual, params, tasks, split, planes, pieces):
    """The tasks cut into ``pieces`` contiguous ranges, one ``prange`` iteration each."""
    for piece in prange(pieces):
        _run(x, w, out, kinds, vectors, residual, params, piece * tasks // pieces,
             (piece + 1) * tasks // pieces, split, planes)


def _split(batch, channels, oh, plane_bytes, planes):
    """``(split, tasks)``: the planes strategy's blocks per task (as many planes as fit in
    :data:`PLANE_GROUP_BYTES`, at most :data:`PLANE_GROUP`) and its task count (the
    channels past the whole blocks add one task per output row), or the rows strategy's
    channel chunks and task count."""
    blocks = channels // LANES
    if planes:
        split = max(1, min(PLANE_GROUP, blocks, PLANE_GROUP_BYTES // max(plane_bytes, 1)))
        tasks = batch * (-(-blocks // split)) + (batch * oh if channels % LANES else 0)
        return split, tasks
    split = channel_chunks(batch * oh, channels)
    return split, batch * oh * split


def use_planes(geometry, itemsize: int) -> bool:
    """The cost rule between the two strategies: planes for stride-1 layers whose channel
    block's padded plane (:func:`plane_shape`) fits in :data:`PLANE_MAX_BYTES`, with at
    least one whole channel block; rows otherwise (measured on MobileNet's layers: planes
    win 1.4-1.7x on 14x14x512 and 7x7x1024, whose rows of 2-4 KiB pixels make the nine
    taps of a block share L1 sets; rows win by up to 1.5x on the large and strided ones,
    where a plane would be one more pass over the input).

    Args:
        geometry: ``(H, W, C, OH, OW, KH, KW, sh, sw, dh, dw, top, left)``.
        itemsize: bytes per element.
    """
    span_h, span_w = plane_shape(geometry)
    return (geometry[2] >= LANES and geometry[7] == 1 and geometry[8] == 1
            and span_h * span_w * LANES * itemsize <= PLANE_MAX_BYTES)


def depthwise_nhwc_blocked(x, w, out, strides, dilation, pads, kinds, vectors, residual,
                           threads=None, planes=None):
    """Channels-last depthwise convolution with multiplier 1 and a fused epilogue.

    Args:
        x: C-contiguous ``(N, H, W, C)``; w: C-contiguous ``(KH, KW, C)``;
        out: C-contiguous ``(N, OH, OW, C)``, overwritten; all three of one float dtype.
        strides, dilation, pads: pairs (pads are top, left; the bottom/right padding is
            implied by ``out``'s shape).
        kinds, vectors, residual: the epilogue's steps (``kinds`` empty: none), their
            ``(S, C)`` per-channel operands (C-contiguous, ``out``'s dtype; any shape when
            ``kinds`` is empty), and the residual shaped like ``out`` when a step reads it
            (else any small placeholder).
        threads: the parallel pieces to cut the work into (default: numba's thread
            count); 1 runs on the calling thread.
        planes: the strategy (True: planes, False: rows); default :data:`ENV_STRATEGY`
            (read when this module is imported), else :func:`use_planes`. Planes need at
            least one whole channel block.
    """
    params, planes, split, tasks, serial = layer_plan(
        x.shape, w.shape, out.shape, out.itemsize, strides, dilation, pads, planes)
    threads = 1 if serial else get_num_threads() if threads is None else threads
    run_planned(x, w, out, kinds, vectors, residual, params, tasks, split, planes, threads)


def layer_plan(x_shape, w_shape, out_shape, itemsize, strides, dilation, pads,
               planes=None) -> tuple:
    """:func:`_plan`'s ``(params, planes, split, tasks, serial)``, memoised; the arguments
    are those of :func:`depthwise_nhwc_blocked` (shapes, pairs; ``planes`` None: the rule)."""
    key = (x_shape, w_shape, out_shape, itemsize, tuple(strides), tuple(dilation),
           tuple(pads), planes)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _plan(x_shape, w_shape, out_shape, itemsize, strides, dilation, pads, planes)
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        _PLANS[key] = plan
    return plan


def run_planned(x, w, out, kinds, vectors, residual, params, tasks, split, planes,
                threads) -> None:
    """Run a planned layer (:func:`layer_plan`) on ``threads`` pieces (1: serial). Two
    compiled drivers, chosen here: one calling both would compile the kernel once more."""
    if threads <= 1:
        _run(x, w, out, kinds, vectors, residual, params, 0, tasks, split, planes)
    else:
        _parallel(x, w, out, kinds, vectors, residual, params, tasks, split, planes,
                  min(tasks, int(threads)))


_PLANS: dict = {}
"""A layer's shapes and attributes -> :func:`_plan`'s result (inside a graph, working it out
at every call cost ~8 us of Python, as much as a 14x14x512 layer's kernel takes)."""

_PLANS_MAX = 512
"""Entries :data:`_PLANS` holds before it is emptied."""


def _plan(x_shape, w_shape, out_shape, itemsize, strides, dilation, pads, planes) -> tuple:
    """``(params, planes, split, tasks, serial)`` of a layer (see
    :func:`depthwise_nhwc_blocked`): the kernel's ``(sh, sw, dh, dw, top, left)``, the
    strategy, its split and task count, and whether it runs on the calling thread."""
    params = (int(strides[0]), int(strides[1]), int(dilation[0]), int(dilation[1]),
              int(pads[0]), int(pads[1]))
    batch, channels = x_shape[0], x_shape[3]
    geometry = (x_shape[1], x_shape[2], channels, out_shape[1], out_shape[2], w_shape[0],
                w_shape[1]) + params
    if planes is None:
        planes = _FORCED
        if planes is None:
            planes = use_planes(geometry, itemsize)
    planes = bool(planes) and channels >= LANES
    span_h, span_w = plane_shape(geometry)
    split, tasks = _split(batch, channels, out_shape[1], span_h * span_w * LANES * itemsize,
                          planes)
    work = math.prod(out_shape) * w_shape[0] * w_shape[1]
    return params, planes, split, tasks, work < SERIAL_MAX_WORK or tasks < 2


_FORCED = {"rows": False, "planes": True}.get(os.environ.get(ENV_STRATEGY, "").strip().lower())
