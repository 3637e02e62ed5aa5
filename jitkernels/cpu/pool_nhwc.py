"""Channels-last max/avg pooling (``(N, D, H, W, C)``) near memory speed, destination-passing.

Strategy (issue #17: the NHWC max pools of SqueezeNet, ResNet, DenseNet and Inception ran at
1.4-3x, the stride-1 average pools of Inception at 4-5x, the time of a copy of their bytes):

* **Vector blocks.** Channels go in blocks of 16 (:data:`~jitkernels.cpu.simd.LANES`); a
  2x2 or 3x3 window (one depth tap) is reduced in registers by
  :func:`~jitkernels.cpu.simd.row_max` / :func:`~jitkernels.cpu.simd.row_sum` along a run:
  per pixel and block, one vector load per tap and one store. A tap outside the image is
  masked (average: it counts as zero) or replaced by an inside tap of the same window (max:
  the result is unchanged), so no element is bounds-checked. The old kernel's per-pixel
  channel loops (``for k in range(C)``, max by compare-and-select) were left scalar by LLVM.
* **Two forms** (:func:`use_spans`): *along the row*, one task per ``(n, output depth,
  output row, channel chunk)``, per block the row's interior pixels (whole window inside the
  image) as one run and the border pixels as runs of one; *along the channels*, one task per
  output row, per pixel one run over its channel blocks (rows of few pixels and many
  channels: Inception's 17x17x768 and 8x8x1280).
* **Other windows** (any size, dilation, depth) go tap by tap: each tap is one
  :func:`~jitkernels.cpu.simd.row_max_into` / :func:`~jitkernels.cpu.simd.row_add_into`
  over the run of output pixels whose input column is inside the image.
* **Averages** divide by the number of window positions inside the image (or, with
  ``count_include_pad``, inside the explicitly padded image): the interior run shares one
  factor, border pixels get their own.
* Channels past the last whole block (``C % 16``) take a scalar loop. Layers with fewer than
  :data:`SERIAL_MAX_WORK` window reads run on the calling thread.

Padding (and the extra positions ``ceil_mode`` reaches) never wins a max, and a NaN never
replaces the running max (Relay's rule, as the reference).
"""

from __future__ import annotations

import numpy as np
from numba import get_num_threads, njit, prange

from .simd import LANES, row_add_into, row_fill, row_max, row_max_into, row_scale, row_sum
from .window_taps import inside_bits, inside_index, tap_mask

__all__ = ["pool_ndhwc_blocked", "axis_counts", "use_spans", "SERIAL_MAX_WORK",
           "SPAN_MIN_RATIO", "MIN_TASKS"]

SERIAL_MAX_WORK = 1 << 16
"""Window reads (output elements x window taps) below which the pool runs on the calling
thread (no parallel launch or closing barrier)."""

SPAN_MIN_RATIO = 1.0
"""See :func:`use_spans`."""

MIN_TASKS = 16
"""Fewest tasks the channel chunking aims for (several per thread, for balance)."""


@njit(cache=True, inline="always")
def axis_counts(out_len, stride, dilation, pad, after, size, pool, include_pad):
    """Per output index along one axis: how many window taps count towards an average
    (those inside ``[0, size)``, or ``[-pad, size + after)`` with ``include_pad``)."""
    low, high = 0, size
    if include_pad:
        low, high = -pad, size + after
    counts = np.empty(out_len, np.int64)
    for index in range(out_len):
        count = 0
        for a in range(pool):
            z = index * stride - pad + a * dilation
            if low <= z < high:
                count += 1
        counts[index] = count
    return counts


@njit(cache=True, inline="always")
def _tap_columns(count, stride, offset, width):
    """The output columns ``[lo, hi)`` within ``[0, count)`` whose input column
    ``j*stride + offset`` lies in ``[0, width)``."""
    lo = 0
    if offset < 0:
        lo = (-offset + stride - 1) // stride
    hi = count
    if (hi - 1) * stride + offset >= width:
        hi = (width - 1 - offset) // stride + 1 if width - 1 - offset >= 0 else 0
    return min(lo, count), max(min(lo, count), hi)


