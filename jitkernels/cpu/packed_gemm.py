"""float32 products on a weight packed once: few-row products (issue #24: a GPT-2 decode
step) and the convolutions' GEMMs with their fused epilogue (issue #17).

A decode step multiplies 1-64 rows by constant weights (``(16, 384) @ (384, 1536)``...).
OpenBLAS packs the weight into its panel layout at every call: with few rows that copy is a
large share of the call, and in a graph (28 MB of weights per step) the weight comes from
L3 or memory each time, so the step's products ran at 35-55 GFLOP/s against ~90 for the
same core on large products. onnxruntime packs its weights once at load. This module does
the same for the graph executor's constant weights:

* :func:`packed_weight` packs a read-only ``(K, N)`` float32 weight (a graph constant:
  ``interp.build`` makes bound weights read-only) into column blocks of 64,
  ``(ceil(N / 64), K, 64)`` (zero padding), once per weight memory (cached while its owner
  lives; a fresh view of the same constant finds the entry);
* the micro-kernel (``rows`` x 64 columns for ``rows`` <= 6: 24 zmm accumulators, the k loop
  written in LLVM IR through a numba intrinsic, ``llvm.fma.v16f32``) runs in the drivers of
  :mod:`jitkernels.cpu.packed_blocks`: tasks of (row chunk x 64-column block), depth cut
  into :data:`DEPTH_BLOCK` chunks whose panel stays in L2, the epilogue applied to each
  6 x 64 block in L1 before it is stored; the tasks run in a ``prange`` when numba has
  several threads and the product is large enough (:data:`PARALLEL_MIN_WORK`).

Each output is ``sum_k a[i, k] * w[k, j]`` accumulated with fused multiply-adds in k order
within a depth chunk, so results agree with the float64 product to float32 rounding.

Cost rules: :func:`try_product` (dense/matmul): float32, 2-D, at most :data:`MAX_ROWS` rows,
at least :data:`MIN_WORK` multiply-adds, a read-only weight, AVX-512 on the CPU;
:func:`conv_product` (NHWC convolutions' GEMMs, any rows): :func:`conv_pays` too. Anything
else returns False and the caller runs its BLAS. ``IRLIB_PACKED_GEMM=0`` turns both off,
``IRLIB_PACKED_CONV=0`` only the convolutions'.
"""

from __future__ import annotations

import os

import numpy as np

from . import packed_blocks
from .epilogue import RESIDUAL
from .packed_blocks import BLOCK_COLUMNS, ROWS as _ROWS
from .weight_cache import WeightCache

__all__ = ["available", "try_product", "prepare", "conv_product", "conv_pays", "task_shape",
           "FEW_ROWS_PER_CHUNK",
           "packed_weight", "pack", "BLOCK_COLUMNS", "MAX_ROWS", "MIN_WORK",
           "PARALLEL_MIN_WORK", "PANEL_BYTES", "DEPTH_BLOCK", "CONV_MIN_DEPTH", "SHALLOW_DEPTH",
           "WIDE_UNITS", "ENV_SWITCH", "CONV_SWITCH"]

MAX_ROWS = 64
"""Most rows a product may have to run here: above it OpenBLAS's packing is amortised."""

MIN_WORK = 1 << 17
"""Fewest ``M*K*N`` multiply-adds (smaller products run inline in generated code)."""

PARALLEL_MIN_WORK = 1 << 20
"""Fewest multiply-adds for the tasks to run on numba's threads."""

PANEL_BYTES = 512 << 10
"""Bytes of packed panel chunks one task's column group may hold (half the 1 MB L2)."""

DEPTH_BLOCK = 1024
"""Depth per K chunk: a column panel's chunk is 256 KB, in the 1 MB L2 while a task's rows
stream past it (measured 1024 > 512 > 256 on the 3x3 layers' im2col GEMMs)."""

CONV_MIN_DEPTH = 128
"""Least depth for a convolution's GEMM without an epilogue (:func:`conv_pays`)."""

SHALLOW_DEPTH = 128
"""Depth up to which a wide convolution GEMM stays on OpenBLAS (:func:`conv_pays`)."""

WIDE_UNITS = 256
"""Output channels from which a shallow convolution GEMM stays on OpenBLAS."""

ENV_SWITCH = "IRLIB_PACKED_GEMM"
"""Environment variable: ``0`` (``off``/``false``/``no``) keeps every product on BLAS."""

CONV_SWITCH = "IRLIB_PACKED_CONV"
"""Environment variable: ``0`` (``off``/``false``/``no``) keeps the convolutions' GEMMs
on BLAS (:func:`conv_product` declines) while :data:`ENV_SWITCH` leaves dense/matmul on."""


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


# -- the micro-kernel and drivers (jitkernels.cpu.packed_blocks) ---------------------------------

_block = packed_blocks.block        # attention.py runs the micro-kernel through this name


def _no_epilogue():
    """The arrays of an empty epilogue for the drivers (kinds, vectors, residual)."""
    return _EMPTY_KINDS, _EMPTY_VECTORS, _EMPTY_RESIDUAL


