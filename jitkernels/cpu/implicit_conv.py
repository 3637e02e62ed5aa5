"""Implicit-GEMM NHWC convolution on the segmented register-blocked micro-kernel (issue #17).

The layers this module is for are KxK convolutions with few input channels (a conv net's
first layer, 3 -> 32/64 channels, 3x3 to 7x7, stride 2), a mid-sized window over a
moderate channel count (SqueezeNet's 3x3 16 -> 64, Inception's 5x5 48 -> 64), narrow
layers (16 to 48 output channels) and the stride-1 1x1 layers (plain products). im2col +
GEMM spends much of its time copying windows and hands BLAS a GEMM with a short inner
dimension; the per-tap GEMMs read the output once per tap; a GEMM library pads a narrow
output to its own panel width and applies the epilogue in a second pass. Here no column
matrix is built and every output value is written once, finished.

Strategy:

* **One padded copy.** The NHWC image is copied once per call into a zero-padded scratch
  buffer ``(N, Hp, Wp, C)`` (none when the layer has no padding). With dilation 1 along the
  width, the window row ``b`` of output pixel ``(i, j)`` -- ``KW*C`` values -- is then ONE
  contiguous run of padded row ``i*sh + b*dh``, starting at column ``j*sw``.
* **Blocks of output pixels as GEMM rows.** ``R`` consecutive output pixels of one output
  row are ``R`` rows of a GEMM operand, ``sw*C`` elements apart; the HWIO weight, read as
  the ``(KH*KW*C, O)`` matrix it already is, is packed once per constant weight into column
  panels ``(ceil(O / cols), KH*KW*C, cols)`` (zeros past ``O``).
* **Segmented micro-kernel.** :func:`jitkernels.cpu.broadcast_kernel.segmented_micro_kernels`
  runs the block's whole depth as ``KH`` segments of ``KW*C`` steps, the next segment one
  padded row (``dh*Wp*C`` elements) further on; its ``R x cols`` accumulators stay in
  registers across all segments: no im2col, no partial sums in memory. The panel width,
  64, 48, 32 or 16 columns (6, 8, 10 or 14 pixels a block), is the one with the fewest
  vector multiply-adds (:func:`panel_columns`): a 16-, 48- or 80-channel layer computes no
  lanes of zeros, and a 13-pixel row runs as blocks of 10 + 3 (32 columns), not 6 + 6 + 1.
* **One call per row of blocks.** A task's row of pixels goes to one compiled call that
  runs the full blocks and its tail block (a call per block cost 20% of a 16 -> 64 1x1
  layer's time: each passes five arrays and a dozen integers).
* **1x1 layers as one run.** A stride-1 1x1 layer without padding is a product over all
  ``N*H*W`` pixels, ``C`` elements apart: they are read as one run cut into rows of whole
  blocks (at most :data:`FLAT_ROW_BLOCKS`; rows differ by at most one block), so a
  13-pixel output row does not end in a 1-pixel block.
* **Epilogue in registers, then store.** The micro-kernel applies the fused epilogue
  (:mod:`jitkernels.cpu.epilogue`: per-channel add/multiply, residual, ReLU) to its
  accumulators and stores the block's valid columns straight into the output with lane
  masks (a last panel narrower than ``cols``; a tail block of fewer than ``R`` pixels uses
  the kernel with that many rows). Applying it in a pass over a scratch tile cost 10-20%
  of the first layers' time.
* **Task order and threads.** One task is one row of pixels (an output row of one image)
  for one column panel. Tasks run panel by panel when the packed weight is larger than the
  padded input (a panel then stays in L2 across rows), else row by row (the rows' input
  stays in cache across panels). Layers with at least :data:`PARALLEL_MIN_FLOPS` split the
  padded copy and the tasks into chunks that numba's threads claim from a counter
  (:func:`jitkernels.cpu.work_sharing.share`): the same number per thread, at most
  :data:`CHUNKS_PER_THREAD`, each of at least :data:`CHUNK_MIN_FLOPS` (~5 us); a 1x1
  layer's run is cut into a row count that gives every chunk as many rows.

Each output is accumulated in (kernel row, kernel column, channel) order with fused
multiply-adds, so it agrees with a float64 reference to float32 rounding.

Cost rule (:func:`pays`, measured per layer against the other paths with
``benchmarks/implicit_conv_layers.py``; tables in docs/kernels.md): float32, one group,
width dilation 1, at least :data:`MIN_OUT_CHANNELS` output channels, ``KH*KW*C`` at most
:data:`MAX_INNER`, AVX-512 on the CPU; so every stride-1 1x1 layer (0.57-0.96x of the
packed GEMM's or OpenBLAS's time on one core). ``IRLIB_IMPLICIT_CONV=0`` turns it off.
"""

