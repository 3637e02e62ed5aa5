"""Data movement: broadcast_in_dim, reshape, transpose, slice, dynamic_slice,
dynamic_update_slice, concatenate, pad, iota, reverse, and the shape computations of
``jax.export`` symbolic shapes (get_dimension_size, dynamic_broadcast_in_dim,
dynamic_reshape, dynamic_iota).

A run-time start index (``dynamic_slice``, ``dynamic_update_slice``) keeps static result
types: the slice is a ``take`` of ``start + arange(size)`` per axis (StableHLO clamps the start
so the slice stays in bounds; so do we), and the update is a ``where`` over a mask of the
updated window.
"""

from __future__ import annotations

import numpy as np

from ..errors import StableHLOOpNotImplemented
from ..mlir import int_list, int_value
from ..registry import converter


def _is_int(dim) -> bool:
    return isinstance(dim, (int, np.integer)) and not isinstance(dim, bool)


def reshape(ctx, x, shape):
    """``x`` reshaped to ``shape`` (unchanged when it has it already)."""
    shape = list(shape)
    if list(ctx.shape(x)) == shape:
        return x
    return ctx.emit("reshape", x, newshape=shape)


def transpose(ctx, x, axes):
    """``x`` with its axes permuted (unchanged for the identity)."""
    axes = [int(a) for a in axes]
    if axes == list(range(len(axes))):
        return x
    return ctx.emit("transpose", x, axes=axes)


def slice_axes(ctx, x, begin, end, strides=None):
    """``x[begin:end:strides]`` over every axis (unchanged when it is the whole tensor)."""
    shape = ctx.shape(x)
    strides = list(strides) if strides is not None else [1] * len(shape)
    if all(b == 0 and s == 1 and (_is_int(d) and e == d) for b, e, s, d in
           zip(begin, end, strides, shape)):
        return x
    return ctx.emit("strided_slice", x, begin=list(begin), end=list(end), strides=strides)


def pad(ctx, x, value, low, high, interior=None):
    """``x`` padded with scalar ``value``: ``low``/``high`` elements (negative ones crop) and
    ``interior`` elements between neighbours, per axis."""
    rank = ctx.ndim(x)
    interior = list(interior) if interior is not None else [0] * rank
    for axis, gap in enumerate(interior):
        if gap:
            x = _dilate(ctx, x, value, axis, int(gap))
    widths = [(max(int(lo), 0), max(int(hi), 0)) for lo, hi in zip(low, high)]
    if any(lo or hi for lo, hi in widths):
        x = ctx.emit("nn.pad", x, value, pad_width=widths)
    if any(int(lo) < 0 or int(hi) < 0 for lo, hi in zip(low, high)):
        shape = ctx.shape(x)
        begin = [max(-int(lo), 0) for lo in low]
        end = [shape[i] - max(-int(hi), 0) for i, hi in enumerate(high)]
        x = slice_axes(ctx, x, begin, end)
    return x


def _dilate(ctx, x, value, axis: int, gap: int):
    """``gap`` copies of ``value`` between neighbouring elements of ``x`` along ``axis``."""
    shape = list(ctx.shape(x))
    size = shape[axis]
    if not _is_int(size):
        raise StableHLOOpNotImplemented("interior padding of a dynamic axis", [])
    if size == 0:
        return x
    expanded = ctx.emit("expand_dims", x, axis=axis + 1)
    widths = [(0, 0)] * (len(shape) + 1)
    widths[axis + 1] = (0, gap)
    padded = ctx.emit("nn.pad", expanded, value, pad_width=widths)
    shape[axis] = size * (gap + 1)
    flat = reshape(ctx, padded, shape)
    end = list(shape)
    end[axis] = size * (gap + 1) - gap
    return slice_axes(ctx, flat, [0] * len(shape), end)


