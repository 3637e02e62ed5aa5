"""The register-blocked micro-kernel shared by irlib's own products, as numba intrinsics.

A block of ``rows`` (at most 6) output rows by 64 columns lives in ``rows x 4`` 16-lane
vector accumulators for the whole depth loop: at each step the four 16-lane weight vectors of
a packed panel are loaded once, one scalar (or 4-byte word) of each of the ``rows`` rows of
``a`` is broadcast to all lanes, and each accumulator takes one vector multiply-add. The
loop is written in LLVM IR through :func:`numba.extending.intrinsic` (numba's own loops
keep accumulators in memory and let LLVM guess). Two products use it, differing only in
their element types and the multiply-add:

* :data:`FLOAT32` (:mod:`jitkernels.cpu.packed_gemm`): float32 rows, a float32 weight packed
  ``[column block][k][64]``, ``llvm.fma``;
* :data:`UINT8_INT8` (:mod:`jitkernels.cpu.int8_vnni`): uint8 rows read 4 bytes at a time,
  an int8 weight packed ``[column block][k/4][4 vectors x 16 columns x 4 k]``, AVX-512 VNNI's
  ``vpdpbusd`` (64 byte products summed into 16 int32 lanes).

:func:`micro_kernels` makes the six kernels (1 to 6 rows) of one :class:`KernelKind`; each is
called as ``mk(c, a, bp, i0, jb, steps, lda)``: ``c`` the ``(6, 64)`` scratch the block is
stored to (row-major, ``c[r, :]`` for ``r < rows``), ``a`` the rows (row ``i0 + r`` at
element offset ``(i0 + r) * lda``), ``bp`` the packed weight (column block ``jb``), ``steps``
the depth loop's trip count.
"""

from __future__ import annotations

from typing import NamedTuple

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["BLOCK_COLUMNS", "FLOAT32", "KernelKind", "MAX_ROWS", "UINT8_INT8", "micro_kernels"]

BLOCK_COLUMNS = 64
"""Columns of one block (four 16-lane vectors)."""

MAX_ROWS = 6
"""Rows of the largest block (6 x 4 accumulators + 4 weight vectors + 1 broadcast)."""


class KernelKind(NamedTuple):
    """What distinguishes one product's micro-kernel.

    Attributes:
        label: a name for the IR blocks.
        element: ``"f32"`` or ``"i8"``: the element type ``a`` and ``bp`` are addressed in.
        lane: ``"f32"`` or ``"i32"``: the accumulator lanes (and ``c``'s elements).
        a_step: elements of ``a`` one depth step reads per row (1 float, or a 4-byte word).
        panel: elements of ``bp`` one depth step reads (64 floats, or 256 bytes).
        align: the alignment the loads may assume (bytes).
        intrinsic_name: the LLVM function of the multiply-add.
        fma_order: ``True``: ``f(broadcast, weight, acc)`` (``llvm.fma``); ``False``:
            ``f(acc, broadcast, weight)`` (``vpdpbusd``).
    """

    label: str
    element: str
    lane: str
    a_step: int
    panel: int
    align: int
    intrinsic_name: str
    fma_order: bool


FLOAT32 = KernelKind("packed", "f32", "f32", 1, 64, 4, "llvm.fma.v16f32", True)
"""float32 rows times a packed float32 weight."""

UINT8_INT8 = KernelKind("vnni", "i8", "i32", 4, 256, 1, "llvm.x86.avx512.vpdpbusd.512", False)
"""uint8 rows times a packed int8 weight, int32 sums."""


def _ir_type(ir, name: str):
    return {"f32": ir.FloatType(), "i32": ir.IntType(32), "i8": ir.IntType(8)}[name]


