"""Shape-manipulating ONNX ops: Reshape, Flatten, Transpose, Concat, (Un)Squeeze, Shape,
Size, Expand, Tile, Constant(OfShape), Range, Split, Pad, Slice, Depth/SpaceToDepth.

Shape-like arguments (Reshape's ``shape``, Slice's ``starts``, ...) that are constants, or
fold to constants (the importer folds shape subgraphs of statically shaped tensors), become
the static attributes irlib ops take; the rest go through :mod:`.dynamic`.
"""

from __future__ import annotations

import numpy as np

from ....limits import check_tensor_size

from ..importer import onnx_dtype
from ..registry import converter
from . import dynamic
from .common import constant_ints, normalize_axis, require_ints, scalar, unsupported


@converter("Constant")
def _constant(ctx, inputs, attrs):
    for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
        if key in attrs:
            value = attrs[key]
            if key in ("value_float", "value_floats"):
                value = np.asarray(value, dtype="float32")
            elif key in ("value_int", "value_ints"):
                value = np.asarray(value, dtype="int64")
            if np.asarray(value).dtype.kind in "USO":
                unsupported("string constants are not supported")
            return ctx.const(np.asarray(value))
    unsupported(f"Constant with attribute(s) {sorted(attrs)} is not supported")


@converter("Reshape", since=1)
def _reshape_v1(ctx, inputs, attrs):
    return ctx.emit("reshape", inputs[0], newshape=list(attrs["shape"]))


@converter("Reshape", since=5)
def _reshape_v5(ctx, inputs, attrs):
    data, shape = inputs
    allowzero = bool(attrs.get("allowzero", 0))
    newshape = constant_ints(ctx, shape)
    if newshape is None:
        return dynamic.reshape(ctx, data, shape, allowzero)
    return ctx.emit("reshape", data, newshape=newshape, allowzero=allowzero)


@converter("Flatten")
def _flatten(ctx, inputs, attrs):
    data = inputs[0]
    shape = ctx.shape(data)
    axis = normalize_axis(attrs.get("axis", 1), len(shape))
    if axis == 0:
        return ctx.emit("reshape", data, newshape=[1, -1])
    lead = shape[:axis]
    if all(isinstance(d, (int, np.integer)) for d in lead):
        return ctx.emit("reshape", data, newshape=[int(np.prod(lead)), -1])
    if axis == 1:
        return ctx.emit("reshape", data, newshape=[0, -1])
    tail = shape[axis:]
    if all(isinstance(d, (int, np.integer)) for d in tail):
        return ctx.emit("reshape", data, newshape=[-1, int(np.prod(tail))])
    unsupported("Flatten with unknown dims on both sides of axis")


@converter("Transpose")
def _transpose(ctx, inputs, attrs):
    perm = attrs.get("perm")
    return ctx.emit("transpose", inputs[0], axes=list(perm) if perm else None)


@converter("Concat")
def _concat(ctx, inputs, attrs):
    pieces = [value for value in inputs if value is not None]
    axis = normalize_axis(attrs["axis"], ctx.ndim(pieces[0]))
    return ctx.emit("concatenate", ctx.make_tuple(pieces), axis=axis)


def _squeeze(ctx, data, axes):
    if axes is None:
        shape = ctx.shape(data)
        ones = [axis for axis, dim in enumerate(shape) if isinstance(dim, int) and dim == 1]
        if ones and len(ones) < len(shape) and ctx.static_shape(data) is None:
            # some dims are known only at run time: squeeze the axes known to be 1, so that
            # type inference (which cannot see run-time sizes) agrees on the rank
            return ctx.emit("squeeze", data, axis=ones)
        return ctx.emit("squeeze", data)
    ndim = ctx.ndim(data)
    return ctx.emit("squeeze", data, axis=[normalize_axis(a, ndim) for a in axes])


@converter("Squeeze", since=1)
def _squeeze_v1(ctx, inputs, attrs):
    return _squeeze(ctx, inputs[0], attrs.get("axes"))


