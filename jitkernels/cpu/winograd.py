"""Winograd convolution F(m x m, 3 x 3) for stride-1, undilated, ungrouped 3x3 layers.

Strategy (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", 2015). The
output is cut into ``m x m`` tiles; each tile needs an ``a x a`` patch of the zero-padded
input, ``a = m + 2``. In the transformed domain a tile of the convolution is an
element-wise product summed over input channels::

    Y = A^T [ sum_c (G g_{o,c} G^T) * (B^T d_c B) ] A

so, with every tile of every image stacked (``T`` tiles), the layer becomes ``a*a``
independent GEMMs ``M[k] = V[k] @ U[k]`` of shape ``(T, C) @ (C, O)``, ``k`` running over
the ``a*a`` transformed positions. That is ``a*a / (m*m * 9)`` of the multiply-adds of a
direct/im2col convolution: 4x fewer for F(4x4, 3x3) (``a = 6``), 2.25x for F(2x2, 3x3).

The three stages, all channels-last so every inner loop runs over contiguous channels
(LLVM vectorises them):

1. **input transform** (:func:`input_transform`, numba, ``prange`` over rows of tiles):
   each tile's ``a x a x C`` patch (zeros outside the image) is multiplied by ``B^T`` on
   both sides, written to ``V[k, t, :]``;
2. **the ``a*a`` GEMMs**, one batched ``np.matmul`` through :mod:`jitkernels.cpu.blas` (the
   BLAS owns the threads, see :mod:`jitkernels.threads`);
3. **output transform** (:func:`output_transform`, numba, ``prange`` over rows of tiles):
   ``A^T M A`` per tile, cropped at the image's right and bottom edges (``OH``, ``OW`` need
   not be multiples of ``m``), then a fused epilogue (bias, batch norm, residual, ReLU:
   :mod:`jitkernels.cpu.epilogue`) on each output pixel while it is in cache.

The transforms are ``prange`` loops (numba owns the non-GEMM work,
:mod:`jitkernels.threads`); measured serial, they ran as long as the 16 GEMMs once BLAS had
more than one thread.

The weight transform ``U = G g G^T`` (:func:`transform_weight`, numpy) is done once at
build time when the weight is a constant (``interp.build`` rewrites such convolutions to
``nn.contrib_conv2d_winograd_without_weight_transform`` on a folded
``nn.contrib_conv2d_winograd_weight_transform``); the plain ``nn.conv2d`` kernel only
chooses Winograd when it also pays for transforming the weight on every call
(:func:`choose_tile`).

Numerical error: the transforms multiply by constants up to 8 (F(4x4)) and cancel large
terms, so float32 results lose about one to two decimal digits against a direct
convolution (measured on random data: max error ~1e-5 of the output's largest magnitude for
F(2x2), ~1e-4 for F(4x4); tests allow 1e-3). ``IRLIB_WINOGRAD=0`` in the environment turns
Winograd off everywhere (build rewrite and kernels).
"""

from __future__ import annotations

import os

import numpy as np
from numba import njit, prange

from irlib.op.nn_winograd import WINOGRAD_MATRICES

from .. import register_kernel
from .._geometry import is_float, padding_pairs, reference, to_canonical
from . import implicit_conv
from .blas import gemm
from .conv_core import scratch
from .epilogue import Epilogue, apply_pixel

MATRICES = WINOGRAD_MATRICES
"""``tile size m -> (B^T, G, A^T)`` (``a x a``, ``a x 3``, ``m x a``; ``a = m + 2``), shared
with the op's numpy reference (:mod:`irlib.op.nn_winograd`)."""

ENV_SWITCH = "IRLIB_WINOGRAD"
"""Environment variable: ``0`` (or ``off``/``false``/``no``) disables Winograd."""


def enabled() -> bool:
    """Whether Winograd may be used (``IRLIB_WINOGRAD`` is not ``0``/``off``/``false``)."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "off", "false", "no")


def eligible(kernel, strides, dilation, groups) -> bool:
    """Whether a conv2d's geometry has a Winograd form here (3x3, stride 1, dilation 1,
    one group)."""
    return (tuple(kernel) == (3, 3) and tuple(strides) == (1, 1)
            and tuple(dilation) == (1, 1) and int(groups) == 1)


GEMM_FLOPS = 250e9
"""Assumed GEMM speed (FLOP/s) of the cost model; only ratios matter."""

TRANSFORM_FLOPS = 40e9
"""Assumed speed of the (vectorised, serial) numba transforms, in their FLOP/s."""

GEMM_HALF_ROWS = 8
"""GEMM rows (tiles) at which the model's GEMM runs at half its speed."""