@njit(cache=True)
def _small_window(source, target, geometry, n, k, i, c_lo, blocks, col_lo, col_hi, counts_h,
                  counts_w, depth_count, is_max, spans):
    """One output row's whole channel blocks for a 2x2 or 3x3 window with one depth tap
    inside the image, the taps outside the image masked (average) or replaced by an inside
    tap (max). Along the row (``spans`` False): per block, the interior pixels as one run,
    the border ones one by one. Along the channels (``spans`` True): per pixel, one run
    over its blocks."""
    (depth, height, width, channels, od, oh, ow, kd, kh, kw, sd, sh, sw, dd, dh, dw, front,
     top, left) = geometry
    c = channels
    y0 = i * sh - top
    out_row = ((n * od + k) * oh + i) * ow * c + c_lo
    row_bits = inside_bits(y0, dh, kh, height)
    if row_bits == 0:
        for q in range(blocks):
            row_fill(target, out_row + q * LANES, c, -np.inf if is_max else 0.0, ow)
        return
    plane = (n * depth + k * sd - front) * height
    l0 = (plane + y0 + inside_index(row_bits, 0) * dh) * width * c + c_lo
    l1 = (plane + y0 + inside_index(row_bits, 1) * dh) * width * c + c_lo
    l2 = l1
    if kh == 3:
        l2 = (plane + y0 + inside_index(row_bits, 2) * dh) * width * c + c_lo
    # A run's output and input steps, its blocks' offsets, and calls per pixel group.
    out_step, step, stride, calls = c, sw * c, LANES, blocks
    if spans:
        out_step, step, stride, calls = LANES, LANES, 0, 1
    j = 0
    while j < ow:
        count = 1
        if col_lo < col_hi and j == col_lo and not spans:
            count = col_hi - col_lo
        runs = blocks if spans else count
        x0 = j * sw - left
        col_bits = inside_bits(x0, dw, kw, width)
        at = out_row + j * c
        factor = 1.0
        if not is_max:
            factor = 1.0 / max(depth_count * counts_h[i] * counts_w[j], 1)
        if col_bits == 0:
            for q in range(calls):
                row_fill(target, at + q * stride, out_step, -np.inf if is_max else 0.0, runs)
            j += count
            continue
        mask = tap_mask(row_bits, col_bits, kh, kw)
        e0 = (x0 + inside_index(col_bits, 0) * dw) * c
        e1 = (x0 + inside_index(col_bits, 1) * dw) * c
        e2 = e1
        if kw == 3:
            e2 = (x0 + inside_index(col_bits, 2) * dw) * c
        for q in range(calls):
            s = q * stride
            if kh == 3:
                taps = (l0 + e0 + s, l0 + e1 + s, l0 + e2 + s, l1 + e0 + s, l1 + e1 + s,
                        l1 + e2 + s, l2 + e0 + s, l2 + e1 + s, l2 + e2 + s)
                if is_max:
                    row_max(target, at + s, out_step, source, taps, step, runs)
                else:
                    row_sum(target, at + s, out_step, source, taps, step, runs, factor, mask)
            else:
                pair = (l0 + e0 + s, l0 + e1 + s, l1 + e0 + s, l1 + e1 + s)
                if is_max:
                    row_max(target, at + s, out_step, source, pair, step, runs)
                else:
                    row_sum(target, at + s, out_step, source, pair, step, runs, factor, mask)
        j += count