from __future__ import annotations

import functools
import math
import os
from typing import NamedTuple

import numpy as np
from numba import get_num_threads, njit, prange, uint64

from .broadcast_kernel import SEGMENTED_SHAPES, segmented_micro_kernels
from .conv_core import scratch
from .epilogue import RESIDUAL, empty
from .work_sharing import atomic_add, claim, finish, new_state, share
from .weight_cache import WeightCache

__all__ = ["ENV_SWITCH", "MAX_INNER", "MIN_OUT_CHANNELS", "NARROWER_MARGIN",
           "PARALLEL_MIN_FLOPS", "available",
           "conv2d_nhwc", "enabled", "pack", "packed_weight", "panel_columns", "pays"]

ENV_SWITCH = "IRLIB_IMPLICIT_CONV"
"""Environment variable: ``0`` (``off``/``false``/``no``) keeps every convolution on the
other paths (read at each call)."""

MIN_OUT_CHANNELS = 8
"""Fewest output channels: narrower layers keep the direct kernel (:mod:`.direct_conv`),
which vectorises over pixels. On the 16-column kernel keyword spotting's 1->8 and 8->8 3x3
layers took 0.76-0.84x of its time (one thread; 1.13-1.44x on the 32-column one)."""

MAX_INNER = 4096
"""Largest inner dimension ``KH*KW*C`` the cost rule sends here."""

PARALLEL_MIN_FLOPS = 5e5
"""Layers with fewer flops run on the calling thread. numba's workers spin between regions,
so a region costs a few us: on two threads 14x14 32->128 1x1 (1.6 MFLOP) took 11 us against
18 on one, 10x10 (0.8 MFLOP) 8 against 10; at 7x7 (0.4 MFLOP) 6 either way."""

FLAT_ROW_BLOCKS = 8
"""A stride-1 1x1 layer without padding reads its pixels as one run cut into rows of at
most this many kernel blocks (on SqueezeNet's expansions 8 took 0.97-0.99x of 4's time, 2
1.02-1.07x, 1 1.07-1.21x); 0: one task per output row, as for the other layers."""

CHUNKS_PER_THREAD = 4
"""Task chunks per numba thread at most (for balance when another process holds a core)."""

CHUNK_MIN_FLOPS = 5e5
"""Fewest flops of a task chunk (~5 us on one core), but at least one chunk per thread."""