MEMORY_BYTES = 40e9
"""Assumed bandwidth (bytes/s) for streaming a weight that does not stay in cache."""

CALL_SECONDS = 20e-6
"""Fixed cost of one Winograd call (two parallel regions and the batched GEMM's setup)."""

MARGIN = 0.9
"""Winograd is chosen only when modelled at most this fraction of the GEMM path's time:
measured end to end, SqueezeNet's small 3x3 layers (13x13, 55x55 with 16 channels), which
the model put within 10% of the GEMM path, made the network slower, not faster."""

MIN_CHANNELS = 8
"""Fewest input and output channels for Winograd (with fewer the transforms dominate)."""

IMPLICIT_MAX_CHANNEL_PRODUCT = 2048
"""Layers with ``channels * out_channels`` at most this are left to the implicit-GEMM
kernel (:mod:`.implicit_conv`) where it runs: with so few channels Winograd's tile GEMMs
(depth ``channels``, width ``out_channels``) run far below peak. Measured one thread,
weight transformed at build time (``benchmarks/implicit_conv_layers.py``): Inception-v3's
149x149 32->32 and 147x147 32->64 stem layers took 0.49x and 0.72x of Winograd's time on
the implicit kernel, while at a product of 4096 (SqueezeNet's 27x27 32->128, ResNet's
64->64, DenseNet's 128->32) Winograd stayed 1.2-1.4x faster."""

IMPLICIT_MAX_OUT_CHANNELS = 32
"""Layers with at most this many output channels are left to the implicit-GEMM kernel too
(its 32-column panels fit them; Winograd's tile GEMMs are 32 wide): on two threads in one
process, DenseNet-121's 3x3 128->32 at 56x56 and 28x28 took 1.46-1.55 and 0.43-0.45 ms
there against 1.9-2.4 and 0.68-0.71 on built Winograd, and DenseNet-121 end to end ran at
a CPU ratio of 1.22-1.34 to onnxruntime against 1.36-1.50 (two runs each, idle machine)."""


