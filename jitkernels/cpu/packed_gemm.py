"""Few-row float32 products on a weight packed once (issue #24: a GPT-2 decode step).

A decode step multiplies 1-64 rows by constant weights (``(16, 384) @ (384, 1536)``...).
OpenBLAS packs the weight into its panel layout at every call: with few rows that copy is a
large share of the call, and in a graph (28 MB of weights per step) the weight comes from
L3 or memory each time, so the step's products ran at 35-55 GFLOP/s against ~90 for the
same core on large products. onnxruntime packs its weights once at load. This module does
the same for the graph executor's constant weights:

* :func:`packed_weight` packs a read-only ``(K, N)`` float32 weight (a graph constant:
  ``interp.build`` makes bound weights read-only) into column blocks of 64,
  ``(ceil(N / 64), K, 64)`` (zero padding), once per array (cached while it lives);
* the micro-kernel (``rows`` x 64 columns for ``rows`` <= 6: 24 zmm accumulators, the k loop
  written in LLVM IR through a numba intrinsic, ``llvm.fma.v16f32``) streams one block's
  ``K x 64`` panel once per 6 rows, the panel staying in L2 between row blocks;
* the driver runs the column blocks in a ``prange`` when numba has several threads and the
  product is large enough (:data:`PARALLEL_MIN_WORK`), else serially.

Each output is ``sum_k a[i, k] * w[k, j]`` accumulated in k order with fused multiply-adds
(as OpenBLAS's kernels do), so results agree with the float64 product to float32 rounding.

Cost rule (:func:`try_product`): float32, 2-D, at most :data:`MAX_ROWS` rows, at least
:data:`MIN_WORK` multiply-adds, a read-only weight, AVX-512 on the CPU; anything else
returns False and the caller runs its BLAS. ``IRLIB_PACKED_GEMM=0`` turns it off.
"""

from __future__ import annotations

import os
import threading
import weakref

import numpy as np
from numba import njit, prange

from .broadcast_kernel import FLOAT32, micro_kernels

__all__ = ["available", "try_product", "prepare", "packed_weight", "pack", "BLOCK_COLUMNS",
           "MAX_ROWS", "MIN_WORK", "PARALLEL_MIN_WORK", "ENV_SWITCH"]

BLOCK_COLUMNS = 64
"""Columns of one micro-kernel block (four 16-lane float32 vectors)."""

_ROWS = 6
"""Rows of the full micro-kernel (6 x 4 accumulators + 4 weight vectors + 1 broadcast)."""

MAX_ROWS = 64
"""Most rows a product may have to run here: above it OpenBLAS's packing is amortised."""

MIN_WORK = 1 << 17
"""Fewest ``M*K*N`` multiply-adds (smaller products run inline in generated code)."""

PARALLEL_MIN_WORK = 1 << 20
"""Fewest multiply-adds for the column blocks to run on numba's threads."""

ENV_SWITCH = "IRLIB_PACKED_GEMM"
"""Environment variable: ``0`` (``off``/``false``/``no``) keeps every product on BLAS."""


def _host_has_avx512() -> bool:
    try:
        import llvmlite.binding as llvm
        features = llvm.get_host_cpu_features()
    except Exception:  # noqa: BLE001 - no feature query: keep BLAS
        return False
    return bool(features.get("avx512f", False))


_AVAILABLE = None


def available() -> bool:
    """Whether the packed path may run: AVX-512 F on the CPU and :data:`ENV_SWITCH` not off
    (read at each call)."""
    global _AVAILABLE
    if os.environ.get(ENV_SWITCH, "1").strip().lower() in ("0", "off", "false", "no"):
        return False
    if _AVAILABLE is None:
        _AVAILABLE = _host_has_avx512()
    return _AVAILABLE


# -- the micro-kernel (jitkernels.cpu.broadcast_kernel): rows x 64 columns ----------------------

_mk1, _mk2, _mk3, _mk4, _mk5, _mk6 = micro_kernels(FLOAT32)


@njit(cache=True)
def _block(c, a, bp, i0, jb, depth, lda, rows):
    if rows == 6:
        _mk6(c, a, bp, i0, jb, depth, lda)
    elif rows == 5:
        _mk5(c, a, bp, i0, jb, depth, lda)
    elif rows == 4:
        _mk4(c, a, bp, i0, jb, depth, lda)
    elif rows == 3:
        _mk3(c, a, bp, i0, jb, depth, lda)
    elif rows == 2:
        _mk2(c, a, bp, i0, jb, depth, lda)
    else:
        _mk1(c, a, bp, i0, jb, depth, lda)


@njit(cache=True)
def _column_block(a, bp, out, jb, scratch):
    rows, units = out.shape
    depth = a.shape[1]
    j0 = jb * BLOCK_COLUMNS
    width = min(BLOCK_COLUMNS, units - j0)
    for i0 in range(0, rows, _ROWS):
        count = min(_ROWS, rows - i0)
        _block(scratch, a, bp, i0, jb, depth, depth, count)
        for r in range(count):
            for j in range(width):
                out[i0 + r, j0 + j] = scratch[r, j]


