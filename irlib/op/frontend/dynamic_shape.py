"""Dynamic-shape ops (Relay's ``dyn`` namespace): shape-like arguments are tensors.

``reshape(x, newshape=[2, -1])`` takes its target as an attribute; ``dyn.reshape(x, shape)``
takes it as a 1-D int tensor computed at run time, so its result type knows the rank (the
length of ``shape``, which must be static) but not the dims (``?``). Importers use these when
a model feeds shape arguments as graph inputs::

    dyn.reshape(%x, %shape) /* ty=Tensor[(?, ?), float32] */

Ops: ``dyn.reshape``, ``dyn.broadcast_to`` (bidirectional, like ONNX Expand), ``dyn.tile``,
``dyn.full``, ``dyn.strided_slice``, ``dyn.nn.pad``, ``dyn.topk``, the reductions
``dyn.sum/mean/max/min/prod`` (axes a tensor), ``dyn.squeeze``, ``dyn.expand_dims`` (ONNX
Unsqueeze: axes of the output), ``dyn.split`` (sizes a tensor), ``dyn.one_hot`` (depth a
tensor), ``dyn.cumsum`` (axis a tensor) and ``dyn.trilu`` (k a tensor).
"""

from __future__ import annotations

import numpy as np

from ...errors import TypeInferenceError
from ...ir.dims import Any
from ...ir.types import TensorType, TupleType
from ..registry import register_opaque
from ..transform import reshape_output_shape
from ..type_relations import expect_tensor

__all__ = []


def _vector_length(ty, what: str) -> int:
    ty = expect_tensor(ty, what)
    if ty.ndim != 1 or not isinstance(ty.shape[0], int):
        raise TypeInferenceError(f"{what} must be a 1-D tensor of static length, got {ty}")
    return ty.shape[0]



def _reshape_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "dyn.reshape: data")
    return TensorType([Any] * _vector_length(arg_types[1], "dyn.reshape: shape"), data.dtype)


def _reshape_ref(data, shape, allowzero=False):
    return (np.reshape(data, reshape_output_shape(data.shape, [int(s) for s in shape],
                                                  allowzero)),)


def _broadcast_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "dyn.broadcast_to: data")
    rank = max(data.ndim, _vector_length(arg_types[1], "dyn.broadcast_to: shape"))
    return TensorType([Any] * rank, data.dtype)


def _broadcast_ref(data, shape):
    target = np.broadcast_shapes(data.shape, tuple(int(s) for s in shape))
    return (np.array(np.broadcast_to(data, target)),)


def _tile_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "dyn.tile: data")
    rank = max(data.ndim, _vector_length(arg_types[1], "dyn.tile: reps"))
    return TensorType([Any] * rank, data.dtype)


def _tile_ref(data, reps):
    return (np.tile(data, tuple(int(r) for r in reps)),)


def _full_rel(arg_types, attrs):
    value = expect_tensor(arg_types[0], "dyn.full: fill_value")
    dtype = attrs["dtype"] or value.dtype
    return TensorType([Any] * _vector_length(arg_types[1], "dyn.full: shape"), dtype)


def _full_ref(fill_value, shape, dtype=""):
    return (np.full(tuple(int(s) for s in shape), fill_value, dtype=dtype or fill_value.dtype),)


def _slice_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "dyn.strided_slice: data")
    return TensorType([Any] * data.ndim, data.dtype)


def _slice_ref(data, begin, end, strides, axes):
    index = [slice(None)] * data.ndim
    for b, e, s, a in zip(begin, end, strides, axes):
        index[int(a)] = slice(int(b), int(e), int(s))
    return (np.array(data[tuple(index)]),)


def _pad_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "dyn.nn.pad: data")
    return TensorType([Any] * data.ndim, data.dtype)