def enabled() -> bool:
    """Whether the implicit-GEMM kernel may be chosen (:data:`ENV_SWITCH`)."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "off", "false", "no")


_AVX512 = None


def available() -> bool:
    """Whether the CPU has AVX-512 F (the micro-kernel's 16-lane vectors) and the kernel is
    :func:`enabled`."""
    global _AVX512
    if not enabled():
        return False
    if _AVX512 is None:
        try:
            import llvmlite.binding as llvm
            _AVX512 = bool(llvm.get_host_cpu_features().get("avx512f", False))
        except Exception:  # noqa: BLE001 - no feature query: keep the other paths
            _AVX512 = False
    return _AVX512


NARROWER_MARGIN = 0.97
""":func:`panel_columns` takes a narrower width only below this fraction of a wider one's
cost (a panel more is a pass more over the input: 13x13 512 -> 1000 1x1 on 16 columns,
1.6% fewer multiply-adds, ran 4% slower than on 64)."""


def _panel_cost(out_channels: int, row: int, columns: int) -> int:
    """Vector multiply-adds per depth step for ``row`` pixels (0: a long run, whose tail
    does not count) on ``columns``-column panels: padded 16-lane vectors times the rows of
    the blocks the row is cut into, a block of one row costing as much as one of two."""
    vectors = -(-out_channels // columns) * columns // 16
    if row <= 0:
        return vectors
    full, tail = divmod(row, SEGMENTED_SHAPES[columns])
    return vectors * (full * SEGMENTED_SHAPES[columns] + (max(tail, 2) if tail else 0))


def panel_columns(out_channels: int, row: int = 0) -> int:
    """Columns of the weight panels for ``out_channels``: the width of
    :data:`~jitkernels.cpu.broadcast_kernel.SEGMENTED_SHAPES` (64, 48, 32 or 16) with the
    fewest vector multiply-adds (:func:`_panel_cost`: lanes past ``out_channels`` and short
    tail blocks are wasted), the widest of those within :data:`NARROWER_MARGIN`.

    Measured one thread against the time on 64 columns: 28x28 64 -> 80 3x3 0.65x on 16
    columns (5 vectors against 8), 64 -> 200 0.83x (13 against 16), 64 -> 96 0.76-0.78x on
    16/32/48; 13x13 64 -> 256 3x3 0.95x and 7x7 128 -> 128 0.88x on 32 columns (rows of 13
    and 7 pixels: blocks of 10 + 3 and 7 against 6 + 6 + 1 and 6 + 1); equal where the
    blocks fill the rows (14, 27, 28, 55 or 56 pixels).

    Args:
        out_channels: the layer's output channels.
        row: pixels of one task's row (an output row), or 0 for a long run (a 1x1 layer
            read as one run).
    """
    best, best_cost = 0, 0
    for columns in sorted(SEGMENTED_SHAPES, reverse=True):
        cost = _panel_cost(out_channels, row, columns)
        if not best or cost < best_cost * NARROWER_MARGIN:
            best, best_cost = columns, cost
    return best


# -- the micro-kernels -----------------------------------------------------------------------

(_a1, _a2, _a3, _a4, _a5, _a6) = segmented_micro_kernels(64)
(_c1, _c2, _c3, _c4, _c5, _c6, _c7, _c8) = segmented_micro_kernels(48)
(_b1, _b2, _b3, _b4, _b5, _b6, _b7, _b8, _b9, _b10) = segmented_micro_kernels(32)
(_d1, _d2, _d3, _d4, _d5, _d6, _d7, _d8, _d9, _d10, _d11, _d12, _d13,
 _d14) = segmented_micro_kernels(16)


@njit(cache=True, nogil=True)
def _run64(pixels, c, c_off, ldc, width, a, a_off, lda, *rest):
    """``pixels`` consecutive output pixels (``ldc`` apart in ``c``, their rows of the
    operand ``lda`` apart in ``a``) on the 64-column kernels, 6 at a time; ``rest`` as
    :func:`jitkernels.cpu.broadcast_kernel.segmented_micro_kernels` takes it. One call runs
    a whole row of blocks: a call per block cost 20% of a 16 -> 64 1x1 layer's time."""
    full = pixels - pixels % 6
    for p in range(0, full, 6):
        _a6(c, c_off + p * ldc, ldc, width, a, a_off + p * lda, lda, *rest)
    tail = pixels - full
    args = (c, c_off + full * ldc, ldc, width, a, a_off + full * lda, lda) + rest
    if tail == 5:
        _a5(*args)
    elif tail == 4:
        _a4(*args)
    elif tail == 3:
        _a3(*args)
    elif tail == 2:
        _a2(*args)
    elif tail == 1:
        _a1(*args)


@njit(cache=True, nogil=True)
def _run48(pixels, c, c_off, ldc, width, a, a_off, lda, *rest):
    """:func:`_run64` on the 48-column kernels, 8 pixels at a time."""
    full = pixels - pixels % 8
    for p in range(0, full, 8):
        _c8(c, c_off + p * ldc, ldc, width, a, a_off + p * lda, lda, *rest)
    tail = pixels - full
    args = (c, c_off + full * ldc, ldc, width, a, a_off + full * lda, lda) + rest
    if tail == 7:
        _c7(*args)
    elif tail == 6:
        _c6(*args)
    elif tail == 5:
        _c5(*args)
    elif tail == 4:
        _c4(*args)
    elif tail == 3:
        _c3(*args)
    elif tail == 2:
        _c2(*args)
    elif tail == 1:
        _c1(*args)


