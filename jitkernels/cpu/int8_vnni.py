"""Integer-valued float32 products on AVX-512 VNNI: uint8 x int8 dot products with int32
accumulation (``vpdpbusd``), exact.

A dynamically quantized Linear layer reaches the graph executor as a float32 product whose
operands hold integers (:mod:`irlib.transform.lower_integer_matmul`): the activation
``q - zero_point`` (``q`` uint8) and an int8 weight constant. The float GEMM computes them
exactly but at float speed; ``vpdpbusd`` multiplies 64 byte pairs per instruction, ~4.5x the
float32 FMA rate on the same core (one thread, 128x384x1536: 0.34 ms vs 1.56 ms for numpy's
float32 ``matmul``; ~450 GOP/s).

:func:`try_product` takes ``out = a @ b`` (float32, 2-D) on this path when

* the CPU has AVX-512 F/BW/VNNI (:func:`available`) and ``IRLIB_INT8_GEMM`` is not ``0``;
* ``b`` is a read-only array (a graph constant: irlib's constants are read-only, the
  graph's buffers writable) whose values are integers in ``[-128, 127]`` and whose columns'
  absolute sums keep ``255 * sum_k |b[k, j]|`` below ``2**31`` (no int32 overflow); checked
  once per array (:func:`packed_weight`, cached while the array lives, with its packed form);
* ``a``'s values are integers spanning at most 255 (``a - min(a)`` fits uint8): one pass
  (:func:`_integer_bounds`) that stops after the first row holding a non-integer (float
  activations cost one row) and also finds the minimum and maximum.

Then ``out[i, j] = float32(sum_k (a[i, k] - m) * b[k, j] + m * sum_k b[k, j])`` with
``m = min(a)``: the exact integer, rounded once, which is what the float GEMM gives whenever
it is exact (and the correctly rounded product otherwise). Anything else returns False and
the caller runs the float GEMM.

The micro-kernel (6 rows x 64 columns, 24 zmm accumulators, the k loop in LLVM IR through a
numba intrinsic) reads ``b`` packed as ``[column block][k/4][4 vectors x 16 columns x 4 k]``
and ``a`` as uint8 rows padded to a multiple of 4; the driver converts each finished block
to float32 while it is in cache.

Threads (:func:`run_gemm`): the product is cut into chunks (a 64-column block times a band
of ~66 rows) claimed from an atomic counter by numba's workers (:mod:`jitkernels.cpu.
work_sharing`, :func:`_gemm_team`): on an idle core a second worker halves a large
product, and a worker that starts late takes fewer chunks; while other processes keep the
cores busy the caller runs it alone. Products of at least
:data:`SHARE_MIN_MACS` multiply-adds use :func:`threads_allowed` threads (irlib's GEMM
thread count, or ``IRLIB_INT8_THREADS``; ``1`` keeps every product on the calling thread).
"""

from __future__ import annotations

import os
import threading
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .broadcast_kernel import UINT8_INT8, micro_kernels
from .work_sharing import claim, finish, new_state, share
from .weight_cache import WeightCache

__all__ = ["available", "try_product", "packed_weight", "pack", "PackedWeight",
           "MIN_FLOPS", "BLOCK_COLUMNS", "run_gemm", "plan_chunks", "threads_allowed",
           "SHARE_MIN_MACS", "BAND_TILES"]

BLOCK_COLUMNS = 64
"""Columns of one micro-kernel block (four 16-lane int32 vectors)."""

_ROWS = 6
"""Rows of the full micro-kernel (6 x 4 accumulators + 4 weight vectors + 1 broadcast)."""

MIN_FLOPS = 1 << 15
"""Products with fewer ``M*K*N`` stay on the float GEMM (the checks cost more than they save)."""

_INT32_LIMIT = 2 ** 31


def _host_has_vnni() -> bool:
    try:
        import llvmlite.binding as llvm
        features = llvm.get_host_cpu_features()
    except Exception:  # noqa: BLE001 - no feature query: take the float path
        return False
    return all(features.get(name, False) for name in ("avx512f", "avx512bw", "avx512vnni"))


_AVAILABLE = None


def available() -> bool:
    """Whether the VNNI path may run: the CPU has AVX-512 F/BW/VNNI and the environment
    variable ``IRLIB_INT8_GEMM`` is not ``0`` (read at each call)."""
    global _AVAILABLE
    if os.environ.get("IRLIB_INT8_GEMM", "").strip() == "0":
        return False
    if _AVAILABLE is None:
        _AVAILABLE = _host_has_vnni()
    return _AVAILABLE


