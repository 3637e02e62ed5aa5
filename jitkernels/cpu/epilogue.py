"""Conv epilogues applied while the output is in cache (issue #17: bias, batch-norm,
residual add, ReLU fused into the convolution).

A fused group ``relu(conv(x, w) * scale + shift + residual)`` used to run the convolution
into a buffer and then a generated loop over the whole output. When the group's epilogue is
a chain of the steps below on a channels-last output, the code generator
(:mod:`jitkernels.codegen.epilogue`) hands it to the convolution instead, which writes the
graph's output directly and applies the steps per block of output rows right after the
GEMM that produced them (per tile in Winograd's output transform), while they are in cache.

An :class:`Epilogue` is a short program over each output pixel's channel vector ``v``:

* ``ADD``: ``v += vectors[s]`` (a per-channel bias or batch-norm shift);
* ``MUL``: ``v *= vectors[s]`` (a per-channel batch-norm scale);
* ``RESIDUAL``: ``v += residual[pixel]`` (a tensor of the output's shape);
* ``RELU``: ``v = max(v, 0)``.

``IRLIB_FUSED_EPILOGUE=0`` turns this off (the generated second pass runs instead).
"""

from __future__ import annotations

import os

import numpy as np
from numba import njit, uint64

ADD, MUL, RESIDUAL, RELU = 0, 1, 2, 3

ENV_SWITCH = "IRLIB_FUSED_EPILOGUE"
"""Environment variable: ``0`` (``off``/``false``/``no``) keeps epilogues in the generated
second pass (read when a group is compiled)."""


def enabled() -> bool:
    """Whether conv groups may fuse their epilogue into the kernel (:data:`ENV_SWITCH`)."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "off", "false", "no")

ROW_BLOCK_BYTES = 256 << 10
"""Bytes of output a row block holds (the GEMM's output block stays in L2 for its epilogue)."""

MIN_BLOCK_ROWS = 256
"""Fewest rows per blocked GEMM (BLAS slows down on fewer)."""


class Epilogue:
    """The steps of a fused epilogue, as arrays the numba kernels read.

    Attributes:
        kinds: ``int64 (S,)``, the step kinds.
        vectors: ``(S, O)``: the per-channel operand of ADD/MUL steps (zero rows otherwise).
        residual: the RESIDUAL operand, shaped like the output (one at most), or a
            ``(1, 1, 1, 1)`` placeholder.
    """

    __slots__ = ("kinds", "vectors", "residual")

    def __init__(self, kinds, vectors, residual):
        self.kinds, self.vectors, self.residual = kinds, vectors, residual


_EMPTY: dict = {}


def empty(dtype) -> Epilogue:
    """The epilogue with no steps, for kernels that take one (cached per dtype)."""
    dtype = np.dtype(dtype)
    epilogue = _EMPTY.get(dtype)
    if epilogue is None:
        epilogue = _EMPTY[dtype] = Epilogue(np.zeros(0, np.int64), np.zeros((0, 1), dtype),
                                            np.zeros((1, 1, 1, 1), dtype))
    return epilogue


def block_rows(out_channels: int, itemsize: int) -> int:
    """Output rows (pixels) per GEMM + epilogue block."""
    return max(MIN_BLOCK_ROWS, ROW_BLOCK_BYTES // max(1, out_channels * itemsize))


@njit(cache=True, inline="always")
def apply_pixel(out, base, kinds, vectors, residual, rbase):
    """Apply the steps to the channel vector ``out[base:base + O]`` (flat arrays; the
    residual's vector starts at ``rbase``). Unsigned flat indices, so that numba emits no
    negative-index check and LLVM vectorises each step's loop (3x faster, measured)."""
    channels = uint64(vectors.shape[1])
    start, rstart = uint64(base), uint64(rbase)
    zero = out.dtype.type(0)
    for s in range(kinds.shape[0]):
        kind = kinds[s]
        row = vectors[s]
        if kind == 0:
            for c in range(channels):
                out[start + c] += row[c]
        elif kind == 1:
            for c in range(channels):
                out[start + c] *= row[c]
        elif kind == 2:
            for c in range(channels):
                out[start + c] += residual[rstart + c]
        else:
            for c in range(channels):
                out[start + c] = max(out[start + c], zero)


@njit(cache=True)
def apply_rows(out, first, last, kinds, vectors, residual):
    """Apply the steps to rows ``first:last`` of a ``(rows, O)`` output whose residual (if
    any) is the matching ``(rows, O)`` array."""
    channels = out.shape[1]
    flat = out.reshape(-1)
    rflat = residual.reshape(-1)
    for row in range(first, last):
        apply_pixel(flat, row * channels, kinds, vectors, rflat, row * channels)


def gemm_rows(a, b, out, epilogue, gemm, residual=None) -> None:
    """``out = a @ b`` by blocks of rows, each followed by the epilogue on its rows.

    Args:
        a: ``(M, K)``; b: ``(K, O)``; out: C-contiguous ``(M, O)``.
        epilogue: an :class:`Epilogue` or None (then one GEMM).
        gemm: the GEMM function (``jitkernels.cpu.blas.gemm``).
        residual: the residual rows matching ``out`` (``(M, O)``), when the epilogue has
            a RESIDUAL step.
    """
    if epilogue is None:
        gemm(a, b, out)
        return
    rows = out.shape[0]
    step = block_rows(out.shape[1], out.itemsize)
    res = residual if residual is not None else epilogue.residual.reshape(1, -1)
    if a.strides[1] != a.itemsize:
        # Row blocks of a transposed operand are strided views numpy would copy: one GEMM,
        # then the epilogue block by block.
        gemm(a, b, out)
        apply_rows(out, 0, rows, epilogue.kinds, epilogue.vectors, res)
        return
    for first in range(0, rows, step):
        last = min(rows, first + step)
        gemm(a[first:last], b, out[first:last])
        apply_rows(out, first, last, epilogue.kinds, epilogue.vectors, res)