def broadcast_in_dim(ctx, x, dims, out_shape):
    """StableHLO ``broadcast_in_dim``: operand axis ``i`` becomes result axis ``dims[i]``;
    ``out_shape`` may hold None (a ``?`` dim, taken from the operand) or symbolic dims.

    Args:
        x: the operand.
        dims: the result axis of each operand axis.
        out_shape: the result shape.
    """
    dims = [int(d) for d in dims]
    value = ctx.const_value(x)
    if value is not None and value.ndim == 0 and not np.isfinite(value.astype(np.float64)):
        # a non-finite scalar stays an array constant (the graph executor's code generator
        # cannot inline it as a literal)
        x = ctx.const(value.reshape((1,) * len(out_shape)))
        dims = list(range(len(out_shape)))
    shape = ctx.shape(x)
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    x = transpose(ctx, x, order)
    dims = [dims[i] for i in order]
    shape = [shape[i] for i in order]
    out_shape = list(out_shape)
    for i, d in enumerate(dims):
        if out_shape[d] is None:
            if shape[i] == 1:
                raise StableHLOOpNotImplemented("broadcast_in_dim to an unknown size", [])
            out_shape[d] = shape[i]
    if any(dim is None for dim in out_shape):
        raise StableHLOOpNotImplemented("broadcast_in_dim to an unknown size", [])
    expanded = [1] * len(out_shape)
    for i, d in enumerate(dims):
        expanded[d] = shape[i]
    x = reshape(ctx, x, expanded)
    if expanded == out_shape:
        return x
    return ctx.emit("broadcast_to", x, shape=out_shape)


@converter("stablehlo.broadcast_in_dim", maps_to="reshape, broadcast_to",
           note="any dims order (a transpose first when not increasing)")
def _broadcast_in_dim(ctx, op, inputs, attrs):
    shape, _ = ctx.result_info(op)
    return broadcast_in_dim(ctx, inputs[0], int_list(attrs["broadcast_dimensions"]), shape)


@converter("stablehlo.broadcast", maps_to="reshape, broadcast_to",
           note="new leading dims")
def _broadcast(ctx, op, inputs, attrs):
    sizes = int_list(attrs["broadcast_sizes"])
    rank = ctx.ndim(inputs[0])
    out = sizes + list(ctx.shape(inputs[0]))
    return broadcast_in_dim(ctx, inputs[0], range(len(sizes), len(sizes) + rank), out)


@converter("stablehlo.reshape", maps_to="reshape")
def _reshape(ctx, op, inputs, attrs):
    shape, _ = ctx.result_info(op)
    if any(dim is None for dim in shape):
        raise StableHLOOpNotImplemented("reshape to a dynamic shape", [])
    result = reshape(ctx, inputs[0], shape)
    sym = ctx.sym_dims(inputs[0])
    return ctx.set_sym(result, sym)


@converter("stablehlo.transpose", maps_to="transpose")
def _transpose(ctx, op, inputs, attrs):
    return transpose(ctx, inputs[0], int_list(attrs["permutation"]))


@converter("stablehlo.slice", maps_to="strided_slice")
def _slice(ctx, op, inputs, attrs):
    return slice_axes(ctx, inputs[0], int_list(attrs["start_indices"]),
                      int_list(attrs["limit_indices"]), int_list(attrs.get("strides")) or None)


@converter("stablehlo.concatenate", maps_to="concatenate")
def _concatenate(ctx, op, inputs, attrs):
    axis = int_value(attrs["dimension"])
    if len(inputs) == 1:
        return inputs[0]
    result = ctx.emit("concatenate", ctx.make_tuple(inputs), axis=axis)
    parts = [ctx.sym_dims(x) for x in inputs]
    if axis == 0 and all(p is not None for p in parts):
        ctx.set_sym(result, [d for p in parts for d in p])
    return result


@converter("stablehlo.pad", maps_to="nn.pad (+ reshape for interior, strided_slice for "
           "negative)", note="low/high (negative crops) and interior padding")
def _pad(ctx, op, inputs, attrs):
    return pad(ctx, inputs[0], inputs[1], int_list(attrs["edge_padding_low"]),
               int_list(attrs["edge_padding_high"]), int_list(attrs.get("interior_padding")))


@converter("stablehlo.iota", maps_to="constant")
def _iota(ctx, op, inputs, attrs):
    shape, dtype = ctx.result_info(op)
    if any(dim is None for dim in shape):
        raise StableHLOOpNotImplemented("iota of a dynamic shape", [])
    axis = int_value(attrs["iota_dimension"])
    ramp = np.arange(shape[axis]).reshape([-1 if i == axis else 1 for i in range(len(shape))])
    result = ctx.const(np.broadcast_to(ramp, shape).astype(dtype))
    ctx.iotas[result] = axis
    return result


