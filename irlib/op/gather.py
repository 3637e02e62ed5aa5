"""Index-driven gathers and scatters: ``gather``, ``gather_nd``, ``scatter_elements``,
``one_hot`` and ``reverse``; also the gradient of ``scatter_nd`` (it needs ``gather_nd``).

Before/after in the text format::

    gather(%x, %i, axis=1)       /* x: (2, 5), i: (2, 3) int32 */
    -> Tensor[(2, 3), float32]
    gather_nd(%x, %i)            /* x: (4, 5, 6), i: (2, 7) int32 */
    -> Tensor[(7, 6), float32]

Indices are integer tensors; negative indices count from the end like numpy.
"""

from __future__ import annotations

import numpy as np

from ..errors import GradientError, TypeInferenceError
from ..ir.types import TensorType, normalize_dtype
from .indexing import _SCATTER_ND, scatter_nd
from .registry import OpPattern, make_call, register_op
from .type_relations import dims_differ, expect_tensor, normalize_axis

__all__ = ["gather", "gather_nd", "scatter_elements", "one_hot", "reverse"]


def expect_int_tensor(ty, what: str) -> TensorType:
    """``ty`` if it is an integer TensorType, else a TypeInferenceError naming ``what``."""
    tensor = expect_tensor(ty, what)
    if not (tensor.dtype.startswith("int") or tensor.dtype.startswith("uint")):
        raise TypeInferenceError(f"{what} must have an integer dtype, got {tensor.dtype}")
    return tensor


def _zeros(expr):
    return make_call("zeros_like", (expr,))


# -- gather ------------------------------------------------------------------------------------

def _gather_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "gather: data")
    indices = expect_int_tensor(arg_types[1], "gather: indices")
    axis = normalize_axis(attrs["axis"], data.ndim, "gather: axis")
    if indices.ndim != data.ndim:
        raise TypeInferenceError(f"gather: indices must have the rank of data ({data.ndim}), "
                                 f"got {indices}")
    for i, (a, b) in enumerate(zip(data.shape, indices.shape)):
        if i != axis and isinstance(a, int) and isinstance(b, int) and b > a:
            raise TypeInferenceError(f"gather: indices dimension {i} ({b}) exceeds the data "
                                     f"dimension ({a})")
    return TensorType(indices.shape, data.dtype)


_GATHER = register_op("gather", ("data", "indices"),
                      attrs=("relay.attrs.GatherAttrs", [("axis", 0)]),
                      type_rel=_gather_rel, pattern=OpPattern.INJECTIVE,
                      description="out[..i..] = data[..indices[..i..]..] along axis "
                                  "(numpy take_along_axis)")


@_GATHER.def_impl
def _gather_ref(data, indices, axis=0):
    axis %= data.ndim
    index = list(np.ogrid[tuple(slice(0, n) for n in indices.shape)]) if indices.ndim else []
    index[axis] = indices
    return (data[tuple(index)],)


@_GATHER.def_grad
def _gather_grad(call, out_grad):
    data, indices = call.args
    axis = call.attrs["axis"]
    return [scatter_elements(_zeros(data), indices, out_grad, axis, "add"), _zeros(indices)]


def gather(data, axis, indices):
    """Gather values along ``axis`` (``relay.gather``; ONNX GatherElements).

    Args:
        data: the input tensor.
        axis: the axis to index.
        indices: integer tensor of data's rank; the output has its shape.

    Returns:
        A Call of ``gather``.
    """
    return make_call("gather", (data, indices), {"axis": int(axis)})


# -- gather_nd ---------------------------------------------------------------------------------

