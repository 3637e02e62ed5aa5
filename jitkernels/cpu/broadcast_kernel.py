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

:func:`segmented_micro_kernels` makes float32 variants whose depth loop is ``segments x
steps`` (each segment's run of ``a`` starting a fixed stride after the last one, the
accumulators kept in registers across segments), 64, 48, 32 or 16 columns wide: the
implicit-GEMM convolution (:mod:`jitkernels.cpu.implicit_conv`) runs on them.
"""

from __future__ import annotations

from typing import NamedTuple

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["BLOCK_COLUMNS", "FLOAT32", "KernelKind", "MAX_ROWS", "SEGMENTED_SHAPES",
           "UINT8_INT8", "micro_kernels", "segmented_micro_kernels"]

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


# -- the segmented variant: a depth loop of segments x steps (implicit-GEMM convolution) ----------

SEGMENTED_SHAPES = {64: 6, 48: 8, 32: 10, 16: 14}
"""Column widths of the segmented float32 kernels and their largest row count: 6 x 4,
8 x 3, 10 x 2 or 14 x 1 zmm accumulators. With several vectors per row LLVM loads every
row's broadcast before the step's multiply-adds, so accumulators + weight vectors +
broadcasts should fit the 32 registers: 12 x 2 (38) spilled and ran at 83-85 GFLOP/s on
one core where 10 x 2 (32) ran at 111-117 and 6 x 4 (34, two spills) at 103-118 (measured
on conv-shaped operands). With one vector per row each broadcast has one use and is folded
into its multiply-add (an embedded broadcast), so the 16-column kernel's rows cost one
register each: 8 to 20 rows ran at 107-111 GFLOP/s on a 64 -> 16 pointwise product (the
64- and 32-column kernels spend the same time there on 4x and 2x the multiply-adds), 24 to
28 at 105-106; 14 rows divide the 28- and 56-pixel rows of DenseNet's layers. 8 x 48 (35
registers) ran at 113 GFLOP/s on a 384 -> 48 product, where 64 columns (a quarter of them
zeros) ran at 86."""


def _declare(builder, name, ret, params):
    """The module's declaration of LLVM function ``name`` (added on first use)."""
    from llvmlite import ir
    return builder.module.globals.get(name) or ir.Function(
        builder.module, ir.FunctionType(ret, params), name)


