"""Vector operations on runs of :data:`LANES`-element blocks, as numba intrinsics.

Why: numba cannot tell LLVM that a kernel's output array does not overlap its inputs, so a
short loop such as ``for k in range(16): out[o + k] = w[a + k] * x[b + k] + ...`` over a
3x3 window needs eighteen run-time overlap checks; LLVM gives up (its limit is eight) and
emits scalar code. The channels-last depthwise and pooling kernels ran 4-6x slower than a
copy of their bytes for that reason. These intrinsics emit the vector loads, the arithmetic
and one store per block directly (LLVM IR ``<16 x float>`` / ``<16 x double>``, split into
the CPU's widest registers: one AVX-512 register of float32, two AVX2 ones, ...).

Taps outside the image: :func:`row_dot` and :func:`row_sum` take a bit mask of the taps
inside it and count the others as zeros (when every bit is set, the interior, a second copy
of the loop without the selects runs); callers pass an inside tap's offset in an outside
tap's place, so that every load stays inside the array and all taps move by the same step
(per-tap steps cost a multiply and a spilled register per tap and pixel).

Every operation works on a *run*: ``count`` blocks of ``LANES`` consecutive elements, block
``p`` of the output at flat offset ``at + p*out_step`` and of an input at ``offset +
p*step`` (a row of output pixels, one channel block each, in a channels-last kernel). The
operands that do not move along the run (weights, bias, scale) are loaded once, before the
loop, and stay in registers. Arrays are 1-d and C-contiguous and share one float dtype;
offsets and counts are integers (signed or unsigned); tuple arguments are ``UniTuple`` s of
offsets whose length (the window's taps) is fixed at compile time. Nothing is bounds
checked: the caller guarantees every block lies inside its array. Products and sums may be
contracted into fused multiply-adds, never reassociated (the taps are summed in order).

* :func:`row_dot`: ``out = max(floor, (sum_t w[w_t] * x[x_t]) * scale + shift)`` (a
  depthwise window with its epilogue: ``scale = 1, shift = 0, floor = -inf`` for none);
* :func:`row_sum`: ``out = factor * sum_t x[x_t]`` (an average pool's window);
* :func:`row_max`: ``out = max(-inf, x[x_t]...)``, a NaN never winning (a max pool's);
* :func:`row_fma`: ``out += w[wa] * x[xa]`` (one tap);
* :func:`row_copy`, :func:`row_max_into`, :func:`row_add_into`, :func:`row_mul_into`:
  ``out = x``, ``out = max(out, x)``, ``out += x``, ``out *= x`` (``step`` 0 broadcasts
  one block, e.g. a bias);
* :func:`row_affine`: ``out = max(floor, out * scale + shift)``;
* :func:`row_fill`: ``out = value``; :func:`row_scale`: ``out *= factor``.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

__all__ = ["LANES", "row_dot", "row_fma", "row_max", "row_sum", "row_copy", "row_max_into",
           "row_add_into", "row_mul_into", "row_affine", "row_fill", "row_scale"]

LANES = 16
"""Elements per block: one AVX-512 register of float32 (two AVX2 registers)."""

_CONTRACT = ("contract",)


def _flat(*arrays) -> bool:
    """Whether all are 1-d C-contiguous float arrays of one dtype."""
    return (all(isinstance(a, types.Array) and a.ndim == 1 and a.layout == "C"
                and isinstance(a.dtype, types.Float) for a in arrays)
            and len({a.dtype for a in arrays}) == 1)


def _ints(*values) -> bool:
    """Whether all are integer types."""
    return all(isinstance(v, types.Integer) for v in values)


def _numbers(*values) -> bool:
    """Whether all are integer or float scalar types."""
    return all(isinstance(v, (types.Integer, types.Float)) for v in values)


def _taps(*tuples) -> bool:
    """Whether all are non-empty integer ``UniTuple`` s of one length."""
    return (all(isinstance(t, types.UniTuple) and t.count > 0
                and isinstance(t.dtype, types.Integer) for t in tuples)
            and len({t.count for t in tuples}) == 1)


class _Emitter:
    """LLVM IR helpers for one intrinsic call: its arguments as intp offsets, data pointers,
    vector loads and stores, splats, the run loop."""

    def __init__(self, context, builder, signature, args, dtype):
        self.context, self.builder = context, builder
        self.types, self.args = signature.args, args
        self.scalar = context.get_data_type(dtype)
        self.vector = ir.VectorType(self.scalar, LANES)
        self.dtype = dtype
        self.align = dtype.bitwidth // 8

    def data(self, index):
        """The data pointer of array argument ``index``."""
        array = self.context.make_array(self.types[index])(self.context, self.builder,
                                                           self.args[index])
        return array.data

    def intp(self, index):
        """Integer argument ``index`` as an ``intp``."""
        return self.context.cast(self.builder, self.args[index], self.types[index], types.intp)

    def offsets(self, index):
        """The items of tuple argument ``index`` as ``intp`` values."""
        kind = self.types[index]
        return [self.context.cast(self.builder, self.builder.extract_value(self.args[index], k),
                                  kind.dtype, types.intp) for k in range(kind.count)]

    def value(self, index):
        """Scalar argument ``index`` converted to the vectors' dtype."""
        return self.context.cast(self.builder, self.args[index], self.types[index], self.dtype)

    def _pointer(self, data, offset):
        element = self.builder.gep(data, [offset], inbounds=True)
        return self.builder.bitcast(element, self.vector.as_pointer())

    def load(self, data, offset):
        """The block at element ``offset`` of ``data``."""
        return self.builder.load(self._pointer(data, offset), align=self.align,
                                 typ=self.vector)

    def store(self, value, data, offset):
        """Store a block at element ``offset`` of ``data``."""
        self.builder.store(value, self._pointer(data, offset), align=self.align)

    def splat(self, value):
        """A vector with every lane the scalar ``value``."""
        builder = self.builder
        undefined = ir.Constant(self.vector, ir.Undefined)
        single = builder.insert_element(undefined, value, ir.Constant(ir.IntType(32), 0))
        zeros = ir.Constant(ir.VectorType(ir.IntType(32), LANES), [0] * LANES)
        return builder.shuffle_vector(single, undefined, zeros)

    def constant(self, number):
        """A vector with every lane the Python float ``number``."""
        return ir.Constant(self.vector, [ir.Constant(self.scalar, number)] * LANES)

    def max_keep(self, current, value):
        """``value`` where greater than ``current``, else ``current`` (NaN never wins)."""
        greater = self.builder.fcmp_ordered(">", value, current)
        return self.builder.select(greater, value, current)

    def clamp(self, value, floor):
        """``floor`` where ``value`` is below it, else ``value`` (NaN stays NaN)."""
        below = self.builder.fcmp_ordered("<", value, floor)
        return self.builder.select(below, floor, value)

    def tap_bits(self, mask, count):
        """Per tap ``t < count``: an ``i1``, bit ``t`` of the integer ``mask``."""
        builder = self.builder
        one, zero = ir.Constant(mask.type, 1), ir.Constant(mask.type, 0)
        return [builder.icmp_unsigned("!=", builder.and_(builder.lshr(
            mask, ir.Constant(mask.type, t)), one), zero) for t in range(count)]

    def masked_runs(self, count_index, mask, taps, body):
        """Emit the run loop ``body(p, bits)`` with ``bits`` the ``taps`` bits of ``mask``
        (one loop: a vector select per tap costs less than a second copy of the loop
        costs to compile)."""
        bits = self.tap_bits(mask, taps)
        return self.run(count_index, lambda p: body(p, bits))

    def moved(self, offset, step, index):
        """``offset + index * step``."""
        return self.builder.add(offset, self.builder.mul(index, step))

    def run(self, count_index, body):
        """Emit ``for p in range(count): body(p)``; returns the dummy value intrinsics
        return."""
        with cgutils.for_range(self.builder, self.intp(count_index)) as loop:
            body(loop.index)
        return self.context.get_dummy_value()


