"""Elementwise ONNX ops: math, comparisons, logic, activations, casts, softmax family."""

from __future__ import annotations

import math

import numpy as np

from ..importer import onnx_dtype
from ..registry import converter
from .common import normalize_axis, scalar, unsupported

_UNARY = {
    "Abs": "abs", "Acos": "acos", "Acosh": "acosh", "Asin": "asin", "Asinh": "asinh",
    "Atan": "atan", "Atanh": "atanh", "Ceil": "ceil", "Cos": "cos", "Cosh": "cosh",
    "Erf": "erf", "Exp": "exp", "Floor": "floor", "Log": "log", "Neg": "negative",
    "Relu": "nn.relu", "Sigmoid": "sigmoid", "Sign": "sign", "Sin": "sin", "Sinh": "sinh",
    "Sqrt": "sqrt", "Tan": "tan", "Tanh": "tanh", "Not": "logical_not", "IsNaN": "isnan",
    "Round": "round", "BitwiseNot": "bitwise_not",
}

_BINARY = {
    "Add": "add", "Sub": "subtract", "Mul": "multiply", "Equal": "equal",
    "Greater": "greater", "GreaterOrEqual": "greater_equal", "Less": "less",
    "LessOrEqual": "less_equal", "And": "logical_and", "Or": "logical_or",
    "Xor": "logical_xor", "BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or",
    "BitwiseXor": "bitwise_xor",
}


def _register_unary(onnx_name: str, op_name: str):
    @converter(onnx_name)
    def convert(ctx, inputs, attrs):
        return ctx.emit(op_name, inputs[0])
    return convert


def _register_binary(onnx_name: str, op_name: str):
    @converter(onnx_name)
    def convert(ctx, inputs, attrs):
        return ctx.emit(op_name, inputs[0], inputs[1])
    return convert


for _onnx, _op in _UNARY.items():
    _register_unary(_onnx, _op)
for _onnx, _op in _BINARY.items():
    _register_binary(_onnx, _op)


