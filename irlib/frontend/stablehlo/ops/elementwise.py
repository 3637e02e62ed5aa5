"""Elementwise operations: arithmetic, math functions, comparison, logic, select, clamp,
convert, and constants.

StableHLO's elementwise operands already have the result's shape (JAX broadcasts explicitly
with ``broadcast_in_dim``), so each maps to one irlib broadcasting op; integer division and
remainder truncate toward zero (``trunc_divide``/``trunc_mod``), as StableHLO specifies.
"""

from __future__ import annotations

import numpy as np

from ..mlir import dense_value, enum_value
from ..registry import converter

_UNARY = {
    "stablehlo.abs": "abs", "stablehlo.negate": "negative", "stablehlo.exponential": "exp",
    "stablehlo.log": "log", "stablehlo.tanh": "tanh", "stablehlo.logistic": "sigmoid",
    "stablehlo.rsqrt": "rsqrt", "stablehlo.sqrt": "sqrt", "stablehlo.floor": "floor",
    "stablehlo.ceil": "ceil", "stablehlo.sign": "sign", "stablehlo.sine": "sin",
    "stablehlo.cosine": "cos", "stablehlo.tan": "tan", "chlo.tan": "tan",
    "stablehlo.round_nearest_even": "round", "stablehlo.is_finite": "isfinite",
    "chlo.erf": "erf", "chlo.sinh": "sinh", "chlo.cosh": "cosh", "chlo.asin": "asin",
    "chlo.acos": "acos", "chlo.atan": "atan", "chlo.asinh": "asinh", "chlo.acosh": "acosh",
    "chlo.atanh": "atanh",
}

_BINARY = {
    "stablehlo.add": "add", "stablehlo.subtract": "subtract", "stablehlo.multiply": "multiply",
    "stablehlo.maximum": "maximum", "stablehlo.minimum": "minimum", "stablehlo.power": "power",
    "stablehlo.shift_left": "left_shift", "stablehlo.shift_right_arithmetic": "right_shift",
}

_COMPARE = {"EQ": "equal", "NE": "not_equal", "LT": "less", "LE": "less_equal",
            "GT": "greater", "GE": "greater_equal"}


def _unary(irlib_op):
    def convert(ctx, op, inputs, attrs):
        return ctx.emit(irlib_op, inputs[0])
    return convert


_SYM_ARITH = {"add": lambda a, b: a + b, "subtract": lambda a, b: a - b,
              "multiply": lambda a, b: a * b}


def _binary(irlib_op):
    def convert(ctx, op, inputs, attrs):
        result = ctx.emit(irlib_op, inputs[0], inputs[1])
        arith = _SYM_ARITH.get(irlib_op)
        if arith is not None and ctx.dtype(result).startswith(("int", "uint")):
            left, right = ctx.sym_dims(inputs[0]), ctx.sym_dims(inputs[1])
            if left is not None and right is not None and len(left) == len(right):
                ctx.set_sym(result, [arith(a, b) for a, b in zip(left, right)])
            elif irlib_op == "add" and (left is None) != (right is None):
                # a run-time start plus sizes known from the shapes (a slice's limit)
                base, dims = (inputs[0], right) if left is None else (inputs[1], left)
                ctx.offsets[result] = (base, dims)
        return result
    return convert


for _name, _target in _UNARY.items():
    converter(_name, maps_to=_target)(_unary(_target))
for _name, _target in _BINARY.items():
    converter(_name, maps_to=_target)(_binary(_target))


def _is_float(ctx, expr) -> bool:
    return ctx.dtype(expr).startswith(("float", "bfloat"))


@converter("stablehlo.divide", maps_to="divide / trunc_divide",
           note="integers divide toward zero")
def _divide(ctx, op, inputs, attrs):
    name = "divide" if _is_float(ctx, inputs[0]) else "trunc_divide"
    return ctx.emit(name, inputs[0], inputs[1])


@converter("stablehlo.remainder", maps_to="trunc_mod", note="the sign of the dividend")
def _remainder(ctx, op, inputs, attrs):
    return ctx.emit("trunc_mod", inputs[0], inputs[1])


def _logic(logical: str, bitwise: str):
    def convert(ctx, op, inputs, attrs):
        name = logical if ctx.dtype(inputs[0]) == "bool" else bitwise
        return ctx.emit(name, *inputs)
    return convert


