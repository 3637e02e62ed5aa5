"""Bit-level and normalisation operations: ``shift_right_logical``, ``bitcast_convert`` (what
``jax.random``'s threefry generator emits), ``chlo.is_inf``/``is_pos_inf``/``is_neg_inf``,
and ``batch_norm_inference``.
"""

from __future__ import annotations

import numpy as np

from ..mlir import float_value, int_value
from ..registry import converter

_UNSIGNED = {"int8": "uint8", "int16": "uint16", "int32": "uint32", "int64": "uint64"}


@converter("stablehlo.shift_right_logical", maps_to="right_shift (on the unsigned type)",
           note="signed operands are shifted as their unsigned counterparts")
def _shift_right_logical(ctx, op, inputs, attrs):
    lhs, rhs = inputs
    dtype = ctx.dtype(lhs)
    unsigned = _UNSIGNED.get(dtype, dtype)
    bits = np.dtype(unsigned).itemsize * 8
    shifted = ctx.emit("right_shift", ctx.cast(lhs, unsigned), ctx.cast(rhs, unsigned))
    # StableHLO: a shift by the bit width or more gives 0 (numpy's is undefined)
    too_far = ctx.emit("greater_equal", ctx.cast(rhs, unsigned), ctx.scalar(bits, unsigned))
    shifted = ctx.emit("where", too_far, ctx.scalar(0, unsigned), shifted)
    return ctx.cast(shifted, dtype)


@converter("stablehlo.bitcast_convert", maps_to="onnx.bitcast",
           note="equal or different element widths (a trailing dim appears/disappears)")
def _bitcast_convert(ctx, op, inputs, attrs):
    _, dtype = ctx.result_info(op)
    if dtype == ctx.dtype(inputs[0]):
        return inputs[0]
    return ctx.emit("onnx.bitcast", inputs[0], dtype=dtype)


@converter("chlo.is_inf", maps_to="isinf")
def _is_inf(ctx, op, inputs, attrs):
    return ctx.emit("isinf", inputs[0])


@converter("chlo.is_pos_inf", maps_to="equal to +inf")
def _is_pos_inf(ctx, op, inputs, attrs):
    return ctx.emit("equal", inputs[0], ctx.scalar_like(np.inf, inputs[0]))


@converter("chlo.is_neg_inf", maps_to="equal to -inf")
def _is_neg_inf(ctx, op, inputs, attrs):
    return ctx.emit("equal", inputs[0], ctx.scalar_like(-np.inf, inputs[0]))


@converter("stablehlo.batch_norm_inference", maps_to="nn.batch_norm",
           note="any feature_index")
def _batch_norm_inference(ctx, op, inputs, attrs):
    x, scale, offset, mean, variance = inputs
    result = ctx.emit("nn.batch_norm", x, scale, offset, mean, variance,
                      axis=int_value(attrs["feature_index"]),
                      epsilon=float_value(attrs["epsilon"]))
    return ctx.tuple_get(result, 0)


_INT_OF = {"float32": "int32", "float64": "int64", "float16": "int16"}


@converter("chlo.next_after", maps_to="onnx.bitcast, add, where",
           note="float16/32/64: one step of the bit pattern toward the target")
def _next_after(ctx, op, inputs, attrs):
    x, y = inputs
    dtype = ctx.dtype(x)
    int_dtype = _INT_OF.get(dtype)
    if int_dtype is None:
        from ..errors import StableHLOOpNotImplemented
        raise StableHLOOpNotImplemented(f"next_after of {dtype}", [])
    bits = ctx.emit("onnx.bitcast", x, dtype=int_dtype)
    zero = ctx.scalar(0, dtype)
    away = ctx.emit("equal", ctx.emit("less", x, y), ctx.emit("greater", x, zero))
    step = ctx.emit("where", away, ctx.scalar(1, int_dtype), ctx.scalar(-1, int_dtype))
    moved = ctx.emit("onnx.bitcast", ctx.emit("add", bits, step), dtype=dtype)
    # from zero: the smallest subnormal with the sign of the target
    tiny = ctx.emit("onnx.bitcast", ctx.scalar(1, int_dtype), dtype=dtype)
    from_zero = ctx.emit("where", ctx.emit("less", y, zero), ctx.emit("negative", tiny), tiny)
    result = ctx.emit("where", ctx.emit("equal", x, zero), from_zero, moved)
    result = ctx.emit("where", ctx.emit("equal", x, y), y, result)
    is_nan = ctx.emit("logical_or", ctx.emit("isnan", x), ctx.emit("isnan", y))
    return ctx.emit("where", is_nan, ctx.emit("add", x, y), result)


def _bit_terms(ctx, x, term):
    """``sum(term(unsigned(x) >> k) for k in range(bits))`` cast back to ``x``'s dtype."""
    dtype = ctx.dtype(x)
    unsigned = _UNSIGNED.get(dtype, dtype)
    bits = np.dtype(unsigned).itemsize * 8
    u = ctx.cast(x, unsigned)
    total = None
    for k in range(bits):
        shifted = ctx.emit("right_shift", u, ctx.scalar(k, unsigned)) if k else u
        value = ctx.cast(term(shifted, unsigned), dtype)
        total = value if total is None else ctx.emit("add", total, value)
    return total, bits


@converter("stablehlo.popcnt", maps_to="right_shift, bitwise_and, add",
           note="one term per bit of the (unsigned) integer")
def _popcnt(ctx, op, inputs, attrs):
    total, _ = _bit_terms(ctx, inputs[0], lambda s, u: ctx.emit(
        "bitwise_and", s, ctx.scalar(1, u)))
    return total


@converter("stablehlo.count_leading_zeros", maps_to="right_shift, not_equal, add",
           note="the width minus the bit length")
def _count_leading_zeros(ctx, op, inputs, attrs):
    length, bits = _bit_terms(ctx, inputs[0], lambda s, u: ctx.emit(
        "not_equal", s, ctx.scalar(0, u)))
    return ctx.emit("subtract", ctx.scalar(bits, ctx.dtype(inputs[0])), length)