@njit(cache=True, nogil=True)
def _run32(pixels, c, c_off, ldc, width, a, a_off, lda, *rest):
    """:func:`_run64` on the 32-column kernels, 10 pixels at a time."""
    full = pixels - pixels % 10
    for p in range(0, full, 10):
        _b10(c, c_off + p * ldc, ldc, width, a, a_off + p * lda, lda, *rest)
    tail = pixels - full
    args = (c, c_off + full * ldc, ldc, width, a, a_off + full * lda, lda) + rest
    if tail == 9:
        _b9(*args)
    elif tail == 8:
        _b8(*args)
    elif tail == 7:
        _b7(*args)
    elif tail == 6:
        _b6(*args)
    elif tail == 5:
        _b5(*args)
    elif tail == 4:
        _b4(*args)
    elif tail == 3:
        _b3(*args)
    elif tail == 2:
        _b2(*args)
    elif tail == 1:
        _b1(*args)


@njit(cache=True, nogil=True)
def _run16(pixels, c, c_off, ldc, width, a, a_off, lda, *rest):
    """:func:`_run64` on the 16-column kernels, 14 pixels at a time."""
    full = pixels - pixels % 14
    for p in range(0, full, 14):
        _d14(c, c_off + p * ldc, ldc, width, a, a_off + p * lda, lda, *rest)
    tail = pixels - full
    args = (c, c_off + full * ldc, ldc, width, a, a_off + full * lda, lda) + rest
    if tail >= 7:
        if tail == 13:
            _d13(*args)
        elif tail == 12:
            _d12(*args)
        elif tail == 11:
            _d11(*args)
        elif tail == 10:
            _d10(*args)
        elif tail == 9:
            _d9(*args)
        elif tail == 8:
            _d8(*args)
        else:
            _d7(*args)
    elif tail == 6:
        _d6(*args)
    elif tail == 5:
        _d5(*args)
    elif tail == 4:
        _d4(*args)
    elif tail == 3:
        _d3(*args)
    elif tail == 2:
        _d2(*args)
    elif tail == 1:
        _d1(*args)


# -- the convolution -------------------------------------------------------------------------