def _gather_nd_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "gather_nd: data")
    indices = expect_int_tensor(arg_types[1], "gather_nd: indices")
    batch_dims = attrs["batch_dims"]
    if indices.ndim < 1:
        raise TypeInferenceError("gather_nd: indices must have rank >= 1")
    depth = attrs["index_rank"] if attrs["index_rank"] is not None else indices.shape[0]
    if not isinstance(depth, int):
        raise TypeInferenceError(f"gather_nd: indices must have a static leading dimension "
                                 f"(or give index_rank), got {indices}")
    if depth + batch_dims > data.ndim:
        raise TypeInferenceError(f"gather_nd: indices index {depth} axes after {batch_dims} "
                                 f"batch dims, but data has rank {data.ndim}")
    for i in range(batch_dims):
        if dims_differ(data.shape[i], indices.shape[1 + i]):
            raise TypeInferenceError(f"gather_nd: batch dimension {i} differs between data "
                                     f"({data.shape[i]}) and indices ({indices.shape[1 + i]})")
    shape = indices.shape[1:] + data.shape[batch_dims + depth:]
    return TensorType(shape, data.dtype)


_GATHER_ND = register_op("gather_nd", ("data", "indices"),
                         attrs=("relay.attrs.GatherNDAttrs", [("batch_dims", 0),
                                                              ("index_rank", None)]),
                         type_rel=_gather_nd_rel, pattern=OpPattern.INJECTIVE,
                         description="gather slices of data at n-d indices (indices leading "
                                     "axis indexes data's axes)")


@_GATHER_ND.def_impl
def _gather_nd_ref(data, indices, batch_dims=0, index_rank=None):
    depth = indices.shape[0]
    if batch_dims == 0:
        return (data[tuple(indices[i] for i in range(depth))],)
    batch_shape = data.shape[:batch_dims]
    index_shape = indices.shape[1:]
    # Batch coordinates broadcast over the remaining index dims.
    grids = np.indices(batch_shape, sparse=True)
    extra = len(index_shape) - batch_dims
    batch_index = tuple(g.reshape(g.shape + (1,) * extra) for g in grids)
    return (data[batch_index + tuple(indices[i] for i in range(depth))],)


@_GATHER_ND.def_grad
def _gather_nd_grad(call, out_grad):
    data, indices = call.args
    if call.attrs["batch_dims"]:
        raise GradientError("the gradient of gather_nd supports batch_dims=0 only")
    return [scatter_nd(_zeros(data), indices, out_grad, mode="add"), _zeros(indices)]


def gather_nd(data, indices, batch_dims=0, index_rank=None):
    """Gather slices at n-d indices (``relay.gather_nd``).

    Args:
        data: the input tensor.
        indices: integer tensor ``(M, Y...)``: column ``y`` holds an index into the first
            ``M`` axes of data (after the batch dims).
        batch_dims: leading dims shared by data and ``indices[0]``.
        index_rank: ``M`` when the leading dim of indices is not static.

    Returns:
        A Call of ``gather_nd`` with shape ``Y + data.shape[batch_dims + M:]``.
    """
    return make_call("gather_nd", (data, indices),
                     {"batch_dims": int(batch_dims), "index_rank": index_rank})


@_SCATTER_ND.def_grad
def _scatter_nd_grad(call, out_grad):
    data, indices, updates = call.args
    updates_grad = gather_nd(out_grad, indices)
    if call.attrs["mode"] == "add":
        return [out_grad, _zeros(indices), updates_grad]
    # Overwritten positions do not reach the output.
    data_grad = scatter_nd(out_grad, indices, _zeros(updates), mode="update")
    return [data_grad, _zeros(indices), updates_grad]


# -- scatter_elements --------------------------------------------------------------------------

_REDUCTIONS = ("update", "add", "mul", "mean", "min", "max")


