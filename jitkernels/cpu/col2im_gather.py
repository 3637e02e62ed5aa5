"""The gather col2im of the transposed convolution (:mod:`jitkernels.cpu.conv_transpose`).

A transposed convolution's product leaves, for every input pixel ``p``, output channel ``o``
and kernel tap ``(b, e)``, one value that belongs to output pixel ``(i*sh - top + b*dh,
j*sw - left + e*dw)`` (``p = (i, j)``). Instead of scattering those values into a zeroed
output, a *task* here computes one output row of a block of channels: it finds the taps
``b`` that reach the row and, for each tap ``e``, the input columns ``j`` whose value lands
inside it, adds them into an ``(OW, block)`` accumulator, applies the fused epilogue to the
accumulator, and writes the row once (transposed into the NCHW output). Tasks write
disjoint outputs, so they run in any order on any thread.

Where the values lie is given per kernel row ``b`` (the product may have been computed in
bands of kernel rows, each into its own block of the columns buffer): value ``(p, o, b, e)``
is element ``row_base[b] + p*pixel_steps[b] + e*tap_step + o*channel_step`` of ``cols``.
With ``channel_step == 1`` each tap of a pixel is one contiguous run of the block's
channels (vectorised adds); with ``pixel_steps[b] == 1`` (a channel-major product) each
channel's tap is a run along the pixels.

Flat arrays and unsigned indices throughout: numba then emits no negative-index checks and
LLVM vectorises the loops.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange, uint64

from .conv_core import valid_range
from .work_sharing import claim, finish

__all__ = ["row_task", "col2im_serial", "col2im_shared"]


@njit(cache=True)
def row_task(task, cols, out, first_image, channel0, per_group_out, block, geometry,
             row_base, pixel_steps, tap_step, channel_step, kinds, vectors, residual, acc,
             lane):
    """Compute task ``task``: one output row of one block of ``block`` channels of one
    image and group (see the module docstring), written into ``out``.

    Args:
        task: ``(image * blocks + channel block) * OH + row``.
        cols: the product's values (any shape; read flat).
        out: the NCHW output ``(N, O, OH, OW)``, C-contiguous.
        first_image: the output image of the chunk's image 0; channel0: the group's first
            output channel; per_group_out: its channel count; block: channels per task.
        geometry: ``(KH, KW, sh, sw, dh, dw, top, left, H, W)``.
        row_base, pixel_steps: int64 ``(KH,)``; tap_step, channel_step: where the values
            lie (module docstring).
        kinds, vectors, residual: the fused epilogue (:mod:`jitkernels.cpu.epilogue`; the
            residual shaped like ``out``).
        acc, lane: work arrays of ``OW * block`` and ``block`` elements.
    """
    kh, kw, sh, sw, dh, dw, top, left, height, width = geometry
    channels, oh, ow = out.shape[1], out.shape[2], out.shape[3]
    blocks = (per_group_out + block - 1) // block
    y = task % oh
    rest = task // oh
    o0 = (rest % blocks) * block
    image = rest // blocks
    count = uint64(min(block, per_group_out - o0))
    zero = out.dtype.type(0)
    source = cols.reshape(-1)
    span = uint64(ow) * count
    for a in range(span):
        acc[a] = zero
    step = uint64(channel_step)
    for b in range(kh):
        shifted = y + top - b * dh
        if shifted < 0 or shifted % sh != 0:
            continue
        i = shifted // sh
        if i >= height:
            continue
        pixel_step = pixel_steps[b]
        for e in range(kw):
            x_offset = e * dw - left
            lo, hi = valid_range(x_offset, sw, ow, width)
            column0 = row_base[b] + e * tap_step + o0 * channel_step
            pixel0 = (image * height + i) * width
            if channel_step == 1:
                for j in range(lo, hi):
                    into = uint64(j * sw + x_offset) * count
                    start = uint64((pixel0 + j) * pixel_step + column0)
                    for c in range(count):
                        acc[into + c] += source[start + c]
            elif pixel_step == 1:           # channel-major: runs along the pixels
                if hi > lo:
                    stride = uint64(sw) * count
                    for c in range(count):
                        start = uint64(pixel0 + lo + column0) + c * step
                        into = uint64(lo * sw + x_offset) * count + c
                        for j in range(uint64(hi - lo)):
                            acc[into + j * stride] += source[start + j]
            else:
                for j in range(lo, hi):
                    into = uint64(j * sw + x_offset) * count
                    start = uint64((pixel0 + j) * pixel_step + column0)
                    for c in range(count):
                        acc[into + c] += source[start + c * step]
    # the epilogue on the accumulator, along its channels (a residual: per channel row)
    width_out = uint64(ow)
    plane = uint64(oh * ow)
    first = uint64(((first_image + image) * channels + channel0 + o0) * oh * ow + y * ow)
    extra = residual.reshape(-1)
    for s in range(kinds.shape[0]):
        kind = kinds[s]
        if kind == 0 or kind == 1:
            for c in range(count):
                lane[c] = vectors[s, channel0 + o0 + c]
            if kind == 0:
                for xo in range(width_out):
                    for c in range(count):
                        acc[xo * count + c] += lane[c]
            else:
                for xo in range(width_out):
                    for c in range(count):
                        acc[xo * count + c] *= lane[c]
        elif kind == 2:
            for c in range(count):
                for xo in range(width_out):
                    acc[xo * count + c] += extra[first + c * plane + xo]
        else:
            for a in range(span):
                acc[a] = max(acc[a], zero)
    target = out.reshape(-1)
    for c in range(count):
        for xo in range(width_out):
            target[first + c * plane + xo] = acc[xo * count + c]


@njit(cache=True)
def col2im_serial(cols, out, first_image, channel0, per_group_out, block, geometry,
                  row_base, pixel_steps, tap_step, channel_step, kinds, vectors, residual,
                  tasks):
    """:func:`row_task` for tasks ``0..tasks-1`` on the calling thread (arguments as
    there)."""
    acc = np.empty(out.shape[3] * block, out.dtype)
    lane = np.empty(block, out.dtype)
    for task in range(tasks):
        row_task(task, cols, out, first_image, channel0, per_group_out, block, geometry,
                 row_base, pixel_steps, tap_step, channel_step, kinds, vectors, residual,
                 acc, lane)


@njit(cache=True, nogil=True)
def col2im_shared(cols, out, first_image, channel0, per_group_out, block, geometry,
                  row_base, pixel_steps, tap_step, channel_step, kinds, vectors, residual,
                  tasks, chunks, state):
    """:func:`row_task` for tasks ``0..tasks-1`` in ``chunks`` contiguous runs, each claimed
    from the job's counters ``state`` by whichever thread gets it first
    (:mod:`jitkernels.cpu.work_sharing`; consecutive rows share input rows in cache)."""
    acc = np.empty(out.shape[3] * block, out.dtype)
    lane = np.empty(block, out.dtype)
    while True:
        chunk = claim(state, chunks)
        if chunk < 0:
            break
        for task in range(chunk * tasks // chunks, (chunk + 1) * tasks // chunks):
            row_task(task, cols, out, first_image, channel0, per_group_out, block,
                     geometry, row_base, pixel_steps, tap_step, channel_step, kinds,
                     vectors, residual, acc, lane)
        finish(state)


@njit(cache=True, parallel=True, nogil=True)
def col2im_team(cols, out, first_image, channel0, per_group_out, block, geometry, row_base,
                pixel_steps, tap_step, channel_step, kinds, vectors, residual, tasks,
                chunks, state, threads):
    """:func:`col2im_shared` on ``threads`` of numba's workers at once
    (:func:`jitkernels.cpu.work_sharing.share`'s ``team``; compiled and cached once).
    ``geometry`` arrives as an int64 array (a parallel loop takes no tuples) and is made the
    tuple :func:`row_task` unpacks again in each worker."""
    for _ in prange(threads):
        shape = (geometry[0], geometry[1], geometry[2], geometry[3], geometry[4],
                 geometry[5], geometry[6], geometry[7], geometry[8], geometry[9])
        col2im_shared(cols, out, first_image, channel0, per_group_out, block, shape,
                      row_base, pixel_steps, tap_step, channel_step, kinds, vectors,
                      residual, tasks, chunks, state)