@converter("stablehlo.reverse", maps_to="reverse")
def _reverse(ctx, op, inputs, attrs):
    x = inputs[0]
    for axis in int_list(attrs["dimensions"]):
        x = ctx.emit("reverse", x, axis=axis)
    return x


def _start(ctx, index, x, axis, size):
    """Start index ``index`` (a scalar expression) along ``axis`` of ``x`` as int64, clamped to
    ``[0, dim - size]`` (an int when it is known at import time)."""
    dim = ctx.shape(x)[axis]
    index = ctx.cast(index, "int64")
    value = ctx.const_value(index)
    if value is not None and _is_int(dim):
        return int(min(max(int(value), 0), int(dim) - size))
    if not _is_int(dim):
        limit = ctx.emit("subtract", ctx.emit("take", ctx.emit("shape_of", x, dtype="int64"),
                                               ctx.scalar(axis, "int64")),
                         ctx.scalar(size, "int64"))
        return ctx.emit("maximum", ctx.emit("minimum", index, limit), ctx.scalar(0, "int64"))
    return ctx.emit("maximum", ctx.emit("minimum", index, ctx.scalar(int(dim) - size, "int64")),
                    ctx.scalar(0, "int64"))


@converter("stablehlo.dynamic_slice", maps_to="strided_slice / take",
           note="constant starts slice; run-time starts take start + arange(size)")
def _dynamic_slice(ctx, op, inputs, attrs):
    return dynamic_slice(ctx, inputs[0], inputs[1:], int_list(attrs["slice_sizes"]))


def dynamic_slice(ctx, x, starts, sizes):
    """``x[start:start + size]`` per axis, ``starts`` scalar expressions (clamped in bounds);
    an axis whose size is the whole (possibly symbolic) dim is kept.

    Args:
        x: the operand.
        starts: the start of each axis.
        sizes: the slice size of each axis.
    """
    for axis, (index, size) in enumerate(zip(starts, sizes)):
        dim = ctx.shape(x)[axis]
        if size == dim:
            continue
        if not _is_int(size):
            raise StableHLOOpNotImplemented(f"a slice of symbolic size {size} of a {dim} axis",
                                            [])
        start = _start(ctx, index, x, axis, size)
        if isinstance(start, int):
            begin = [0] * ctx.ndim(x)
            end = list(ctx.shape(x))
            begin[axis], end[axis] = start, start + size
            x = slice_axes(ctx, x, begin, end)
        else:
            indices = ctx.emit("add", ctx.const(np.arange(size, dtype=np.int64)), start)
            x = ctx.emit("take", x, indices, axis=axis, mode="clip")
    return x


@converter("stablehlo.real_dynamic_slice", maps_to="strided_slice / take",
           note="unit strides; limit = start + sizes known from the argument shapes")
def _real_dynamic_slice(ctx, op, inputs, attrs):
    x, start, limit, strides = inputs
    if ctx.sym_dims(strides) is None or any(s != 1 for s in ctx.sym_dims(strides)):
        raise StableHLOOpNotImplemented("strides other than constant ones", [])
    begin, end = ctx.sym_dims(start), ctx.sym_dims(limit)
    if begin is not None and end is not None:
        sizes = [e - b for b, e in zip(begin, end)]
        starts = [ctx.scalar(int(b), "int64") if _is_int(b) else None for b in begin]
    else:
        offset = ctx.offsets.get(limit)
        if offset is None or offset[0] is not start:
            raise StableHLOOpNotImplemented("a slice whose size is not known at import time", [])
        sizes = offset[1]
        starts = [ctx.emit("take", start, ctx.scalar(k, "int64")) for k in range(len(sizes))]
    for k, (size, dim) in enumerate(zip(sizes, ctx.shape(x))):
        if starts[k] is None and size != dim:
            raise StableHLOOpNotImplemented("a symbolic start", [])
    return dynamic_slice(ctx, x, [s if s is not None else ctx.scalar(0, "int64")
                                  for s in starts], sizes)