@njit(cache=True, nogil=True, inline="always")
def _tasks(padded, bp, out, geometry, first, last, kinds, vectors, residual):
    """Run tasks ``first:last`` of ``rows*panels``, each one output row of one image for one
    column panel: panel-major (``geometry[14]``: task ``t`` is panel ``t // rows``) or
    row-major (panel ``t % panels``).

    ``geometry`` = ``(Hp, Wp, C, OH, OW, O, KH, KW, sh, sw, dh, cols, top, left,
    panel_major, rows, pixels, block, blocks)`` (:func:`_plan`); ``blocks`` is 0, or for a
    1x1 layer read as one run its kernel blocks (row ``r`` holds blocks ``r*blocks//rows``
    up to ``(r+1)*blocks//rows``). Flat arrays. Inlined into :func:`_shared`, as
    :func:`_pad_rows` is (a separately compiled callee is optimised again inside its
    caller: the cold compile took 11 s instead of 6).
    """
    hp, wp, channels, oh, ow, out_channels = (geometry[0], geometry[1], geometry[2],
                                              geometry[3], geometry[4], geometry[5])
    kh, kw, sh, sw, dh, cols = (geometry[6], geometry[7], geometry[8], geometry[9],
                                geometry[10], geometry[11])
    rows, pixels, block, blocks = geometry[15], geometry[16], geometry[17], geometry[18]
    panels = (out_channels + cols - 1) // cols
    depth = kh * kw * channels
    steps = kw * channels
    seg = dh * wp * channels
    lda = sw * channels
    for t in range(first, last):
        if geometry[14]:                    # panel-major: a panel stays in L2 across rows
            jb = t // rows
            row = t - jb * rows
        else:                               # row-major: the input rows stay in cache
            jb = t % panels
            row = t // panels
        c0 = jb * cols
        width = min(cols, out_channels - c0)
        b_off = jb * depth * cols
        if blocks:                          # a 1x1 layer's run: blocks b0:b1 of all pixels
            o_row = (row * blocks // rows) * block
            count = min((row + 1) * blocks // rows * block, pixels) - o_row
            a_row = o_row * channels
        else:
            n = row // oh
            i = row - n * oh
            a_row = ((n * hp + i * sh) * wp) * channels
            o_row = (n * oh + i) * ow
            count = ow
        args = (count, out, o_row * out_channels + c0, out_channels, width, padded, a_row,
                lda, bp, b_off, kh, steps, seg, kinds, vectors, c0, out_channels, residual)
        if cols == 64:
            _run64(*args)
        elif cols == 48:
            _run48(*args)
        elif cols == 32:
            _run32(*args)
        else:
            _run16(*args)


@njit(cache=True, nogil=True, inline="always")
def _pad_rows(x, padded, top, left, first, last):
    """Rows ``first:last`` (over images x padded rows) of :func:`_pad`."""
    batch, height, width, channels = x.shape
    hp, wp = padded.shape[1], padded.shape[2]
    run = uint64(width * channels)
    lead = uint64(left * channels)
    line = uint64(wp * channels)
    src = x.reshape(-1)
    dst = padded.reshape(-1)
    zero = np.float32(0)
    for row in range(first, last):
        n = row // hp
        y = row - n * hp - top
        base = uint64(row) * line
        if y < 0 or y >= height:
            for k in range(line):
                dst[base + k] = zero
            continue
        start = uint64((n * height + y) * width * channels)
        for k in range(lead):
            dst[base + k] = zero
        for k in range(run):
            dst[base + lead + k] = src[start + k]
        for k in range(lead + run, line):
            dst[base + k] = zero


@njit(cache=True, nogil=True)
def _shared(x, padded, pad, bp, out, geometry, kinds, vectors, residual, chunks, pad_state,
            state):
    """The whole convolution as ``chunks`` chunks of padded rows, then ``chunks`` chunks of
    tasks, each claimed from a counter (:mod:`jitkernels.cpu.work_sharing`'s protocol; run
    by the caller alone, or by numba's workers: :func:`_team`). A thread that finds no padding
    chunk left waits until every one is finished before it starts on the tasks."""
    if pad:
        lines = x.shape[0] * padded.shape[1]
        while True:
            chunk = claim(pad_state, chunks)
            if chunk < 0:
                break
            _pad_rows(x, padded, geometry[12], geometry[13], chunk * lines // chunks,
                      (chunk + 1) * lines // chunks)
            finish(pad_state)
        while atomic_add(pad_state, 1, 0) < chunks:
            pass
    cols = geometry[11]
    tasks = geometry[15] * ((geometry[5] + cols - 1) // cols)
    flat_in, flat_w, flat_out = padded.reshape(-1), bp.reshape(-1), out.reshape(-1)
    while True:
        chunk = claim(state, chunks)
        if chunk < 0:
            break
        _tasks(flat_in, flat_w, flat_out, geometry, chunk * tasks // chunks,
               (chunk + 1) * tasks // chunks, kinds, vectors, residual)
        finish(state)


# -- weights ---------------------------------------------------------------------------------

def pack(weight: np.ndarray, columns: int) -> np.ndarray:
    """The HWIO ``weight`` ``(KH, KW, C, O)`` as float32 column panels
    ``(ceil(O / columns), KH*KW*C, columns)``: ``packed[p, k, j] = W[k, columns*p + j]`` for
    ``W`` the ``(KH*KW*C, O)`` matrix, zeros past ``O``.

    Args:
        weight: the HWIO weight (any dtype convertible to float32).
        columns: 64, 48, 32 or 16 (:func:`panel_columns`).
    """
    out_channels = weight.shape[3]
    depth = math.prod(weight.shape[:3])
    panels = -(-out_channels // columns)
    padded = np.zeros((depth, panels * columns), np.float32)
    padded[:, :out_channels] = weight.reshape(depth, out_channels)
    return np.ascontiguousarray(padded.reshape(depth, panels, columns).transpose(1, 0, 2))


_PACKED = WeightCache()


def packed_weight(weight: np.ndarray, columns: int) -> np.ndarray:
    """:func:`pack` of ``weight``, cached while ``weight`` lives when it is read-only (a
    built graph's bound weights are: their values cannot change), else packed now.

    Args:
        weight: the HWIO weight.
        columns: 32 or 64.
    """
    packed = _PACKED.get(weight, columns, lambda w: pack(w, columns))
    return pack(weight, columns) if packed is None else packed


# -- the entry point and its cost rule -------------------------------------------------------

def pays(channels: int, out_channels: int, kernel, strides, dilation, out_positions: int,
         dtype=np.float32) -> bool:
    """The cost rule: whether this kernel runs the layer (see the module docstring).

    Args:
        channels, out_channels: input and output channels (one group).
        kernel, strides, dilation: pairs (H, W).
        out_positions: output pixels per image times the batch.
        dtype: the data's (and weight's) dtype.
    """
    if np.dtype(dtype) != np.float32 or dilation[1] != 1 or out_positions == 0:
        return False
    if out_channels < MIN_OUT_CHANNELS or kernel[0] * kernel[1] * channels > MAX_INNER:
        return False
    return available()


def conv2d_nhwc(x, weight, out, strides, dilation, before, after, epilogue=None,
                threads=None) -> None:
    """NHWC/HWIO float32 convolution of ``x`` into ``out`` on the segmented micro-kernel.

    Args:
        x: C-contiguous float32 ``(N, H, W, C)``.
        weight: float32 HWIO ``(KH, KW, C, O)`` (packed once and cached when read-only).
        out: C-contiguous float32 ``(N, OH, OW, O)`` (any shape with that many elements in
            that order), overwritten.
        strides, dilation: pairs (H, W); the width dilation must be 1.
        before, after: the zero padding before and after each spatial axis (pairs).
        epilogue: a :class:`~jitkernels.cpu.epilogue.Epilogue` applied to each block before
            it is stored (its residual shaped like the output), or None.
        threads: threads sharing the work, the caller included (default: numba's thread
            count); below :data:`PARALLEL_MIN_FLOPS` the layer runs on the calling thread.

    Raises:
        irlib.errors.IRError: an array is not float32 (``x`` and ``out`` C-contiguous), the
            width dilation is not 1, ``out`` has the wrong size, or the epilogue has a
            residual step without a residual shaped like the output.
    """
    from irlib.errors import IRError
    if x.dtype != np.float32 or weight.dtype != np.float32 or out.dtype != np.float32 \
            or not x.flags.c_contiguous or not out.flags.c_contiguous:
        raise IRError(f"implicit_conv.conv2d_nhwc: needs C-contiguous float32 data and "
                      f"output and a float32 weight, got {x.dtype} data, {weight.dtype} "
                      f"weight, {out.dtype} output")
    plan = _plan(x.shape, weight.shape, tuple(strides), tuple(dilation), tuple(before),
                 tuple(after), FLAT_ROW_BLOCKS,
                 get_num_threads() if threads is None else max(1, threads))
    if dilation[1] != 1 or out.size != plan.out_size:
        raise IRError(f"implicit_conv.conv2d_nhwc: data {x.shape}, weight {weight.shape}, "
                      f"dilation {tuple(dilation)}, output of {out.size} elements: needs a "
                      f"width dilation of 1 and a {plan.out_shape} output")
    if out.size == 0:
        return
    bp = packed_weight(weight, plan.cols)
    padded = scratch("implicit_pad", plan.padded_shape, np.float32) if plan.pad else x
    steps = epilogue if epilogue is not None else empty(np.float32)
    # the micro-kernel addresses these by element offsets: C-contiguous, as typed
    kinds = np.ascontiguousarray(steps.kinds, np.int64)
    vectors = np.ascontiguousarray(steps.vectors, np.float32)
    residual = np.ascontiguousarray(steps.residual, np.float32)
    if residual.size != out.size and RESIDUAL in kinds.tolist():
        raise IRError(f"implicit_conv.conv2d_nhwc: the epilogue adds a residual of "
                      f"{residual.size} elements to an output of {out.size}")
    state = new_state()
    args = (x, padded, plan.pad, bp, out, plan.geometry, kinds, vectors, residual,
            plan.chunks, new_state(), state)
    if plan.chunks == 1:
        _shared(*args)
    else:
        share(_shared, args, state, plan.chunks, plan.threads, _team)


@njit(cache=True, parallel=True, nogil=True)
def _team(x, padded, pad, bp, out, geometry, kinds, vectors, residual, chunks, pad_state,
          state, threads):
    """:func:`_shared` on ``threads`` of numba's workers at once
    (:func:`jitkernels.cpu.work_sharing.share`'s ``team``; compiled once and cached: a
    driver compiled in each process cost seconds)."""
    for _ in prange(threads):
        _shared(x, padded, pad, bp, out, geometry, kinds, vectors, residual, chunks,
                pad_state, state)


class _Plan(NamedTuple):
    """What a layer's shapes, attributes and thread count fix (memoised: a graph runs each
    layer with the same ones every time)."""

    out_shape: tuple
    out_size: int
    cols: int
    pad: bool
    padded_shape: tuple
    geometry: np.ndarray
    threads: int
    chunks: int


def _chunks_per_thread(flops: float, threads: int) -> int:
    """Task chunks per thread for a layer of ``flops`` on ``threads`` threads (0: run it on
    the calling thread): each at least :data:`CHUNK_MIN_FLOPS`, at most
    :data:`CHUNKS_PER_THREAD`."""
    if threads <= 1 or flops < PARALLEL_MIN_FLOPS:
        return 0
    return min(CHUNKS_PER_THREAD, max(1, int(flops // (CHUNK_MIN_FLOPS * threads))))


def _flat_rows(blocks: int, panels: int, chunks: int, flat: int) -> int:
    """Rows to cut a 1x1 layer's ``blocks`` kernel blocks into: at most ``flat`` blocks a
    row, and, on several threads, a row count that makes ``rows * panels`` tasks a multiple
    of ``chunks`` (equal chunks of rows that differ by at most one block) where the layer
    has blocks enough."""
    rows = -(-blocks // flat)
    if chunks > 1:
        step = chunks // math.gcd(chunks, panels)
        balanced = -(-rows // step) * step
        if balanced <= blocks:
            rows = balanced
    return rows


@functools.lru_cache(maxsize=1024)
def _plan(shape, wshape, strides, dilation, before, after, flat, threads) -> _Plan:
    """The :class:`_Plan` of a layer: data ``shape`` (NHWC), weight ``wshape`` (HWIO), the
    attributes as :func:`conv2d_nhwc` takes them (tuples), :data:`FLAT_ROW_BLOCKS` and the
    threads asked for."""
    batch, height, width, channels = shape
    kh, kw, _, out_channels = wshape
    hp, wp = height + before[0] + after[0], width + before[1] + after[1]
    oh = max((hp - dilation[0] * (kh - 1) - 1) // strides[0] + 1, 0)
    ow = max((wp - kw) // strides[1] + 1, 0)
    out_shape = (batch, oh, ow, out_channels)
    pad = bool(before[0] or before[1] or after[0] or after[1])
    pixels = batch * oh * ow
    run = bool(flat and (kh, kw) == (1, 1) and not pad and strides == (1, 1) and pixels)
    cols = panel_columns(out_channels, 0 if run else ow)
    panels = -(-out_channels // cols)
    padded_shape = (batch, hp, wp, channels)
    panel_major = panels * cols * kh * kw * channels > batch * hp * wp * channels
    per_thread = _chunks_per_thread(2.0 * pixels * out_channels * kh * kw * channels, threads)
    block, blocks = SEGMENTED_SHAPES[cols], 0
    rows = batch * oh
    if run:
        # a plain product: all pixels in one run, cut into rows of whole blocks
        blocks = -(-pixels // block)
        rows = _flat_rows(blocks, panels, per_thread * threads, flat)
    geometry = np.array((hp, wp, channels, oh, ow, out_channels, kh, kw, strides[0],
                         strides[1], dilation[0], cols, before[0], before[1], panel_major,
                         rows, pixels, block, blocks), np.int64)
    geometry.flags.writeable = False
    chunks = max(1, min(rows * panels, per_thread * threads))
    return _Plan(out_shape, math.prod(out_shape), cols, pad, padded_shape, geometry,
                 threads if chunks > 1 else 1, chunks)