@njit(cache=True)
def _gemm_serial(a, bp, out):
    """``out = a @ W`` for C-contiguous float32 ``a (M, K)`` and the packed ``W``."""
    scratch = np.empty((_ROWS, BLOCK_COLUMNS), np.float32)
    for jb in range(bp.shape[0]):
        _column_block(a, bp, out, jb, scratch)


@njit(cache=True, parallel=True)
def _gemm_parallel(a, bp, out):
    """:func:`_gemm_serial` with the column blocks on numba's threads."""
    for jb in prange(bp.shape[0]):
        scratch = np.empty((_ROWS, BLOCK_COLUMNS), np.float32)
        _column_block(a, bp, out, jb, scratch)


# -- weights ----------------------------------------------------------------------------------

def pack(weight: np.ndarray) -> np.ndarray:
    """``weight`` ``(K, N)`` (any layout) packed as float32 ``(ceil(N / 64), K, 64)``:
    ``packed[jb, k, c] = weight[k, 64 jb + c]``, zeros past ``N``."""
    depth, units = weight.shape
    blocks = -(-units // BLOCK_COLUMNS)
    padded = np.zeros((depth, blocks * BLOCK_COLUMNS), np.float32)
    padded[:, :units] = weight
    return np.ascontiguousarray(padded.reshape(depth, blocks, BLOCK_COLUMNS)
                                .transpose(1, 0, 2))


_WEIGHTS: dict = {}         # (id(array), transposed) -> (weakref to it, packed array)
_LOCK = threading.Lock()


def _forget(key):
    with _LOCK:
        _WEIGHTS.pop(key, None)


def packed_weight(b: np.ndarray, transposed: bool):
    """The cached packed form of read-only float32 ``b`` (``(K, N)``, or ``(N, K)`` when
    ``transposed``), or None (writable, not 2-D or not float32).

    Only read-only arrays are packed: their values cannot change while they live, so the
    packed copy (kept until the array is freed) never goes stale.
    """
    if b.ndim != 2 or b.dtype != np.float32 or b.flags.writeable:
        return None
    key = (id(b), transposed)
    entry = _WEIGHTS.get(key)
    if entry is not None and entry[0]() is b:
        return entry[1]
    packed = pack(b.T if transposed else b)
    try:
        ref = weakref.ref(b, lambda _, key=key: _forget(key))
    except TypeError:
        return packed
    with _LOCK:
        _WEIGHTS[key] = (ref, packed)
    return packed


# -- the product ------------------------------------------------------------------------------

def _threads() -> int:
    """numba's thread count (its configured maximum: ``get_num_threads`` costs ~1 us)."""
    from numba import config
    return config.NUMBA_NUM_THREADS


def _plan(a, b, transposed: bool, out):
    """``(driver, a, packed)`` running ``out = a @ b`` on the packed path, or None where the
    cost rule says no (see the module docstring); ``a`` possibly a contiguous copy."""
    if a.ndim != 2 or b.ndim != 2 or out.ndim != 2 or a.dtype != np.float32 \
            or out.dtype != np.float32 or b.flags.writeable or not out.flags.c_contiguous \
            or not out.flags.writeable:
        return None
    rows, depth = a.shape
    units = out.shape[1]
    work = rows * depth * units
    if rows > MAX_ROWS or out.shape[0] != rows or work < MIN_WORK or not available():
        return None
    if (b.shape[1] if transposed else b.shape[0]) != depth or \
            (b.shape[0] if transposed else b.shape[1]) != units:
        return None
    packed = packed_weight(b, transposed)
    if packed is None:
        return None
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    if np.may_share_memory(a, out):
        return None
    driver = _gemm_parallel if work >= PARALLEL_MIN_WORK and _threads() > 1 else _gemm_serial
    return driver, a, packed


def try_product(a: np.ndarray, b: np.ndarray, transposed: bool, out: np.ndarray) -> bool:
    """``out = a @ b`` (``b.T`` when ``transposed``) on the packed path; False, ``out``
    untouched, where it does not apply (see the module docstring's cost rule).

    Args:
        a: float32 ``(M, K)``.
        b: the weight: ``(K, N)``, or ``(N, K)`` when ``transposed``; read-only.
        transposed: whether ``b`` is stored ``(N, K)``.
        out: float32 ``(M, N)``, C-contiguous, writable.
    """
    plan = _plan(a, b, transposed, out)
    if plan is None:
        return False
    driver, a, packed = plan
    driver(a, packed, out)
    return True


def prepare(a: np.ndarray, b: np.ndarray, transposed: bool, out: np.ndarray):
    """A callable computing ``out = a @ b`` on the packed path for these very arrays (the
    checks and the weight's packing done now, once), or None where :func:`try_product`
    would decline. ``a`` must be C-contiguous (the callable reads its current contents).

    Args:
        a, b, transposed, out: as :func:`try_product`.
    """
    if not a.flags.c_contiguous:
        return None
    plan = _plan(a, b, transposed, out)
    if plan is None:
        return None
    driver, a, packed = plan
    return lambda: driver(a, packed, out)