@njit(cache=True)
def _any_window(source, target, geometry, n, k, i, c_lo, blocks, counts_d, counts_h,
                counts_w, is_max):
    """One output row's whole channel blocks for any window: tap by tap over the runs of
    pixels whose input is inside the image, then the averages' per-pixel factors."""
    (depth, height, width, channels, od, oh, ow, kd, kh, kw, sd, sh, sw, dd, dh, dw, front,
     top, left) = geometry
    c = channels
    out_row = ((n * od + k) * oh + i) * ow * c + c_lo
    start = -np.inf if is_max else 0.0
    for q in range(blocks):
        row_fill(target, out_row + q * LANES, c, start, ow)
    for a in range(kd):
        z = k * sd - front + a * dd
        if z < 0 or z >= depth:
            continue
        for b in range(kh):
            y = i * sh - top + b * dh
            if y < 0 or y >= height:
                continue
            line = ((n * depth + z) * height + y) * width
            for e in range(kw):
                offset = e * dw - left
                lo, hi = _tap_columns(ow, sw, offset, width)
                if lo == hi:
                    continue
                first = (line + lo * sw + offset) * c + c_lo
                into = out_row + lo * c
                for q in range(blocks):
                    s = q * LANES
                    if is_max:
                        row_max_into(target, into + s, c, source, first + s, sw * c, hi - lo)
                    else:
                        row_add_into(target, into + s, c, source, first + s, sw * c, hi - lo)
    if not is_max:
        for j in range(ow):
            factor = 1.0 / max(counts_d[k] * counts_h[i] * counts_w[j], 1)
            for q in range(blocks):
                row_scale(target, out_row + j * c + q * LANES, c, factor, 1)


@njit(cache=True)
def _scalar_channels(source, target, geometry, n, k, i, c_lo, counts_d, counts_h, counts_w,
                     is_max):
    """One output row, channels ``c_lo:C`` (fewer than a block), element by element."""
    (depth, height, width, channels, od, oh, ow, kd, kh, kw, sd, sh, sw, dd, dh, dw, front,
     top, left) = geometry
    for j in range(ow):
        at = (((n * od + k) * oh + i) * ow + j) * channels
        for ch in range(c_lo, channels):
            total = -np.inf if is_max else 0.0
            for a in range(kd):
                z = k * sd - front + a * dd
                if z < 0 or z >= depth:
                    continue
                for b in range(kh):
                    y = i * sh - top + b * dh
                    if y < 0 or y >= height:
                        continue
                    for e in range(kw):
                        xx = j * sw - left + e * dw
                        if 0 <= xx < width:
                            value = source[(((n * depth + z) * height + y) * width + xx)
                                           * channels + ch]
                            if is_max:
                                if value > total:
                                    total = value
                            else:
                                total += value
            if not is_max:
                total /= max(counts_d[k] * counts_h[i] * counts_w[j], 1)
            target[at + ch] = total


