"""Direct convolution for few input or output channels and strided layers (issue #17, #24).

The first layer of a conv net (1-3 input channels, stride 2, 3x3 or 7x7) and the small
layers of keyword-spotting style models have a tiny GEMM (inner dimension ``KH*KW*C``, or
a handful of output channels): im2col + GEMM spends its time copying columns and in BLAS
calls far from peak, and the layer's Python-side setup costs more than its arithmetic.
This kernel computes such layers directly, for channels-last (NHWC/HWIO) and
channels-first (NCHW/OIHW, a 1-D NCW as height 1) data, with the weight packed per call.
:func:`direct_pays` chooses it where it measured faster: few output channels or a small
layer (the 32-64-channel first layers of the zoo's nets keep im2col + GEMM, which the
direct kernel's output transpose makes it lose by 1.0-1.2x, and layers with many input
channels, whose per-tap GEMMs are efficient).

Strategy:

* **Planes** (:func:`~jitkernels.cpu.direct_planes.arrange`, once per call). The input is rearranged into zero-padded
  *planes*, one per (image, input channel, row phase, column phase): with strides
  ``(sh, sw)``, plane ``(py, px)`` holds padded rows ``py, py + sh, ...`` and in each of
  them padded columns ``px, px + sw, ...``. For tap ``(b, e)`` and channel ``c``, the
  inputs of consecutive output pixels -- and of consecutive output rows, end to end -- are
  then one contiguous run of a plane: no bounds checks, no strided loads, padding handled
  by the zeros (the image is read once, not once per tap).
* **Wide rows** (:func:`conv2d_direct_rows`, one task per ``R`` output rows, tasks split
  into ``prange`` chunks when the layer is large enough, :data:`PARALLEL_MIN_FLOPS`). A
  task computes its ``R`` rows (about :data:`PIXEL_BLOCK` pixels) as one wide row whose
  pixel ``(r, j)`` is at ``r*L + j``, ``L`` the planes' row length (``OW`` plus the few
  junk columns where a window runs off the row's end, computed and dropped).
* **Pixel-vectorised micro-kernel** (:func:`_block`). The wide row is accumulated
  channels-first in a block ``T[o, p]`` (in L1). For four output channels and four taps at
  a time the innermost loop runs over the block's pixels: four contiguous plane loads,
  sixteen multiply-adds with the sixteen weights in registers, four accumulator rows (each
  loaded and stored once per four taps). The loop is long (the wide row, a multiple of
  32), so LLVM vectorises it with little per-loop overhead for any channel count. Taps and
  output channels are padded to multiples of four with a zero plane and zero weights
  (exact: ``0 * 0``).
* **Epilogue and store.** A fused epilogue (:mod:`.epilogue`: bias, batch-norm
  scale/shift, residual, ReLU; channels-last outputs) is applied to the block while it is
  in L1, step by step along the long pixel loop (per-pixel steps over a few channels cost
  as much as the convolution of kws' first layer); then the block is copied into the
  output rows (a transpose for channels-last data).

Accumulation is in the data's dtype, four products at a time (results may differ from a
float64 reference in the last bits). :func:`direct_pays` is the cost rule the conv kernels
use to choose this kernel over im2col + GEMM; ``IRLIB_DIRECT_CONV=0`` turns it off.
"""

from __future__ import annotations

import math
import os

import numpy as np
from numba import get_num_threads, njit, prange, uint64

from .conv_core import scratch
from .direct_planes import arrange, arrange_parallel
from .epilogue import ADD, MUL, RELU, empty
from .weight_cache import WeightCache

__all__ = ["conv2d_direct", "conv2d_direct_rows", "conv2d_direct_parallel", "arrange",
           "arrange_parallel", "plan", "direct_pays", "enabled", "pack_weight",
           "keeps_channels_first", "TINY_LAYER_FLOPS", "LAYOUT_SWITCH",
           "packed_weight", "ENV_SWITCH",
           "PIXEL_BLOCK", "PARALLEL_MIN_FLOPS"]

ENV_SWITCH = "IRLIB_DIRECT_CONV"
"""Environment variable: ``0`` (``off``/``false``/``no``) disables the direct kernel (the
GEMM-based paths run instead); read at each call."""