# -- the micro-kernel (jitkernels.cpu.broadcast_kernel): rows x 64 columns ----------------------

_mk1, _mk2, _mk3, _mk4, _mk5, _mk6 = micro_kernels(UINT8_INT8)


@njit(cache=True)
def _block(c, a, bp, i0, jb, kg, lda, rows):
    if rows == 6:
        _mk6(c, a, bp, i0, jb, kg, lda)
    elif rows == 5:
        _mk5(c, a, bp, i0, jb, kg, lda)
    elif rows == 4:
        _mk4(c, a, bp, i0, jb, kg, lda)
    elif rows == 3:
        _mk3(c, a, bp, i0, jb, kg, lda)
    elif rows == 2:
        _mk2(c, a, bp, i0, jb, kg, lda)
    else:
        _mk1(c, a, bp, i0, jb, kg, lda)


@njit(cache=True)
def _store(scratch, out, correction, i0, j0, count, width):
    """``out[i0:i0 + count, j0:j0 + width] = float32(scratch + correction)``: a full
    64-wide block through row views and a constant trip count (so LLVM vectorises the
    int64 -> float32 conversion: the general loop stayed scalar in some callers, +40% on
    a 128x384x1536 product)."""
    if width == BLOCK_COLUMNS:
        for r in range(count):
            row = out[i0 + r, j0:j0 + BLOCK_COLUMNS]
            for j in range(BLOCK_COLUMNS):
                row[j] = np.float32(np.int64(scratch[r, j]) + correction[j])
        return
    for r in range(count):
        for j in range(width):
            out[i0 + r, j0 + j] = np.float32(np.int64(scratch[r, j]) + correction[j])