_EMPTY_KINDS = np.zeros(0, np.int64)
_EMPTY_VECTORS = np.zeros((0, 1), np.float32)
_EMPTY_RESIDUAL = np.zeros((1, 1), np.float32)


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


_WEIGHTS = WeightCache()


def packed_weight(b: np.ndarray, transposed: bool):
    """The cached packed form of read-only float32 ``b`` (``(K, N)``, or ``(N, K)`` when
    ``transposed``), or None (writable, not 2-D or not float32).

    Only read-only arrays are packed, once per memory they view
    (:class:`~jitkernels.cpu.weight_cache.WeightCache`): a fresh reshape view of the same
    constant weight on every call (as the convolutions make) finds the same entry.

    Args:
        b: the weight.
        transposed: whether ``b`` is stored ``(N, K)``.
    """
    if b.ndim != 2 or b.dtype != np.float32:
        return None
    return _WEIGHTS.get(b, transposed, lambda w: pack(w.T if transposed else w))


# -- the product ------------------------------------------------------------------------------

def _threads() -> int:
    """numba's thread count (its configured maximum: ``get_num_threads`` costs ~1 us)."""
    from numba import config
    return config.NUMBA_NUM_THREADS


def task_shape(rows: int, depth: int, blocks: int, threads: int) -> tuple:
    """``(chunk, group)``: rows and 64-column blocks per task of the drivers.

    A group holds at most as many column blocks as keep their panel chunks (``kc * 256``
    bytes each, ``kc = min(K, DEPTH_BLOCK)``) within :data:`PANEL_BYTES` of L2. With
    several threads the groups are made equal and a multiple of the threads where the
    panels allow (``prange`` hands each thread a contiguous run of tasks: a GPT-2 step's
    ``(16, 384) @ (384, 384)`` cut 5 + 1 blocks ran 35 us against 26 for 3 + 3); else the
    group is halved while there are fewer groups than threads. Every row chunk streams the
    whole weight once, so the rows form as few chunks as give each thread two tasks (one
    chunk on one thread), and only one chunk when the groups already share out evenly and
    the rows are few (a chunk is a multiple of 6 rows: 16 rows cut 12 + 4 would leave one
    thread a third of the work).

    Args:
        rows, depth: the product's ``M`` and ``K``; blocks: its 64-column blocks;
        threads: the threads the tasks run on.
    """
    kc = max(1, min(depth, DEPTH_BLOCK))
    cap = max(1, PANEL_BYTES // (kc * 4 * BLOCK_COLUMNS))
    group = min(blocks, cap)
    if threads > 1:
        even = None
        for count in range(threads, blocks + 1, threads):
            size = -(-blocks // count)
            if size <= cap and (-(-blocks // size)) % threads == 0:
                even = size
                break
        if even is not None:
            group = even
        else:
            while group > 1 and -(-blocks // group) < threads:
                group = -(-group // 2)
    groups = -(-blocks // group)
    chunks = 1 if threads <= 1 else -(-2 * threads // groups)
    if chunks > 1 and groups % threads == 0 and rows < FEW_ROWS_PER_CHUNK * chunks:
        chunks = 1
    chunk = -(-rows // chunks)
    return max(_ROWS, -(-chunk // _ROWS) * _ROWS), group


FEW_ROWS_PER_CHUNK = 24
"""Rows per chunk below which :func:`task_shape` keeps the rows in one chunk when the
column groups already give every thread an equal share."""


class _Plan:
    """A checked product: the driver and its arguments but the epilogue (see :func:`_plan`)."""

    __slots__ = ("driver", "a", "lda", "packed", "out", "chunk", "group", "depth_block")

    def __init__(self, driver, a, lda, packed, out, shape):
        self.driver, self.a, self.lda, self.packed, self.out = driver, a, lda, packed, out
        self.chunk, self.group = shape
        self.depth_block = DEPTH_BLOCK

    def __call__(self, kinds=_EMPTY_KINDS, vectors=_EMPTY_VECTORS, residual=_EMPTY_RESIDUAL):
        self.driver(self.a, self.lda, self.packed, self.out, self.chunk, self.group,
                    self.depth_block, kinds, vectors, residual)


def _plan(a, b, transposed: bool, out, max_rows=None):
    """A :class:`_Plan` running ``out = a @ b`` on the packed path, or None where the
    operands do not fit it (types, shapes, a writable weight, overlap, no AVX-512) or the
    product has more than ``max_rows`` rows or less than :data:`MIN_WORK`; ``a`` possibly
    read through a contiguous copy."""
    if a.ndim != 2 or b.ndim != 2 or out.ndim != 2 or a.dtype != np.float32 \
            or out.dtype != np.float32 or b.flags.writeable or not out.flags.c_contiguous \
            or not out.flags.writeable:
        return None
    rows, depth = a.shape
    units = out.shape[1]
    work = rows * depth * units
    if (max_rows is not None and rows > max_rows) or out.shape[0] != rows \
            or work < MIN_WORK or not available():
        return None
    if (b.shape[1] if transposed else b.shape[0]) != depth or \
            (b.shape[0] if transposed else b.shape[1]) != units:
        return None
    packed = packed_weight(b, transposed)
    if packed is None:
        return None
    if a.strides[1] != a.itemsize or a.strides[0] < depth * a.itemsize \
            or a.strides[0] % a.itemsize:
        a = np.ascontiguousarray(a)
    if np.may_share_memory(a, out):
        return None
    lda = a.strides[0] // a.itemsize
    if lda == depth:
        flat = a.reshape(-1)        # C-contiguous: a view (as_strided costs ~5 us a call)
    else:
        flat = np.lib.stride_tricks.as_strided(a, shape=((rows - 1) * lda + depth,),
                                               strides=(a.itemsize,))
    threads = _threads()
    parallel = work >= PARALLEL_MIN_WORK and threads > 1
    driver = packed_blocks.gemm_parallel if parallel else packed_blocks.gemm_serial
    return _Plan(driver, flat, lda, packed, out,
                 task_shape(rows, depth, packed.shape[0], threads if parallel else 1))


def try_product(a: np.ndarray, b: np.ndarray, transposed: bool, out: np.ndarray) -> bool:
    """``out = a @ b`` (``b.T`` when ``transposed``) on the packed path; False, ``out``
    untouched, where it does not apply (see the module docstring's cost rule: at most
    :data:`MAX_ROWS` rows here).

    Args:
        a: float32 ``(M, K)``.
        b: the weight: ``(K, N)``, or ``(N, K)`` when ``transposed``; read-only.
        transposed: whether ``b`` is stored ``(N, K)``.
        out: float32 ``(M, N)``, C-contiguous, writable.
    """
    plan = _plan(a, b, transposed, out, MAX_ROWS)
    if plan is None:
        return False
    plan()
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
    return _plan(a, b, transposed, out, MAX_ROWS)


def conv_pays(rows: int, depth: int, units: int, fused: bool) -> bool:
    """The measured cost rule of :func:`conv_product` (docs/kernels.md, "Conv GEMMs on the
    packed micro-kernel"): whether ``(rows, depth) @ (depth, units)`` beats irlib's
    OpenBLAS here.

    * The micro-kernel computes whole 64-column blocks, so the padded columns may add at
      most a quarter (``N`` = 16 or 48 ran 1.3-3x slower).
    * Shallow and wide (``K <= SHALLOW_DEPTH`` with ``N >= WIDE_UNITS``: ResNet-50's
      56x56 64->256 and 128->256 expansions) stays on OpenBLAS (4-10% faster there, one
      thread).
    * Otherwise: with an epilogue fused (the BLAS path runs it as a second pass) the packed
      path measured 3-25% faster at any depth; without one, from :data:`CONV_MIN_DEPTH`
      (below it a plain product is 3-17% slower than OpenBLAS's).

    Args:
        rows, depth, units: the product's ``M``, ``K``, ``N``.
        fused: whether an epilogue runs with it.
    """
    padded = -(-units // BLOCK_COLUMNS) * BLOCK_COLUMNS
    if 4 * padded > 5 * units or rows * depth * units < MIN_WORK:
        return False
    if depth <= SHALLOW_DEPTH and units >= WIDE_UNITS:
        return False
    return fused or depth >= CONV_MIN_DEPTH


def conv_product(a: np.ndarray, b: np.ndarray, out: np.ndarray, epilogue=None,
                 residual=None) -> bool:
    """``out = epilogue(a @ b)`` for a convolution's GEMM (any number of rows) on the packed
    path, where :func:`conv_pays` says it is faster; False, ``out`` untouched, otherwise
    (or where :func:`try_product`'s operand checks fail: ``b`` must be read-only).

    Args:
        a: float32 ``(M, K)`` rows with unit column stride (im2col columns or pixels).
        b: the read-only ``(K, N)`` weight (a view of the graph's constant is fine: the
            packed copy is cached by the memory it views).
        out: float32 ``(M, N)``, C-contiguous, writable.
        epilogue: a :class:`jitkernels.cpu.epilogue.Epilogue` (float32) applied to each
            block before it is stored, or None.
        residual: the ``(M, N)`` residual rows when the epilogue has a RESIDUAL step.
    """
    if os.environ.get(CONV_SWITCH, "1").strip().lower() in ("0", "off", "false", "no"):
        return False
    if a.ndim != 2 or out.ndim != 2 or not conv_pays(a.shape[0], a.shape[1], out.shape[1],
                                                     epilogue is not None):
        return False
    if epilogue is not None:
        if epilogue.vectors.dtype != np.float32 or epilogue.kinds.dtype != np.int64 or \
                (epilogue.kinds.size and epilogue.vectors.shape[1] != out.shape[1]):
            return False
        if RESIDUAL in epilogue.kinds:
            if residual is None or residual.shape != out.shape or \
                    residual.dtype != np.float32:
                return False
            residual = np.ascontiguousarray(residual)
        else:
            residual = _EMPTY_RESIDUAL
    plan = _plan(a, b, False, out)
    if plan is None:
        return False
    if epilogue is None:
        plan()
    else:
        plan(epilogue.kinds, np.ascontiguousarray(epilogue.vectors), residual)
    return True