def _make(kind: KernelKind, rows: int):
    from llvmlite import ir

    @intrinsic
    def micro_kernel(typingctx, c, a, bp, i0, jb, steps, lda):
        sig = types.void(c, a, bp, i0, jb, steps, lda)

        def codegen(context, builder, signature, args):
            c_v, a_v, b_v, i0_v, jb_v, steps_v, lda_v = args
            i64 = ir.IntType(64)
            element, lane = _ir_type(ir, kind.element), _ir_type(ir, kind.lane)
            v16 = ir.VectorType(lane, 16)
            combine = builder.module.globals.get(kind.intrinsic_name) or ir.Function(
                builder.module, ir.FunctionType(v16, [v16, v16, v16]), kind.intrinsic_name)
            data = [cgutils.create_struct_proxy(t)(context, builder, value=v).data
                    for t, v in zip(signature.args[:3], (c_v, a_v, b_v))]
            const = lambda v: ir.Constant(i64, v)            # noqa: E731
            a_base = builder.gep(builder.bitcast(data[1], element.as_pointer()),
                                 [builder.mul(i0_v, lda_v)])
            b_base = builder.gep(builder.bitcast(data[2], element.as_pointer()),
                                 [builder.mul(builder.mul(jb_v, steps_v), const(kind.panel))])
            zero, undef = ir.Constant(v16, None), ir.Constant(v16, ir.Undefined)
            splat_mask = ir.Constant(ir.VectorType(ir.IntType(32), 16), [0] * 16)
            entry = builder.block
            loop = builder.append_basic_block(f"{kind.label}.loop")
            done = builder.append_basic_block(f"{kind.label}.done")
            builder.cbranch(builder.icmp_signed(">", steps_v, const(0)), loop, done)
            builder.position_at_end(loop)
            k = builder.phi(i64)
            k.add_incoming(const(0), entry)
            acc = [[builder.phi(v16) for _ in range(4)] for _ in range(rows)]
            for row in acc:
                for phi in row:
                    phi.add_incoming(zero, entry)
            panel = builder.gep(b_base, [builder.mul(k, const(kind.panel))])
            quarter = kind.panel // 4
            weights = [builder.load(builder.bitcast(builder.gep(panel, [const(quarter * v)]),
                                                    v16.as_pointer()), align=kind.align)
                       for v in range(4)]
            offset = builder.mul(k, const(kind.a_step))
            new = []
            for r in range(rows):
                where = builder.gep(a_base, [builder.add(builder.mul(const(r), lda_v), offset)])
                value = builder.load(builder.bitcast(where, lane.as_pointer()),
                                     align=kind.align)
                splat = builder.shuffle_vector(
                    builder.insert_element(undef, value, ir.Constant(ir.IntType(32), 0)),
                    undef, splat_mask)
                new.append([builder.call(combine, [splat, weights[v], acc[r][v]]
                                         if kind.fma_order else [acc[r][v], splat, weights[v]])
                            for v in range(4)])
            k_next = builder.add(k, const(1))
            tail = builder.block
            k.add_incoming(k_next, tail)
            for r in range(rows):
                for v in range(4):
                    acc[r][v].add_incoming(new[r][v], tail)
            builder.cbranch(builder.icmp_signed("<", k_next, steps_v), loop, done)
            builder.position_at_end(done)
            finals = []
            for r in range(rows):                       # the phis first: LLVM's rule
                for v in range(4):
                    final = builder.phi(v16)
                    final.add_incoming(zero, entry)
                    final.add_incoming(new[r][v], tail)
                    finals.append((r, v, final))
            c_base = builder.bitcast(data[0], lane.as_pointer())
            for r, v, final in finals:
                where = builder.gep(c_base, [const(r * BLOCK_COLUMNS + 16 * v)])
                builder.store(final, builder.bitcast(where, v16.as_pointer()), align=4)
            return context.get_dummy_value()

        return sig, codegen

    return micro_kernel


def micro_kernels(kind: KernelKind) -> list:
    """The intrinsics of ``kind`` for blocks of 1 to :data:`MAX_ROWS` rows (index: rows - 1).

    Args:
        kind: :data:`FLOAT32` or :data:`UINT8_INT8`.
    """
    return [_make(kind, rows) for rows in range(1, MAX_ROWS + 1)]
