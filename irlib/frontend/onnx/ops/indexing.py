"""Indexing ONNX ops: Gather*, Scatter*, TopK, ArgMax/ArgMin, NonZero, OneHot, Trilu, CumSum,
ReverseSequence, Compress, Einsum."""

from __future__ import annotations

import numpy as np

from ..registry import converter
from . import dynamic
from .common import constant_ints, normalize_axis, scalar, unsupported, widened


def _wrap_negative(ctx, indices, size):
    """ONNX indices may be negative (counting from the end): ``i + size`` where ``i < 0``."""
    value = ctx.const_value(indices)
    if value is not None:
        return ctx.const(np.where(value < 0, value + size, value).astype(value.dtype))
    if not isinstance(size, (int, np.integer)):
        return indices
    dtype = ctx.dtype(indices)
    return ctx.emit("where", ctx.emit("less", indices, scalar(ctx, 0, dtype)),
                    ctx.emit("add", indices, scalar(ctx, int(size), dtype)), indices)


@converter("Gather")
def _gather(ctx, inputs, attrs):
    data, indices = inputs
    axis = normalize_axis(attrs.get("axis", 0), ctx.ndim(data))
    indices = _wrap_negative(ctx, indices, ctx.shape(data)[axis])
    return ctx.emit("take", data, indices, axis=axis, mode="fast")


@converter("GatherElements")
def _gather_elements(ctx, inputs, attrs):
    data, indices = inputs
    axis = normalize_axis(attrs.get("axis", 0), ctx.ndim(data))
    indices = _wrap_negative(ctx, indices, ctx.shape(data)[axis])
    return ctx.emit("gather", data, indices, axis=axis)


def _index_first(ctx, indices):
    """ONNX keeps the index tuple in the last axis; irlib's *_nd ops want it first."""
    ndim = ctx.ndim(indices)
    return ctx.emit("transpose", indices, axes=[ndim - 1] + list(range(ndim - 1)))


@converter("GatherND")
def _gather_nd(ctx, inputs, attrs):
    data, indices = inputs
    return ctx.emit("gather_nd", data, _index_first(ctx, indices),
                    batch_dims=attrs.get("batch_dims", 0))


@converter("ScatterND")
def _scatter_nd(ctx, inputs, attrs):
    data, indices, updates = inputs
    mode = {"none": "update", "add": "add", "mul": "mul", "min": "min", "max": "max"}[
        attrs.get("reduction", "none")]
    if mode not in ("update", "add"):
        return ctx.emit("onnx.scatter_nd", data, indices, updates,
                        reduction=attrs["reduction"])
    return ctx.emit("scatter_nd", data, _index_first(ctx, indices), updates, mode=mode)


def _scatter_elements(ctx, inputs, attrs):
    data, indices, updates = inputs
    axis = normalize_axis(attrs.get("axis", 0), ctx.ndim(data))
    indices = _wrap_negative(ctx, indices, ctx.shape(data)[axis])
    reduction = attrs.get("reduction", "none")
    return ctx.emit("scatter_elements", data, indices, updates, axis=axis,
                    reduction="update" if reduction == "none" else reduction)


converter("ScatterElements")(_scatter_elements)
converter("Scatter")(_scatter_elements)


def _topk(ctx, data, k_values, k_expr, attrs):
    axis = normalize_axis(attrs.get("axis", -1), ctx.ndim(data))
    largest = bool(attrs.get("largest", 1))
    if k_values is None:
        return dynamic.topk(ctx, data, k_expr, axis, largest)
    tup = ctx.emit("topk", data, k=int(k_values[0]), axis=axis, ret_type="both",
                   is_ascend=not largest, dtype="int64")
    return [ctx.tuple_get(tup, 0), ctx.tuple_get(tup, 1)]


@converter("TopK", since=1)
def _topk_v1(ctx, inputs, attrs):
    return _topk(ctx, inputs[0], [attrs["k"]], None, attrs)


@converter("TopK", since=10)
def _topk_v10(ctx, inputs, attrs):
    if not attrs.get("sorted", 1):
        pass  # unsorted output may be in any order; sorted is a valid answer
    return _topk(ctx, inputs[0], constant_ints(ctx, inputs[1]), inputs[1], attrs)


def _arg(op_name):
    def convert(ctx, inputs, attrs):
        data = inputs[0]
        axis = normalize_axis(attrs.get("axis", 0), ctx.ndim(data))
        result = ctx.emit(op_name, data, axis=[axis], keepdims=bool(attrs.get("keepdims", 1)),
                          select_last_index=bool(attrs.get("select_last_index", 0)))
        return ctx.emit("cast", result, dtype="int64")
    return convert


converter("ArgMax")(_arg("argmax"))
converter("ArgMin")(_arg("argmin"))


