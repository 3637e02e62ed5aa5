"""ONNX reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare.

``axes`` is an attribute before opset 13 (ReduceSum) / 18 (the others) and an optional input
after; run-time axes use the ``dyn`` reductions.
"""

from __future__ import annotations

from ..registry import converter
from .common import constant_ints, normalize_axis

# ONNX name -> (pre-transform, irlib reduction, post-transform)
_REDUCTIONS = {
    "ReduceSum": (None, "sum", None),
    "ReduceMean": (None, "mean", None),
    "ReduceMax": (None, "max", None),
    "ReduceMin": (None, "min", None),
    "ReduceProd": (None, "prod", None),
    "ReduceL1": ("abs", "sum", None),
    "ReduceL2": ("square", "sum", "sqrt"),
    "ReduceLogSum": (None, "sum", "log"),
    "ReduceLogSumExp": ("exp", "sum", "log"),
    "ReduceSumSquare": ("square", "sum", None),
}


def _reduce(ctx, name, data, axes, axes_expr, attrs):
    pre, op_name, post = _REDUCTIONS[name]
    keepdims = bool(attrs.get("keepdims", 1))
    empty = axes is not None and len(axes) == 0 or axes is None and (
        axes_expr is None or ctx.shape(axes_expr)[0] == 0)
    if empty and attrs.get("noop_with_empty_axes", 0):
        return data
    if axes is not None and len(axes) == 0 or axes is None and axes_expr is None:
        axes = list(range(ctx.ndim(data)))
    if pre == "square":
        data = ctx.emit("multiply", data, data)
    elif pre is not None:
        data = ctx.emit(pre, data)
    if axes is None:
        if ctx.shape(axes_expr)[0] == 0:
            result = ctx.emit(op_name, data, axis=None, keepdims=keepdims)
        else:
            result = ctx.emit(f"dyn.{op_name}", data,
                              ctx.emit("cast", axes_expr, dtype="int64"), keepdims=keepdims)
    else:
        ndim = ctx.ndim(data)
        result = ctx.emit(op_name, data, axis=sorted({normalize_axis(a, ndim) for a in axes}),
                          keepdims=keepdims)
    if post is not None:
        result = ctx.emit(post, result)
    return result


def _register(name: str, input_since: int):
    @converter(name, since=1)
    def with_attribute(ctx, inputs, attrs):
        axes = attrs.get("axes")
        return _reduce(ctx, name, inputs[0], list(axes) if axes is not None else None, None,
                       attrs)

    @converter(name, since=input_since)
    def with_input(ctx, inputs, attrs):
        axes_expr = inputs[1] if len(inputs) > 1 else None
        axes = constant_ints(ctx, axes_expr) if axes_expr is not None else None
        return _reduce(ctx, name, inputs[0], axes, axes_expr if axes is None else None, attrs)


for _name in _REDUCTIONS:
    _register(_name, 13 if _name == "ReduceSum" else 18)
