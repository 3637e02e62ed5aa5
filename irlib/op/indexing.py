"""Indexing ops: ``strided_slice`` (and ``strided_set``, its adjoint), ``take`` (and
``scatter_nd``, which its gradient uses).

Before/after in the text format::

    strided_slice(%x, begin=[0, 1], end=[2, 3], strides=[1, 1])   /* x: (4, 5) */
    -> Tensor[(2, 2), float32]
    take(%x, %i, axis=1)                  /* x: (4, 5), i: (2, 3) int32 */
    -> Tensor[(4, 2, 3), float32]

``strided_slice`` follows Python slicing (negative indices count from the end, bounds are
clamped). With ``slice_mode="size"`` the ``end`` values are sizes (-1: to the end) and the
strides are ignored. ``axes`` names the axes that ``begin``/``end``/``strides`` refer to
(default: the leading axes).
"""

from __future__ import annotations

import numpy as np

from ..errors import GradientError, TypeInferenceError
from ..ir.dims import Any, AnyDim, DimExpr, floordiv
from ..ir.expr import Constant, Expr, const
from ..ir.types import TensorType
from .registry import OpPattern, make_call, register_op
from .transform import checked_type_for_grad
from .type_relations import dims_differ, expect_tensor, normalize_axis

__all__ = ["strided_slice", "strided_set", "take", "scatter_nd"]

_TO_END = 2 ** 31 - 1


def slice_plan(ndim: int, begin, end, strides, axes, slice_mode: str) -> list:
    """Per axis, ``(begin, end, stride)`` with None meaning "the whole axis".

    Args:
        ndim: the data's rank.
        begin: the begin indices.
        end: the end indices (or sizes, in ``"size"`` mode).
        strides: the strides.
        axes: the axes the lists refer to (None: the leading axes).
        slice_mode: ``"end"`` or ``"size"``.

    Raises:
        TypeInferenceError: on mismatched lengths, a zero stride or an unknown mode.
    """
    if slice_mode not in ("end", "size"):
        raise TypeInferenceError(f"strided_slice: slice_mode must be 'end' or 'size', got "
                                 f"{slice_mode!r}")
    begin = tuple(begin)
    end = tuple(end)
    strides = tuple(strides) if strides else (1,) * len(begin)
    if len(strides) == 1 and len(begin) > 1:
        strides = strides * len(begin)
    if axes is None:
        axes = tuple(range(len(begin)))
    if not len(begin) == len(end) == len(strides) == len(axes):
        raise TypeInferenceError(f"strided_slice: begin {begin}, end {end}, strides {strides} "
                                 f"and axes {tuple(axes)} must have the same length")
    if len(axes) > ndim:
        raise TypeInferenceError(f"strided_slice: {len(axes)} axes given for a tensor of rank "
                                 f"{ndim}")
    plan: list = [None] * ndim
    for b, e, s, axis in zip(begin, end, strides, axes):
        axis = normalize_axis(axis, ndim, "strided_slice: axis")
        if slice_mode == "size":
            s = 1
            e = b + e if isinstance(e, DimExpr) or e >= 0 else _TO_END
        if isinstance(s, DimExpr):
            raise TypeInferenceError(f"strided_slice: strides must be ints, got {s}")
        if s == 0:
            raise TypeInferenceError("strided_slice: strides must be nonzero")
        plan[axis] = (b, e, s)
    return plan


