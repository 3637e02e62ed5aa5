"""Channels-last max/avg pooling (``(N, D, H, W, C)``) near memory speed, destination-passing.

Strategy (issue #17: the NHWC max pools of SqueezeNet, ResNet, DenseNet and Inception ran at
1.4-3x, the stride-1 average pools of Inception at 4-5x, the time of a copy of their bytes):

* **Vector blocks, pixel by pixel.** Channels go in blocks of 16
  (:data:`~jitkernels.cpu.simd.LANES`). A 2x2 or 3x3 window (one depth tap) is reduced in
  registers by :func:`pixels_max` / :func:`pixels_sum` over a run of output pixels and, for
  each pixel, all of the task's channel blocks: per pixel and block one vector load per tap
  and one store, the input read in address order (each tap row is one forward stream). A
  tap outside the image is masked (average: it counts as zero) or replaced by an inside tap
  of the same window (max: the result is unchanged), so no element is bounds-checked. One
  task is ``(n, output depth, output row, channel chunk)``; a row's interior pixels (whole
  window inside the image) are one run, each border pixel a run of one.
* The previous form ran each channel block along the whole output row before the next
  block: with 64-256 channels a stride-2 row then read one 64-byte line in every 8-32 per
  step, a stream the hardware prefetchers do not follow across 4 KiB pages, and each line
  was fetched from L3 or memory on demand. Measured (median CPU µs, one thread, the kernel
  alone on a hot 112x112x64 input: 116 -> 78; SqueezeNet 1.1's three max pools 3x3/2
  inside its graph, interleaved with the old kernel, together with the cached window of
  :mod:`jitkernels.cpu.pool`: 112x112x64 206 -> 111, 55x55x128 90 -> 52, 27x27x256 61 ->
  35; see docs/kernels.md).
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
from llvmlite import ir
from numba import get_num_threads, njit, prange
from numba.core import cgutils, types
from numba.extending import intrinsic

from .simd import LANES, _Emitter, _flat, _ints, _numbers, _taps, row_add_into, row_fill, \
    row_max_into, row_scale
from .window_taps import inside_bits, inside_index, tap_mask

__all__ = ["pool_ndhwc_blocked", "run_window", "window_tuple", "task_split", "axis_counts",
           "pixels_max", "pixels_sum",
           "SERIAL_MAX_WORK", "MIN_TASKS"]

SERIAL_MAX_WORK = 1 << 16
"""Window reads (output elements x window taps) below which the pool runs on the calling
thread (no parallel launch or closing barrier)."""

MIN_TASKS = 16
"""Fewest tasks the channel chunking aims for (several per thread, for balance)."""


def _pixels(kind: str, doc: str):
    """The intrinsic ``pixels_<kind>(out, at, out_step, x, x_offsets, step, count, blocks,
    factor, mask)``: for ``p < count`` and ``b < blocks``, the output block at ``at +
    p*out_step + b*LANES`` reduces the input blocks at ``x_offsets[t] + p*step + b*LANES``
    (``kind`` ``"max"``: the lane-wise max, a NaN never winning; ``"sum"``: ``factor`` times
    the sum of the taps whose bit is set in ``mask``, the others counting as zeros)."""
    def typer(typingctx, out, at, out_step, x, x_offsets, step, count, blocks, factor, mask):
        if not (_flat(out, x) and _ints(at, out_step, step, count, blocks, mask)
                and _taps(x_offsets) and _numbers(factor)):
            return None

        def codegen(context, builder, signature, args):
            e = _Emitter(context, builder, signature, args, out.dtype)
            if kind == "max":
                _pixel_loops(e, lambda values: _max_of(e, values))
                return context.get_dummy_value()
            taps = len(signature.args[4])
            mask = e.intp(9)
            bits = e.tap_bits(mask, taps)
            full = builder.icmp_unsigned("==", mask, ir.Constant(mask.type, (1 << taps) - 1))
            scale, zero = e.splat(e.value(8)), e.constant(0.0)

            def total(values, masked):
                if masked:
                    values = [builder.select(bit, v, zero) for bit, v in zip(bits, values)]
                result = values[0]
                for value in values[1:]:
                    result = builder.fadd(result, value)
                return builder.fmul(result, scale)
            with builder.if_else(full) as (interior, border):
                with interior:
                    _pixel_loops(e, lambda values: total(values, False))
                with border:
                    _pixel_loops(e, lambda values: total(values, True))
            return context.get_dummy_value()
        return types.void(out, at, out_step, x, x_offsets, step, count, blocks, factor,
                          mask), codegen
    typer.__name__ = typer.__qualname__ = "pixels_" + kind
    typer.__doc__ = doc
    return intrinsic(typer)


def _max_of(e, values):
    """The lane-wise max of ``-inf`` and ``values`` in order, a NaN never winning."""
    best = e.constant(float("-inf"))
    for value in values:
        best = e.max_keep(best, value)
    return best


def _pixel_loops(e, reduce):
    """Emit ``for p < count: for b < blocks: out block = reduce(the taps' blocks)`` for the
    arguments of a :func:`_pixels` intrinsic."""
    builder = e.builder
    out_data, x_data, xs = e.data(0), e.data(3), e.offsets(4)
    first, out_step, step = e.intp(1), e.intp(2), e.intp(5)
    lanes = ir.Constant(first.type, LANES)
    with cgutils.for_range(builder, e.intp(6)) as pixel:
        moved = builder.mul(pixel.index, step)
        at = e.moved(first, out_step, pixel.index)
        with cgutils.for_range(builder, e.intp(7)) as block:
            offset = builder.mul(block.index, lanes)
            shift = builder.add(moved, offset)
            values = [e.load(x_data, builder.add(xo, shift)) for xo in xs]
            e.store(reduce(values), out_data, builder.add(at, offset))


pixels_max = _pixels("max", "``out[at + p*out_step + b*LANES:][:LANES]`` = the lane-wise max "
                     "of ``-inf`` and ``x[x_offsets[t] + p*step + b*LANES:][:LANES]`` (a "
                     "NaN never winning) for ``p < count``, ``b < blocks``; ``factor`` and "
                     "``mask`` are ignored (callers repeat an inside tap's offset in an "
                     "outside tap's place).")
pixels_sum = _pixels("sum", "``out[at + p*out_step + b*LANES:][:LANES] = factor * sum_t "
                     "x[x_offsets[t] + p*step + b*LANES:][:LANES]`` over the taps whose bit "
                     "is set in ``mask`` (a masked tap's offset must still be readable), for "
                     "``p < count``, ``b < blocks``.")


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
def _fill_pixels(target, at, c, value, count, blocks):
    """Blocks ``0..blocks`` of ``count`` consecutive output pixels set to ``value``."""
    for p in range(count):
        row_fill(target, at + p * c, LANES, value, blocks)


@njit(cache=True)
def _small_window(source, target, geometry, n, k, i, c_lo, blocks, col_lo, col_hi, counts_h,
                  counts_w, depth_count, is_max):
    """One output row's whole channel blocks for a 2x2 or 3x3 window with one depth tap
    inside the image: the interior pixels as one :func:`pixels_max` / :func:`pixels_sum`
    run, each border pixel as a run of one with the taps outside the image masked (average)
    or replaced by an inside tap (max)."""
    (depth, height, width, channels, od, oh, ow, kd, kh, kw, sd, sh, sw, dd, dh, dw, front,
     top, left) = geometry
    c = channels
    empty = -np.inf if is_max else 0.0
    y0 = i * sh - top
    out_row = ((n * od + k) * oh + i) * ow * c + c_lo
    row_bits = inside_bits(y0, dh, kh, height)
    if row_bits == 0:
        _fill_pixels(target, out_row, c, empty, ow, blocks)
        return
    plane = (n * depth + k * sd - front) * height
    l0 = (plane + y0 + inside_index(row_bits, 0) * dh) * width * c + c_lo
    l1 = (plane + y0 + inside_index(row_bits, 1) * dh) * width * c + c_lo
    l2 = l1
    if kh == 3:
        l2 = (plane + y0 + inside_index(row_bits, 2) * dh) * width * c + c_lo
    step = sw * c
    j = 0
    while j < ow:
        count = col_hi - col_lo if col_lo < col_hi and j == col_lo else 1
        x0 = j * sw - left
        col_bits = inside_bits(x0, dw, kw, width)
        at = out_row + j * c
        if col_bits == 0:
            _fill_pixels(target, at, c, empty, count, blocks)
            j += count
            continue
        mask = tap_mask(row_bits, col_bits, kh, kw)
        factor = 1.0
        if not is_max:
            factor = 1.0 / max(depth_count * counts_h[i] * counts_w[j], 1)
        e0 = (x0 + inside_index(col_bits, 0) * dw) * c
        e1 = (x0 + inside_index(col_bits, 1) * dw) * c
        if kh == 3:
            e2 = (x0 + inside_index(col_bits, 2) * dw) * c
            taps = (l0 + e0, l0 + e1, l0 + e2, l1 + e0, l1 + e1, l1 + e2, l2 + e0, l2 + e1,
                    l2 + e2)
            if is_max:
                pixels_max(target, at, c, source, taps, step, count, blocks, factor, mask)
            else:
                pixels_sum(target, at, c, source, taps, step, count, blocks, factor, mask)
        else:
            pair = (l0 + e0, l0 + e1, l1 + e0, l1 + e1)
            if is_max:
                pixels_max(target, at, c, source, pair, step, count, blocks, factor, mask)
            else:
                pixels_sum(target, at, c, source, pair, step, count, blocks, factor, mask)
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
def _tasks(x, out, window, first, last, chunks, is_max, include_pad):
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
                          counts_h, counts_w, counts_d[k], is_max)
        elif blocks:
            _any_window(source, target, geometry, n, k, i, c_lo, blocks, counts_d, counts_h,
                        counts_w, is_max)
        if c_lo + blocks * LANES < c_hi:
            _scalar_channels(source, target, geometry, n, k, i, c_lo + blocks * LANES,
                             counts_d, counts_h, counts_w, is_max)


@njit(cache=True, parallel=True)
def _parallel(x, out, window, tasks, chunks, is_max, include_pad, pieces):
    """The tasks cut into ``pieces`` contiguous ranges, one ``prange`` iteration each."""
    for piece in prange(pieces):
        _tasks(x, out, window, piece * tasks // pieces, (piece + 1) * tasks // pieces,
               chunks, is_max, include_pad)


def pool_ndhwc_blocked(x, out, pool, strides, dilation, pads, after, is_max, include_pad,
                       threads=None):
    """Max or average pooling of channels-last ``(N, D, H, W, C)`` into ``(N, OD, OH, OW,
    C)`` (both C-contiguous, one float dtype; ``out`` overwritten).

    Args:
        x, out: the input and the output, 5-d.
        pool, strides, dilation, pads, after: 3-tuples (pads/after: the padding before and
            after each spatial axis; ``out``'s shape may reach past ``after`` in ceil mode).
        is_max: max pooling when True, else average.
        include_pad: average over positions inside the explicit padding too.
        threads: the parallel pieces to cut the work into (default: numba's thread
            count); 1 runs on the calling thread.
    """
    run_window(x, out, window_tuple(pool, strides, dilation, pads, after), is_max,
               include_pad, threads)


def window_tuple(pool, strides, dilation, pads, after) -> tuple:
    """The 15 ints :func:`run_window` takes: ``pool + strides + dilation + pads + after``
    (each a 3-tuple, see :func:`pool_ndhwc_blocked`)."""
    return tuple(int(v) for v in (*pool, *strides, *dilation, *pads, *after))


def run_window(x, out, window, is_max, include_pad, threads=None, split=None):
    """:func:`pool_ndhwc_blocked` with the geometry as :func:`window_tuple` made it (callers
    that pool one shape many times keep that tuple and the :func:`task_split`).

    The serial and parallel paths are separate compiled functions called from here (a
    compiled function that called both would compile the kernel's code once more: numba
    re-optimises every callee inside each caller).

    Args:
        x, out: the input and the output, 5-d, C-contiguous.
        window: the 15-tuple of :func:`window_tuple`.
        is_max, include_pad, threads: as for :func:`pool_ndhwc_blocked`.
        split: :func:`task_split` of these shapes, when the caller kept it.
    """
    tasks, chunks, serial = split or task_split(x.shape, out.shape, window)
    if serial:
        threads = 1
    elif threads is None:
        threads = get_num_threads()
    if threads <= 1:
        _tasks(x, out, window, 0, tasks, chunks, bool(is_max), bool(include_pad))
    else:
        _parallel(x, out, window, tasks, chunks, bool(is_max), bool(include_pad),
                  min(tasks, int(threads)))


def task_split(x_shape: tuple, out_shape: tuple, window: tuple) -> tuple:
    """``(tasks, chunks, serial)``: the pool's task count, the channel chunks each output
    row is cut into (enough for :data:`MIN_TASKS` tasks), and whether it runs on the
    calling thread (fewer than :data:`SERIAL_MAX_WORK` window reads, or one task).

    Args:
        x_shape, out_shape: the 5-d input and output shapes.
        window: the 15-tuple of :func:`window_tuple`.
    """
    rows = out_shape[0] * out_shape[1] * out_shape[2]
    chunks = max(1, min(max(1, x_shape[4] // LANES), -(-MIN_TASKS // max(rows, 1))))
    tasks = rows * chunks
    reads = rows * out_shape[3] * out_shape[4] * window[0] * window[1] * window[2]
    return tasks, chunks, reads < SERIAL_MAX_WORK or tasks < 2