def _make_segmented(columns: int, rows: int):
    """The float32 segmented intrinsic for ``rows`` rows of ``columns`` (a multiple of 16)
    columns, its epilogue applied in registers and its block stored with lane masks."""
    from llvmlite import ir

    vectors = columns // 16

    @intrinsic
    def segmented_kernel(typingctx, c, c_off, ldc, width, a, a_off, lda, bp, b_off, segments,
                         steps, seg_stride, kinds, vecs, v_off, v_stride, residual):
        sig = types.void(c, c_off, ldc, width, a, a_off, lda, bp, b_off, segments, steps,
                         seg_stride, kinds, vecs, v_off, v_stride, residual)

        def codegen(context, builder, signature, args):
            i1, i32, i64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
            f32 = ir.FloatType()
            v16, m16, n16 = ir.VectorType(f32, 16), ir.VectorType(i1, 16), ir.VectorType(i32, 16)
            (c_off, ldc, width, a_off, lda, b_off, segments, steps, seg_stride, v_off,
             v_stride) = [context.cast(builder, args[i], signature.args[i], types.int64)
                          for i in (1, 2, 3, 5, 6, 8, 9, 10, 11, 14, 15)]
            fma = _declare(builder, "llvm.fma.v16f32", v16, [v16, v16, v16])
            masked_load = _declare(builder, "llvm.masked.load.v16f32.p0v16f32", v16,
                                   [v16.as_pointer(), i32, m16, v16])
            masked_store = _declare(builder, "llvm.masked.store.v16f32.p0v16f32",
                                    ir.VoidType(), [v16, v16.as_pointer(), i32, m16])
            proxies = {i: cgutils.create_struct_proxy(signature.args[i])(context, builder,
                                                                           value=args[i])
                       for i in (0, 4, 7, 12, 13, 16)}
            c_ptr, a_ptr, b_ptr, v_ptr, r_ptr = [builder.bitcast(proxies[i].data,
                                                                 f32.as_pointer())
                                                 for i in (0, 4, 7, 13, 16)]
            k_ptr = builder.bitcast(proxies[12].data, i64.as_pointer())
            count = builder.extract_value(proxies[12].shape, 0)
            const = lambda v: ir.Constant(i64, v)            # noqa: E731
            a_base = builder.gep(a_ptr, [a_off])
            b_base = builder.gep(b_ptr, [b_off])
            zero, undef = ir.Constant(v16, None), ir.Constant(v16, ir.Undefined)
            splat_mask = ir.Constant(n16, [0] * 16)

            def splat(value, vector_type):
                return builder.shuffle_vector(
                    builder.insert_element(ir.Constant(vector_type, ir.Undefined), value,
                                           ir.Constant(i32, 0)),
                    ir.Constant(vector_type, ir.Undefined), splat_mask)

            label = f"seg{columns}x{rows}"
            entry = builder.block
            outer = builder.append_basic_block(f"{label}.segment")
            inner = builder.append_basic_block(f"{label}.step")
            latch = builder.append_basic_block(f"{label}.next")
            done = builder.append_basic_block(f"{label}.done")
            nonempty = builder.and_(builder.icmp_signed(">", segments, const(0)),
                                    builder.icmp_signed(">", steps, const(0)))
            builder.cbranch(nonempty, outer, done)
            # outer loop: one segment (its a run starts seg_stride further than the last)
            builder.position_at_end(outer)
            s = builder.phi(i64)
            s.add_incoming(const(0), entry)
            acc_o = [[builder.phi(v16) for _ in range(vectors)] for _ in range(rows)]
            for row in acc_o:
                for phi in row:
                    phi.add_incoming(zero, entry)
            a_seg = builder.gep(a_base, [builder.mul(s, seg_stride)])
            b_seg = builder.gep(b_base, [builder.mul(builder.mul(s, steps), const(columns))])
            builder.branch(inner)
            # inner loop: one depth step (one weight panel, one element of each row)
            builder.position_at_end(inner)
            k = builder.phi(i64)
            k.add_incoming(const(0), outer)
            acc = [[builder.phi(v16) for _ in range(vectors)] for _ in range(rows)]
            for r in range(rows):
                for v in range(vectors):
                    acc[r][v].add_incoming(acc_o[r][v], outer)
            panel = builder.gep(b_seg, [builder.mul(k, const(columns))])
            weights = [builder.load(builder.bitcast(builder.gep(panel, [const(16 * v)]),
                                                    v16.as_pointer()), align=4)
                       for v in range(vectors)]
            new = []
            for r in range(rows):
                where = builder.gep(a_seg, [builder.add(builder.mul(const(r), lda), k)])
                broadcast = splat(builder.load(where, align=4), v16)
                new.append([builder.call(fma, [broadcast, weights[v], acc[r][v]])
                            for v in range(vectors)])
            k_next = builder.add(k, const(1))
            k.add_incoming(k_next, inner)
            for r in range(rows):
                for v in range(vectors):
                    acc[r][v].add_incoming(new[r][v], inner)
            builder.cbranch(builder.icmp_signed("<", k_next, steps), inner, latch)
            # next segment
            builder.position_at_end(latch)
            s_next = builder.add(s, const(1))
            s.add_incoming(s_next, latch)
            for r in range(rows):
                for v in range(vectors):
                    acc_o[r][v].add_incoming(new[r][v], latch)
            builder.cbranch(builder.icmp_signed("<", s_next, segments), outer, done)
            # the block's sums; lane masks of the valid columns (j < width)
            builder.position_at_end(done)
            finals = [[builder.phi(v16) for _ in range(vectors)] for _ in range(rows)]
            for r in range(rows):                       # the phis first: LLVM's rule
                for v in range(vectors):
                    finals[r][v].add_incoming(zero, entry)
                    finals[r][v].add_incoming(new[r][v], latch)
            limit = splat(builder.trunc(width, i32), n16)
            masks = [builder.icmp_signed("<", ir.Constant(n16, [16 * v + j for j in range(16)]),
                                         limit) for v in range(vectors)]
            align = ir.Constant(i32, 4)
            row_at = [builder.gep(c_ptr, [builder.add(c_off, builder.mul(const(r), ldc))])
                      for r in range(rows)]
            res_at = [builder.gep(r_ptr, [builder.add(c_off, builder.mul(const(r), ldc))])
                      for r in range(rows)]

            def vector_at(base, v):
                return builder.bitcast(builder.gep(base, [const(16 * v)]), v16.as_pointer())

            # the epilogue: one pass over its steps, every step on all the accumulators
            head = builder.append_basic_block(f"{label}.epilogue")
            blocks = {name: builder.append_basic_block(f"{label}.{name}")
                      for name in ("add", "mul", "residual", "relu")}
            step_latch = builder.append_basic_block(f"{label}.epilogue_next")
            store = builder.append_basic_block(f"{label}.store")
            builder.cbranch(builder.icmp_signed(">", count, const(0)), head, store)
            builder.position_at_end(head)
            step = builder.phi(i64)
            step.add_incoming(const(0), done)
            current = [[builder.phi(v16) for _ in range(vectors)] for _ in range(rows)]
            for r in range(rows):
                for v in range(vectors):
                    current[r][v].add_incoming(finals[r][v], done)
            kind = builder.load(builder.gep(k_ptr, [step]))
            step_row = builder.gep(v_ptr, [builder.add(v_off, builder.mul(step, v_stride))])
            switch = builder.switch(kind, blocks["relu"])
            for value, name in enumerate(("add", "mul", "residual")):
                switch.add_case(ir.Constant(i64, value), blocks[name])
            results = {}
            for name, blk in blocks.items():
                builder.position_at_end(blk)
                if name in ("add", "mul"):
                    operand = [builder.call(masked_load, [vector_at(step_row, v), align,
                                                          masks[v], zero])
                               for v in range(vectors)]
                    op = builder.fadd if name == "add" else builder.fmul
                    out = [[op(current[r][v], operand[v]) for v in range(vectors)]
                           for r in range(rows)]
                elif name == "residual":
                    out = [[builder.fadd(current[r][v], builder.call(
                        masked_load, [vector_at(res_at[r], v), align, masks[v], zero]))
                        for v in range(vectors)] for r in range(rows)]
                else:
                    out = [[builder.select(builder.fcmp_ordered(">", current[r][v], zero),
                                           current[r][v], zero)
                            for v in range(vectors)] for r in range(rows)]
                results[name] = (builder.block, out)
                builder.branch(step_latch)
            builder.position_at_end(step_latch)
            merged = [[builder.phi(v16) for _ in range(vectors)] for _ in range(rows)]
            for r in range(rows):
                for v in range(vectors):
                    for blk, out in results.values():
                        merged[r][v].add_incoming(out[r][v], blk)
                    current[r][v].add_incoming(merged[r][v], step_latch)
            step_next = builder.add(step, const(1))
            step.add_incoming(step_next, step_latch)
            builder.cbranch(builder.icmp_signed("<", step_next, count), head, store)
            # store the valid columns of each row
            builder.position_at_end(store)
            stored = [[builder.phi(v16) for _ in range(vectors)] for _ in range(rows)]
            for r in range(rows):
                for v in range(vectors):
                    stored[r][v].add_incoming(finals[r][v], done)
                    stored[r][v].add_incoming(merged[r][v], step_latch)
            for r in range(rows):
                for v in range(vectors):
                    builder.call(masked_store, [stored[r][v], vector_at(row_at[r], v), align,
                                                masks[v]])
            return context.get_dummy_value()

        return sig, codegen

    return segmented_kernel