@intrinsic
def row_dot(typingctx, out, at, out_step, x, x_offsets, step, w, w_offsets, count, scale,
            shift, ss_at, floor, mask):
    """``out[at + p*out_step:][:LANES] = max(floor, (sum_t w[w_offsets[t]:][:LANES] *
    x[x_offsets[t] + p*step:][:LANES]) * scale[ss_at:][:LANES] + shift[ss_at:][:LANES])``
    for ``p < count``, the sum over the taps whose bit is set in the integer ``mask``
    (the others count as zeros: a zero-padded image). A masked tap's offset must still be
    readable (callers pass a valid tap's). The weight, scale and shift blocks are loaded
    once."""
    if not (_flat(out, x, w, scale, shift) and _ints(at, out_step, step, count, ss_at, mask)
            and _taps(x_offsets, w_offsets) and _numbers(floor)):
        return None

    def codegen(context, builder, signature, args):
        e = _Emitter(context, builder, signature, args, out.dtype)
        out_data, x_data = e.data(0), e.data(3)
        xs = e.offsets(4)
        weights = [e.load(e.data(6), wo) for wo in e.offsets(7)]
        factor = e.load(e.data(9), e.intp(11))
        offset = e.load(e.data(10), e.intp(11))
        lowest = e.splat(e.value(12))
        zero = e.constant(0.0)
        first, out_step_, step_ = e.intp(1), e.intp(2), e.intp(5)

        def body(p, bits):
            moved = builder.mul(p, step_)
            total = None
            for t, (weight, xo) in enumerate(zip(weights, xs)):
                value = e.load(x_data, builder.add(xo, moved))
                if bits is not None:
                    value = builder.select(bits[t], value, zero)
                product = builder.fmul(weight, value, flags=_CONTRACT)
                total = product if total is None else builder.fadd(total, product,
                                                                   flags=_CONTRACT)
            total = builder.fadd(builder.fmul(total, factor, flags=_CONTRACT), offset,
                                 flags=_CONTRACT)
            e.store(e.clamp(total, lowest), out_data, e.moved(first, out_step_, p))
        return e.masked_runs(8, e.intp(13), len(xs), body)
    return types.void(out, at, out_step, x, x_offsets, step, w, w_offsets, count, scale,
                      shift, ss_at, floor, mask), codegen


