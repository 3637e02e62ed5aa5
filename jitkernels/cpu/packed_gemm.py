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
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

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


# -- the micro-kernel: rows x 64 columns, k loop in LLVM IR ---------------------------------------

def _make_micro_kernel(rows: int):
    """An intrinsic ``mk(c, a, bp, i0, jb, depth, lda)``: ``c[r, :] = sum_k a[i0 + r, k] *
    bp[jb, k, :]`` for ``r < rows`` (``c`` a float32 ``(6, 64)`` scratch, ``a`` float32 rows
    of ``lda`` elements, ``bp`` the packed weight ``(blocks, depth, 64)``)."""
    from llvmlite import ir

    @intrinsic
    def micro_kernel(typingctx, c, a, bp, i0, jb, depth, lda):
        sig = types.void(c, a, bp, i0, jb, depth, lda)

        def codegen(context, builder, signature, args):
            c_v, a_v, b_v, i0_v, jb_v, depth_v, lda_v = args
            f32, i64 = ir.FloatType(), ir.IntType(64)
            v16 = ir.VectorType(f32, 16)
            name = "llvm.fma.v16f32"
            fma = builder.module.globals.get(name) or ir.Function(
                builder.module, ir.FunctionType(v16, [v16, v16, v16]), name)
            data = [cgutils.create_struct_proxy(t)(context, builder, value=v).data
                    for t, v in zip(signature.args[:3], (c_v, a_v, b_v))]
            const = lambda v: ir.Constant(i64, v)            # noqa: E731
            a_base = builder.gep(builder.bitcast(data[1], f32.as_pointer()),
                                 [builder.mul(i0_v, lda_v)])
            b_base = builder.gep(builder.bitcast(data[2], f32.as_pointer()),
                                 [builder.mul(builder.mul(jb_v, depth_v), const(64))])
            zero, undef = ir.Constant(v16, None), ir.Constant(v16, ir.Undefined)
            splat_mask = ir.Constant(ir.VectorType(ir.IntType(32), 16), [0] * 16)
            entry = builder.block
            loop = builder.append_basic_block("packed.loop")
            done = builder.append_basic_block("packed.done")
            builder.cbranch(builder.icmp_signed(">", depth_v, const(0)), loop, done)
            builder.position_at_end(loop)
            k = builder.phi(i64)
            k.add_incoming(const(0), entry)
            acc = [[builder.phi(v16) for _ in range(4)] for _ in range(rows)]
            for row in acc:
                for phi in row:
                    phi.add_incoming(zero, entry)
            panel = builder.gep(b_base, [builder.mul(k, const(64))])
            weights = [builder.load(builder.bitcast(builder.gep(panel, [const(16 * v)]),
                                                    v16.as_pointer()), align=4)
                       for v in range(4)]
            new = []
            for r in range(rows):
                where = builder.gep(a_base, [builder.add(builder.mul(const(r), lda_v), k)])
                value = builder.load(where, align=4)
                splat = builder.shuffle_vector(
                    builder.insert_element(undef, value, ir.Constant(ir.IntType(32), 0)),
                    undef, splat_mask)
                new.append([builder.call(fma, [splat, weights[v], acc[r][v]])
                            for v in range(4)])
            k_next = builder.add(k, const(1))
            tail = builder.block
            k.add_incoming(k_next, tail)
            for r in range(rows):
                for v in range(4):
                    acc[r][v].add_incoming(new[r][v], tail)
            builder.cbranch(builder.icmp_signed("<", k_next, depth_v), loop, done)
            builder.position_at_end(done)
            finals = []
            for r in range(rows):                       # the phis first: LLVM's rule
                for v in range(4):
                    final = builder.phi(v16)
                    final.add_incoming(zero, entry)
                    final.add_incoming(new[r][v], tail)
                    finals.append((r, v, final))
            c_base = builder.bitcast(data[0], f32.as_pointer())
            for r, v, final in finals:
                where = builder.gep(c_base, [const(r * BLOCK_COLUMNS + 16 * v)])
                builder.store(final, builder.bitcast(where, v16.as_pointer()), align=4)
            return context.get_dummy_value()

        return sig, codegen

    return micro_kernel


_mk1, _mk2, _mk3, _mk4, _mk5, _mk6 = [_make_micro_kernel(r) for r in range(1, _ROWS + 1)]


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