def _is_int(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


@converter("Div")
def _div(ctx, inputs, attrs):
    lhs, rhs = inputs
    # ONNX integer division truncates toward zero (C semantics), unlike Python's //.
    if _is_int(ctx.dtype(lhs)):
        return ctx.emit("trunc_divide", lhs, rhs)
    return ctx.emit("divide", lhs, rhs)


@converter("Mod")
def _mod(ctx, inputs, attrs):
    lhs, rhs = inputs
    if attrs.get("fmod", 0):
        return ctx.emit("trunc_mod", lhs, rhs)
    return ctx.emit("floor_mod", lhs, rhs)


@converter("Pow")
def _pow(ctx, inputs, attrs):
    base, exponent = inputs
    dtype = ctx.dtype(base)
    if _is_int(dtype):
        wide = ctx.emit("power", ctx.emit("cast", base, dtype="float64"),
                        ctx.emit("cast", exponent, dtype="float64"))
        return ctx.emit("cast", wide, dtype=dtype)
    if ctx.dtype(exponent) != dtype:
        exponent = ctx.emit("cast", exponent, dtype=dtype)
    return ctx.emit("power", base, exponent)


@converter("BitShift")
def _bit_shift(ctx, inputs, attrs):
    op = "left_shift" if attrs.get("direction", "LEFT") == "LEFT" else "right_shift"
    return ctx.emit(op, inputs[0], inputs[1])


@converter("Reciprocal")
def _reciprocal(ctx, inputs, attrs):
    data = inputs[0]
    return ctx.emit("divide", scalar(ctx, 1, ctx.dtype(data)), data)


@converter("Identity")
def _identity(ctx, inputs, attrs):
    return inputs[0]


# float8 formats whose Cast honours ``saturate`` (e8m0 has its own rounding rules)
_SATURATING = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")


def onnx_cast(ctx, data, dtype: str, saturate: bool = True):
    """ONNX ``Cast`` of ``data`` to ``dtype``: with ``saturate`` (the default), values beyond
    a float8 format's range (infinities included) clamp to its largest finite value, NaN stays
    NaN; without it they overflow as the format does (to NaN or inf)."""
    if "string" in (dtype, ctx.dtype(data)):
        unsupported("casts from or to strings are not supported")
    if dtype == ctx.dtype(data):
        return data
    if saturate and dtype in _SATURATING and not _is_int(ctx.dtype(data)) \
            and ctx.dtype(data) != "bool":
        import ml_dtypes
        limit = float(ml_dtypes.finfo(dtype).max)
        data = ctx.emit("clip", data, a_min=-limit, a_max=limit)
    return ctx.emit("cast", data, dtype=dtype)


@converter("Cast")
def _cast(ctx, inputs, attrs):
    data, dtype = inputs[0], onnx_dtype(attrs["to"])
    mode = attrs.get("round_mode", "up")
    if dtype == "float8_e8m0fnu" and mode in ("up", "down"):
        # e8m0 holds powers of two only: round the exponent as asked before casting
        wide = ctx.emit("maximum", ctx.emit("cast", data, dtype="float32"),
                        scalar(ctx, 2.0 ** -127, "float32"))  # e8m0's smallest value
        exponent = ctx.emit("ceil" if mode == "up" else "floor", ctx.emit("log2", wide))
        data = ctx.emit("power", scalar(ctx, 2.0, "float32"), exponent)
    return onnx_cast(ctx, data, dtype, bool(attrs.get("saturate", 1)))


@converter("CastLike")
def _cast_like(ctx, inputs, attrs):
    return onnx_cast(ctx, inputs[0], ctx.dtype(inputs[1]), bool(attrs.get("saturate", 1)))


@converter("IsInf")
def _is_inf(ctx, inputs, attrs):
    data = inputs[0]
    result = ctx.emit("isinf", data)
    zero = scalar(ctx, 0, ctx.dtype(data))
    positive, negative = attrs.get("detect_positive", 1), attrs.get("detect_negative", 1)
    if positive and not negative:
        result = ctx.emit("logical_and", result, ctx.emit("greater", data, zero))
    elif negative and not positive:
        result = ctx.emit("logical_and", result, ctx.emit("less", data, zero))
    elif not positive and not negative:
        result = ctx.emit("logical_and", result, ctx.emit("not_equal", data, data))
    return result


def _variadic(op_name: str):
    def convert(ctx, inputs, attrs):
        result = inputs[0]
        for other in inputs[1:]:
            result = ctx.emit(op_name, result, other)
        return result
    return convert


converter("Sum")(_variadic("add"))
converter("Max")(_variadic("maximum"))
converter("Min")(_variadic("minimum"))


@converter("Mean")
def _mean(ctx, inputs, attrs):
    total = _variadic("add")(ctx, inputs, attrs)
    return ctx.emit("divide", total, scalar(ctx, len(inputs), ctx.dtype(total)))


@converter("Where")
def _where(ctx, inputs, attrs):
    return ctx.emit("where", *inputs)


@converter("Clip", since=1)
def _clip_v1(ctx, inputs, attrs):
    data = inputs[0]
    low = attrs.get("min", -np.inf)
    high = attrs.get("max", np.inf)
    return ctx.emit("clip", data, a_min=float(low), a_max=float(high))


@converter("Clip", since=11)
def _clip_v11(ctx, inputs, attrs):
    data = inputs[0]
    result = data
    if len(inputs) > 1 and inputs[1] is not None:
        result = ctx.emit("maximum", result, inputs[1])
    if len(inputs) > 2 and inputs[2] is not None:
        result = ctx.emit("minimum", result, inputs[2])
    return result


# -- activations --------------------------------------------------------------------------

def _s(ctx, data, value):
    return scalar(ctx, value, ctx.dtype(data))


@converter("LeakyRelu")
def _leaky_relu(ctx, inputs, attrs):
    return ctx.emit("nn.leaky_relu", inputs[0], alpha=float(attrs.get("alpha", 0.01)))


@converter("PRelu")
def _prelu(ctx, inputs, attrs):
    data, slope = inputs
    # alpha broadcasts unidirectionally against x: max(x, 0) + slope * min(x, 0).
    zero = _s(ctx, data, 0)
    return ctx.emit("add", ctx.emit("maximum", data, zero),
                    ctx.emit("multiply", slope, ctx.emit("minimum", data, zero)))


@converter("Elu")
def _elu(ctx, inputs, attrs):
    from .common import widened
    # float16/bfloat16: alpha * (exp(x) - 1) in float32, rounded once (as expm1 would be)
    return widened(ctx, [inputs[0]], lambda data: _elu_of(ctx, data, attrs), float16=True)


def _elu_of(ctx, data, attrs):
    alpha = float(attrs.get("alpha", 1.0))
    negative = ctx.emit("multiply", _s(ctx, data, alpha),
                        ctx.emit("subtract", ctx.emit("exp", data), _s(ctx, data, 1)))
    return ctx.emit("where", ctx.emit("greater", data, _s(ctx, data, 0)), data, negative)


@converter("Celu")
def _celu(ctx, inputs, attrs):
    from .common import widened
    return widened(ctx, [inputs[0]], lambda data: _celu_of(ctx, data, attrs))


def _celu_of(ctx, data, attrs):
    alpha = float(attrs.get("alpha", 1.0))
    # max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
    inner = ctx.emit("multiply", _s(ctx, data, alpha), ctx.emit(
        "subtract", ctx.emit("exp", ctx.emit("divide", data, _s(ctx, data, alpha))),
        _s(ctx, data, 1)))
    return ctx.emit("add", ctx.emit("maximum", data, _s(ctx, data, 0)),
                    ctx.emit("minimum", inner, _s(ctx, data, 0)))


@converter("Selu")
def _selu(ctx, inputs, attrs):
    data = inputs[0]
    alpha = float(attrs.get("alpha", 1.67326319217681884765625))
    gamma = float(attrs.get("gamma", 1.05070102214813232421875))
    negative = ctx.emit("multiply", _s(ctx, data, alpha),
                        ctx.emit("subtract", ctx.emit("exp", data), _s(ctx, data, 1)))
    inner = ctx.emit("where", ctx.emit("greater", data, _s(ctx, data, 0)), data, negative)
    return ctx.emit("multiply", _s(ctx, data, gamma), inner)


@converter("ThresholdedRelu")
def _thresholded_relu(ctx, inputs, attrs):
    data = inputs[0]
    alpha = float(attrs.get("alpha", 1.0))
    return ctx.emit("where", ctx.emit("greater", data, _s(ctx, data, alpha)), data,
                    _s(ctx, data, 0))


@converter("HardSigmoid")
def _hard_sigmoid(ctx, inputs, attrs):
    data = inputs[0]
    alpha, beta = float(attrs.get("alpha", 0.2)), float(attrs.get("beta", 0.5))
    linear = ctx.emit("add", ctx.emit("multiply", data, _s(ctx, data, alpha)),
                      _s(ctx, data, beta))
    return ctx.emit("clip", linear, a_min=0.0, a_max=1.0)


@converter("HardSwish")
def _hard_swish(ctx, inputs, attrs):
    data = inputs[0]
    gate = _hard_sigmoid(ctx, [data], {"alpha": 1.0 / 6, "beta": 0.5})
    return ctx.emit("multiply", data, gate)


@converter("Softplus")
def _softplus(ctx, inputs, attrs):
    data = inputs[0]
    # log(1 + exp(x)) computed stably as max(x, 0) + log(1 + exp(-|x|)).
    stable = ctx.emit("log", ctx.emit("add", _s(ctx, data, 1),
                                      ctx.emit("exp", ctx.emit("negative",
                                                               ctx.emit("abs", data)))))
    return ctx.emit("add", ctx.emit("maximum", data, _s(ctx, data, 0)), stable)


@converter("Softsign")
def _softsign(ctx, inputs, attrs):
    data = inputs[0]
    return ctx.emit("divide", data, ctx.emit("add", _s(ctx, data, 1), ctx.emit("abs", data)))


@converter("Mish")
def _mish(ctx, inputs, attrs):
    data = inputs[0]
    return ctx.emit("multiply", data, ctx.emit("tanh", _softplus(ctx, [data], {})))


@converter("Swish")
def _swish(ctx, inputs, attrs):
    data = inputs[0]
    alpha = float(attrs.get("alpha", 1.0))
    return ctx.emit("multiply", data, ctx.emit(
        "sigmoid", ctx.emit("multiply", data, _s(ctx, data, alpha))))


@converter("Shrink")
def _shrink(ctx, inputs, attrs):
    data = inputs[0]
    bias, lambd = float(attrs.get("bias", 0.0)), float(attrs.get("lambd", 0.5))
    below = ctx.emit("add", data, _s(ctx, data, bias))
    above = ctx.emit("subtract", data, _s(ctx, data, bias))
    zero = _s(ctx, data, 0)
    inner = ctx.emit("where", ctx.emit("greater", data, _s(ctx, data, lambd)), above, zero)
    return ctx.emit("where", ctx.emit("less", data, _s(ctx, data, -lambd)), below, inner)


@converter("Gelu")
def _gelu(ctx, inputs, attrs):
    data = inputs[0]
    half = ctx.emit("multiply", data, _s(ctx, data, 0.5))
    if attrs.get("approximate", "none") == "tanh":
        cube = ctx.emit("multiply", ctx.emit("multiply", data, data), data)
        inner = ctx.emit("multiply", _s(ctx, data, math.sqrt(2 / math.pi)), ctx.emit(
            "add", data, ctx.emit("multiply", _s(ctx, data, 0.044715), cube)))
        return ctx.emit("multiply", half, ctx.emit("add", _s(ctx, data, 1),
                                                   ctx.emit("tanh", inner)))
    scaled = ctx.emit("multiply", data, _s(ctx, data, 1 / math.sqrt(2)))
    return ctx.emit("multiply", half, ctx.emit("add", _s(ctx, data, 1),
                                               ctx.emit("erf", scaled)))


# -- softmax family -------------------------------------------------------------------------

def _coerced_2d(op_name: str):
    """Softmax-family semantics before opset 13: flatten to 2-D at ``axis``, apply on the
    last axis, restore the shape."""
    def convert(ctx, inputs, attrs):
        data = inputs[0]
        ndim = ctx.ndim(data)
        axis = normalize_axis(attrs.get("axis", 1), ndim)
        if axis == ndim - 1:
            return _apply(ctx, op_name, data, -1)
        shape = ctx.shape(data)
        flat = ctx.emit("reshape", data, newshape=[-1] if axis == 0 else
                        [int(np.prod(shape[:axis])), -1])
        if axis == 0:
            flat = ctx.emit("expand_dims", flat, axis=0)
        result = _apply(ctx, op_name, flat, -1)
        return ctx.emit("reshape", result, newshape=list(shape))
    return convert


def _apply(ctx, op_name, data, axis):
    if op_name == "hardmax":
        depth = ctx.shape(data)[axis]
        index = ctx.emit("argmax", data, axis=[axis], keepdims=False, select_last_index=False)
        return ctx.emit("one_hot", index, scalar(ctx, 1, ctx.dtype(data)),
                        scalar(ctx, 0, ctx.dtype(data)), depth=int(depth), axis=axis,
                        dtype=ctx.dtype(data))
    return ctx.emit(op_name, data, axis=axis)


def _last_axis(op_name: str):
    def convert(ctx, inputs, attrs):
        return _apply(ctx, op_name, inputs[0], normalize_axis(attrs.get("axis", -1),
                                                              ctx.ndim(inputs[0])))
    return convert


for _onnx, _op in (("Softmax", "nn.softmax"), ("LogSoftmax", "nn.log_softmax"),
                   ("Hardmax", "hardmax")):
    converter(_onnx, since=1)(_coerced_2d(_op))
    converter(_onnx, since=13)(_last_axis(_op))
