"""``nn.conv2d_transpose`` on CPU, channels-first: pixel-row GEMM + parallel gather col2im.

A transposed convolution of ``x (N, C, H, W)`` with an IOHW weight ``(C, O/G, KH, KW)`` is a
product per group followed by a col2im: input pixel ``(i, j)`` of channel ``c`` adds
``x[c, i, j] * w[c, o, b, e]`` into output ``(o, i*sh - top + b*dh, j*sw - left + e*dw)``.
The earlier kernel (:func:`jitkernels.cpu.conv_core.conv2d_transpose_nchw`, kept as the
switched-off path) computed the columns as ``W^T @ x`` (a transposed read of the weight) and
scattered them serially into a zeroed output, and the group's ``multiply``/``add``/``relu``
ran as a second pass over the output. Here (issue #17: DCGAN's deconvolutions):

* **Columns as ``x^T @ W``** (pixels x taps*channels): the weight is read as stored, row by
  row, the order that streams it fastest (DCGAN's first layer is a 16-row product over a
  33.5 MB weight). A read-only weight (a graph constant) is permuted once, cached while it
  lives, to columns ordered ``(tap, channel)``, so that the few-row product runs on
  :mod:`jitkernels.cpu.packed_gemm`'s packed micro-kernel (weight packed once) where its
  rule takes it, else on irlib's BLAS; a writable weight is multiplied as stored (columns
  ``(channel, tap)``). With batch 1 and padding that drops whole input rows for some kernel
  rows (the first and last kernel rows of a 4x4/2 pad-1 layer), the product runs in bands
  of kernel rows, each over the input rows that reach the output (:func:`_row_bands`).
  Fewer than :data:`CHANNEL_MAJOR_UNITS` columns run as ``W^T @ x`` instead.
* **A gather col2im** (:mod:`jitkernels.cpu.col2im_gather`): a task is one output row of a
  block of channels, its taps added into an ``(OW, block)`` accumulator that stays in L1
  (:func:`channel_block`: a whole group's channels where the row fits
  :data:`ACCUMULATOR_BYTES`; each tap of an input pixel is then one contiguous run of the
  columns: 16-channel blocks, one 64-byte line per pixel 8 KB apart, were 4x slower on
  DCGAN's 256->128 layer), written once into the NCHW row: no zeroing pass, no write
  races. Chunks of tasks are claimed by numba's workers from a counter
  (:mod:`jitkernels.cpu.work_sharing`; on a busy machine the caller runs them alone).
* **The fused epilogue** (:mod:`jitkernels.cpu.epilogue`: per-channel multiply/add, a
  residual add, ReLU) is applied to each output row while it is in the accumulator, so a
  fused group ``relu(conv2d_transpose(x, w) * scale + shift)`` writes its output once
  (``into_fused``; the code generator hands the chain over, see
  :mod:`jitkernels.codegen.epilogue`).

Other layouts are transposed to NCHW/IOHW and back. ``IRLIB_CONV_TRANSPOSE_GATHER=0``
(read at each call) restores the earlier kernel (and the unfused epilogue).
"""

from __future__ import annotations

import os

import numpy as np

from .._geometry import from_canonical, is_float, ntuple, padding_pairs, reference, to_canonical
from . import conv_core, packed_gemm
from .blas import gemm
from .epilogue import ADD, MUL, RELU, RESIDUAL, empty
from .col2im_gather import col2im_serial, col2im_shared, col2im_team
from .conv_core import valid_range
from .work_sharing import new_state, share
from .weight_cache import WeightCache

__all__ = ["conv2d_transpose", "into", "into_fused", "enabled", "output_size", "ENV_SWITCH",
           "ACCUMULATOR_BYTES", "channel_block", "PARALLEL_MIN_OUTPUTS", "CHUNKS_PER_THREAD", "CHANNEL_MAJOR_UNITS",
           "BAND_MIN_SAVING", "BAND_MIN_WORK", "COLUMNS_LIMIT"]

ENV_SWITCH = "IRLIB_CONV_TRANSPOSE_GATHER"
"""Environment variable: ``0`` (``off``/``false``/``no``) runs the earlier ``W^T @ x`` +
serial scatter kernel and declines fused epilogues."""