def _slice_length(size, bounds):
    """The length of ``size[b:e:s]``; symbolic where ``size``, ``b`` or ``e`` is.

    NOTE: [Symbolic bounds] With a symbolic begin or end, the length is that of an
    in-bound slice (Relax's ``assume_inbound``): ``ceil((e - b) / s)`` after negative int
    indices are counted from the end and int indices past a static end are clamped. Int
    bounds on a symbolic axis give ``Any`` (but the whole axis, ``0:2**31-1``, its size). The
    run-time result is checked against this type, so an out-of-bound symbolic slice is
    reported, not silently given another shape.
    """
    if bounds is None:
        return size
    b, e, s = bounds
    symbolic = isinstance(b, DimExpr) or isinstance(e, DimExpr)
    if isinstance(size, int) and not symbolic:
        return len(range(*slice(b, e, s).indices(size)))
    if isinstance(size, AnyDim):
        return Any
    if not symbolic:   # int bounds on a symbolic axis: known only for the whole axis
        return size if b == 0 and e >= _TO_END and s == 1 else Any
    if s < 0:
        return Any
    b, e = _inbound(b, size), _inbound(e, size)
    if isinstance(b, AnyDim) or isinstance(e, AnyDim):
        return Any
    length = e - b if s == 1 else floordiv(e - b + (s - 1), s)
    if isinstance(length, int) and length < 0:
        return 0
    return length


def _inbound(index, size):
    """A slice bound as a position in ``[0, size]``, assuming symbolic bounds are in range."""
    if isinstance(index, DimExpr):
        return index
    if index < 0:
        return max(size + index, 0) if isinstance(size, int) else size + index
    if index >= _TO_END:
        return size
    if isinstance(size, int):
        return min(index, size)
    return index


def _attr_plan(ndim, attrs):
    return slice_plan(ndim, attrs["begin"], attrs["end"], attrs["strides"], attrs["axes"],
                      attrs["slice_mode"])


def _strided_slice_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "strided_slice: data")
    plan = _attr_plan(data.ndim, attrs)
    return TensorType([_slice_length(d, p) for d, p in zip(data.shape, plan)], data.dtype)


def _index(plan) -> tuple:
    return tuple(slice(None) if p is None else slice(*p) for p in plan)


_STRIDED_SLICE = register_op(
    "strided_slice", ("data",),
    attrs=("relay.attrs.StridedSliceAttrs", [("begin", None), ("end", None),
                                              ("strides", None), ("slice_mode", "end"),
                                              ("axes", None)]),
    type_rel=_strided_slice_rel, pattern=OpPattern.INJECTIVE,
    description="slice with begin/end/strides per axis")


@_STRIDED_SLICE.def_impl
def _strided_slice_ref(data, begin, end, strides=None, slice_mode="end", axes=None):
    plan = slice_plan(data.ndim, begin, end, strides, axes, slice_mode)
    return (np.array(data[_index(plan)]),)


@_STRIDED_SLICE.def_grad
def _strided_slice_grad(call, out_grad):
    data = call.args[0]
    attrs = call.attrs
    positions = attrs["axes"] if attrs["axes"] is not None else range(len(attrs["begin"]))
    if any(a < 0 for a in positions):
        ndim = checked_type_for_grad(data, "strided_slice").ndim
        positions = [a % ndim for a in positions]
    if any(isinstance(v, DimExpr) for v in tuple(attrs["begin"]) + tuple(attrs["end"])):
        raise GradientError("the gradient of strided_slice with symbolic begin/end is "
                                  "not supported (strided_set takes constant bounds)")
    count = max(positions, default=-1) + 1
    # Spell the slice over the leading `count` axes (whole-axis slices elsewhere).
    plan = [(0, _TO_END, 1)] * count
    for b, e, s, axis in zip(attrs["begin"], attrs["end"],
                             attrs["strides"] or (1,) * len(attrs["begin"]), positions):
        if attrs["slice_mode"] == "size":
            s, e = 1, (_TO_END if e < 0 else b + e)
        plan[axis] = (b, e, s)
    begin, end, strides = (const(np.array([p[i] for p in plan], "int64")) for i in range(3))
    zeros = make_call("zeros_like", (data,))
    return [strided_set(zeros, out_grad, begin, end, strides)]


