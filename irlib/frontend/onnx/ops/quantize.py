"""Quantization ONNX ops: QuantizeLinear and DequantizeLinear (per-tensor, per-axis and
blocked scales) for the integer types irlib has."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ..importer import onnx_dtype
from ..registry import converter
from .common import normalize_axis
from .elementwise import onnx_cast


def _broadcast_param(ctx, param, data, attrs):
    """Scale / zero point shaped to broadcast against ``data`` (per-axis or blocked)."""
    if param is None or ctx.ndim(param) == 0 or ctx.shape(param) == (1,) and ctx.ndim(data) != 1:
        return param if param is None or ctx.ndim(param) == 0 else \
            ctx.emit("reshape", param, newshape=[])
    ndim = ctx.ndim(data)
    axis = normalize_axis(attrs.get("axis", 1), ndim)
    block = attrs.get("block_size", 0)
    if block:
        return ctx.emit("repeat", param, repeats=int(block), axis=axis)
    return ctx.emit("reshape", param, newshape=[-1] + [1] * (ndim - 1 - axis))


@converter("DequantizeLinear")
def _dequantize_linear(ctx, inputs, attrs):
    data, scale = inputs[0], inputs[1]
    zero_point = inputs[2] if len(inputs) > 2 else None
    out_dtype = onnx_dtype(attrs["output_dtype"]) if attrs.get("output_dtype") else \
        ctx.dtype(scale)
    work = ctx.emit("cast", data, dtype="float32")
    zero_point = _broadcast_param(ctx, zero_point, data, attrs)
    if zero_point is not None:
        work = ctx.emit("subtract", work, ctx.emit("cast", zero_point, dtype="float32"))
    scale = ctx.emit("cast", _broadcast_param(ctx, scale, data, attrs), dtype="float32")
    return ctx.emit("cast", ctx.emit("multiply", work, scale), dtype=out_dtype)


@converter("QuantizeLinear")
def _quantize_linear(ctx, inputs, attrs):
    data, scale = inputs[0], inputs[1]
    zero_point = inputs[2] if len(inputs) > 2 else None
    if attrs.get("output_dtype"):
        out_dtype = onnx_dtype(attrs["output_dtype"])
    elif zero_point is not None:
        out_dtype = ctx.dtype(zero_point)
    else:
        out_dtype = "uint8"
    work = ctx.emit("cast", data, dtype="float32")
    scale = ctx.emit("cast", _broadcast_param(ctx, scale, data, attrs), dtype="float32")
    work = ctx.emit("divide", work, scale)
    if "int" in out_dtype:
        # numpy's round is round-half-to-even, as ONNX requires
        work = ctx.emit("round", work)
    zero_point = _broadcast_param(ctx, zero_point, data, attrs)
    if zero_point is not None:
        work = ctx.emit("add", work, ctx.emit("cast", zero_point, dtype="float32"))
    if "int" in out_dtype:
        info = ml_dtypes.iinfo(out_dtype)
        work = ctx.emit("clip", work, a_min=float(info.min), a_max=float(info.max))
        return ctx.emit("cast", work, dtype=out_dtype)
    # float8 / float4 targets: the rounding is the format's own (round to nearest even)
    return onnx_cast(ctx, work, out_dtype, bool(attrs.get("saturate", 1)) or
                     out_dtype == "float4_e2m1fn")


def _per_row(ctx, zero_point, data):
    """A zero point of ``data``'s first matrix axis (per row) reshaped to broadcast."""
    if ctx.ndim(zero_point) == 1 and ctx.shape(zero_point)[0] != 1 and ctx.ndim(data) >= 2:
        return ctx.emit("reshape", zero_point, newshape=[-1, 1])
    return zero_point


def _shifted(ctx, data, zero_point, dtype="int32", row_axis=False):
    work = ctx.emit("cast", data, dtype=dtype)
    if zero_point is None:
        return work
    if row_axis:
        zero_point = _per_row(ctx, zero_point, data)
    return ctx.emit("subtract", work, ctx.emit("cast", zero_point, dtype=dtype))


def _optional(inputs, index):
    return inputs[index] if len(inputs) > index else None


@converter("MatMulInteger")
def _matmul_integer(ctx, inputs, attrs):
    from .nn import _matmul_of
    a = _shifted(ctx, inputs[0], _optional(inputs, 2), row_axis=True)
    b = _shifted(ctx, inputs[1], _optional(inputs, 3))
    return _matmul_of(ctx, a, b)