@intrinsic
def row_fma(typingctx, out, at, out_step, x, xa, step, w, wa, count):
    """``out[at + p*out_step:][:LANES] += w[wa:][:LANES] * x[xa + p*step:][:LANES]`` for
    ``p < count``."""
    if not (_flat(out, x, w) and _ints(at, out_step, xa, step, wa, count)):
        return None

    def codegen(context, builder, signature, args):
        e = _Emitter(context, builder, signature, args, out.dtype)
        out_data, x_data = e.data(0), e.data(3)
        weight = e.load(e.data(6), e.intp(7))
        first, out_step_, xa_, step_ = e.intp(1), e.intp(2), e.intp(4), e.intp(5)

        def body(p):
            target = e.moved(first, out_step_, p)
            product = builder.fmul(weight, e.load(x_data, e.moved(xa_, step_, p)),
                                   flags=_CONTRACT)
            e.store(builder.fadd(e.load(out_data, target), product, flags=_CONTRACT),
                    out_data, target)
        return e.run(8, body)
    return types.void(out, at, out_step, x, xa, step, w, wa, count), codegen


@intrinsic
def row_max(typingctx, out, at, out_step, x, x_offsets, step, count):
    """``out[at + p*out_step:][:LANES]`` = the lane-wise max of ``-inf`` and the blocks
    ``x[x_offsets[t] + p*step:]``, a NaN never winning (the pools' rule), for
    ``p < count``. A tap outside the image needs no mask: callers repeat an inside tap's
    offset in its place (the max is unchanged)."""
    if not (_flat(out, x) and _ints(at, out_step, step, count) and _taps(x_offsets)):
        return None

    def codegen(context, builder, signature, args):
        e = _Emitter(context, builder, signature, args, out.dtype)
        out_data, x_data, xs = e.data(0), e.data(3), e.offsets(4)
        first, out_step_, step_ = e.intp(1), e.intp(2), e.intp(5)

        def body(p):
            moved = builder.mul(p, step_)
            best = e.constant(float("-inf"))
            for xo in xs:
                best = e.max_keep(best, e.load(x_data, builder.add(xo, moved)))
            e.store(best, out_data, e.moved(first, out_step_, p))
        return e.run(6, body)
    return types.void(out, at, out_step, x, x_offsets, step, count), codegen


@intrinsic
def row_sum(typingctx, out, at, out_step, x, x_offsets, step, count, factor, mask):
    """``out[at + p*out_step:][:LANES] = factor * sum_t x[x_offsets[t] + p*step:][:LANES]``
    for ``p < count``, over the taps whose bit is set in ``mask`` (a masked tap's offset
    must still be readable)."""
    if not (_flat(out, x) and _ints(at, out_step, step, count, mask) and _taps(x_offsets)
            and _numbers(factor)):
        return None

    def codegen(context, builder, signature, args):
        e = _Emitter(context, builder, signature, args, out.dtype)
        out_data, x_data, xs = e.data(0), e.data(3), e.offsets(4)
        first, out_step_, step_ = e.intp(1), e.intp(2), e.intp(5)
        scale, zero = e.splat(e.value(7)), e.constant(0.0)

        def body(p, bits):
            moved = builder.mul(p, step_)
            total = None
            for t, xo in enumerate(xs):
                value = e.load(x_data, builder.add(xo, moved))
                if bits is not None:
                    value = builder.select(bits[t], value, zero)
                total = value if total is None else builder.fadd(total, value)
            e.store(builder.fmul(total, scale), out_data, e.moved(first, out_step_, p))
        return e.masked_runs(6, e.intp(8), len(xs), body)
    return types.void(out, at, out_step, x, x_offsets, step, count, factor, mask), codegen