def strided_slice(data, begin, end, strides=None, axes=None, slice_mode="end"):
    """Slice ``data`` (``relay.strided_slice``).

    Args:
        data: the input tensor.
        begin: start index per sliced axis (an int, or a symbolic size such as
            ``size_var("n")``, bound when the enclosing function is called).
        end: end index (exclusive) per sliced axis, or sizes when ``slice_mode="size"``
            (ints or symbolic sizes; a symbolic slice is assumed in bounds).
        strides: step per sliced axis (default 1).
        axes: which axes the lists refer to (default: the leading axes).
        slice_mode: ``"end"`` or ``"size"``.

    Returns:
        A Call of ``strided_slice``.
    """
    def ints(values):
        if values is None:
            return None
        if isinstance(values, DimExpr):
            values = [values]
        if isinstance(values, (list, tuple)):
            return tuple(v if isinstance(v, DimExpr) else int(v) for v in values)
        return tuple(int(v) for v in np.atleast_1d(values))
    return make_call("strided_slice", (data,),
                     {"begin": ints(begin), "end": ints(end), "strides": ints(strides),
                      "slice_mode": slice_mode, "axes": ints(axes)})


# -- strided_set ------------------------------------------------------------------------------

def _strided_set_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "strided_set: data")
    value = expect_tensor(arg_types[1], "strided_set: v")
    if value.dtype != data.dtype:
        raise TypeInferenceError(f"strided_set: v dtype {value.dtype} differs from data dtype "
                                 f"{data.dtype}")
    for name, ty in zip(("begin", "end", "strides"), arg_types[2:]):
        ty = expect_tensor(ty, f"strided_set: {name}")
        if ty.ndim != 1 or not ty.dtype.startswith("int"):
            raise TypeInferenceError(f"strided_set: {name} must be a 1-D integer tensor, got "
                                     f"{ty}")
    return data


_STRIDED_SET = register_op("strided_set", ("data", "v", "begin", "end", "strides"),
                           type_rel=_strided_set_rel, pattern=OpPattern.INJECTIVE,
                           description="data with a strided slice replaced by v")


@_STRIDED_SET.def_impl
def _strided_set_ref(data, v, begin, end, strides):
    out = np.array(data, copy=True)
    plan = slice_plan(data.ndim, begin.tolist(), end.tolist(), strides.tolist(), None, "end")
    out[_index(plan)] = v
    return (out,)


@_STRIDED_SET.def_grad
def _strided_set_grad(call, out_grad):
    data, value, begin, end, strides = call.args
    bounds = []
    for arg in (begin, end, strides):
        if not isinstance(arg, Constant):
            raise GradientError("the gradient of strided_set needs constant begin, end "
                                      "and strides")
        bounds.append(arg.data.numpy().tolist())
    data_grad = strided_set(out_grad, make_call("zeros_like", (value,)), begin, end, strides)
    value_grad = make_call("collapse_sum_like", (strided_slice(out_grad, *bounds), value))
    return [data_grad, value_grad] + [make_call("zeros_like", (a,)) for a in (begin, end,
                                                                             strides)]


def strided_set(data, v, begin, end, strides=None):
    """``data`` with the slice ``begin:end:strides`` (leading axes) replaced by ``v``.

    Args:
        data: the tensor to update.
        v: the values to write (broadcast to the slice).
        begin, end, strides: 1-D int64 tensors (or sequences, made constants).

    Returns:
        A Call of ``strided_set``.
    """
    def as_tensor(values):
        if isinstance(values, Expr):
            return values
        return const(np.asarray(values, "int64"))
    if strides is None:
        strides = [1] * len(np.atleast_1d(begin))
    return make_call("strided_set", (data, v, as_tensor(begin), as_tensor(end),
                                     as_tensor(strides)))


# -- take -------------------------------------------------------------------------------------