ACCUMULATOR_BYTES = 16 << 10
"""Bytes of one col2im task's accumulator (an output row of a block of channels: stays in
L1 while the taps are added and the epilogue runs; see :func:`channel_block`)."""

PARALLEL_MIN_OUTPUTS = 8192
"""Fewest output elements for the col2im to be shared by numba's workers (below, it runs
on the calling thread)."""

CHUNKS_PER_THREAD = 4
"""Chunks of output rows per thread a shared col2im is cut into (claimed dynamically)."""

CHANNEL_MAJOR_UNITS = 64
"""Products with fewer columns (output channels per group x taps) than this (one packed
panel) run as ``W^T @ x`` instead, ``(units, pixels)``: a tall, 3-48 column product runs
slower than its transpose (DCGAN's 128->3 layer: 0.166 vs 0.144 ms, one thread)."""

BAND_MIN_SAVING = 0.1
"""Smallest share of a product that kernel-row bands must skip to be used (see
:func:`_row_bands`). Measured, one thread, bands vs one product interleaved: DCGAN's first
layer (12.5% skipped) 3.04 -> 2.95 ms median; its second and third (6% and 3%) the same
either way."""

BAND_MIN_WORK = 1 << 22
"""Fewest multiply-adds of a product for it to run in bands (each band is a call)."""

COLUMNS_LIMIT = 16 << 20
"""Most bytes of columns one product writes; larger batches run a few images at a time."""

_KNOWN_KINDS = frozenset((ADD, MUL, RESIDUAL, RELU))