@njit(cache=True, nogil=True)
def _gemm(a, bp, kg, colsum, offset, out, bands, state, total):
    """``out = float32((a @ W) + offset * colsum)`` for uint8 ``a (M, 4*kg)`` and the packed
    int8 ``W``, chunk by chunk (:mod:`jitkernels.cpu.work_sharing`): chunk ``t`` is column
    block ``t // bands`` times row band ``t % bands`` (``bands`` equal runs of 6-row
    tiles); each 6x64 block converted while in cache."""
    rows, units = out.shape
    lda = a.shape[1]
    tiles = (rows + _ROWS - 1) // _ROWS
    scratch = np.empty((_ROWS, BLOCK_COLUMNS), np.int32)
    correction = np.empty(BLOCK_COLUMNS, np.int64)
    while True:
        chunk = claim(state, total)
        if chunk < 0:
            break
        jb = chunk // bands
        band = chunk % bands
        j0 = jb * BLOCK_COLUMNS
        width = min(BLOCK_COLUMNS, units - j0)
        for j in range(width):
            correction[j] = offset * colsum[j0 + j]
        first = (tiles * band // bands) * _ROWS
        last = min((tiles * (band + 1) // bands) * _ROWS, rows)
        i0 = first
        while i0 + _ROWS <= last:
            _mk6(scratch, a, bp, i0, jb, kg, lda)
            _store(scratch, out, correction, i0, j0, _ROWS, width)
            i0 += _ROWS
        if i0 < last:
            _block(scratch, a, bp, i0, jb, kg, lda, last - i0)
            _store(scratch, out, correction, i0, j0, last - i0, width)
        finish(state)


_LIMIT = np.float32(2.0 ** 30)
"""Values are clamped to ``[-2**30, 2**30]`` before the int32 conversion (so it is defined
for every input, NaN and infinities included); a clamped value differs from the input."""


@njit(cache=True)
def _integer_bounds(a):
    """``(ok, low, high)``: whether every element of 2-D float32 ``a`` is an integer of
    magnitude at most ``2**30`` (NaN, infinities and fractions are not), and the smallest
    and largest; stops after the first row holding anything else. One pass, branch-free
    inside a row: each value is clamped, converted to int32 and compared with the input,
    and the int32 minimum and maximum reduce in vector registers (no float min/max, which
    would not vectorise without fast-math)."""
    low = np.int32(2 ** 30)
    high = np.int32(-2 ** 30)
    for i in range(a.shape[0]):
        bad = 0
        row_low = np.int32(2 ** 30)
        row_high = np.int32(-2 ** 30)
        for k in range(a.shape[1]):
            value = a[i, k]
            clamped = value if value > -_LIMIT else -_LIMIT
            clamped = clamped if clamped < _LIMIT else _LIMIT
            x = np.int32(clamped)
            bad |= np.float32(x) != value
            row_low = min(row_low, x)
            row_high = max(row_high, x)
        if bad:
            return False, 0, 0
        low = min(low, row_low)
        high = max(high, row_high)
    return True, low, high


def _integer_span(a):
    """``(ok, low)``: whether ``a``'s elements are integers spanning at most 255, and the
    smallest."""
    ok, low, high = _integer_bounds(a)
    if not ok or int(high) - int(low) > 255:
        return False, 0
    return True, int(low)


@njit(cache=True)
def _to_uint8(a, low, dest):
    """``dest[:, :K] = uint8(a - low)`` for integer-valued ``a`` spanning at most 255
    above ``low`` (int32 arithmetic: vectorises, ~3x the float form)."""
    for i in range(a.shape[0]):
        row = dest[i]
        for k in range(a.shape[1]):
            row[k] = np.uint8(np.int32(a[i, k]) - low)


@njit(cache=True)
def _int8_valued(b):
    for i in range(b.shape[0]):
        for j in range(b.shape[1]):
            v = b[i, j]
            if v != np.floor(v) or v < -128.0 or v > 127.0:
                return False
    return True


# -- weights ----------------------------------------------------------------------------------

class PackedWeight(NamedTuple):
    """A ``(K, N)`` int8-valued weight packed for the micro-kernel.

    Attributes:
        packed: int8 ``(ceil(N/64), ceil(K/4), 256)``.
        colsum: int64 ``(N,)``, ``sum_k W[k, j]`` (the zero-point correction).
        depth: K.
        units: N.
    """

    packed: np.ndarray
    colsum: np.ndarray
    depth: int
    units: int


def pack(weight: np.ndarray):
    """The :class:`PackedWeight` of a ``(K, N)`` float or integer array, or None when its
    values are not all integers in ``[-128, 127]`` or int32 sums could overflow."""
    if weight.ndim != 2 or weight.size == 0:
        return None
    if weight.dtype.kind == "f":
        if not _int8_valued(weight):
            return None
    elif weight.dtype.kind not in "iu" or weight.min() < -128 or weight.max() > 127:
        return None
    depth, units = weight.shape
    values = weight.astype(np.int64)
    if 255 * int(np.abs(values).sum(axis=0).max()) >= _INT32_LIMIT:
        return None
    groups, blocks = -(-depth // 4), -(-units // BLOCK_COLUMNS)
    padded = np.zeros((groups * 4, blocks * BLOCK_COLUMNS), np.int8)
    padded[:depth, :units] = values
    # packed[jb, g, v*64 + c*4 + t] = padded[4g + t, jb*64 + v*16 + c]
    layout = padded.reshape(groups, 4, blocks, 4, 16).transpose(2, 0, 3, 4, 1)
    return PackedWeight(np.ascontiguousarray(layout).reshape(blocks, groups, 256),
                        values.sum(axis=0), depth, units)


_WEIGHTS = WeightCache()


def packed_weight(b: np.ndarray, transposed: bool):
    """The cached :class:`PackedWeight` of read-only ``b`` (``(K, N)``, or ``(N, K)`` when
    ``transposed``), or None (not int8-valued, writable, or not 2-D)."""
    if b.ndim != 2:
        return None
    return _WEIGHTS.get(b, transposed, lambda w: pack(w.T if transposed else w))


# -- the product ------------------------------------------------------------------------------

_SCRATCH = threading.local()


def _uint8_rows(rows: int, width: int) -> np.ndarray:
    """This thread's zero-initialised-padding uint8 buffer ``(rows, width)``."""
    buffer = getattr(_SCRATCH, "buffer", None)
    if buffer is None or buffer.size < rows * width:
        buffer = _SCRATCH.buffer = np.zeros(max(rows * width, 1), np.uint8)
    view = buffer[:rows * width].reshape(rows, width)
    return view


def try_product(a: np.ndarray, b: np.ndarray, transposed: bool, out: np.ndarray) -> bool:
    """``out = a @ b`` (``b.T`` when ``transposed``) on the VNNI path; False, ``out``
    untouched, where it does not apply (see the module docstring).

    Args:
        a: float32 ``(M, K)``.
        b: the weight: ``(K, N)``, or ``(N, K)`` when ``transposed``.
        transposed: whether ``b`` is stored ``(N, K)``.
        out: float32 ``(M, N)``, C-contiguous.
    """
    if a.ndim != 2 or a.dtype != np.float32 or out.dtype != np.float32 or \
            not out.flags.c_contiguous or a.shape[0] * a.shape[1] * out.shape[1] < MIN_FLOPS \
            or not available():
        return False
    weight = packed_weight(b, transposed)
    if weight is None or weight.depth != a.shape[1] or weight.units != out.shape[1]:
        return False
    ok, low = _integer_span(a)
    if not ok:
        return False
    groups = weight.packed.shape[1]
    rows = _uint8_rows(a.shape[0], groups * 4)
    if groups * 4 != a.shape[1]:
        rows[:, a.shape[1]:] = 0
    _to_uint8(a, np.int32(low), rows)
    run_gemm(rows, weight.packed, weight.colsum, low, out)
    return True


def plan_chunks(rows: int, blocks: int, depth: int, threads: int):
    """``(bands, threads)``: the row bands each column block is cut into and the threads
    that work on one product (see :data:`SHARE_MIN_MACS`, :data:`BAND_TILES`).

    Args:
        rows: M.
        blocks: 64-column blocks (``ceil(N / 64)``).
        depth: K (padded to a multiple of 4).
        threads: threads allowed (the caller included).
    """
    tiles = -(-rows // _ROWS)
    if threads < 2 or rows * depth * blocks * BLOCK_COLUMNS < SHARE_MIN_MACS:
        return 1, 1
    return max(1, min(tiles, round(tiles / BAND_TILES))), threads


def run_gemm(rows: np.ndarray, packed: np.ndarray, colsum: np.ndarray, low: float,
             out: np.ndarray, threads=None) -> None:
    """``out = float32(rows @ W + low * colsum)`` for uint8 ``rows (M, 4 * kg)`` (zero
    padded past K) and the packed weight ``packed``; on :func:`threads_allowed` threads
    (or ``threads``) when the product is large enough (:func:`plan_chunks`).

    Args:
        rows: the uint8 activation, C-contiguous, its width a multiple of 4.
        packed: :attr:`PackedWeight.packed`.
        colsum: :attr:`PackedWeight.colsum`.
        low: the offset subtracted from the activation before it became uint8.
        out: float32 ``(M, N)``, C-contiguous.
        threads: threads allowed; default :func:`threads_allowed`.
    """
    groups = packed.shape[1]
    bands, count = plan_chunks(rows.shape[0], packed.shape[0], groups * 4,
                               threads_allowed() if threads is None else threads)
    total = packed.shape[0] * bands
    state = new_state()
    share(_gemm, (rows, packed, groups, colsum, np.int64(low), out, bands, state, total),
          state, total, count, _gemm_team)


@njit(cache=True, parallel=True, nogil=True)
def _gemm_team(a, bp, kg, colsum, offset, out, bands, state, total, threads):
    """:func:`_gemm` on ``threads`` of numba's workers at once, each claiming chunks
    (:func:`jitkernels.cpu.work_sharing.share`'s ``team``; compiled and cached once)."""
    for _ in prange(threads):
        _gemm(a, bp, kg, colsum, offset, out, bands, state, total)


SHARE_MIN_MACS = 1 << 22
"""Products of fewer multiply-adds (~20 us on one core) run on the calling thread only: a
helper takes about as long to wake."""

BAND_TILES = 11
"""6-row tiles per row band (a chunk is one 64-column block of a band): 128 rows make two
bands, so a 384-column product has 12 chunks to share."""


def threads_allowed() -> int:
    """Threads one product may use: irlib's GEMM thread count
    (:func:`jitkernels.cpu.blas.get_num_threads`: ``IRLIB_NUM_THREADS``, ...), unless
    ``IRLIB_INT8_THREADS`` sets it (read at each call)."""
    value = os.environ.get("IRLIB_INT8_THREADS", "").strip()
    if value.isdigit() and int(value) > 0:
        return int(value)
    from .blas import get_num_threads
    return get_num_threads()