PIXEL_BLOCK = 512
"""Output pixels per task (its wide row: about this many, whole output rows). Longer
rows amortise each task's set-up and each pixel loop's entry (measured 128 -> 512: kws'
layers 3-5% faster, 16-channel and 3->64 4x4/2 layers 5-20%); the four accumulator rows
a loop updates (8 KB) stay in L1."""

PARALLEL_MIN_FLOPS = 4e6
"""Layers with fewer flops run on the calling thread (a parallel region costs more than
it saves on them)."""

CHUNKS_PER_THREAD = 4
"""Task chunks per thread of the parallel form (for balance under load)."""


def enabled() -> bool:
    """Whether the direct kernel may be chosen (:data:`ENV_SWITCH`)."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "off", "false", "no")


SMALL_OUT_CHANNELS = 16
"""Layers with at most this many output channels always run direct: im2col + GEMM has a
GEMM too narrow for BLAS (measured with a fused bias + ReLU, one thread: 0.55-0.6x the
GEMM paths' time on kws' 1->8 and 8->8 3x3 layers, 0.8-0.95x on 16->16 3x3 layers at
28x28 and 56x56, 0.9x on kws' 160->16 conv1d)."""

MEDIUM_OUT_CHANNELS = 32
"""Layers with at most this many output channels run direct when small
(:data:`MEDIUM_MAX_FLOPS`): 0.84-0.93x on an 8->32 3x3/2 layer at 56x56; MobileNet's
3->32 3x3/2 first layer (22 MFLOP) measured 0.93-1.05x, a draw, and keeps the GEMM."""

MEDIUM_MAX_FLOPS = 8e6
"""Most flops (2 per multiply-add) of a :data:`MEDIUM_OUT_CHANNELS` layer run direct."""

MEDIUM_MAX_INNER = 256
"""Largest inner dimension ``KH*KW*C`` of a :data:`MEDIUM_OUT_CHANNELS` layer run direct:
with many input channels the per-tap GEMMs are efficient and the direct kernel's short
pixel loops are not (DenseNet-121's 128->32 3x3 layers: 1.3-1.5x at 7x7, 1.6x at 14x14)."""

TINY_FLOPS = 1e6
"""Layers with fewer flops (and an inner dimension up to :data:`MEDIUM_MAX_INNER`) run
direct whatever their output channels: the GEMM path's per-call costs (im2col buffers,
BLAS calls, waking its threads) dominate them."""


def direct_pays(channels: int, out_channels: int, kernel, out_positions: int,
                groups: int = 1) -> bool:
    """The cost rule: whether the direct kernel beats im2col + GEMM on this layer.

    Measured on the 2-core AMD EPYC dev machine, one thread, back to back with the GEMM
    paths (docs/kernels.md): the direct kernel runs at 55-80 GFLOP/s on its multiply-adds
    but transposes its output block (channels-last) and rearranges its input; it wins when
    the GEMM is too narrow for BLAS (few output channels) or the layer too small for the
    GEMM path's per-call costs, and loses 1.0-1.2x on the 64-channel first layers of the
    zoo's nets (3x3/2, 4x4/2 and 7x7/2 from 3 channels), which keep im2col + GEMM. Callers
    keep 1x1 stride-1 unpadded convolutions on their plain GEMM (no copy at all: 3x faster
    than the direct kernel even with 8 or 16 output channels).

    Args:
        channels, out_channels: per group (only one group runs direct).
        kernel: the window's extents (a tuple).
        out_positions: output pixels per image times the batch.
        groups: the group count (direct only for 1).
    """
    if groups != 1 or not enabled():
        return False
    inner = channels * math.prod(kernel)
    flops = 2.0 * out_positions * out_channels * inner
    if out_channels <= SMALL_OUT_CHANNELS:
        return True
    return inner <= MEDIUM_MAX_INNER and (
        flops < TINY_FLOPS or (out_channels <= MEDIUM_OUT_CHANNELS
                               and flops <= MEDIUM_MAX_FLOPS))


TINY_LAYER_FLOPS = 4e6
"""Layers below this many flops with at most :data:`SMALL_OUT_CHANNELS` output channels
are *tiny* (:func:`keeps_channels_first`); the direct kernel runs them on one thread."""

LAYOUT_SWITCH = "IRLIB_TINY_CONV_NCHW"
"""Environment variable: ``0`` (``off``/``false``/``no``) lets tiny layers go channels-last
like the others (read when a graph is built)."""


def keeps_channels_first(channels: int, out_channels: int, kernel, strides,
                         out_positions: int, groups: int = 1) -> bool:
    """Whether an NCHW conv2d layer runs faster left channels-first than converted to
    NHWC: a *tiny* layer of a tiny model (keyword spotting's 1->8 and 8->8 3x3 layers),
    at most :data:`SMALL_OUT_CHANNELS` output channels and under :data:`TINY_LAYER_FLOPS`,
    not a 1x1 stride-1 layer (a plain GEMM). The direct kernel computes channels-first
    blocks: a channels-first output is stored by contiguous row copies instead of a
    pixel-by-pixel transpose, and a channels-first input is arranged into its planes from
    contiguous rows instead of a gather across channels (kws' two layers measured 28 + 43
    us channels-last against 17 + 27 channels-first, one thread, plus the two layout
    transforms around them). ``IRLIB_TINY_CONV_NCHW=0`` turns the rule off.

    Args:
        channels, out_channels: per group.
        kernel, strides: the window's extents and strides (tuples).
        out_positions: output pixels per image times the batch.
        groups: the group count (only ungrouped layers).
    """
    if groups != 1 or not enabled() or os.environ.get(LAYOUT_SWITCH, "1").strip().lower() \
            in ("0", "off", "false", "no"):
        return False
    if all(k == 1 for k in kernel) and all(s == 1 for s in strides):
        return False
    flops = 2.0 * out_positions * out_channels * channels * math.prod(kernel)
    return out_channels <= SMALL_OUT_CHANNELS and flops < TINY_LAYER_FLOPS


def pack_weight(w: np.ndarray, channels_first: bool) -> np.ndarray:
    """The weight as the kernel reads it: ``(K + 1, O4)`` with row ``(b*KW + e)*C + c``
    holding the ``O`` output channels of tap ``(b, e)`` and input channel ``c``, zero
    columns up to ``O4`` (``O`` rounded up to a multiple of four) and a zero last row.

    Args:
        w: HWIO ``(KH, KW, C, O)`` (``channels_first`` False) or OIHW ``(O, C, KH, KW)``
            (or OIW ``(O, C, KW)``, a 1-D kernel).
        channels_first: which of the two layouts ``w`` has.
    """
    if channels_first:
        if w.ndim == 3:
            w = w.reshape(w.shape[0], w.shape[1], 1, w.shape[2])
        out_channels, channels, kh, kw = w.shape
        hwio = w.transpose(2, 3, 1, 0)
    else:
        kh, kw, channels, out_channels = w.shape
        hwio = w
    packed = np.empty((kh * kw * channels + 1, -(-out_channels // 4) * 4), w.dtype)
    _pack(hwio, packed)
    return packed


@njit(cache=True)
def _pack(hwio, packed):
    """:func:`pack_weight`'s copy, from an HWIO view (any strides) in one pass."""
    kh, kw, channels, out_channels = hwio.shape
    packed[...] = 0
    for b in range(kh):
        for e in range(kw):
            for c in range(channels):
                row = packed[(b * kw + e) * channels + c]
                for o in range(out_channels):
                    row[o] = hwio[b, e, c, o]


@njit(cache=True, fastmath={"contract"})
def _block(t, planes, offsets, rows, wpack, first, count, taps4, o4):
    """``t[o, j] = sum_m planes[offsets[m] + first + j] * wpack[rows[m], o]`` for
    ``j < count``, ``o < o4``, ``m < taps4`` (multiples of four; flat unsigned indices so
    that LLVM vectorises the pixel loop without negative-index checks)."""
    n = uint64(count)
    zero = t.dtype.type(0)
    for o in range(o4):
        row = t[o]
        for j in range(n):
            row[j] = zero
    for og in range(0, o4, 4):
        # Row views indexed by the loop counter alone: consecutive addresses LLVM can see
        # (a flat index ``base + j`` may wrap around, which stops the vectoriser).
        q0, q1, q2, q3 = t[og], t[og + 1], t[og + 2], t[og + 3]
        for mg in range(0, taps4, 4):
            a0 = planes[offsets[mg] + first:]
            a1 = planes[offsets[mg + 1] + first:]
            a2 = planes[offsets[mg + 2] + first:]
            a3 = planes[offsets[mg + 3] + first:]
            k0, k1, k2, k3 = rows[mg], rows[mg + 1], rows[mg + 2], rows[mg + 3]
            w00, w01, w02, w03 = wpack[k0, og], wpack[k1, og], wpack[k2, og], wpack[k3, og]
            w10, w11, w12, w13 = (wpack[k0, og + 1], wpack[k1, og + 1], wpack[k2, og + 1],
                                  wpack[k3, og + 1])
            w20, w21, w22, w23 = (wpack[k0, og + 2], wpack[k1, og + 2], wpack[k2, og + 2],
                                  wpack[k3, og + 2])
            w30, w31, w32, w33 = (wpack[k0, og + 3], wpack[k1, og + 3], wpack[k2, og + 3],
                                  wpack[k3, og + 3])
            for j in range(n):
                x0, x1, x2, x3 = a0[j], a1[j], a2[j], a3[j]
                q0[j] += w00 * x0 + w01 * x1 + w02 * x2 + w03 * x3
                q1[j] += w10 * x0 + w11 * x1 + w12 * x2 + w13 * x3
                q2[j] += w20 * x0 + w21 * x1 + w22 * x2 + w23 * x3
                q3[j] += w30 * x0 + w31 * x1 + w32 * x2 + w33 * x3


@njit(cache=True, fastmath={"contract"})
def _epilogue(block, kinds, vectors, rflat, base, count, ow, length, osh, osw, osc,
              out_channels):
    """Apply the epilogue's steps, in order, to the channels-first block of one task (its
    ``count`` rows of ``ow`` pixels, ``length`` apart): a per-channel operand is a scalar
    along a long contiguous pixel loop; the residual is read at the output's strides
    (``base`` its task's first element)."""
    zero = block.dtype.type(0)
    span = (count - 1) * length + ow            # junk columns between rows are harmless
    for s in range(kinds.shape[0]):
        kind = kinds[s]
        for o in range(out_channels):
            row = block[o]
            value = vectors[s, o]
            if kind == ADD:
                for p in range(span):
                    row[p] += value
            elif kind == MUL:
                for p in range(span):
                    row[p] *= value
            elif kind == RELU:
                for p in range(span):
                    row[p] = max(row[p], zero)
            else:
                for r in range(count):
                    line = row[r * length:]
                    start = base + r * osh + o * osc
                    for j in range(ow):
                        line[j] += rflat[start + j * osw]


@njit(cache=True)
def conv2d_direct_rows(planes, wpack, out, geometry, layout, first_task, last_task,
                       kinds, vectors, residual):
    """Direct convolution of tasks ``first_task:last_task`` (task ``n*G + g``: output rows
    ``g*R:(g + 1)*R`` of image ``n``, ``R = geometry[14]``) from :func:`arrange`'s planes.

    The ``R`` rows are computed at once as one *wide* row: output pixel ``(r, j)`` is
    position ``r*L + j`` (``L`` = the planes' row length, ``OW`` plus a few junk columns),
    so the pixel loop is long and every tap reads one contiguous run of its plane.

    Args:
        planes: :func:`arrange`'s planes (with at least ``2*R*L + 64`` spare zeros after).
        wpack: :func:`pack_weight`'s ``(K + 1, O4)``.
        out: the output, C-contiguous, written through ``layout``'s last four strides.
        geometry: int64 ``[H, W, C, OH, OW, O, KH, KW, sh, sw, dh, dw, top, left, R, Hq,
            L]``.
        layout: int64 strides in elements ``[x batch, x channel, x row, x column,
            out batch, out channel, out row, out column]``.
        first_task, last_task: the range of tasks.
        kinds, vectors, residual: the fused epilogue (channels-last output only; ``kinds``
            empty: none).
    """
    channels, oh, ow, out_channels = geometry[2], geometry[3], geometry[4], geometry[5]
    kh, kw, sh, sw, dh, dw = geometry[6:12]
    group, rows_q, length = geometry[14], geometry[15], geometry[16]
    osn, osc, osh, osw = layout[4], layout[5], layout[6], layout[7]
    o4 = wpack.shape[1]
    groups = (oh + group - 1) // group
    wide = (group * length + 31) // 32 * 32         # the pixel loop, a multiple of 32
    plane = rows_q * length
    image = channels * sh * sw * plane
    zero_base = out.shape[0] * image
    taps_max = kh * kw * channels + 4
    relative = np.empty(taps_max, np.int64)
    offsets = np.empty(taps_max, np.int64)
    rows = np.empty(taps_max, np.int64)
    # A row pitch off the powers of two, so a column of the block spans many cache sets.
    block = np.empty((o4, wide + 16), planes.dtype)
    of = out.reshape(-1)
    rflat = residual.reshape(-1)
    fused = kinds.shape[0] > 0
    taps = 0
    for b in range(kh):
        for e in range(kw):
            for c in range(channels):
                relative[taps] = ((c * sh + (b * dh) % sh) * sw + (e * dw) % sw) * plane \
                    + ((b * dh) // sh) * length + (e * dw) // sw
                rows[taps] = (b * kw + e) * channels + c
                taps += 1
    real = taps
    while taps % 4:
        rows[taps] = wpack.shape[0] - 1
        taps += 1
    for task in range(first_task, last_task):
        n = task // groups
        i0 = (task % groups) * group
        count = min(group, oh - i0)
        start = n * image + i0 * length
        for m in range(real):
            offsets[m] = relative[m] + start
        for m in range(real, taps):
            offsets[m] = zero_base
        _block(block, planes, offsets, rows, wpack, 0, wide, taps, o4)
        if fused:
            _epilogue(block, kinds, vectors, rflat, n * osn + i0 * osh, count, ow, length,
                      osh, osw, osc, out_channels)
        for r in range(count):
            base = n * osn + (i0 + r) * osh
            first = r * length
            if osc == 1:                # channels-last: a transpose, pixel by pixel
                for j in range(ow):
                    pixel = uint64(base + j * osw)
                    for o in range(out_channels):
                        of[pixel + uint64(o)] = block[o, first + j]
            else:                       # channels-first: rows of contiguous pixels
                for o in range(out_channels):
                    dst = of[base + o * osc:]
                    src = block[o, first:]
                    for j in range(ow):
                        dst[j] = src[j]


@njit(cache=True, parallel=True)
def conv2d_direct_parallel(planes, wpack, out, geometry, layout, chunks, kinds, vectors,
                           residual):
    """:func:`conv2d_direct_rows` over every task, in ``chunks`` ``prange`` tasks."""
    group = geometry[14]
    tasks = out.shape[0] * ((geometry[3] + group - 1) // group)
    for chunk in prange(chunks):
        conv2d_direct_rows(planes, wpack, out, geometry, layout, chunk * tasks // chunks,
                           (chunk + 1) * tasks // chunks, kinds, vectors, residual)


def row_group(out_width: int, plane_len: int, out_rows: int) -> int:
    """Output rows per task: enough for about :data:`PIXEL_BLOCK` wide pixels."""
    del out_width
    return max(1, min(out_rows, -(-PIXEL_BLOCK // max(1, plane_len))))


_PLANS: dict = {}

PLAN_CACHE_SIZE = 256
"""Plans :func:`plan` keeps (a graph calls each layer with the same shapes every run)."""


def plan(x_shape, out_shape, kernel, strides, dilation, pads, channels_last):
    """The int64 ``geometry`` and ``layout`` arrays of :func:`conv2d_direct_rows`, the
    planes' element count and the spare zeros they need after them (cached per
    arguments: treat the arrays as read-only).

    Args: as :func:`conv2d_direct`'s (shapes instead of arrays).
    """
    key = (tuple(x_shape), tuple(out_shape), tuple(kernel), tuple(strides), tuple(dilation),
           tuple(pads), bool(channels_last))
    found = _PLANS.get(key)
    if found is None:
        if len(_PLANS) >= PLAN_CACHE_SIZE:
            _PLANS.clear()
        found = _PLANS[key] = _plan(*key)
    return found


def _plan(x_shape, out_shape, kernel, strides, dilation, pads, channels_last):
    """:func:`plan`, computed."""
    if channels_last:
        batch, height, width, channels = x_shape
        _, oh, ow, out_channels = out_shape
        layout = (height * width * channels, 1, width * channels, channels,
                  oh * ow * out_channels, 1, ow * out_channels, out_channels)
    else:
        batch, channels, height, width = x_shape
        _, out_channels, oh, ow = out_shape
        layout = (channels * height * width, height * width, width, 1,
                  out_channels * oh * ow, oh * ow, ow, 1)
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilation
    length = ((ow - 1) * sw + (kw - 1) * dw) // sw + 1
    group = row_group(ow, length, oh)
    groups = -(-oh // group)
    # rows per phase: the last group's rows (junk included) of the lowest kernel row
    rows_q = groups * group + ((kh - 1) * dh) // sh
    geometry = np.array((height, width, channels, oh, ow, out_channels, kh, kw, sh, sw,
                         dh, dw, pads[0], pads[1], group, rows_q, length), np.int64)
    size = batch * channels * sh * sw * rows_q * length
    spare = 2 * (group * length + 64) + length
    return geometry, np.array(layout, np.int64), size, spare


@njit(cache=True)
def _direct_serial(x, hwio, wpack, packed, planes, out, geometry, layout, kinds, vectors,
                   residual):
    """The whole convolution on the calling thread, in one compiled call (each call into
    numba from Python costs microseconds of argument checks, as much as a small layer's
    arithmetic): pack the weight into ``wpack`` (unless ``packed``), :func:`arrange`,
    :func:`conv2d_direct_rows`."""
    if not packed:
        _pack(hwio, wpack)
    arrange(x, planes, geometry, layout)
    group = geometry[14]
    tasks = out.shape[0] * ((geometry[3] + group - 1) // group)
    conv2d_direct_rows(planes, wpack, out, geometry, layout, 0, tasks, kinds, vectors,
                       residual)


_PACKED = WeightCache()


def packed_weight(w: np.ndarray, channels_first: bool):
    """:func:`pack_weight` of ``w``, cached while ``w`` lives when it is read-only (a built
    graph's bound weights are), else None (the kernel packs it per call)."""
    return _PACKED.get(w, channels_first, lambda weight: pack_weight(weight, channels_first))


def conv2d_direct(x, w, out, kernel, strides, dilation, pads, channels_last,
                  epilogue=None, threads=None, wpack=None) -> None:
    """Direct 2-D convolution (one group) of ``x`` into ``out``.

    Args:
        x: C-contiguous ``(N, H, W, C)`` (``channels_last``) or ``(N, C, H, W)``.
        w: the weight, HWIO ``(KH, KW, C, O)`` (``channels_last``) or OIHW.
        out: C-contiguous ``(N, OH, OW, O)`` or ``(N, O, OH, OW)``, overwritten.
        kernel, strides, dilation: pairs (H, W); pads: (top, left) (the bottom/right
            padding is implied by ``out``'s shape).
        channels_last: the layout of ``x``, ``w`` and ``out``.
        epilogue: a :class:`~jitkernels.cpu.epilogue.Epilogue` (channels-last only; its
            residual shaped like ``out``), or None.
        threads: ``prange`` chunks are ``CHUNKS_PER_THREAD`` times this (default: numba's
            thread count); below :data:`PARALLEL_MIN_FLOPS` everything runs on the caller.
        wpack: ``w`` packed already (:func:`packed_weight`), or None.
    """
    if epilogue is not None and not channels_last:
        raise ValueError("a fused epilogue needs channels-last data")
    if out.size == 0:
        return
    steps = epilogue if epilogue is not None else empty(out.dtype)
    geometry, layout, size, spare = plan(x.shape, out.shape, kernel, strides, dilation,
                                         pads, channels_last)
    planes = scratch("direct_planes", (size + spare,), x.dtype)
    group = int(geometry[14])
    tasks = out.shape[0] * -(-int(geometry[3]) // group)
    flops = 2.0 * out.size * x.shape[3 if channels_last else 1] * kernel[0] * kernel[1]
    if threads is None and flops >= PARALLEL_MIN_FLOPS:
        threads = get_num_threads()
    if flops < PARALLEL_MIN_FLOPS or threads <= 1 or tasks == 1:
        hwio = w if channels_last else w.transpose(2, 3, 1, 0)
        packed = wpack is not None
        if not packed:
            wpack = scratch("direct_weight", (math.prod(hwio.shape[:3]) + 1,
                                              -(-hwio.shape[3] // 4) * 4), w.dtype)
        _direct_serial(x, hwio, wpack, packed, planes, out, geometry, layout, steps.kinds,
                       steps.vectors, steps.residual)
        return
    if wpack is None:
        wpack = pack_weight(w, not channels_last)
    arrange_parallel(x, planes, geometry, layout)
    conv2d_direct_parallel(planes, wpack, out, geometry, layout,
                           min(tasks, threads * CHUNKS_PER_THREAD), steps.kinds,
                           steps.vectors, steps.residual)