def _pad_ref(data, pad_width, pad_value, pad_mode="constant"):
    widths = [(int(b), int(e)) for b, e in np.asarray(pad_width).reshape(-1, 2)]
    positive = [(max(b, 0), max(e, 0)) for b, e in widths]
    if pad_mode == "constant":
        out = np.pad(data, positive, constant_values=pad_value)
    else:
        out = np.pad(data, positive, mode={"edge": "edge", "reflect": "reflect",
                                           "wrap": "wrap"}[pad_mode])
    crop = tuple(slice(max(-b, 0), out.shape[i] - max(-e, 0))
                 for i, (b, e) in enumerate(widths))
    return (np.array(out[crop]),)


def _topk_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "dyn.topk: data")
    axis = attrs["axis"] % data.ndim if data.ndim else 0
    shape = list(data.shape)
    shape[axis] = Any
    values = TensorType(shape, data.dtype)
    indices = TensorType(shape, attrs["dtype"])
    if attrs["ret_type"] == "values":
        return values
    if attrs["ret_type"] == "indices":
        return indices
    return TupleType([values, indices])


def _topk_ref(data, k, axis=-1, ret_type="both", is_ascend=False, dtype="int32"):
    k = int(np.asarray(k).reshape(-1)[0])
    # stable sort so that ties keep the lower index first, as ONNX requires
    keys = data if is_ascend else -data.astype("float64") if data.dtype.kind != "u" else \
        -data.astype("int64")
    order = np.argsort(keys, axis=axis, kind="stable")
    indices = np.take(order, np.arange(k), axis=axis)
    values = np.take_along_axis(data, indices, axis=axis)
    indices = indices.astype(dtype)
    if ret_type == "values":
        return (values,)
    if ret_type == "indices":
        return (indices,)
    return (values, indices)


register_opaque("dyn.reshape", ("data", "shape"),
                ("relay.attrs.DynReshapeAttrs", [("allowzero", False)]),
                _reshape_rel, _reshape_ref, "reshape to a run-time shape")
register_opaque("dyn.broadcast_to", ("data", "shape"), None, _broadcast_rel, _broadcast_ref,
                "broadcast (bidirectionally) with a run-time shape")
register_opaque("dyn.tile", ("data", "reps"), None, _tile_rel, _tile_ref, "tile by run-time reps")
register_opaque("dyn.full", ("fill_value", "shape"), ("relay.attrs.InitOpAttrs", [("dtype", "")]),
                _full_rel, _full_ref, "a tensor of a run-time shape filled with a value")
register_opaque("dyn.strided_slice", ("data", "begin", "end", "strides", "axes"), None,
                _slice_rel, _slice_ref, "slice with run-time begin/end/strides/axes")
register_opaque("dyn.nn.pad", ("data", "pad_width", "pad_value"),
                ("relay.attrs.PadAttrs", [("pad_mode", "constant")]), _pad_rel, _pad_ref,
                "pad by run-time widths ((before, after) per axis, negative crops)")
register_opaque("dyn.topk", ("data", "k"),
                ("relay.attrs.TopKAttrs", [("axis", -1), ("ret_type", "both"), ("is_ascend", False),
                                     ("dtype", "int32")]),
                _topk_rel, _topk_ref, "top-k with a run-time k", tuple_output=True)



def _axes_of(axes, ndim):
    return tuple(sorted({int(a) % ndim for a in np.asarray(axes).reshape(-1)}))


def _reduce_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "dyn reduce: data")
    count = _vector_length(arg_types[1], "dyn reduce: axes")
    rank = data.ndim if attrs["keepdims"] else data.ndim - count
    return TensorType([Any] * max(rank, 0), data.dtype)


def _identity_of(function, dtype):
    """The value max/min reduce an empty set to (ONNX: -inf/+inf, or the integer limits)."""
    lowest = function is np.max
    if dtype == np.bool_:
        return not lowest
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min if lowest else info.max
    return -np.inf if lowest else np.inf


def _make_reduce_ref(function):
    def reduce_ref(data, axes, keepdims=False):
        extra = {}
        if function in (np.max, np.min) and data.size == 0:
            extra["initial"] = _identity_of(function, data.dtype)
        return (np.asarray(function(data, axis=_axes_of(axes, data.ndim),
                                    keepdims=bool(keepdims), **extra)).astype(data.dtype),)
    return reduce_ref