@converter("Squeeze", since=13)
def _squeeze_v13(ctx, inputs, attrs):
    axes = None
    if len(inputs) > 1 and inputs[1] is not None:
        axes = constant_ints(ctx, inputs[1])
        if axes is None:
            return ctx.emit("dyn.squeeze", inputs[0], dynamic.int64(ctx, inputs[1]))
    return _squeeze(ctx, inputs[0], axes)


def _unsqueeze(ctx, data, axes):
    out_ndim = ctx.ndim(data) + len(axes)
    for axis in sorted(normalize_axis(a, out_ndim) for a in axes):
        data = ctx.emit("expand_dims", data, axis=axis, num_newaxis=1)
    return data


@converter("Unsqueeze", since=1)
def _unsqueeze_v1(ctx, inputs, attrs):
    return _unsqueeze(ctx, inputs[0], list(attrs["axes"]))


@converter("Unsqueeze", since=13)
def _unsqueeze_v13(ctx, inputs, attrs):
    axes = constant_ints(ctx, inputs[1])
    if axes is None:
        return ctx.emit("dyn.expand_dims", inputs[0], dynamic.int64(ctx, inputs[1]))
    return _unsqueeze(ctx, inputs[0], axes)


@converter("Shape")
def _shape(ctx, inputs, attrs):
    data = inputs[0]
    ndim = ctx.ndim(data)
    start = attrs.get("start", 0)
    end = attrs.get("end", ndim)
    start = min(max(start + ndim if start < 0 else start, 0), ndim)
    end = min(max(end + ndim if end < 0 else end, 0), ndim)
    static = ctx.static_shape(data)
    if static is not None:
        return ctx.const(np.array(static[start:end], dtype="int64"))
    full = ctx.emit("shape_of", data, dtype="int64")
    if (start, end) == (0, ndim):
        return full
    return ctx.emit("strided_slice", full, begin=[start], end=[end], strides=[1])


@converter("Size")
def _size(ctx, inputs, attrs):
    static = ctx.static_shape(inputs[0])
    if static is not None:
        return ctx.const(np.array(int(np.prod(static)), dtype="int64"))
    return ctx.emit("ndarray_size", inputs[0], dtype="int64")


@converter("Expand")
def _expand(ctx, inputs, attrs):
    data, shape = inputs
    target = constant_ints(ctx, shape)
    if target is None:
        return dynamic.expand(ctx, data, shape)
    dims = list(ctx.shape(data))
    rank = max(len(dims), len(target))
    dims = [1] * (rank - len(dims)) + dims
    target = [1] * (rank - len(target)) + target
    out = [d if t == 1 else t for d, t in zip(dims, target)]
    if any(not isinstance(d, (int, np.integer)) for d in out):
        return dynamic.expand(ctx, data, shape)
    return ctx.emit("broadcast_to", data, shape=[int(d) for d in out])


@converter("Tile")
def _tile(ctx, inputs, attrs):
    reps = constant_ints(ctx, inputs[1])
    if reps is None:
        return dynamic.tile(ctx, inputs[0], inputs[1])
    return ctx.emit("tile", inputs[0], reps=reps)


@converter("ConstantOfShape")
def _constant_of_shape(ctx, inputs, attrs):
    value = attrs.get("value")
    value = np.zeros(1, "float32") if value is None else np.asarray(value)
    shape = constant_ints(ctx, inputs[0])
    if shape is None:
        return dynamic.full(ctx, value.reshape(()), inputs[0])
    check_tensor_size(shape, value.dtype, "ConstantOfShape")
    return ctx.const(np.full(shape, value.reshape(()), dtype=value.dtype))


@converter("Range")
def _range(ctx, inputs, attrs):
    values = [ctx.const_value(value) for value in inputs]
    if all(value is not None for value in values):
        start, limit, delta = values
        check_tensor_size((_range_length(start, limit, delta),), start.dtype, "Range")
        return ctx.const(np.arange(start.reshape(()), limit.reshape(()), delta.reshape(()),
                                   dtype=start.dtype))
    dtype = ctx.dtype(inputs[0])
    # scalars by the spec, but exporters also feed 1-element vectors
    scalars = [value if ctx.ndim(value) == 0 else ctx.emit("reshape", value, newshape=[])
               for value in inputs]
    return ctx.emit("arange", *scalars, dtype=dtype)