@njit(cache=True)
def _tasks(x, out, window, first, last, chunks, is_max, include_pad, spans):
    """Tasks ``first:last`` of the pool: ``(n, output depth, output row, channel chunk)``,
    the chunk fastest. ``window`` is ``(kd, kh, kw, sd, sh, sw, dd, dh, dw, front, top,
    left, back, bottom, right)``."""
    batch, depth, height, width, channels = x.shape
    od, oh, ow = out.shape[1], out.shape[2], out.shape[3]
    kd, kh, kw, sd, sh, sw, dd, dh, dw, front, top, left, back, bottom, right = window
    geometry = (depth, height, width, channels, od, oh, ow, kd, kh, kw, sd, sh, sw, dd, dh,
                dw, front, top, left)
    counts_d = axis_counts(od, sd, dd, front, back, depth, kd, include_pad)
    counts_h = axis_counts(oh, sh, dh, top, bottom, height, kh, include_pad)
    counts_w = axis_counts(ow, sw, dw, left, right, width, kw, include_pad)
    source, target = x.reshape(-1), out.reshape(-1)
    all_blocks = channels // LANES
    col_lo = min(ow, (left + sw - 1) // sw)
    last_start = width - 1 - (kw - 1) * dw + left
    col_hi = max(col_lo, min(ow, last_start // sw + 1 if last_start >= 0 else 0))
    small = kd == 1 and ((kh == 3 and kw == 3) or (kh == 2 and kw == 2))
    for task in range(first, last):
        chunk = task % chunks
        row = task // chunks
        n = row // (od * oh)
        k = row // oh % od
        i = row % oh
        c_lo = chunk * all_blocks // chunks * LANES
        c_hi = channels if chunk == chunks - 1 else (chunk + 1) * all_blocks // chunks * LANES
        blocks = (c_hi - c_lo) // LANES
        z = k * sd - front
        if small and 0 <= z < depth:
            _small_window(source, target, geometry, n, k, i, c_lo, blocks, col_lo, col_hi,
                          counts_h, counts_w, counts_d[k], is_max, spans)
        elif blocks:
            _any_window(source, target, geometry, n, k, i, c_lo, blocks, counts_d, counts_h,
                        counts_w, is_max)
        if c_lo + blocks * LANES < c_hi:
            _scalar_channels(source, target, geometry, n, k, i, c_lo + blocks * LANES,
                             counts_d, counts_h, counts_w, is_max)


@njit(cache=True, parallel=True)
def _parallel(x, out, window, tasks, chunks, is_max, include_pad, spans, pieces):
    """The tasks cut into ``pieces`` contiguous ranges, one ``prange`` iteration each."""
    for piece in prange(pieces):
        _tasks(x, out, window, piece * tasks // pieces, (piece + 1) * tasks // pieces,
               chunks, is_max, include_pad, spans)


def pool_ndhwc_blocked(x, out, pool, strides, dilation, pads, after, is_max, include_pad,
                       threads=None, spans=None):
    """Max or average pooling of channels-last ``(N, D, H, W, C)`` into ``(N, OD, OH, OW,
    C)`` (both C-contiguous, one float dtype; ``out`` overwritten).

    The serial and parallel paths are separate compiled functions called from here (a
    compiled function that called both would compile the kernel's code once more: numba
    re-optimises every callee inside each caller).

    Args:
        pool, strides, dilation, pads, after: 3-tuples (pads/after: the padding before and
            after each spatial axis; ``out``'s shape may reach past ``after`` in ceil mode).
        is_max: max pooling when True, else average.
        include_pad: average over positions inside the explicit padding too.
        threads: the parallel pieces to cut the work into (default: numba's thread
            count); 1 runs on the calling thread.
        spans: run 2x2/3x3 windows along each pixel's channels (True) or along the output
            row per channel block (False); default :func:`use_spans`.
    """
    window = (int(pool[0]), int(pool[1]), int(pool[2]), int(strides[0]), int(strides[1]),
              int(strides[2]), int(dilation[0]), int(dilation[1]), int(dilation[2]),
              int(pads[0]), int(pads[1]), int(pads[2]), int(after[0]), int(after[1]),
              int(after[2]))
    rows = out.shape[0] * out.shape[1] * out.shape[2]
    if spans is None:
        spans = use_spans(out.shape[3], x.shape[4])
    # Channel chunks only along rows (long runs along the channels keep the prefetchers busy).
    chunks = 1
    if not spans:
        chunks = max(1, min(max(1, x.shape[4] // LANES), -(-MIN_TASKS // max(rows, 1))))
    tasks = rows * chunks
    if out.size * window[0] * window[1] * window[2] < SERIAL_MAX_WORK or tasks < 2:
        threads = 1
    elif threads is None:
        threads = get_num_threads()
    if threads <= 1:
        _tasks(x, out, window, 0, tasks, chunks, bool(is_max), bool(include_pad), bool(spans))
    else:
        _parallel(x, out, window, tasks, chunks, bool(is_max), bool(include_pad),
                  bool(spans), min(tasks, int(threads)))


def use_spans(width: int, channels: int) -> bool:
    """The cost rule between the two forms of a 2x2/3x3 window: along each pixel's channels
    (one task per output row, whole channel vectors) when the channel blocks are at least
    :data:`SPAN_MIN_RATIO` times the output row's pixels, else along the row per block
    (tasks split into channel chunks when there are few rows).

    Args:
        width: output pixels per row ``OW``.
        channels: the channels ``C``.
    """
    return channels // LANES >= SPAN_MIN_RATIO * width