@converter("stablehlo.dynamic_update_slice", maps_to="where over a window mask, take",
           note="run-time or constant starts")
def _dynamic_update_slice(ctx, op, inputs, attrs):
    x, update, starts = inputs[0], inputs[1], inputs[2:]
    shape, usizes = ctx.shape(x), ctx.shape(update)
    rank = len(shape)
    gathered, mask = update, None
    for axis, index in enumerate(starts):
        dim, size = shape[axis], usizes[axis]
        if size == dim:
            continue
        if not _is_int(dim) or not _is_int(size):
            raise StableHLOOpNotImplemented("dynamic_update_slice of a part of a dynamic "
                                            "axis", [])
        start = _start(ctx, index, x, axis, size)
        if isinstance(start, int):
            start = ctx.scalar(start, "int64")
        positions = ctx.const(np.arange(int(dim), dtype=np.int64))
        offsets = ctx.emit("subtract", positions, start)
        inside = ctx.emit("logical_and",
                          ctx.emit("greater_equal", offsets, ctx.scalar(0, "int64")),
                          ctx.emit("less", offsets, ctx.scalar(size, "int64")))
        gathered = ctx.emit("take", gathered, offsets, axis=axis, mode="clip")
        inside = reshape(ctx, inside, [int(dim) if i == axis else 1 for i in range(rank)])
        mask = inside if mask is None else ctx.emit("logical_and", mask, inside)
    if mask is None:
        return update
    return ctx.emit("where", mask, gathered, x)


# -- jax.export symbolic shapes ------------------------------------------------------------
@converter("stablehlo.get_dimension_size", maps_to="constant / shape_of, take",
           note="a symbolic dim is tracked for the dynamic_* ops")
def _get_dimension_size(ctx, op, inputs, attrs):
    axis = int_value(attrs["dimension"])
    dim = ctx.shape(inputs[0])[axis]
    if _is_int(dim):
        return ctx.scalar(int(dim), "int32")
    value = ctx.emit("cast", ctx.emit("take", ctx.emit("shape_of", inputs[0], dtype="int64"),
                                      ctx.scalar(axis, "int64")), dtype="int32")
    return ctx.set_sym(value, [dim])


def _sym_shape(ctx, expr):
    dims = ctx.sym_dims(expr)
    if dims is None:
        raise StableHLOOpNotImplemented(
            "a shape operand that is not computed from the argument shapes", [])
    return dims


@converter("stablehlo.dynamic_broadcast_in_dim", maps_to="reshape, broadcast_to",
           note="output shapes computed from symbolic argument dims")
def _dynamic_broadcast_in_dim(ctx, op, inputs, attrs):
    return broadcast_in_dim(ctx, inputs[0], int_list(attrs["broadcast_dimensions"]),
                            _sym_shape(ctx, inputs[1]))


@converter("stablehlo.dynamic_reshape", maps_to="reshape",
           note="output shapes computed from symbolic argument dims")
def _dynamic_reshape(ctx, op, inputs, attrs):
    return reshape(ctx, inputs[0], _sym_shape(ctx, inputs[1]))


@converter("stablehlo.dynamic_iota", maps_to="arange, broadcast_to",
           note="output shapes computed from symbolic argument dims")
def _dynamic_iota(ctx, op, inputs, attrs):
    shape = _sym_shape(ctx, inputs[0])
    _, dtype = ctx.result_info(op)
    axis = int_value(attrs["iota_dimension"])
    length = shape[axis]
    if _is_int(length):
        ramp = ctx.const(np.arange(int(length)).astype(dtype))
    else:
        stop = ctx.cast(ctx.emit("take", ctx.cast(inputs[0], "int64"),
                                 ctx.scalar(axis, "int64")), dtype)
        ramp = ctx.emit("arange", ctx.scalar(0, dtype), stop, ctx.scalar(1, dtype), dtype=dtype)
        ramp = ctx.emit("reshape", ramp, newshape=[length])
    ramp = reshape(ctx, ramp, [length if i == axis else 1 for i in range(len(shape))])
    result = ramp if list(ctx.shape(ramp)) == list(shape) else \
        ctx.emit("broadcast_to", ramp, shape=shape)
    ctx.iotas[result] = axis
    return result