def segmented_micro_kernels(columns: int = BLOCK_COLUMNS) -> list:
    """float32 intrinsics whose depth loop is ``segments x steps``, for blocks of 1 to
    ``SEGMENTED_SHAPES[columns]`` rows of ``columns`` columns (index: rows - 1), with a fused
    epilogue applied in registers before the block is stored.

    The implicit-GEMM convolution (:mod:`jitkernels.cpu.implicit_conv`) reads each output
    pixel's window as ``KH`` runs of one zero-padded NHWC image, one run per kernel row; the
    accumulators stay in registers across the runs. Each kernel is called as
    ``mk(c, c_off, ldc, width, a, a_off, lda, bp, b_off, segments, steps, seg_stride, kinds,
    vectors, v_off, v_stride, residual)`` (float arrays float32 and C-contiguous, offsets in
    elements) and computes, for ``r < rows`` and ``j < columns``::

        acc[r, j] = sum over s < segments, k < steps of
            a[a_off + r*lda + s*seg_stride + k] * bp[b_off + (s*steps + k)*columns + j]

    accumulated in (s, k) order with fused multiply-adds; then, for each step ``t`` of the
    epilogue (``kinds``, int64, :mod:`jitkernels.cpu.epilogue`'s codes) in order:
    ``ADD``/``MUL`` ``acc[r, j]`` by ``vectors[v_off + t*v_stride + j]``, ``RESIDUAL``
    ``acc[r, j] += residual[c_off + r*ldc + j]`` (a residual laid out like ``c``), else ReLU;
    finally ``c[c_off + r*ldc + j] = acc[r, j]`` for ``j < width`` only (masked loads and
    stores: nothing at or past ``width`` is read or written).

    Args:
        columns: a key of :data:`SEGMENTED_SHAPES`: 64, 48, 32 or 16 (four to one 16-lane
            vectors; up to 6, 8, 10 or 14 rows).

    Raises:
        irlib.errors.IRError: ``columns`` is neither.
    """
    if columns not in SEGMENTED_SHAPES:
        from irlib.errors import IRError
        raise IRError(f"segmented_micro_kernels: columns must be one of "
                      f"{sorted(SEGMENTED_SHAPES)}, got {columns}")
    return [_make_segmented(columns, rows) for rows in range(1, SEGMENTED_SHAPES[columns] + 1)]
