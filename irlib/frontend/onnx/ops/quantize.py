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