converter("stablehlo.and", maps_to="logical_and / bitwise_and")(
    _logic("logical_and", "bitwise_and"))
converter("stablehlo.or", maps_to="logical_or / bitwise_or")(_logic("logical_or", "bitwise_or"))
converter("stablehlo.xor", maps_to="logical_xor / bitwise_xor")(
    _logic("logical_xor", "bitwise_xor"))
converter("stablehlo.not", maps_to="logical_not / bitwise_not")(
    _logic("logical_not", "bitwise_not"))


@converter("stablehlo.round_nearest_afz", maps_to="sign, abs, floor",
           note="halves away from zero")
def _round_afz(ctx, op, inputs, attrs):
    x = inputs[0]
    half = ctx.scalar(0.5, ctx.dtype(x))
    magnitude = ctx.emit("floor", ctx.emit("add", ctx.emit("abs", x), half))
    return ctx.emit("multiply", ctx.emit("sign", x), magnitude)


@converter("stablehlo.cbrt", maps_to="sign, abs, power")
def _cbrt(ctx, op, inputs, attrs):
    x = inputs[0]
    third = ctx.scalar(1.0 / 3.0, ctx.dtype(x))
    return ctx.emit("multiply", ctx.emit("sign", x),
                    ctx.emit("power", ctx.emit("abs", x), third))


@converter("stablehlo.log_plus_one", maps_to="log(1 + x)")
def _log1p(ctx, op, inputs, attrs):
    x = inputs[0]
    return ctx.emit("log", ctx.emit("add", x, ctx.scalar(1, ctx.dtype(x))))


@converter("stablehlo.exponential_minus_one", maps_to="exp(x) - 1")
def _expm1(ctx, op, inputs, attrs):
    x = inputs[0]
    return ctx.emit("subtract", ctx.emit("exp", x), ctx.scalar(1, ctx.dtype(x)))


@converter("chlo.erfc", maps_to="1 - erf(x)")
def _erfc(ctx, op, inputs, attrs):
    x = inputs[0]
    return ctx.emit("subtract", ctx.scalar(1, ctx.dtype(x)), ctx.emit("erf", x))


@converter("chlo.square", maps_to="multiply")
def _square(ctx, op, inputs, attrs):
    return ctx.emit("multiply", inputs[0], inputs[0])


@converter("stablehlo.compare", maps_to="equal/not_equal/less/less_equal/greater/greater_equal",
           note="every direction; FLOAT, TOTALORDER, SIGNED, UNSIGNED")
def _compare(ctx, op, inputs, attrs):
    direction = enum_value(attrs["comparison_direction"], "ComparisonDirectionAttr")
    return ctx.emit(_COMPARE[direction], inputs[0], inputs[1])


@converter("stablehlo.select", maps_to="where", note="scalar or elementwise predicate")
def _select(ctx, op, inputs, attrs):
    return ctx.emit("where", *inputs)


@converter("stablehlo.clamp", maps_to="clip / maximum, minimum",
           note="scalar constant bounds become clip")
def _clamp(ctx, op, inputs, attrs):
    low, x, high = inputs
    low_value, high_value = ctx.const_value(low), ctx.const_value(high)
    if low_value is not None and high_value is not None and low_value.ndim == 0 \
            and high_value.ndim == 0 and _is_float(ctx, x):
        return ctx.emit("clip", x, a_min=float(low_value), a_max=float(high_value))
    return ctx.emit("minimum", ctx.emit("maximum", x, low), high)


@converter("stablehlo.convert", maps_to="cast")
def _convert(ctx, op, inputs, attrs):
    _, dtype = ctx.result_info(op)
    result = ctx.cast(inputs[0], dtype)
    if dtype.startswith(("int", "uint")):
        ctx.set_sym(result, ctx.sym_dims(inputs[0]))
    return result


@converter("stablehlo.constant", maps_to="constant")
def _constant(ctx, op, inputs, attrs):
    value = dense_value(attrs["value"], op.results[0].type)
    if ctx.lifted and value.ndim == 0 and value.dtype.kind == "f" and not np.isfinite(value):
        # inside a body applied to whole tensors: broadcastable, not a 0-d literal
        value = value.reshape((1,) * ctx.lifted_rank)
    return ctx.const(value)