def _update(name: str, doc: str):
    """An intrinsic ``name(out, at, out_step, x, xa, step, count)`` combining each output
    block with an input block in place."""
    def typer(typingctx, out, at, out_step, x, xa, step, count):
        if not (_flat(out, x) and _ints(at, out_step, xa, step, count)):
            return None

        def codegen(context, builder, signature, args):
            e = _Emitter(context, builder, signature, args, out.dtype)
            out_data, x_data = e.data(0), e.data(3)
            first, out_step_, xa_, step_ = e.intp(1), e.intp(2), e.intp(4), e.intp(5)

            def body(p):
                target = e.moved(first, out_step_, p)
                value = e.load(x_data, e.moved(xa_, step_, p))
                current = None if name == "row_copy" else e.load(out_data, target)
                if name == "row_copy":
                    result = value
                elif name == "row_max_into":
                    result = e.max_keep(current, value)
                elif name == "row_add_into":
                    result = builder.fadd(current, value)
                else:
                    result = builder.fmul(current, value)
                e.store(result, out_data, target)
            return e.run(6, body)
        return types.void(out, at, out_step, x, xa, step, count), codegen
    typer.__name__ = typer.__qualname__ = name
    typer.__doc__ = doc
    return intrinsic(typer)


row_copy = _update("row_copy", "``out[at + p*out_step:][:LANES] = x[xa + p*step:][:LANES]`` "
                   "for ``p < count``.")
row_max_into = _update("row_max_into", "``out[at + p*out_step:][:LANES] = max(out, x[xa + "
                       "p*step:][:LANES])`` lane-wise (NaN never wins), ``p < count``.")
row_add_into = _update("row_add_into", "``out[at + p*out_step:][:LANES] += x[xa + p*step:]"
                       "[:LANES]`` for ``p < count``.")
row_mul_into = _update("row_mul_into", "``out[at + p*out_step:][:LANES] *= x[xa + p*step:]"
                       "[:LANES]`` for ``p < count``.")


@intrinsic
def row_affine(typingctx, out, at, out_step, scale, shift, ss_at, floor, count):
    """``out[at + p*out_step:][:LANES] = max(floor, out * scale[ss_at:][:LANES] +
    shift[ss_at:][:LANES])`` for ``p < count`` (NaN stays NaN)."""
    if not (_flat(out, scale, shift) and _ints(at, out_step, ss_at, count)
            and _numbers(floor)):
        return None

    def codegen(context, builder, signature, args):
        e = _Emitter(context, builder, signature, args, out.dtype)
        out_data = e.data(0)
        factor, offset = e.load(e.data(3), e.intp(5)), e.load(e.data(4), e.intp(5))
        lowest = e.splat(e.value(6))
        first, out_step_ = e.intp(1), e.intp(2)

        def body(p):
            target = e.moved(first, out_step_, p)
            value = builder.fadd(builder.fmul(e.load(out_data, target), factor,
                                              flags=_CONTRACT), offset, flags=_CONTRACT)
            e.store(e.clamp(value, lowest), out_data, target)
        return e.run(7, body)
    return types.void(out, at, out_step, scale, shift, ss_at, floor, count), codegen


@intrinsic
def row_fill(typingctx, out, at, out_step, value, count):
    """``out[at + p*out_step:][:LANES] = value`` for ``p < count``."""
    if not (_flat(out) and _ints(at, out_step, count) and _numbers(value)):
        return None

    def codegen(context, builder, signature, args):
        e = _Emitter(context, builder, signature, args, out.dtype)
        out_data, filled = e.data(0), e.splat(e.value(3))
        first, out_step_ = e.intp(1), e.intp(2)
        return e.run(4, lambda p: e.store(filled, out_data, e.moved(first, out_step_, p)))
    return types.void(out, at, out_step, value, count), codegen


@intrinsic
def row_scale(typingctx, out, at, out_step, factor, count):
    """``out[at + p*out_step:][:LANES] *= factor`` for ``p < count``."""
    if not (_flat(out) and _ints(at, out_step, count) and _numbers(factor)):
        return None

    def codegen(context, builder, signature, args):
        e = _Emitter(context, builder, signature, args, out.dtype)
        out_data, scale = e.data(0), e.splat(e.value(3))
        first, out_step_ = e.intp(1), e.intp(2)

        def body(p):
            target = e.moved(first, out_step_, p)
            e.store(builder.fmul(e.load(out_data, target), scale), out_data, target)
        return e.run(4, body)
    return types.void(out, at, out_step, factor, count), codegen