for _name, _function in (("sum", np.sum), ("mean", np.mean), ("max", np.max),
                         ("min", np.min), ("prod", np.prod)):
    register_opaque(f"dyn.{_name}", ("data", "axes"),
                    ("relay.attrs.ReduceAttrs", [("keepdims", False)]), _reduce_rel,
                    _make_reduce_ref(_function), f"{_name} over run-time axes")


def _squeeze_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "dyn.squeeze: data")
    return TensorType([Any] * (data.ndim - _vector_length(arg_types[1], "dyn.squeeze: axes")),
                      data.dtype)


def _squeeze_ref(data, axes):
    return (np.squeeze(data, axis=_axes_of(axes, data.ndim)),)


def _expand_dims_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "dyn.expand_dims: data")
    count = _vector_length(arg_types[1], "dyn.expand_dims: axes")
    return TensorType([Any] * (data.ndim + count), data.dtype)


def _expand_dims_ref(data, axes):
    rank = data.ndim + np.asarray(axes).size
    return (np.expand_dims(data, axis=_axes_of(axes, rank)),)


def _split_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "dyn.split: data")
    count = _vector_length(arg_types[1], "dyn.split: sizes")
    return TupleType([TensorType([Any] * data.ndim, data.dtype) for _ in range(count)])


def _split_ref(data, sizes, axis=0):
    points = np.cumsum(np.asarray(sizes, dtype="int64"))[:-1]
    return tuple(np.split(data, points, axis=axis))


def _one_hot_rel(arg_types, attrs):
    indices = expect_tensor(arg_types[0], "dyn.one_hot: indices")
    values = expect_tensor(arg_types[2], "dyn.one_hot: values")
    return TensorType([Any] * (indices.ndim + 1), values.dtype)


def _one_hot_ref(indices, depth, values, axis=-1):
    depth = int(np.asarray(depth).reshape(-1)[0])
    indices = np.where(indices < 0, indices + depth, indices)
    axis %= indices.ndim + 1
    positions = np.arange(depth).reshape((depth,) + (1,) * (indices.ndim - axis))
    hit = np.expand_dims(indices, axis) == positions
    return (np.where(hit, values[1], values[0]).astype(values.dtype),)


def _same_rel(arg_types, attrs):
    return expect_tensor(arg_types[0], "data")


def _cumsum_ref(data, axis, exclusive=False, reverse=False):
    axis = int(np.asarray(axis).reshape(-1)[0]) % data.ndim
    work = np.flip(data, axis) if reverse else data
    out = np.cumsum(work, axis=axis, dtype=data.dtype)
    if exclusive:
        out = out - work
    return (np.array(np.flip(out, axis) if reverse else out),)


def _trilu_ref(data, k, upper=True):
    k = int(np.asarray(k).reshape(-1)[0])
    return (np.triu(data, k) if upper else np.tril(data, k),)


register_opaque("dyn.squeeze", ("data", "axes"), None, _squeeze_rel, _squeeze_ref,
                "squeeze run-time axes")
register_opaque("dyn.expand_dims", ("data", "axes"), None, _expand_dims_rel, _expand_dims_ref,
                "insert unit dims at run-time output axes")
register_opaque("dyn.split", ("data", "sizes"), ("relay.attrs.SplitAttrs", [("axis", 0)]),
                _split_rel, _split_ref, "split into run-time sizes", tuple_output=True)
register_opaque("dyn.one_hot", ("indices", "depth", "values"), ("relay.attrs.OneHotAttrs",
                                                           [("axis", -1)]),
                _one_hot_rel, _one_hot_ref, "one-hot with a run-time depth and [off, on] values")
register_opaque("dyn.cumsum", ("data", "axis"), ("relay.attrs.ScanopAttrs",
                                            [("exclusive", False), ("reverse", False)]),
                _same_rel, _cumsum_ref, "cumulative sum along a run-time axis")
register_opaque("dyn.trilu", ("data", "k"), ("relay.attrs.TriluAttrs", [("upper", True)]),
                _same_rel, _trilu_ref, "upper/lower triangle with a run-time diagonal offset")