def _scatter_elements_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "scatter_elements: data")
    indices = expect_int_tensor(arg_types[1], "scatter_elements: indices")
    updates = expect_tensor(arg_types[2], "scatter_elements: updates")
    normalize_axis(attrs["axis"], data.ndim, "scatter_elements: axis")
    if attrs["reduction"] not in _REDUCTIONS:
        raise TypeInferenceError(f"scatter_elements: reduction must be one of {_REDUCTIONS}, "
                                 f"got {attrs['reduction']!r}")
    if indices.ndim != data.ndim or updates.ndim != data.ndim:
        raise TypeInferenceError(f"scatter_elements: indices and updates must have the rank of "
                                 f"data ({data.ndim}), got {indices} and {updates}")
    if any(dims_differ(a, b) for a, b in zip(indices.shape, updates.shape)):
        raise TypeInferenceError(f"scatter_elements: updates shape {updates.shape} differs "
                                 f"from indices shape {indices.shape}")
    if updates.dtype != data.dtype:
        raise TypeInferenceError(f"scatter_elements: updates dtype {updates.dtype} differs "
                                 f"from data dtype {data.dtype}")
    return data


_SCATTER_ELEMENTS = register_op(
    "scatter_elements", ("data", "indices", "updates"),
    attrs=("relay.attrs.ScatterElementsAttrs", [("axis", 0), ("reduction", "update")]),
    type_rel=_scatter_elements_rel, pattern=OpPattern.OPAQUE,
    description="data with updates written into it along axis at indices (ONNX "
                "ScatterElements; reduction update/add/mul/mean/min/max)")


@_SCATTER_ELEMENTS.def_impl
def _scatter_elements_ref(data, indices, updates, axis=0, reduction="update"):
    axis %= data.ndim
    index = list(np.indices(indices.shape, sparse=True))
    index[axis] = np.where(indices < 0, indices + data.shape[axis], indices)
    index = tuple(np.broadcast_arrays(*index))
    out = np.array(data, copy=True)
    if reduction == "update":
        out[index] = updates
    elif reduction == "add":
        np.add.at(out, index, updates)
    elif reduction == "mul":
        np.multiply.at(out, index, updates)
    elif reduction == "min":
        np.minimum.at(out, index, updates)
    elif reduction == "max":
        np.maximum.at(out, index, updates)
    else:  # mean of the original value and every update landing on a position
        total = np.array(data, dtype=np.float64, copy=True)
        count = np.ones(data.shape)
        np.add.at(total, index, updates)
        np.add.at(count, index, 1)
        mean = total / count
        out = (np.trunc(mean) if data.dtype.kind in "iu" else mean).astype(data.dtype)
    return (out,)


@_SCATTER_ELEMENTS.def_grad
def _scatter_elements_grad(call, out_grad):
    data, indices, updates = call.args
    axis, reduction = call.attrs["axis"], call.attrs["reduction"]
    updates_grad = gather(out_grad, axis, indices)
    if reduction == "add":
        return [out_grad, _zeros(indices), updates_grad]
    if reduction == "update":
        data_grad = scatter_elements(out_grad, indices, _zeros(updates), axis, "update")
        return [data_grad, _zeros(indices), updates_grad]
    raise GradientError(f"the gradient of scatter_elements with reduction={reduction!r} "
                              f"is not implemented (update and add are)")


def scatter_elements(data, indices, updates, axis=0, reduction="update"):
    """Scatter ``updates`` into a copy of ``data`` along ``axis`` (``relay.scatter_elements``).

    Args:
        data: the input tensor.
        indices: integer tensor of data's rank (negative values count from the end).
        updates: values, shaped like ``indices``.
        axis: the axis indexed by ``indices``.
        reduction: how an update combines with the value present: ``"update"``, ``"add"``,
            ``"mul"``, ``"mean"``, ``"min"`` or ``"max"``.

    Returns:
        A Call of ``scatter_elements``.
    """
    return make_call("scatter_elements", (data, indices, updates),
                     {"axis": int(axis), "reduction": reduction})


# -- one_hot -----------------------------------------------------------------------------------