@converter("stablehlo.atan2", maps_to="atan, where")
def _atan2(ctx, op, inputs, attrs):
    y, x = inputs
    dtype = ctx.dtype(y)
    zero, pi = ctx.scalar(0, dtype), ctx.scalar(np.pi, dtype)
    base = ctx.emit("atan", ctx.emit("divide", y, x))
    # quadrant fix-up: x < 0 adds +-pi (sign of y; +pi for y == +0)
    shift = ctx.emit("where", ctx.emit("less", y, zero), ctx.emit("negative", pi), pi)
    shifted = ctx.emit("where", ctx.emit("less", x, zero), ctx.emit("add", base, shift), base)
    half = ctx.scalar(np.pi / 2, dtype)
    on_axis = ctx.emit("where", ctx.emit("greater", y, zero), half,
                       ctx.emit("where", ctx.emit("less", y, zero), ctx.emit("negative", half),
                                zero))
    return ctx.emit("where", ctx.emit("equal", x, zero), on_axis, shifted)


_ERF_INV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                    0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERF_INV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                 0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _horner(ctx, coefficients, w):
    dtype = ctx.dtype(w)
    value = ctx.scalar(coefficients[0], dtype)
    for c in coefficients[1:]:
        value = ctx.emit("add", ctx.scalar(c, dtype), ctx.emit("multiply", value, w))
    return value


@converter("chlo.erf_inv", maps_to="log, sqrt, polynomials, where",
           note="Giles' single-precision approximation (what XLA uses for float32); "
                "+-inf at +-1")
def _erf_inv(ctx, op, inputs, attrs):
    x = inputs[0]
    dtype = ctx.dtype(x)
    one = ctx.scalar(1, dtype)
    w = ctx.emit("negative", ctx.emit("log", ctx.emit(
        "multiply", ctx.emit("subtract", one, x), ctx.emit("add", one, x))))
    central = _horner(ctx, _ERF_INV_CENTRAL, ctx.emit("subtract", w, ctx.scalar(2.5, dtype)))
    tail = _horner(ctx, _ERF_INV_TAIL, ctx.emit("subtract", ctx.emit("sqrt", w),
                                                 ctx.scalar(3, dtype)))
    p = ctx.emit("where", ctx.emit("less", w, ctx.scalar(5, dtype)), central, tail)
    result = ctx.emit("multiply", p, x)
    at_one = ctx.emit("equal", ctx.emit("abs", x), one)
    return ctx.emit("where", at_one, ctx.emit("multiply", x, ctx.scalar_like(np.inf, x)), result)


_REDUCED_TYPES = {(5, 10): "float16", (8, 7): "bfloat16"}
_OWN_WIDTHS = {(5, 10), (8, 7), (8, 23), (11, 52)}


def _check_reduce_precision(op):
    from ..mlir import attributes, int_value
    attrs = attributes(op)
    bits = (int_value(attrs.get("exponent_bits")), int_value(attrs.get("mantissa_bits")))
    return None if bits in _OWN_WIDTHS else f"{bits[0]} exponent and {bits[1]} mantissa bits"


@converter("stablehlo.reduce_precision", maps_to="cast there and back / identity",
           note="(5, 10) as float16, (8, 7) as bfloat16, a type's own width as identity",
           check=_check_reduce_precision)
def _reduce_precision(ctx, op, inputs, attrs):
    from ..mlir import int_value
    bits = (int_value(attrs["exponent_bits"]), int_value(attrs["mantissa_bits"]))
    x = inputs[0]
    dtype = ctx.dtype(x)
    own = {"float16": (5, 10), "bfloat16": (8, 7), "float32": (8, 23), "float64": (11, 52)}
    if own.get(dtype) == bits or (dtype == "float64" and bits == (8, 23)):
        return x if own.get(dtype) == bits else ctx.cast(ctx.cast(x, "float32"), dtype)
    target = _REDUCED_TYPES.get(bits)
    if target is None:
        from ..errors import StableHLOOpNotImplemented
        raise StableHLOOpNotImplemented(f"reduce_precision to {bits[0]} exponent and "
                                        f"{bits[1]} mantissa bits", [])
    return ctx.cast(ctx.cast(x, target), dtype)