def _take_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "take: data")
    indices = expect_tensor(arg_types[1], "take: indices")
    if not (indices.dtype.startswith("int") or indices.dtype.startswith("uint")):
        raise TypeInferenceError(f"take: indices must be integers, got {indices.dtype}")
    if attrs["mode"] not in ("clip", "wrap", "fast"):
        raise TypeInferenceError(f"take: mode must be clip, wrap or fast, got "
                                 f"{attrs['mode']!r}")
    batch_dims = attrs["batch_dims"]
    if attrs["axis"] is None:
        if batch_dims != 0:
            raise TypeInferenceError("take: batch_dims needs an axis")
        return TensorType(indices.shape, data.dtype)
    axis = normalize_axis(attrs["axis"], data.ndim, "take: axis")
    if batch_dims < 0:
        batch_dims += indices.ndim
    if not 0 <= batch_dims <= min(axis, indices.ndim):
        raise TypeInferenceError(f"take: batch_dims={attrs['batch_dims']} must lie in "
                                 f"[0, min(axis={axis}, indices rank={indices.ndim})]")
    for i in range(batch_dims):
        if dims_differ(data.shape[i], indices.shape[i]):
            raise TypeInferenceError(f"take: batch dimension {i} differs between data "
                                     f"({data.shape[i]}) and indices ({indices.shape[i]})")
    return TensorType(data.shape[:axis] + indices.shape[batch_dims:] + data.shape[axis + 1:],
                      data.dtype)


def _fix_indices(indices, size, mode):
    if mode == "wrap":
        return np.mod(indices, size)
    if mode == "clip":
        return np.clip(indices, 0, size - 1)
    return indices


_TAKE = register_op("take", ("data", "indices"),
                    attrs=("relay.attrs.TakeAttrs", [("batch_dims", 0), ("axis", None),
                                                     ("mode", "clip")]),
                    type_rel=_take_rel, pattern=OpPattern.INJECTIVE,
                    description="gather elements of data along an axis")


@_TAKE.def_impl
def _take_ref(data, indices, batch_dims=0, axis=None, mode="clip"):
    if axis is None:
        flat = np.reshape(data, -1)
        return (flat[_fix_indices(indices, flat.size, mode)],)
    axis %= data.ndim
    indices = _fix_indices(indices, data.shape[axis], mode)
    if batch_dims < 0:
        batch_dims += indices.ndim
    if batch_dims == 0:
        return (np.take(data, indices, axis=axis),)
    # Flatten to (B, M, A, R) and (B, K); pick out[b, :, k, :] = data[b, :, idx[b, k], :].
    batch = data.shape[:batch_dims]
    middle, rest = data.shape[batch_dims:axis], data.shape[axis + 1:]
    size_b = int(np.prod(batch))
    flat = data.reshape(size_b, int(np.prod(middle)), data.shape[axis], int(np.prod(rest)))
    flat_indices = indices.reshape(size_b, -1)
    picked = flat[np.arange(size_b)[:, None], :, flat_indices, :]  # (B, K, M, R)
    picked = picked.transpose(0, 2, 1, 3)
    return (picked.reshape(batch + middle + indices.shape[batch_dims:] + rest),)


@_TAKE.def_grad
def _take_grad(call, out_grad):
    data, indices = call.args
    data_type = checked_type_for_grad(data, "take")
    index_rank = checked_type_for_grad(indices, "take").ndim
    axis = call.attrs["axis"]
    mode = call.attrs["mode"]
    if call.attrs["batch_dims"]:
        raise GradientError("the gradient of take supports batch_dims=0 only")
    target = make_call("zeros_like", (data,))
    if axis is None:
        target = make_call("reshape", (target,), {"newshape": (-1,), "allowzero": False})
        size = _static_product(data_type.shape)
        axis = 0
        rest = ()
    else:
        axis %= data_type.ndim
        size = data_type.shape[axis]
        if not isinstance(size, int):
            raise GradientError("the gradient of take needs a static size on its axis")
        rest = tuple(range(data_type.ndim))
    if mode == "clip":
        indices = make_call("clip", (indices,), {"a_min": 0.0, "a_max": float(size - 1)})
    elif mode == "wrap":
        index_dtype = checked_type_for_grad(indices, "take").dtype
        indices = make_call("floor_mod", (indices, const(np.array(size, index_dtype))))
    # Scatter along the leading axis: move `axis` first in the target and the gathered
    # axes first in the adjoint, add, and move back.
    target_perm = (axis,) + tuple(a for a in rest if a != axis)
    grad_perm = (tuple(range(axis, axis + index_rank)) + tuple(range(axis))
                 + tuple(range(axis + index_rank, len(rest) - 1 + index_rank)))
    moved_target = _transpose(target, target_perm)
    moved_grad = _transpose(out_grad, grad_perm) if rest else out_grad
    scattered = scatter_nd(moved_target, make_call("expand_dims", (indices,),
                                                   {"axis": 0, "num_newaxis": 1}),
                           moved_grad, mode="add")
    inverse = tuple(target_perm.index(a) for a in range(len(target_perm)))
    data_grad = _transpose(scattered, inverse) if rest else scattered
    data_grad = make_call("reshape_like", (data_grad, data))
    return [data_grad, make_call("zeros_like", (call.args[1],))]