@converter("ConvInteger")
def _conv_integer(ctx, inputs, attrs):
    from .nn import _conv
    # exact in float64 for 8-bit data; the conv ops work on floats
    x = _shifted(ctx, inputs[0], _optional(inputs, 2), "float64")
    w_zp = _optional(inputs, 3)
    w = _shifted(ctx, inputs[1], w_zp, "float64")
    if w_zp is not None and ctx.ndim(w_zp) == 1 and ctx.shape(w_zp)[0] != 1:
        w = ctx.emit("subtract", ctx.emit("cast", inputs[1], dtype="float64"), ctx.emit(
            "reshape", ctx.emit("cast", w_zp, dtype="float64"),
            newshape=[-1] + [1] * (ctx.ndim(inputs[1]) - 1)))
    return ctx.emit("cast", ctx.emit("round", _conv(ctx, [x, w], attrs)), dtype="int32")


def _requantize(ctx, value, scale, zero_point, like):
    """Quantize float32 ``value`` with ``scale``/``zero_point`` to ``like``'s dtype."""
    return _quantize_linear(ctx, [value, scale, zero_point], {})


def _dequantized(ctx, data, scale, zero_point, per_axis=None):
    attrs = {"axis": per_axis} if per_axis is not None else {}
    return _dequantize_linear(ctx, [data, ctx.emit("cast", scale, dtype="float32"),
                                    zero_point], attrs)


@converter("QLinearMatMul")
def _qlinear_matmul(ctx, inputs, attrs):
    from .nn import _matmul_of
    a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp = inputs
    a_real = ctx.emit("multiply", _shifted(ctx, a, a_zp, "float32", row_axis=True),
                      _per_row(ctx, ctx.emit("cast", a_scale, dtype="float32"), a))
    b_real = ctx.emit("multiply", _shifted(ctx, b, b_zp, "float32"),
                      ctx.emit("cast", b_scale, dtype="float32"))
    product = _matmul_of(ctx, a_real, b_real)
    return _requantize(ctx, product, ctx.emit("cast", y_scale, dtype="float32"), y_zp, a)


@converter("QLinearConv")
def _qlinear_conv(ctx, inputs, attrs):
    from .nn import _conv
    x, x_scale, x_zp, w, w_scale, w_zp, y_scale = inputs[:7]
    y_zp = _optional(inputs, 7)
    bias = _optional(inputs, 8)
    x_real = _dequantized(ctx, x, x_scale, x_zp)
    w_real = _dequantized(ctx, w, w_scale, w_zp, per_axis=0)
    if bias is not None:
        bias_scale = ctx.emit("multiply", ctx.emit("cast", x_scale, dtype="float32"),
                              ctx.emit("cast", w_scale, dtype="float32"))
        bias = ctx.emit("multiply", ctx.emit("cast", bias, dtype="float32"), bias_scale)
    result = _conv(ctx, [x_real, w_real] + ([bias] if bias is not None else []), attrs)
    return _requantize(ctx, result, ctx.emit("cast", y_scale, dtype="float32"), y_zp, x)


@converter("DynamicQuantizeLinear")
def _dynamic_quantize_linear(ctx, inputs, attrs):
    data = ctx.emit("cast", inputs[0], dtype="float32")
    zero = ctx.const(np.float32(0))
    high = ctx.emit("maximum", ctx.emit("max", data, axis=None, keepdims=False), zero)
    low = ctx.emit("minimum", ctx.emit("min", data, axis=None, keepdims=False), zero)
    # onnxruntime's scale for an all-zero tensor (max == min == 0) is 1, not 0 (0 would make
    # every x / scale NaN)
    scale = ctx.emit("where", ctx.emit("equal", high, low), ctx.const(np.float32(1)),
                     ctx.emit("divide", ctx.emit("subtract", high, low),
                              ctx.const(np.float32(255))))
    zero_point = ctx.emit("cast", ctx.emit("clip", ctx.emit("round", ctx.emit(
        "divide", ctx.emit("negative", low), scale)), a_min=0.0, a_max=255.0), dtype="uint8")
    quantized = _quantize_linear(ctx, [data, scale, zero_point], {})
    return [quantized, scale, zero_point]
