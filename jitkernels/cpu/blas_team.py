"""Products of irlib's OpenBLAS split across numba's OpenMP workers, one cblas call per part.

Why: a process that runs both numba ``prange`` loops and OpenBLAS's own threads has two
thread pools on the same cores. Each pool's idle workers either spin (and take the core the
other pool's next job needs) or sleep (and each parallel region then waits tens of
microseconds for its workers to wake: a 2-thread ``prange`` region after a 20-100 us gap
took 45-63 us instead of 18 on the dev machine at ``GOMP_SPINCOUNT=1000``, against 18 when
the workers spin). A SqueezeNet inference has ~40 parallel regions and a GPT-2 decode step
~50, so the wake-ups alone cost milliseconds. With this module there is one pool: OpenBLAS
stays on one thread, and a product worth splitting is cut into parts that numba's workers
run at once (:func:`run_parts`, a ``prange`` over the parts), each part one single-threaded
``cblas_?gemm`` call. OpenMP's workers may then spin between regions
(:mod:`jitkernels.threads`) without starving anything.

How a product is cut (:func:`split`): along the longer of its output's rows and columns,
into ``threads * PARTS_PER_THREAD`` parts at most, each at least :data:`MIN_PART_WORK`
multiply-adds and a multiple of 16 columns (whole 64-byte lines of ``out``) or 4 rows. A
row cut makes each part re-pack the whole ``b`` operand (OpenBLAS packs its operands per
call), a column cut the whole ``a``: cutting the longer side copies the smaller operand
twice. A batch (Winograd's 16-36 tile products, attention's heads) is cut into its matrices
first, and each matrix further only when the batch has fewer matrices than threads.

The call itself goes through :func:`call_gemm`, an intrinsic that calls the cblas function at
an address given at run time, so the compiled ``prange`` driver is cached on disk like every
other kernel (a ctypes object captured as a global would have to be recompiled in each
process).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange, types
from numba.extending import intrinsic

__all__ = ["FIELDS", "MIN_PART_WORK", "PARTS_PER_THREAD", "call_gemm", "run_parts", "run_serial",
           "split"]

FIELDS = ("trans_a", "trans_b", "rows", "cols", "inner", "lda", "ldb", "ldc", "a", "b", "out")
"""The columns of a parts table (int64): the cblas arguments of one row-major product
``out = a @ b + beta * out`` (transpose flags, sizes, leading dimensions, addresses)."""

MIN_PART_WORK = 1 << 16
"""Fewest multiply-adds of one part: below this the call's own overhead (OpenBLAS's packing
and dispatch, a few microseconds) outweighs a second core."""

PARTS_PER_THREAD = 1
"""Parts per thread of one 2-D product: OpenMP's static schedule gives each worker one
contiguous run of parts, so more parts would only add calls."""

_ROW_MAJOR, _NO_TRANS = 101, 111


@intrinsic
def call_gemm(typingctx, address, ints, beta):
    """Call the row-major ``cblas_?gemm`` at ``address`` with the arguments in ``ints``
    (one row of a parts table, :data:`FIELDS`); ``alpha`` is 1, ``beta`` is ``beta`` (a
    float32 for ``sgemm``, a float64 for ``dgemm``: its type picks the signature)."""
    if not (isinstance(address, types.Integer) and isinstance(ints, types.Array)
            and ints.dtype == types.int64 and isinstance(beta, types.Float)):
        return None
    sig = types.void(address, ints, beta)

    def codegen(context, builder, signature, args):
        from llvmlite import ir
        address_v, ints_v, beta_v = args
        i32, i64 = ir.IntType(32), ir.IntType(64)
        real = ir.FloatType() if signature.args[2] == types.float32 else ir.DoubleType()
        pointer = ir.IntType(8).as_pointer()
        function_type = ir.FunctionType(ir.VoidType(), [i32] * 6 + [real, pointer, i32,
                                                                     pointer, i32, real,
                                                                     pointer, i32])
        view = context.make_array(signature.args[1])(context, builder, ints_v)
        base = builder.bitcast(view.data, i64.as_pointer())
        field = lambda k: builder.load(builder.gep(base, [ir.Constant(i64, k)]))  # noqa: E731
        small = lambda k: builder.trunc(field(k), i32)                             # noqa: E731
        address_ptr = lambda k: builder.inttoptr(field(k), pointer)                # noqa: E731
        target = builder.inttoptr(address_v, function_type.as_pointer())
        one = ir.Constant(real, 1.0)
        builder.call(target, [ir.Constant(i32, _ROW_MAJOR), small(0), small(1), small(2),
                              small(3), small(4), one, address_ptr(8), small(5),
                              address_ptr(9), small(6), beta_v, address_ptr(10), small(7)])
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, parallel=True, nogil=True)
def run_parts(address, parts, beta):
    """Run every row of ``parts`` (int64 ``(P, 11)``, :data:`FIELDS`) as one call of the
    cblas function at ``address``, the rows spread over numba's threads.

    Args:
        address: the integer address of ``cblas_sgemm`` (``beta`` float32) or
            ``cblas_dgemm`` (``beta`` float64).
        parts: the products; they must write disjoint parts of memory.
        beta: ``0`` overwrites each part's output, ``1`` accumulates into it.
    """
    for p in prange(parts.shape[0]):
        call_gemm(address, parts[p], beta)


@njit(cache=True, nogil=True)
def run_serial(address, parts, beta):
    """:func:`run_parts` on the calling thread alone (one part, or the cores are taken)."""
    for p in range(parts.shape[0]):
        call_gemm(address, parts[p], beta)


def _cuts(extent: int, pieces: int, align: int) -> list:
    """``pieces + 1`` boundaries cutting ``range(extent)`` into near-equal runs whose
    inner boundaries are multiples of ``align``."""
    bounds = [0]
    for k in range(1, pieces):
        bound = (extent * k // pieces) // align * align
        bounds.append(min(max(bound, bounds[-1]), extent))
    bounds.append(extent)
    return bounds


def split(row, threads: int, itemsize: int) -> np.ndarray:
    """The parts of one product (a :data:`FIELDS` row), cut for ``threads`` threads.

    Args:
        row: the product's arguments, in :data:`FIELDS` order.
        threads: threads the parts run on.
        itemsize: bytes of one element (4 or 8).

    Returns:
        An int64 ``(P, 11)`` parts table (``P >= 1``; the row itself when cutting does not
        pay).
    """
    trans_a, trans_b, rows, cols, inner, lda, ldb, ldc, a, b, out = (int(v) for v in row)
    work = rows * cols * inner
    pieces = max(1, min(threads * PARTS_PER_THREAD, work // MIN_PART_WORK))
    by_rows = rows >= cols
    align = 4 if by_rows else 16
    pieces = min(pieces, max(1, (rows if by_rows else cols) // align))
    if pieces == 1:
        return np.array([row], np.int64)
    bounds = _cuts(rows if by_rows else cols, pieces, align)
    table = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        if hi <= lo:
            continue
        if by_rows:
            a_at = a + lo * itemsize * (lda if trans_a == _NO_TRANS else 1)
            table.append((trans_a, trans_b, hi - lo, cols, inner, lda, ldb, ldc, a_at, b,
                          out + lo * ldc * itemsize))
        else:
            b_at = b + lo * itemsize * (1 if trans_b == _NO_TRANS else ldb)
            table.append((trans_a, trans_b, rows, hi - lo, inner, lda, ldb, ldc, a, b_at,
                          out + lo * itemsize))
    return np.array(table, np.int64)