def _one_hot_rel(arg_types, attrs):
    indices = expect_int_tensor(arg_types[0], "one_hot: indices")
    on_value = expect_tensor(arg_types[1], "one_hot: on_value")
    off_value = expect_tensor(arg_types[2], "one_hot: off_value")
    if on_value.ndim or off_value.ndim:
        raise TypeInferenceError(f"one_hot: on_value and off_value must be scalars, got "
                                 f"{on_value} and {off_value}")
    depth = attrs["depth"]
    if not isinstance(depth, int) or depth < 0:
        raise TypeInferenceError(f"one_hot: depth must be a non-negative int, got {depth!r}")
    axis = attrs["axis"]
    if not -indices.ndim - 1 <= axis <= indices.ndim:
        raise TypeInferenceError(f"one_hot: axis {axis} is out of range for indices of rank "
                                 f"{indices.ndim}")
    axis = axis % (indices.ndim + 1)
    shape = indices.shape[:axis] + (depth,) + indices.shape[axis:]
    return TensorType(shape, normalize_dtype(attrs["dtype"]))


_ONE_HOT = register_op("one_hot", ("indices", "on_value", "off_value"),
                       attrs=("relay.attrs.OneHotAttrs", [("depth", 1), ("axis", -1),
                                                          ("dtype", "float32")]),
                       type_rel=_one_hot_rel, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                       description="on_value where the new axis equals indices, off_value "
                                   "elsewhere")


@_ONE_HOT.def_impl
def _one_hot_ref(indices, on_value, off_value, depth=1, axis=-1, dtype="float32"):
    axis %= indices.ndim + 1
    positions = np.arange(depth).reshape((depth,) + (1,) * (indices.ndim - axis))
    hit = np.expand_dims(indices, axis) == positions
    return (np.where(hit, on_value, off_value).astype(normalize_dtype(dtype)),)


@_ONE_HOT.def_grad
def _one_hot_grad(call, out_grad):
    indices, on_value, off_value = call.args
    mask = one_hot(indices, make_call("ones_like", (on_value,)), _zeros(off_value),
                   call.attrs["depth"], call.attrs["axis"], call.attrs["dtype"])
    on_grad = make_call("sum", (make_call("multiply", (out_grad, mask)),))
    off_grad = make_call("subtract", (make_call("sum", (out_grad,)), on_grad))
    return [_zeros(indices), make_call("cast_like", (on_grad, on_value)),
            make_call("cast_like", (off_grad, off_value))]


def one_hot(indices, on_value, off_value, depth, axis=-1, dtype="float32"):
    """One-hot encoding (``relay.one_hot``).

    Args:
        indices: integer tensor.
        on_value: scalar written where the new axis equals the index.
        off_value: scalar written elsewhere.
        depth: size of the new axis.
        axis: where the new axis goes (-1: last).
        dtype: the output dtype.

    Returns:
        A Call of ``one_hot`` with shape ``indices.shape`` plus ``depth`` inserted at ``axis``.
    """
    return make_call("one_hot", (indices, on_value, off_value),
                     {"depth": int(depth), "axis": int(axis), "dtype": normalize_dtype(dtype)})


# -- reverse -----------------------------------------------------------------------------------

def _reverse_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "reverse: data")
    normalize_axis(attrs["axis"], data.ndim, "reverse: axis")
    return data


_REVERSE = register_op("reverse", ("data",), attrs=("relay.attrs.ReverseAttrs", [("axis", 0)]),
                       type_rel=_reverse_rel, pattern=OpPattern.INJECTIVE,
                       description="data with the order of elements along axis reversed")
_REVERSE.def_impl(lambda data, axis=0: (np.flip(data, axis % data.ndim).copy(),))
_REVERSE.def_grad(lambda call, out_grad: [reverse(out_grad, call.attrs["axis"])])


def reverse(data, axis):
    """Reverse the elements of ``data`` along ``axis`` (``relay.reverse``).

    Returns:
        A Call of ``reverse``.
    """
    return make_call("reverse", (data,), {"axis": int(axis)})