def cost_seconds(tile: int, channels: int, out_channels: int, out_h: int, out_w: int,
                 batch: int, weight_transform: bool) -> float:
    """Modelled seconds of Winograd F(tile x tile, 3x3) on one layer.

    Counts the ``a*a`` GEMMs over the padded tile grid (edge tiles compute their whole
    ``m x m`` block), the input/output transforms (about ``2*a*(nonzeros of B)`` and
    ``2*a*(nonzeros of A)`` flops per tile and channel) and, with ``weight_transform``,
    the per-call weight transform (``2*(a*3*3 + a*a*3)`` flops per weight matrix entry).
    """
    alpha = tile + 2
    tiles = batch * (-(-out_h // tile)) * (-(-out_w // tile))
    bt, _, at = MATRICES[tile]
    gemm_flops = 2.0 * alpha * alpha * tiles * channels * out_channels
    transform = (2.0 * 2 * alpha * np.count_nonzero(bt) * tiles * channels
                 + 2.0 * 2 * alpha * np.count_nonzero(at) * tiles * out_channels)
    # BLAS runs GEMMs with few rows (tiles) far below its peak: measured ~45 GFLOP/s for
    # 16 rows vs ~110 for 196 (one thread); and U (a*a/9 times the weight) is read once.
    efficiency = tiles / (tiles + GEMM_HALF_ROWS)
    seconds = (gemm_flops / (GEMM_FLOPS * efficiency) + transform / TRANSFORM_FLOPS
               + alpha * alpha * channels * out_channels * 4.0 / MEMORY_BYTES + CALL_SECONDS)
    if weight_transform:
        seconds += 2.0 * (alpha * 9 + alpha * alpha * 3) * channels * out_channels \
            / TRANSFORM_FLOPS
    return seconds


def direct_seconds(channels: int, out_channels: int, out_h: int, out_w: int,
                   batch: int) -> float:
    """Modelled seconds of the im2col/implicit GEMM path on the same layer (its GEMM plus
    an im2col copy at ~20 GEMM flops per copied element, :data:`conv_core.COPY_FLOPS`)."""
    positions = batch * out_h * out_w
    return ((2.0 * 9 * channels * out_channels * positions + 20.0 * 9 * channels * positions)
            / GEMM_FLOPS + 9.0 * channels * out_channels * 4.0 / MEMORY_BYTES)


def _implicit_takes(channels: int, out_channels: int, positions: int) -> bool:
    """Whether the implicit-GEMM kernel would run this stride-1 3x3 float32 layer."""
    return implicit_conv.pays(channels, out_channels, (3, 3), (1, 1), (1, 1), positions)


def choose_tile(channels: int, out_channels: int, out_h: int, out_w: int, batch: int = 1,
                weight_transform: bool = False) -> int:
    """The Winograd tile size (4 or 2) that the cost model expects to beat the GEMM path
    on this stride-1 3x3 layer, or 0 for none.

    Args:
        channels, out_channels: input and output channels.
        out_h, out_w: the output's spatial size.
        batch: images per call.
        weight_transform: whether the weight must be transformed on every call (a
            non-constant weight); else it was folded at build time.
    """
    if not enabled() or min(channels, out_channels) < MIN_CHANNELS or min(out_h, out_w) < 2:
        return 0
    if (channels * out_channels <= IMPLICIT_MAX_CHANNEL_PRODUCT
            or out_channels <= IMPLICIT_MAX_OUT_CHANNELS) and _implicit_takes(
            channels, out_channels, out_h * out_w * batch):
        return 0
    best, best_cost = 0, direct_seconds(channels, out_channels, out_h, out_w, batch)
    for tile in (4, 2):
        cost = cost_seconds(tile, channels, out_channels, out_h, out_w, batch,
                            weight_transform)
        if cost < best_cost * MARGIN:
            best, best_cost = tile, cost
    return best


def transform_weight(weight_oihw: np.ndarray, tile: int,
                     channels_last: bool = False) -> np.ndarray:
    """``U = G g G^T`` for every ``(o, c)`` of an OIHW 3x3 weight, computed in float64 and
    returned C-contiguous in the weight's dtype.

    Args:
        weight_oihw: ``(O, I, 3, 3)``.
        tile: ``m`` (2 or 4).
        channels_last: return ``(a, a, I, O)`` (what :func:`conv2d_nhwc` reads) instead of
            Relay's ``contrib_conv2d_winograd_weight_transform`` layout ``(a, a, O, I)``.
    """
    _, g, _ = MATRICES[tile]
    w = np.asarray(weight_oihw, np.float64)
    out_channels, channels = w.shape[:2]
    if channels_last:
        transformed = np.einsum("ai,ocij,bj->abco", g, w, g, optimize=True)
    else:
        transformed = np.einsum("ai,ocij,bj->aboc", g, w, g, optimize=True)
    return np.ascontiguousarray(transformed, dtype=w.dtype).astype(
        np.asarray(weight_oihw).dtype, copy=False)


@njit(cache=True, parallel=True)
def input_transform(x, v, bt, tile, top, left, tiles_h, tiles_w):
    """``V[k, t, :] = (B^T d_t B)[k]`` for every tile ``t`` of every image.

    Args:
        x: C-contiguous NHWC ``(N, H, W, C)`` (unpadded: reads outside are zeros).
        v: ``(a*a, N*tiles_h*tiles_w, C)``, overwritten.
        bt: ``B^T``, ``(a, a)`` in the data's dtype.
        tile: ``m``; top, left: the padding above and left of the image.
        tiles_h, tiles_w: tiles per column and row of one image.
    """
    batch, height, width, channels = x.shape
    alpha = bt.shape[0]
    zero = x.dtype.type(0)
    for band in prange(batch * tiles_h):
        n, ty = band // tiles_h, band % tiles_h
        patch = np.empty((alpha, alpha, channels), x.dtype)
        rows = np.empty((alpha, alpha, channels), x.dtype)
        y0 = ty * tile - top
        for tx in range(tiles_w):
            t = band * tiles_w + tx
            x0 = tx * tile - left
            for a in range(alpha):
                y = y0 + a
                for b in range(alpha):
                    xx = x0 + b
                    if y < 0 or y >= height or xx < 0 or xx >= width:
                        for c in range(channels):
                            patch[a, b, c] = zero
                    else:
                        for c in range(channels):
                            patch[a, b, c] = x[n, y, xx, c]
            # rows = B^T @ patch (over the first axis), skipping zero coefficients
            for i in range(alpha):
                for b in range(alpha):
                    for c in range(channels):
                        rows[i, b, c] = zero
                for a in range(alpha):
                    coef = bt[i, a]
                    if coef == 0:
                        continue
                    for b in range(alpha):
                        for c in range(channels):
                            rows[i, b, c] += coef * patch[a, b, c]
            # V[i*a + j] = rows[i] @ B (over the second axis)
            for i in range(alpha):
                for j in range(alpha):
                    k = i * alpha + j
                    for c in range(channels):
                        v[k, t, c] = zero
                    for b in range(alpha):
                        coef = bt[j, b]
                        if coef == 0:
                            continue
                        for c in range(channels):
                            v[k, t, c] += coef * rows[i, b, c]


@njit(cache=True, parallel=True)
def output_transform(m, out, at, tile, tiles_h, tiles_w, kinds, vectors, residual):
    """``out[n, tile rows, tile cols, :] = A^T M_t A``, cropped at the image edges, each
    pixel then passed through the fused epilogue (:mod:`jitkernels.cpu.epilogue`) while it
    is in cache.

    Args:
        m: ``(a*a, N*tiles_h*tiles_w, O)``, the GEMM results.
        out: C-contiguous NHWC ``(N, OH, OW, O)``, overwritten.
        at: ``A^T``, ``(m, a)`` in the data's dtype.
        tile, tiles_h, tiles_w: as in :func:`input_transform`.
        kinds, vectors, residual: the epilogue's steps (``kinds`` empty: none); the
            residual shaped like ``out`` when a step reads it.
    """
    flat = out.reshape(-1)
    rflat = residual.reshape(-1)
    fused = kinds.shape[0] > 0
    batch, out_h, out_w, channels = out.shape
    alpha = at.shape[1]
    zero = out.dtype.type(0)
    for band in prange(batch * tiles_h):
        n, ty = band // tiles_h, band % tiles_h
        rows = np.empty((tile, alpha, channels), out.dtype)
        for tx in range(tiles_w):
            t = band * tiles_w + tx
            # rows[i, j] = sum_a A^T[i, a] * M[a*alpha + j]
            for i in range(tile):
                for j in range(alpha):
                    for c in range(channels):
                        rows[i, j, c] = zero
                    for a in range(alpha):
                        coef = at[i, a]
                        if coef == 0:
                            continue
                        k = a * alpha + j
                        for c in range(channels):
                            rows[i, j, c] += coef * m[k, t, c]
            for i in range(tile):
                y = ty * tile + i
                if y >= out_h:
                    break
                for e in range(tile):
                    xx = tx * tile + e
                    if xx >= out_w:
                        break
                    for c in range(channels):
                        out[n, y, xx, c] = zero
                    for j in range(alpha):
                        coef = at[e, j]
                        if coef == 0:
                            continue
                        for c in range(channels):
                            out[n, y, xx, c] += coef * rows[i, j, c]
                    if fused:
                        base = ((n * out_h + y) * out_w + xx) * channels
                        apply_pixel(flat, base, kinds, vectors, rflat, base)


def conv2d_nhwc(x: np.ndarray, u: np.ndarray, out: np.ndarray, tile: int, top: int,
                left: int, epilogue=None) -> np.ndarray:
    """Winograd convolution of NHWC data with a transformed weight, into ``out``.

    Args:
        x: C-contiguous ``(N, H, W, C)``.
        u: the transformed weight as ``(a, a, C, O)``, C-contiguous (:func:`transform_weight`
            with ``channels_last``): each ``U[k]`` is read by BLAS as stored (a transposed
            view made numpy's batched matmul 4x slower).
        out: C-contiguous ``(N, OH, OW, O)``, overwritten; ``OH = H + top + bottom - 2``
            (the bottom/right padding is implied by the output's size).
        tile: ``m`` (2 or 4); top, left: the padding above and left of the image.
        epilogue: a :class:`~jitkernels.cpu.epilogue.Epilogue` applied per output pixel
            in the output transform, or None.

    Returns:
        ``out``.
    """
    bt, _, at = MATRICES[tile]
    batch, _, _, channels = x.shape
    _, out_h, out_w, out_channels = out.shape
    alpha = tile + 2
    tiles_h, tiles_w = -(-out_h // tile), -(-out_w // tile)
    count = batch * tiles_h * tiles_w
    v = scratch("winograd_v", (alpha * alpha, count, channels), x.dtype)
    input_transform(x, v, bt.astype(x.dtype), tile, top, left, tiles_h, tiles_w)
    m = scratch("winograd_m", (alpha * alpha, count, out_channels), x.dtype)
    gemm(v, u.reshape(alpha * alpha, channels, out_channels), m)
    if epilogue is None:
        epilogue = _NO_EPILOGUE.get(out.dtype)
        if epilogue is None:
            epilogue = _NO_EPILOGUE[out.dtype] = Epilogue(
                np.zeros(0, np.int64), np.zeros((0, 1), out.dtype),
                np.zeros((1, 1, 1, 1), out.dtype))
    output_transform(m, out, at.astype(x.dtype), tile, tiles_h, tiles_w, epilogue.kinds,
                     epilogue.vectors, epilogue.residual)
    return out


_NO_EPILOGUE: dict = {}


_OP = "nn.contrib_conv2d_winograd_without_weight_transform"


def _plan(data, weight, attrs):
    """``(tile, top, left, bottom, right, channels_last, u (a, a, I, O))`` for a call the
    kernel handles, else None (other dtypes, layouts or an ``out_dtype``)."""
    if not is_float(data, weight) or data.ndim != 4 or weight.ndim != 4:
        return None
    tile = int(attrs.get("tile_size", 4))
    data_layout = attrs.get("data_layout") or "NCHW"
    out_layout = attrs.get("out_layout") or data_layout
    kernel_layout = attrs.get("kernel_layout") or "OIHW"
    out_dtype = attrs.get("out_dtype") or data.dtype
    if tile not in MATRICES or data_layout not in ("NCHW", "NHWC") or out_layout != data_layout \
            or kernel_layout not in ("OIHW", "HWIO") or np.dtype(out_dtype) != data.dtype:
        return None
    (top, left), (bottom, right) = padding_pairs(attrs.get("padding", 0), 2)
    u = weight if kernel_layout == "HWIO" else np.swapaxes(weight, 2, 3)
    return tile, top, left, bottom, right, data_layout == "NHWC", np.ascontiguousarray(u)


def _run(data, plan, out):
    """Run a planned call into ``out`` (C-contiguous, in the data's layout)."""
    tile, top, left, bottom, right, channels_last, u = plan
    if channels_last:
        return conv2d_nhwc(np.ascontiguousarray(data), u, out, tile, top, left)
    x = to_canonical(data, "NCHW", "NHWC")
    batch, height, width, _ = x.shape
    wide = scratch("winograd_out", (batch, height + top + bottom - 2, width + left + right - 2,
                                    u.shape[3]), x.dtype)
    conv2d_nhwc(x, u, wide, tile, top, left)
    out[...] = wide.transpose(0, 3, 1, 2)
    return out


@register_kernel(_OP)
def conv2d_winograd(data, weight, **attrs):
    """``nn.contrib_conv2d_winograd_without_weight_transform`` on CPU (same contract as
    the reference): :func:`conv2d_nhwc` (NCHW data is transposed in and out)."""
    plan = _plan(data, weight, attrs)
    if plan is None:
        return reference(_OP, (data, weight), attrs)
    _, top, left, bottom, right, channels_last, u = plan
    n, c, h, w = data.shape if not channels_last else (data.shape[0], data.shape[3],
                                                       data.shape[1], data.shape[2])
    oh, ow = h + top + bottom - 2, w + left + right - 2
    shape = (n, oh, ow, u.shape[3]) if channels_last else (n, u.shape[3], oh, ow)
    return (_run(data, plan, np.empty(shape, data.dtype)),)


def _into(out, data, weight, **attrs) -> bool:
    """Destination-passing form: writes ``out`` and returns True, or returns False (and
    writes nothing) for what only :func:`conv2d_winograd` handles."""
    plan = _plan(data, weight, attrs)
    if plan is None or out.dtype != data.dtype or not out.flags.c_contiguous:
        return False
    _, top, left, bottom, right, channels_last, u = plan
    if channels_last:
        n, h, w, _ = data.shape
        expected = (n, h + top + bottom - 2, w + left + right - 2, u.shape[3])
    else:
        n, _, h, w = data.shape
        expected = (n, u.shape[3], h + top + bottom - 2, w + left + right - 2)
    if tuple(out.shape) != expected or u.shape[2] != (data.shape[3] if channels_last
                                                      else data.shape[1]):
        return False
    _run(data, plan, out)
    return True


def _into_fused(out, data, weight, epilogue, **attrs) -> bool:
    """:func:`_into` with a fused epilogue (channels-last data only; False otherwise)."""
    plan = _plan(data, weight, attrs)
    if plan is None or not plan[5] or out.dtype != data.dtype or not out.flags.c_contiguous:
        return False
    tile, top, left, bottom, right, _, u = plan
    n, h, w, _ = data.shape
    if tuple(out.shape) != (n, h + top + bottom - 2, w + left + right - 2, u.shape[3]) \
            or u.shape[2] != data.shape[3]:
        return False
    conv2d_nhwc(np.ascontiguousarray(data), u, out, tile, top, left, epilogue)
    return True


conv2d_winograd.into = _into
conv2d_winograd.into_fused = _into_fused