def enabled() -> bool:
    """Whether the gather kernel runs (:data:`ENV_SWITCH` not off; read at each call)."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "off", "false", "no")


def output_size(in_size, kernel, strides, dilation, before, after, extra) -> tuple:
    """The transposed convolution's output ``(OH, OW)``.

    Args:
        in_size: ``(H, W)``; kernel, strides, dilation: pairs; before, after: the padding
            removed at the top/left and bottom/right; extra: the output padding.
    """
    return tuple((in_size[i] - 1) * strides[i] - before[i] - after[i]
                 + dilation[i] * (kernel[i] - 1) + 1 + extra[i] for i in range(2))


# -- the weight as the product's right operand -------------------------------------------------

_WEIGHTS = WeightCache()


def _permute(iohw: np.ndarray, groups: int) -> tuple:
    """One ``(C/G, KH*KW*O/G)`` C-contiguous matrix per group, columns ordered ``(tap,
    channel)``: ``m[g][c, t*(O/G) + o] = w[g*C/G + c, o, t // KW, t % KW]``; read-only (so
    that :mod:`.packed_gemm` may pack and keep it)."""
    channels, per_group_out, kh, kw = iohw.shape
    per_group_in = channels // groups
    matrices = []
    for g in range(groups):
        block = iohw[g * per_group_in:(g + 1) * per_group_in].reshape(
            per_group_in, per_group_out, kh * kw)
        matrix = np.ascontiguousarray(block.transpose(0, 2, 1)).reshape(per_group_in, -1)
        matrix.flags.writeable = False
        matrices.append(matrix)
    return tuple(matrices)


def _weight_matrices(weight: np.ndarray, layout: str, groups: int):
    """``(matrices, channel_step, tap_step)``: the weight as one ``(C/G, O/G*KH*KW)`` matrix
    per group and where output channel ``o``'s tap ``t`` is in a row
    (``o*channel_step + t*tap_step``).

    A read-only weight is permuted to ``(tap, channel)`` columns once and cached while the
    array owning its memory lives (its values cannot change meanwhile: the graph's promise
    for its constants, as for :func:`jitkernels.cpu.packed_gemm.packed_weight`); a writable
    IOHW one is used as stored
    (``(channel, tap)`` columns, no copy); any other is permuted for this call.
    """
    iohw = weight if layout == "IOHW" else np.transpose(weight,
                                                        [layout.index(c) for c in "IOHW"])
    channels, per_group_out, kh, kw = iohw.shape
    taps = kh * kw
    if weight.flags.writeable:
        if layout == "IOHW" and weight.flags.c_contiguous:
            per_group_in = channels // groups
            flat = weight.reshape(groups, per_group_in, per_group_out * taps)
            return tuple(flat[g] for g in range(groups)), taps, 1
        return _permute(iohw, groups), 1, per_group_out
    matrices = _WEIGHTS.get(weight, (layout, groups), lambda w: _permute(iohw, groups))
    return matrices, 1, per_group_out


# -- the driver --------------------------------------------------------------------------------

def channel_block(per_group_out: int, out_width: int, itemsize: int) -> int:
    """Channels per col2im task: all of a group's when an output row of them fits
    :data:`ACCUMULATOR_BYTES`, else the most multiples of 16 that do (at least 16)."""
    fit = ACCUMULATOR_BYTES // max(1, out_width * itemsize)
    if fit >= per_group_out:
        return max(1, per_group_out)
    return max(16, fit // 16 * 16)


def _threads() -> int:
    """Threads a col2im may use: numba's configured count (``NUMBA_NUM_THREADS``), as for
    the other non-GEMM loops (:mod:`jitkernels.threads`)."""
    from numba import config
    return config.NUMBA_NUM_THREADS


def conv2d_transpose_nchw(x, weight, kernel_layout, out, strides, dilation, before, groups,
                          epilogue=None) -> None:
    """Transposed convolution of NCHW ``x`` into NCHW ``out`` (see the module docstring).

    Args:
        x: C-contiguous ``(N, C, H, W)``.
        weight: the weight in ``kernel_layout`` (a permutation of ``"IOHW"``).
        kernel_layout: its layout.
        out: C-contiguous ``(N, O, OH, OW)`` of ``x``'s dtype, overwritten.
        strides, dilation: pairs; before: the padding removed at the top and left.
        groups: the group count.
        epilogue: an :class:`~jitkernels.cpu.epilogue.Epilogue` over the ``O`` channels
            (its residual shaped like ``out``), or None.
    """
    batch, channels, height, width = x.shape
    if out.size == 0:
        return
    kh, kw = weight.shape[kernel_layout.index("H")], weight.shape[kernel_layout.index("W")]
    per_group_out = out.shape[1] // groups
    per_group_in = channels // groups
    if epilogue is None:
        epilogue = empty(x.dtype)
    residual = epilogue.residual
    if residual.ndim != 4:
        residual = residual.reshape(1, 1, 1, 1)
    pixels = height * width
    if pixels == 0 or channels == 0:
        out[...] = 0
        _apply_alone(out, epilogue, residual)
        return
    matrices, channel_step, tap_step = _weight_matrices(weight, kernel_layout, groups)
    units = matrices[0].shape[1]
    per_chunk = max(1, min(batch, COLUMNS_LIMIT // max(1, pixels * units * x.itemsize)))
    geometry = tuple(int(v) for v in (kh, kw, strides[0], strides[1], dilation[0],
                                       dilation[1], before[0], before[1], height, width))
    oh = out.shape[2]
    block = channel_block(per_group_out, out.shape[3], x.itemsize)
    flat = x.reshape(batch, channels, pixels)
    channel_major = units < CHANNEL_MAJOR_UNITS
    bands = None
    if batch == 1 and channel_step == 1 and not channel_major:
        bands = _row_bands(kh, height, width, strides[0], dilation[0], before[0], oh,
                           channels * units // groups)
    for first in range(0, batch, per_chunk):
        images = min(per_chunk, batch - first)
        span = images * pixels
        for g in range(groups):
            data = flat[first:first + images, g * per_group_in:(g + 1) * per_group_in]
            if channel_major:
                # few columns: cols = W^T @ x, (units, pixels), read along its pixels
                cols = conv_core.scratch("tconv_cols", (units, span), x.dtype)
                if images == 1:
                    rows = data[0]
                else:
                    rows = conv_core.scratch("tconv_rows", (per_group_in, images, pixels),
                                             x.dtype)
                    np.copyto(rows, data.transpose(1, 0, 2))
                    rows = rows.reshape(per_group_in, span)
                gemm(matrices[g].T, rows, cols)
                places = (np.arange(kh, dtype=np.int64) * (kw * tap_step * span),
                          np.ones(kh, np.int64), tap_step * span, channel_step * span)
            else:
                cols = conv_core.scratch("tconv_cols", (span * units,), x.dtype)
                if images == 1:
                    rows = data[0].T                                # a transposed view
                else:
                    rows = conv_core.scratch("tconv_rows", (images, pixels, per_group_in),
                                             x.dtype)
                    np.copyto(rows, data.transpose(0, 2, 1))
                    rows = rows.reshape(span, per_group_in)
                if bands is None:
                    _product(rows, matrices[g], cols.reshape(span, units))
                    places = (np.arange(kh, dtype=np.int64) * (kw * tap_step),
                              np.full(kh, units, np.int64), tap_step, channel_step)
                else:
                    places = _banded_product(rows, matrices[g], cols, bands, kw * tap_step,
                                             width) + (tap_step, channel_step)
            tasks = images * ((per_group_out + block - 1) // block) * oh
            args = (cols, out, first, g * per_group_out, per_group_out, block, geometry,
                    *places, epilogue.kinds, epilogue.vectors, residual, tasks)
            threads = _threads()
            if threads > 1 and images * per_group_out * oh * out.shape[3] >= \
                    PARALLEL_MIN_OUTPUTS and tasks > 1:
                chunks = min(tasks, CHUNKS_PER_THREAD * threads)
                state = new_state()
                share(col2im_shared, args + (chunks, state), state, chunks, threads,
                      _col2im_team)
            else:
                col2im_serial(*args)


def _product(rows, matrix, out) -> None:
    """``out = rows @ matrix``: the packed micro-kernel where its rule takes it, else BLAS."""
    if not packed_gemm.try_product(rows, matrix, False, out):
        gemm(rows, matrix, out)


def _row_bands(kh, height, width, stride, dilation, top, out_height, work):
    """The kernel rows as bands ``(b0, b1, i0, i1)``: rows ``b0..b1-1`` reach the output
    from input rows ``i0..i1-1`` only (the others land in the padding). None when one
    product over every input row is as good (a single band, or bands that would skip less
    than :data:`BAND_MIN_SAVING` of the product, or a product under
    :data:`BAND_MIN_WORK` multiply-adds: ``work`` is the product's per-pixel work)."""
    bands = []
    for b in range(kh):
        i0, i1 = valid_range(b * dilation - top, stride, out_height, height)
        if bands and bands[-1][2:] == (i0, i1):
            bands[-1] = (bands[-1][0], b + 1, i0, i1)
        else:
            bands.append((b, b + 1, i0, i1))
    if len(bands) < 2 or work * height * width < BAND_MIN_WORK:
        return None
    skipped = sum((b1 - b0) * (height - (i1 - i0)) for b0, b1, i0, i1 in bands)
    return bands if skipped >= BAND_MIN_SAVING * kh * height else None


def _banded_product(rows, matrix, cols, bands, band_step, width) -> tuple:
    """The product of one image band by band (:func:`_row_bands`): band ``(b0, b1, i0, i1)``
    multiplies input rows ``i0..i1-1`` by the weight's columns of kernel rows ``b0..b1-1``
    (a column slice: the columns are ``(tap, channel)``-ordered) into its own block of the
    flat ``cols``. Returns ``(row_base, pixel_steps)`` locating kernel row ``b``'s values."""
    kh = bands[-1][1]
    row_base = np.zeros(kh, np.int64)
    pixel_steps = np.zeros(kh, np.int64)
    pixels = rows.shape[0]
    offset = 0
    for b0, b1, i0, i1 in bands:
        band_units = (b1 - b0) * band_step
        block = cols[offset:offset + pixels * band_units].reshape(pixels, band_units)
        if i1 > i0:
            _product(rows[i0 * width:i1 * width], matrix[:, b0 * band_step:b1 * band_step],
                     block[i0 * width:i1 * width])
        for b in range(b0, b1):
            row_base[b] = offset + (b - b0) * band_step
            pixel_steps[b] = band_units
        offset += pixels * band_units
    return row_base, pixel_steps


def _apply_alone(out, epilogue, residual) -> None:
    """Apply ``epilogue`` to an ``out`` that holds the convolution already (numpy; only
    for inputs without pixels or channels, where there is nothing to gather)."""
    for s, kind in enumerate(epilogue.kinds):
        if kind == ADD:
            out += epilogue.vectors[s][:, None, None]
        elif kind == MUL:
            out *= epilogue.vectors[s][:, None, None]
        elif kind == RESIDUAL:
            out += residual
        else:
            np.maximum(out, 0, out=out)


# -- the kernel's forms ------------------------------------------------------------------------

_ATTRS: dict = {}


def _attrs(attrs) -> tuple:
    """A call's attributes, normalised: ``(strides, dilation, before, after, extra, groups,
    data_layout, kernel_layout, out_layout)``; memoised on the raw values when hashable."""
    try:
        key = tuple((name, attrs.get(name)) for name in (
            "strides", "dilation", "padding", "output_padding", "groups", "data_layout",
            "kernel_layout", "out_layout"))
        found = _ATTRS.get(key)
    except TypeError:                   # a list-valued attribute: not hashable
        return _normalise(attrs)
    if found is None:
        if len(_ATTRS) > 1024:
            _ATTRS.clear()
        found = _ATTRS[key] = _normalise(attrs)
    return found


def _normalise(attrs) -> tuple:
    """:func:`_attrs`, computed (layouts defaulted as the op's: NCHW data, IOHW kernel)."""
    before, after = padding_pairs(attrs.get("padding", 0), 2)
    data_layout = attrs.get("data_layout") or "NCHW"
    return (ntuple(attrs.get("strides", 1), 2), ntuple(attrs.get("dilation", 1), 2),
            tuple(before), tuple(after), ntuple(attrs.get("output_padding", 0), 2),
            int(attrs.get("groups", 1)), data_layout, attrs.get("kernel_layout") or "IOHW",
            attrs.get("out_layout") or data_layout)


def _out_dtype(attrs, data):
    return np.dtype(attrs.get("out_dtype") or data.dtype)


def _earlier(x, w, strides, dilation, before, groups, out) -> None:
    """The earlier kernel (``W^T @ x`` per image and group, serial scatter-add): NCHW ``x``,
    IOHW ``w``, NCHW ``out`` (overwritten)."""
    _, in_channels, height, width = x.shape
    _, per_group_out, kh, kw = w.shape
    # A transposed view, not a copy: BLAS reads it with its transpose flag.
    wt = np.ascontiguousarray(w).reshape(
        groups, in_channels // groups, per_group_out * kh * kw).transpose(0, 2, 1)
    cols = np.empty((per_group_out * kh * kw, height * width), x.dtype)
    conv_core.conv2d_transpose_nchw(x, wt, out, cols, (kh, kw), strides, dilation, before,
                                    groups)


def _layout_ok(layout: str, letters: str) -> bool:
    return isinstance(layout, str) and sorted(layout) == sorted(letters)


def conv2d_transpose(data, weight, **attrs) -> tuple:
    """``nn.conv2d_transpose`` on CPU (the reference implementation's contract): any
    float32/float64 layouts (others transposed to NCHW/IOHW and back), other dtypes on the
    numpy reference.

    Args:
        data: the input in ``data_layout``.
        weight: the weight in ``kernel_layout``.
        **attrs: the op's attributes.

    Returns:
        ``(out,)`` in ``out_layout`` and ``out_dtype``.
    """
    if not is_float(data, weight) or data.ndim != 4 or weight.ndim != 4:
        return reference("nn.conv2d_transpose", (data, weight), attrs)
    (strides, dilation, before, after, extra, groups, data_layout, kernel_layout,
     out_layout) = _attrs(attrs)
    if not (_layout_ok(data_layout, "NCHW") and _layout_ok(kernel_layout, "IOHW")
            and _layout_ok(out_layout, "NCHW")):
        return reference("nn.conv2d_transpose", (data, weight), attrs)
    x = to_canonical(data, data_layout, "NCHW")
    kh, kw = weight.shape[kernel_layout.index("H")], weight.shape[kernel_layout.index("W")]
    per_group_out = weight.shape[kernel_layout.index("O")]
    oh, ow = output_size(x.shape[2:], (kh, kw), strides, dilation, before, after, extra)
    out = np.empty((x.shape[0], per_group_out * groups, oh, ow), x.dtype)
    if enabled():
        conv2d_transpose_nchw(x, weight, kernel_layout, out, strides, dilation, before, groups)
    else:
        _earlier(x, to_canonical(weight, kernel_layout, "IOHW"), strides, dilation, before,
                 groups, out)
    out = from_canonical(out, "NCHW", out_layout)
    return (out.astype(_out_dtype(attrs, data), copy=False),)


def _plan(out, data, weight, attrs):
    """``(strides, dilation, before, groups, kernel_layout)`` when the destination forms
    apply (float32/float64, NCHW data and output, a kernel layout that permutes IOHW, the
    output's shape and dtype, C-contiguous ``out``), else None."""
    if (not is_float(data, weight) or data.ndim != 4 or weight.ndim != 4
            or out.dtype != data.dtype or _out_dtype(attrs, data) != data.dtype
            or not out.flags.c_contiguous or not out.flags.writeable):
        return None
    (strides, dilation, before, after, extra, groups, data_layout, kernel_layout,
     out_layout) = _attrs(attrs)
    if data_layout != "NCHW" or out_layout != "NCHW" or not _layout_ok(kernel_layout, "IOHW"):
        return None
    kh, kw = weight.shape[kernel_layout.index("H")], weight.shape[kernel_layout.index("W")]
    channels = weight.shape[kernel_layout.index("I")]
    if groups < 1 or channels != data.shape[1] or channels % groups:
        return None
    sizes = output_size(data.shape[2:], (kh, kw), strides, dilation, before, after, extra)
    expected = (data.shape[0], weight.shape[kernel_layout.index("O")] * groups) + sizes
    if tuple(out.shape) != expected:
        return None
    return strides, dilation, before, groups, kernel_layout


def into(out, data, weight, **attrs) -> bool:
    """:func:`conv2d_transpose` written into ``out`` (no allocation).

    Args:
        out: the result's array (NCHW, C-contiguous, the data's dtype).
        data, weight, **attrs: as :func:`conv2d_transpose`.

    Returns:
        False (``out`` untouched) where only :func:`conv2d_transpose` applies (other
        dtypes or data layouts, an ``out_dtype`` other than the data's), else True.
    """
    plan = _plan(out, data, weight, attrs)
    if plan is None:
        return False
    strides, dilation, before, groups, kernel_layout = plan
    x = np.ascontiguousarray(data)
    if enabled():
        conv2d_transpose_nchw(x, weight, kernel_layout, out, strides, dilation, before, groups)
    else:
        _earlier(x, to_canonical(weight, kernel_layout, "IOHW"), strides, dilation, before,
                 groups, out)
    return True


def into_fused(out, data, weight, epilogue, **attrs) -> bool:
    """:func:`into` with a fused epilogue applied to each output row as it is written.

    Args:
        out, data, weight, **attrs: as :func:`into`.
        epilogue: an :class:`~jitkernels.cpu.epilogue.Epilogue` over the output channels
            (axis 1), its residual (if any) shaped like ``out``.

    Returns:
        False (``out`` untouched) where :func:`into` declines, the gather kernel is switched
        off, or the epilogue does not fit (dtype, vector length, residual shape, a step
        kind this kernel does not know); True once ``out`` holds the result.
    """
    if not enabled():
        return False
    plan = _plan(out, data, weight, attrs)
    if plan is None:
        return False
    kinds, vectors, residual = epilogue.kinds, epilogue.vectors, epilogue.residual
    if vectors.dtype != out.dtype or vectors.ndim != 2 or vectors.shape[0] != kinds.shape[0] \
            or any(int(k) not in _KNOWN_KINDS for k in kinds):
        return False
    if kinds.size and vectors.shape[1] != out.shape[1]:
        return False
    if RESIDUAL in kinds:
        if residual.shape != out.shape or residual.dtype != out.dtype:
            return False
        epilogue = type(epilogue)(kinds, vectors, np.ascontiguousarray(residual))
    strides, dilation, before, groups, kernel_layout = plan
    conv2d_transpose_nchw(np.ascontiguousarray(data), weight, kernel_layout, out, strides,
                          dilation, before, groups, epilogue)
    return True


def _col2im_team(*args):
    """:func:`col2im_team` with the geometry tuple (``args[6]``) as an int64 array."""
    col2im_team(*args[:6], np.asarray(args[6], np.int64), *args[7:])