@converter("NonZero")
def _non_zero(ctx, inputs, attrs):
    data = inputs[0]
    if ctx.ndim(data) == 0:
        data = ctx.emit("reshape", data, newshape=[1])
    positions = ctx.emit("argwhere", data)
    return ctx.emit("cast", ctx.emit("transpose", positions, axes=[1, 0]), dtype="int64")


@converter("OneHot")
def _one_hot(ctx, inputs, attrs):
    indices, depth, values = inputs
    axis = attrs.get("axis", -1)
    depth_value = constant_ints(ctx, depth)
    if depth_value is None:
        return ctx.emit("dyn.one_hot", indices, depth, values, axis=axis)
    depth = depth_value[0]
    off = ctx.emit("take", values, ctx.const(np.int64(0)), axis=0, mode="clip")
    on = ctx.emit("take", values, ctx.const(np.int64(1)), axis=0, mode="clip")
    indices = _wrap_negative(ctx, indices, depth)
    return ctx.emit("one_hot", indices, on, off, depth=depth, axis=axis,
                    dtype=ctx.dtype(values))


@converter("Trilu")
def _trilu(ctx, inputs, attrs):
    data = inputs[0]
    k = 0
    if len(inputs) > 1 and inputs[1] is not None:
        k_value = constant_ints(ctx, inputs[1])
        if k_value is None:
            return ctx.emit("dyn.trilu", data, dynamic.int64(ctx, inputs[1]),
                            upper=bool(attrs.get("upper", 1)))
        k = k_value[0]
    shape = ctx.shape(data)
    rows, cols = shape[-2], shape[-1]
    if not all(isinstance(d, (int, np.integer)) for d in (rows, cols)):
        unsupported("Trilu needs static matrix dims")
    ones = np.ones((int(rows), int(cols)), dtype=bool)
    mask = np.triu(ones, k) if attrs.get("upper", 1) else np.tril(ones, k)
    return ctx.emit("where", ctx.const(mask), data, scalar(ctx, 0, ctx.dtype(data)))


@converter("CumSum")
def _cumsum(ctx, inputs, attrs):
    data, axis_expr = inputs
    reverse = attrs.get("reverse", 0)
    axis_value = constant_ints(ctx, axis_expr)
    if axis_value is None:
        return ctx.emit("dyn.cumsum", data, axis_expr, exclusive=bool(attrs.get("exclusive", 0)),
                        reverse=bool(reverse))
    axis = normalize_axis(axis_value[0], ctx.ndim(data))
    if reverse:
        data = ctx.emit("reverse", data, axis=axis)
    result = ctx.emit("cumsum", data, axis=axis, exclusive=bool(attrs.get("exclusive", 0)))
    if reverse:
        result = ctx.emit("reverse", result, axis=axis)
    return result


@converter("ReverseSequence")
def _reverse_sequence(ctx, inputs, attrs):
    data, lengths = inputs
    time_axis = attrs.get("time_axis", 0)
    batch_axis = attrs.get("batch_axis", 1)
    shape = ctx.static_shape(data)
    if shape is None:
        unsupported("ReverseSequence needs a static input shape")
    steps = shape[time_axis]
    time_shape = [1] * len(shape)
    time_shape[time_axis] = steps
    batch_shape = [1] * len(shape)
    batch_shape[batch_axis] = shape[batch_axis]
    time = ctx.const(np.arange(steps, dtype="int64").reshape(time_shape))
    lengths = ctx.emit("reshape", ctx.emit("cast", lengths, dtype="int64"),
                       newshape=batch_shape)
    # position t of a sequence of length n reads n - 1 - t when t < n, else stays
    flipped = ctx.emit("subtract", ctx.emit("subtract", lengths, ctx.const(np.int64(1))), time)
    index = ctx.emit("where", ctx.emit("less", time, lengths), flipped, time)
    index = ctx.emit("broadcast_to", index, shape=list(shape))
    return ctx.emit("gather", data, index, axis=time_axis)


@converter("Compress")
def _compress(ctx, inputs, attrs):
    data, condition = inputs
    if "axis" not in attrs:
        data = ctx.emit("reshape", data, newshape=[-1])
        axis = 0
    else:
        axis = normalize_axis(attrs["axis"], ctx.ndim(data))
    value = ctx.const_value(condition)
    if value is not None:
        indices = ctx.const(np.nonzero(value)[0].astype("int64"))
    else:
        indices = ctx.emit("reshape", ctx.emit("argwhere", condition), newshape=[-1])
    return ctx.emit("take", data, indices, axis=axis, mode="fast")


@converter("Einsum")
def _einsum(ctx, inputs, attrs):
    return widened(ctx, list(inputs), lambda *values: ctx.emit(
        "einsum", ctx.make_tuple(list(values)), equation=attrs["equation"]))