def _static_product(shape) -> int:
    total = 1
    for dim in shape:
        if not isinstance(dim, int):
            raise GradientError("the gradient of take needs a static data shape")
        total *= dim
    return total


def _transpose(expr, perm):
    if tuple(perm) == tuple(range(len(perm))):
        return expr
    return make_call("transpose", (expr,), {"axes": tuple(perm)})


def take(data, indices, axis=None, batch_dims=0, mode="clip"):
    """Gather ``data[..., indices, ...]`` along ``axis`` (flattened data when None).

    Args:
        data: the source tensor.
        indices: an integer tensor.
        axis: the axis to gather along, or None to index the flattened data.
        batch_dims: must be 0.
        mode: out-of-range indices are ``"clip"``-ped (default), ``"wrap"``-ped or
            (``"fast"``) assumed in range.

    Returns:
        A Call of ``take``.
    """
    return make_call("take", (data, indices),
                     {"batch_dims": int(batch_dims),
                      "axis": None if axis is None else int(axis), "mode": mode})


# -- scatter_nd --------------------------------------------------------------------------------

def _scatter_nd_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "scatter_nd: data")
    indices = expect_tensor(arg_types[1], "scatter_nd: indices")
    updates = expect_tensor(arg_types[2], "scatter_nd: updates")
    if attrs["mode"] not in ("update", "add"):
        raise TypeInferenceError(f"scatter_nd: mode must be 'update' or 'add', got "
                                 f"{attrs['mode']!r}")
    if indices.ndim < 1 or not isinstance(indices.shape[0], int):
        raise TypeInferenceError(f"scatter_nd: indices must have a static leading dimension, "
                                 f"got {indices}")
    depth = indices.shape[0]
    expected = indices.shape[1:] + data.shape[depth:]
    if len(expected) != updates.ndim:
        raise TypeInferenceError(f"scatter_nd: updates must have shape {expected}, got "
                                 f"{updates.shape}")
    return data


_SCATTER_ND = register_op("scatter_nd", ("data", "indices", "updates"),
                          attrs=("relay.attrs.ScatterNDAttrs", [("mode", "update")]),
                          type_rel=_scatter_nd_rel, pattern=OpPattern.OPAQUE,
                          description="write (or add) updates at n-d indices of data")


@_SCATTER_ND.def_impl
def _scatter_nd_ref(data, indices, updates, mode="update"):
    out = np.array(data, copy=True)
    where = tuple(indices[i] for i in range(indices.shape[0]))
    if mode == "add":
        np.add.at(out, where, updates)
    else:
        out[where] = updates
    return (out,)


def scatter_nd(data, indices, updates, mode="update"):
    """``data`` with ``updates`` written (``mode="update"``) or added (``"add"``) at
    ``indices`` (shape ``(M, Y...)``; ``updates`` has shape ``Y + data.shape[M:]``).

    Returns:
        A Call of ``scatter_nd``.
    """
    return make_call("scatter_nd", (data, indices, updates), {"mode": mode})