def _range_length(start, limit, delta) -> int:
    """The element count of ``arange(start, limit, delta)`` (0 for a zero or NaN step, which
    numpy rejects itself)."""
    start, limit, delta = (float(np.asarray(v).reshape(-1)[0]) for v in (start, limit, delta))
    if not all(np.isfinite(v) for v in (start, limit, delta)) or delta == 0:
        return 0
    return max(int(np.ceil((limit - start) / delta)), 0)


def _split(ctx, data, axis, sizes, count):
    ndim = ctx.ndim(data)
    axis = normalize_axis(axis, ndim)
    if sizes is None:
        dim = ctx.shape(data)[axis]
        if not isinstance(dim, (int, np.integer)):
            tup = ctx.emit("split", data, indices_or_sections=count, axis=axis)
            return [ctx.tuple_get(tup, i) for i in range(count)]
        # ONNX (opset 18): ceil-sized pieces, the last one smaller.
        chunk = -(-int(dim) // count)
        sizes = [min(chunk, int(dim) - chunk * i) for i in range(count)]
    points = list(np.cumsum(sizes)[:-1].astype(int))
    if not points:
        return [data]
    tup = ctx.emit("split", data, indices_or_sections=[int(p) for p in points], axis=axis)
    return [ctx.tuple_get(tup, i) for i in range(len(sizes))]


@converter("Split", since=1)
def _split_v1(ctx, inputs, attrs):
    sizes = attrs.get("split")
    if sizes is None and len(inputs) > 1 and inputs[1] is not None:
        sizes = require_ints(ctx, inputs[1], "Split sizes")
    return _split(ctx, inputs[0], attrs.get("axis", 0), sizes, ctx.num_outputs)


@converter("Split", since=13)
def _split_v13(ctx, inputs, attrs):
    sizes = None
    if len(inputs) > 1 and inputs[1] is not None:
        sizes = constant_ints(ctx, inputs[1])
        if sizes is None:
            axis = normalize_axis(attrs.get("axis", 0), ctx.ndim(inputs[0]))
            tup = ctx.emit("dyn.split", inputs[0], dynamic.int64(ctx, inputs[1]), axis=axis)
            return [ctx.tuple_get(tup, i) for i in range(ctx.num_outputs)]
    count = attrs.get("num_outputs", ctx.num_outputs)
    return _split(ctx, inputs[0], attrs.get("axis", 0), sizes, count)


def _pad(ctx, data, pads, mode, value, axes=None):
    ndim = ctx.ndim(data)
    if axes is None:
        axes = list(range(ndim))
    axes = [normalize_axis(a, ndim) for a in axes]
    begin = [0] * ndim
    end = [0] * ndim
    for i, axis in enumerate(axes):
        begin[axis] = pads[i]
        end[axis] = pads[i + len(axes)]
    if mode == "wrap":
        return _pad_wrap(ctx, data, begin, end)
    if mode not in ("constant", "edge", "reflect"):
        unsupported(f"Pad mode {mode!r} is not supported")
    positive = [(max(b, 0), max(e, 0)) for b, e in zip(begin, end)]
    if value is None:
        value = scalar(ctx, 0, ctx.dtype(data))
    if any(b or e for b, e in positive):
        data = ctx.emit("nn.pad", data, value, pad_width=positive, pad_mode=mode)
    if any(b < 0 or e < 0 for b, e in zip(begin, end)):
        data = ctx.emit("strided_slice", data, begin=[max(-b, 0) for b in begin],
                        end=[e if e < 0 else 2 ** 63 - 1 for e in end], strides=[1] * ndim)
    return data


def _pad_wrap(ctx, data, begin, end):
    shape = ctx.static_shape(data)
    if shape is None:
        unsupported("Pad mode 'wrap' needs a static shape")
    for axis, (b, e) in enumerate(zip(begin, end)):
        if b == 0 and e == 0:
            continue
        size = shape[axis]
        index = np.arange(-b, size + e) % size
        data = ctx.emit("take", data, ctx.const(index.astype("int64")), axis=axis, mode="clip")
    return data


@converter("Pad", since=1)
def _pad_v1(ctx, inputs, attrs):
    pads = attrs.get("pads", attrs.get("paddings"))
    value = scalar(ctx, attrs.get("value", 0.0), ctx.dtype(inputs[0]))
    return _pad(ctx, inputs[0], list(pads), attrs.get("mode", "constant"), value)


@converter("Pad", since=11)
def _pad_v11(ctx, inputs, attrs):
    data = inputs[0]
    pads = constant_ints(ctx, inputs[1])
    value = inputs[2] if len(inputs) > 2 and inputs[2] is not None else None
    if value is not None and ctx.ndim(value) > 0:
        value = ctx.emit("reshape", value, newshape=[])
    axes = None
    if len(inputs) > 3 and inputs[3] is not None:
        axes = constant_ints(ctx, inputs[3])
        if axes is None:  # known only at run time
            return dynamic.pad(ctx, data, inputs[1], value, attrs.get("mode", "constant"),
                               inputs[3])
    if pads is None:
        return dynamic.pad(ctx, data, inputs[1], value, attrs.get("mode", "constant"), axes)
    return _pad(ctx, data, pads, attrs.get("mode", "constant"), value, axes)


@converter("Slice", since=1)
def _slice_v1(ctx, inputs, attrs):
    starts, ends = list(attrs["starts"]), list(attrs["ends"])
    axes = list(attrs.get("axes", range(len(starts))))
    return ctx.emit("strided_slice", inputs[0], begin=starts, end=ends,
                    strides=[1] * len(starts), axes=axes)


@converter("Slice", since=10)
def _slice_v10(ctx, inputs, attrs):
    data = inputs[0]
    optional = list(inputs[3:5]) + [None] * (5 - len(inputs))
    values = [constant_ints(ctx, inputs[1]), constant_ints(ctx, inputs[2])]
    values += [constant_ints(ctx, optional[0]), constant_ints(ctx, optional[1])]
    if values[0] is None or values[1] is None or (optional[0] is not None and values[2] is None) \
            or (optional[1] is not None and values[3] is None):
        return dynamic.slice_(ctx, data, inputs[1], inputs[2], optional[0], optional[1])
    starts, ends, axes, steps = values
    ndim = ctx.ndim(data)
    axes = [normalize_axis(a, ndim) for a in (axes or range(len(starts)))]
    steps = steps or [1] * len(starts)
    return ctx.emit("strided_slice", data, begin=starts, end=ends, strides=steps, axes=axes)


@converter("DepthToSpace")
def _depth_to_space(ctx, inputs, attrs):
    return ctx.emit("nn.depth_to_space", inputs[0], block_size=attrs["blocksize"],
                    mode=attrs.get("mode", "DCR"))


@converter("SpaceToDepth")
def _space_to_depth(ctx, inputs, attrs):
    data, block = inputs[0], int(attrs["blocksize"])
    if attrs.get("mode", "DCR") != "CRD":
        return ctx.emit("nn.space_to_depth", data, block_size=block)
    shape = ctx.static_shape(data)
    if shape is None:
        unsupported("SpaceToDepth mode CRD needs a static input shape")
    n, c, h, w = shape
    # CRD keeps each channel's block together: (c, by, bx) order in the new channel axis
    blocks = ctx.emit("reshape", data, newshape=[n, c, h // block, block, w // block, block])
    moved = ctx.emit("transpose", blocks, axes=[0, 1, 3, 5, 2, 4])
    return ctx.emit("reshape", moved, newshape=[n, c * block * block, h // block, w // block])


@converter("EyeLike")
def _eye_like(ctx, inputs, attrs):
    shape = ctx.static_shape(inputs[0])
    if shape is None:
        unsupported("EyeLike needs a static input shape")
    dtype = onnx_dtype(attrs["dtype"]) if "dtype" in attrs else ctx.dtype(inputs[0])
    return ctx.const(np.eye(shape[0], shape[1], k=attrs.get("k", 0), dtype=dtype))
