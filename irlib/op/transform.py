"""Shape-changing (injective) ops: reshape, transpose, concatenate, split and friends.

Before/after in the text format::

    reshape(%x, newshape=[0, -1])       /* Tensor[(2, 3, 4), float32] */
    -> Tensor[(2, 12), float32]
    concatenate((%a, %b), axis=1)       /* (2, 3) and (2, 5) */
    -> Tensor[(2, 8), float32]

``reshape``'s ``newshape`` understands Relay's special codes (see :func:`reshape`).
"""

from __future__ import annotations

import numpy as np

from ..errors import GradientError, TypeInferenceError, UntypedError
from ..ir.dims import Any, AnyDim, DimExpr
from ..ir.expr import Tuple, TupleGetItem, TupleWrapper
from ..ir.types import TensorType, TupleType
from .registry import OpPattern, make_call, register_op
from .type_relations import (dim_mul, dims_differ, expect_tensor, normalize_axes,
                             normalize_axis, shape_product)

__all__ = ["reshape", "reshape_like", "transpose", "concatenate", "split",
           "broadcast_to_like", "expand_dims", "squeeze"]


def checked_type_for_grad(expr, what: str):
    """The type of an already type-checked expression (a few gradients need it).

    Args:
        expr: the expression.
        what: the op whose gradient needs it, for the message.

    Raises:
        GradientError: if ``expr`` has not been through type inference.
    """
    try:
        ty = expr.checked_type
    except UntypedError:  # re-raised with the op's context
        raise GradientError(f"the gradient of {what} needs the argument types; run "
                                  f"type inference before taking the gradient") from None
    return ty


# -- reshape ---------------------------------------------------------------------------------

def reshape_output_shape(in_shape, newshape, allowzero: bool = False) -> tuple:
    """The shape ``reshape`` produces (dims may be symbolic or Any).

    Args:
        in_shape: the input shape.
        newshape: the requested shape (with Relay's special values 0, -1, -2, -3, -4).
        allowzero: a 0 in ``newshape`` means size 0, not "copy this dim".

    Raises:
        TypeInferenceError: on a malformed ``newshape`` or a size mismatch.
    """
    in_shape = tuple(in_shape)
    if isinstance(newshape, int):
        newshape = (newshape,)
    out: list = []
    source = 0
    infer_at = None
    index = 0
    codes = tuple(newshape)
    while index < len(codes):
        code = codes[index]
        if isinstance(code, DimExpr) or code > 0 or (code == 0 and allowzero):
            out.append(code)
            source += 1
        elif code == 0:
            if source >= len(in_shape):
                raise TypeInferenceError(f"reshape: code 0 at position {index} has no input "
                                         f"dimension to copy (input shape {in_shape})")
            out.append(in_shape[source])
            source += 1
        elif code == -1:
            if infer_at is not None:
                raise TypeInferenceError(f"reshape: newshape {codes} has more than one -1")
            infer_at = len(out)
            out.append(1)
            source += 1
        elif code == -2:
            out.extend(in_shape[source:])
            source = len(in_shape)
        elif code == -3:
            if source + 1 >= len(in_shape):
                raise TypeInferenceError(f"reshape: code -3 at position {index} needs two "
                                         f"input dimensions (input shape {in_shape})")
            out.append(dim_mul(in_shape[source], in_shape[source + 1]))
            source += 2
        elif code == -4:
            if index + 2 >= len(codes):
                raise TypeInferenceError("reshape: code -4 must be followed by two sizes")
            first, second = codes[index + 1], codes[index + 2]
            whole = in_shape[source]
            if isinstance(first, int) and first == -1:
                first = _divide_dim(whole, second)
            if isinstance(second, int) and second == -1:
                second = _divide_dim(whole, first)
            out.extend([first, second])
            source += 1
            index += 2
        else:
            raise TypeInferenceError(f"reshape: invalid code {code} in newshape {codes}")
        index += 1
    total = shape_product(in_shape)
    if infer_at is not None:
        # Cancel dims that appear on both sides first, so that n*12 / n gives 12 exactly.
        remaining = list(in_shape)
        unmatched = []
        for dim in out[:infer_at] + out[infer_at + 1:]:
            if dim in remaining and not isinstance(dim, AnyDim):
                remaining.remove(dim)
            else:
                unmatched.append(dim)
        out[infer_at] = _divide_dim(shape_product(remaining), shape_product(unmatched))
    out_total = shape_product(out)
    if dims_differ(total, out_total):
        raise TypeInferenceError(f"reshape: cannot reshape {in_shape} ({total} elements) to "
                                 f"{tuple(out)} ({out_total} elements)")
    return tuple(out)


def _divide_dim(total, part):
    if isinstance(total, AnyDim) or isinstance(part, AnyDim):
        return Any
    if isinstance(part, int) and part == 0:
        return 0
    if isinstance(total, int) and isinstance(part, int) and total % part:
        raise TypeInferenceError(f"reshape: {total} elements cannot be split into parts of "
                                 f"{part}")
    return total // part


def _reshape_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "reshape: data")
    if attrs["newshape"] is None:
        raise TypeInferenceError("reshape: newshape is required")
    return TensorType(reshape_output_shape(data.shape, attrs["newshape"], attrs["allowzero"]),
                      data.dtype)


_RESHAPE = register_op("reshape", ("data",),
                       attrs=("relay.attrs.ReshapeAttrs", [("newshape", None),
                                                            ("allowzero", False)]),
                       type_rel=_reshape_rel, pattern=OpPattern.INJECTIVE,
                       description="view data with another shape")


@_RESHAPE.def_impl
def _reshape_ref(data, newshape, allowzero=False):
    return (np.reshape(data, reshape_output_shape(data.shape, newshape, allowzero)),)


_RESHAPE.def_grad(lambda call, out_grad: [reshape_like(out_grad, call.args[0])])


def reshape(data, newshape, allowzero=False):
    """Reshape ``data`` to ``newshape``.

    Besides positive sizes, ``newshape`` may hold Relay's special codes:

    * ``0``: copy the input dimension at the same position (a literal 0 if ``allowzero``);
    * ``-1``: infer this dimension from the remaining size (at most one);
    * ``-2``: copy all remaining input dimensions;
    * ``-3``: merge the next two input dimensions into one;
    * ``-4``: split the next input dimension into the two sizes that follow (one may be -1).

    Examples: ``(2, 3, 4)`` with ``(0, -1)`` gives ``(2, 12)``; with ``(-3, 4)`` ``(6, 4)``;
    with ``(-4, 1, 2, -2)`` ``(1, 2, 3, 4)``; with ``(2, -2)`` ``(2, 3, 4)``.

    Args:
        data: the input tensor.
        newshape: an int or a sequence of ints; an entry may also be a symbolic size
            (a :class:`~irlib.ir.dims.DimExpr` such as ``size_var("n")``), a positive
            size whose value is bound when the enclosing function is called.
        allowzero: treat 0 as a literal size.

    Returns:
        A Call of ``reshape``.
    """
    if isinstance(newshape, (int, np.integer, DimExpr)):
        newshape = (newshape,)
    return make_call("reshape", (data,), {"newshape": tuple(s if isinstance(s, DimExpr)
                                                            else int(s) for s in newshape),
                                          "allowzero": bool(allowzero)})


def _reshape_like_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "reshape_like: data")
    like = expect_tensor(arg_types[1], "reshape_like: shape_like")
    lhs_end = attrs["lhs_end"]
    rhs_end = attrs["rhs_end"]
    lhs = data.shape
    rhs = like.shape
    shape = (lhs[:attrs["lhs_begin"]] + rhs[attrs["rhs_begin"]:rhs_end]
             + (lhs[lhs_end:] if lhs_end is not None else ()))
    if dims_differ(shape_product(shape), shape_product(data.shape)):
        raise TypeInferenceError(f"reshape_like: cannot reshape {data.shape} to {shape}")
    return TensorType(shape, data.dtype)


_RESHAPE_LIKE = register_op(
    "reshape_like", ("data", "shape_like"),
    attrs=("relay.attrs.ReshapeLikeAttrs", [("lhs_begin", 0), ("lhs_end", None),
                                             ("rhs_begin", 0), ("rhs_end", None)]),
    type_rel=_reshape_like_rel, pattern=OpPattern.INJECTIVE,
    description="reshape data to (part of) the shape of shape_like")


@_RESHAPE_LIKE.def_impl
def _reshape_like_ref(data, shape_like, lhs_begin=0, lhs_end=None, rhs_begin=0, rhs_end=None):
    shape = (data.shape[:lhs_begin] + np.shape(shape_like)[rhs_begin:rhs_end]
             + (data.shape[lhs_end:] if lhs_end is not None else ()))
    return (np.reshape(data, shape),)


@_RESHAPE_LIKE.def_grad
def _reshape_like_grad(call, out_grad):
    data, like = call.args
    return [reshape_like(out_grad, data), make_call("zeros_like", (like,))]


def reshape_like(data, shape_like, lhs_begin=0, lhs_end=None, rhs_begin=0, rhs_end=None):
    """Reshape ``data`` so that dims ``[lhs_begin, lhs_end)`` become ``shape_like``'s dims
    ``[rhs_begin, rhs_end)`` (by default: the whole shape of ``shape_like``).

    Returns:
        A Call of ``reshape_like``.
    """
    return make_call("reshape_like", (data, shape_like),
                     {"lhs_begin": lhs_begin, "lhs_end": lhs_end, "rhs_begin": rhs_begin,
                      "rhs_end": rhs_end})


# -- transpose -------------------------------------------------------------------------------

def _permutation(axes, ndim: int) -> tuple:
    if axes is None:
        return tuple(reversed(range(ndim)))
    if len(axes) != ndim:
        raise TypeInferenceError(f"transpose: axes {tuple(axes)} must list all {ndim} axes")
    return normalize_axes(axes, ndim, "transpose: axes")


def _transpose_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "transpose: data")
    perm = _permutation(attrs["axes"], data.ndim)
    return TensorType(tuple(data.shape[a] for a in perm), data.dtype)


_TRANSPOSE = register_op("transpose", ("data",),
                         attrs=("relay.attrs.TransposeAttrs", [("axes", None)]),
                         type_rel=_transpose_rel, pattern=OpPattern.INJECTIVE,
                         description="permute the axes of data")
_TRANSPOSE.def_impl(lambda data, axes=None: (
    np.transpose(data, _permutation(axes, data.ndim)),))


@_TRANSPOSE.def_grad
def _transpose_grad(call, out_grad):
    axes = call.attrs["axes"]
    if axes is None:
        return [transpose(out_grad)]
    ndim = len(axes)
    perm = [a % ndim for a in axes]
    return [transpose(out_grad, [perm.index(i) for i in range(ndim)])]


def transpose(data, axes=None):
    """Permute the axes of ``data`` (reverse them when ``axes`` is None).

    Returns:
        A Call of ``transpose``.
    """
    if axes is not None:
        axes = tuple(int(a) for a in axes)
    return make_call("transpose", (data,), {"axes": axes})


# -- concatenate / split ------------------------------------------------------------------------

def _concatenate_rel(arg_types, attrs):
    fields = arg_types[0]
    if not isinstance(fields, TupleType) or not fields.fields:
        raise TypeInferenceError(f"concatenate: data must be a non-empty tuple of tensors, "
                                 f"got {fields}")
    tensors = [expect_tensor(f, f"concatenate: field {i}") for i, f in enumerate(fields.fields)]
    first = tensors[0]
    axis = normalize_axis(attrs["axis"], first.ndim, "concatenate: axis")
    total = 0
    for i, tensor in enumerate(tensors):
        if tensor.ndim != first.ndim or tensor.dtype != first.dtype:
            raise TypeInferenceError(f"concatenate: field {i} is {tensor} but field 0 is "
                                     f"{first}; ranks and dtypes must agree")
        for dim_index, (a, b) in enumerate(zip(first.shape, tensor.shape)):
            if dim_index != axis and dims_differ(a, b):
                raise TypeInferenceError(
                    f"concatenate: field {i} has shape {tensor.shape}, which differs from "
                    f"field 0's {first.shape} at dimension {dim_index} (axis is {axis})")
        size = tensor.shape[axis]
        # NOTE: Any has no arithmetic; a concatenation with an Any-sized part is Any-sized.
        total = Any if isinstance(total, AnyDim) or isinstance(size, AnyDim) else total + size
    shape = list(first.shape)
    shape[axis] = total
    return TensorType(shape, first.dtype)


_CONCATENATE = register_op("concatenate", ("data",),
                           attrs=("relay.attrs.ConcatenateAttrs", [("axis", 0)]),
                           type_rel=_concatenate_rel, pattern=OpPattern.INJECTIVE,
                           description="join a tuple of tensors along an axis")
_CONCATENATE.def_impl(lambda data, axis=0: (np.concatenate(tuple(data), axis=axis),))


@_CONCATENATE.def_grad
def _concatenate_grad(call, out_grad):
    fields = checked_type_for_grad(call.args[0], "concatenate").fields
    axis = call.attrs["axis"] % fields[0].ndim
    offsets = []
    position = 0
    for field in fields[:-1]:
        size = field.shape[axis]
        if not isinstance(size, int):
            raise GradientError("the gradient of concatenate needs static sizes along "
                                      "the axis")
        position += size
        offsets.append(position)
    pieces = split(out_grad, offsets, axis)
    return [Tuple([pieces[i] for i in range(len(fields))])]


def concatenate(data, axis):
    """Join tensors along ``axis``.

    Args:
        data: a list/tuple of expressions (or one tuple-valued expression); it is passed to
            the op as a single ``Tuple`` argument.
        axis: the axis to join along (negative counts from the end).

    Returns:
        A Call of ``concatenate``.
    """
    if isinstance(data, (list, tuple)):
        data = Tuple(list(data))
    elif isinstance(data, TupleWrapper):
        data = data.astuple()
    return make_call("concatenate", (data,), {"axis": int(axis)})


def _split_bounds(size, indices_or_sections):
    if isinstance(indices_or_sections, int):
        if size % indices_or_sections:
            # a symbolic size passes type checking; the run-time size must still divide
            raise ValueError(f"an axis of size {size} does not split into "
                             f"{indices_or_sections} equal sections")
        piece = size // indices_or_sections
        return [(i * piece, (i + 1) * piece) for i in range(indices_or_sections)]
    edges = [0] + list(indices_or_sections) + [size]
    return list(zip(edges[:-1], edges[1:]))


def _split_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "split: data")
    axis = normalize_axis(attrs["axis"], data.ndim, "split: axis")
    size = data.shape[axis]
    sections = attrs["indices_or_sections"]
    shapes = []
    if isinstance(sections, int):
        if sections <= 0:
            raise TypeInferenceError(f"split: sections must be positive, got {sections}")
        if isinstance(size, int) and size % sections:
            raise TypeInferenceError(f"split: dimension {axis} of size {size} is not "
                                     f"divisible into {sections} sections")
        sizes = [size // sections if not isinstance(size, AnyDim) else Any] * sections
    else:
        edges = [0] + list(sections)
        if any(isinstance(b - a, int) and b - a < 0 for a, b in zip(edges, edges[1:])):
            raise TypeInferenceError(f"split: indices {sections} must be ascending")
        last = Any if isinstance(size, AnyDim) else size - edges[-1]
        sizes = [b - a for a, b in zip(edges, edges[1:])] + [last]
    for piece in sizes:
        shape = list(data.shape)
        shape[axis] = piece
        shapes.append(TensorType(shape, data.dtype))
    return TupleType(shapes)


_SPLIT = register_op("split", ("data",),
                     attrs=("relay.attrs.SplitAttrs", [("indices_or_sections", 1),
                                                       ("axis", 0)]),
                     type_rel=_split_rel, pattern=OpPattern.INJECTIVE, tuple_output=True,
                     description="split data into pieces along an axis")


@_SPLIT.def_impl
def _split_ref(data, indices_or_sections=1, axis=0):
    axis = axis % data.ndim
    bounds = _split_bounds(data.shape[axis], indices_or_sections)
    return tuple(np.take(data, range(a, b), axis=axis) for a, b in bounds)


@_SPLIT.def_grad
def _split_grad(call, out_grad):
    sections = call.attrs["indices_or_sections"]
    count = sections if isinstance(sections, int) else len(sections) + 1
    return [concatenate([TupleGetItem(out_grad, i) for i in range(count)],
                        call.attrs["axis"])]


def split(data, indices_or_sections, axis=0):
    """Split ``data`` along ``axis`` into equal sections (an int) or at indices (a list).

    Args:
        data: the input tensor.
        indices_or_sections: the number of equal sections, or the ascending split indices
            (ints, or symbolic sizes such as ``size_var("n")`` bound at run time).
        axis: the axis to split.

    Returns:
        A :class:`~irlib.ir.expr.TupleWrapper` over the ``split`` call.
    """
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        count = sections
    else:
        sections = tuple(i if isinstance(i, DimExpr) else int(i) for i in indices_or_sections)
        count = len(sections) + 1
    call = make_call("split", (data,), {"indices_or_sections": sections, "axis": int(axis)})
    return TupleWrapper(call, count)


# -- broadcast_to_like, expand_dims, squeeze ---------------------------------------------------

def _broadcast_like_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "broadcast_to_like: data")
    like = expect_tensor(arg_types[1], "broadcast_to_like: broadcast_type")
    offset = like.ndim - data.ndim
    if offset < 0 or any(not (isinstance(a, int) and a == 1) and dims_differ(a, b)
                         for a, b in zip(data.shape, like.shape[offset:])):
        raise TypeInferenceError(f"broadcast_to_like: shape {data.shape} does not broadcast "
                                 f"to {like.shape}")
    return TensorType(like.shape, data.dtype)


_BROADCAST_LIKE = register_op("broadcast_to_like", ("data", "broadcast_type"),
                              type_rel=_broadcast_like_rel, pattern=OpPattern.BROADCAST,
                              description="broadcast data to the shape of broadcast_type")
_BROADCAST_LIKE.def_impl(lambda data, broadcast_type: (
    np.array(np.broadcast_to(data, np.shape(broadcast_type))),))


@_BROADCAST_LIKE.def_grad
def _broadcast_like_grad(call, out_grad):
    data, like = call.args
    return [make_call("collapse_sum_like", (out_grad, data)), make_call("zeros_like", (like,))]


def broadcast_to_like(data, broadcast_type):
    """Broadcast ``data`` to the shape of ``broadcast_type``.

    Returns:
        A Call of ``broadcast_to_like``.
    """
    return make_call("broadcast_to_like", (data, broadcast_type))


def _expand_dims_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "expand_dims: data")
    count = attrs["num_newaxis"]
    if count < 0:
        raise TypeInferenceError(f"expand_dims: num_newaxis must be >= 0, got {count}")
    axis = normalize_axis(attrs["axis"], data.ndim + 1, "expand_dims: axis")
    return TensorType(data.shape[:axis] + (1,) * count + data.shape[axis:], data.dtype)


_EXPAND_DIMS = register_op("expand_dims", ("data",),
                           attrs=("relay.attrs.ExpandDimsAttrs", [("axis", 0),
                                                                  ("num_newaxis", 1)]),
                           type_rel=_expand_dims_rel, pattern=OpPattern.BROADCAST,
                           description="insert size-1 axes")


@_EXPAND_DIMS.def_impl
def _expand_dims_ref(data, axis=0, num_newaxis=1):
    axis = axis % (data.ndim + 1)
    return (np.reshape(data, data.shape[:axis] + (1,) * num_newaxis + data.shape[axis:]),)


_EXPAND_DIMS.def_grad(lambda call, out_grad: [reshape_like(out_grad, call.args[0])])


def expand_dims(data, axis, num_newaxis=1):
    """Insert ``num_newaxis`` size-1 axes at ``axis``.

    Args:
        data: the tensor.
        axis: where the new axes go.
        num_newaxis: how many to insert.

    Returns:
        A Call of ``expand_dims``.
    """
    return make_call("expand_dims", (data,), {"axis": int(axis),
                                              "num_newaxis": int(num_newaxis)})


def _squeeze_axes(shape, axis) -> tuple:
    if axis is None:
        return tuple(i for i, d in enumerate(shape) if isinstance(d, int) and d == 1)
    axes = normalize_axes(axis, len(shape), "squeeze: axis")
    for a in axes:
        if dims_differ(shape[a], 1):
            raise TypeInferenceError(f"squeeze: dimension {a} of {tuple(shape)} is "
                                     f"{shape[a]}, not 1")
    return axes


def _squeeze_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "squeeze: data")
    axes = _squeeze_axes(data.shape, attrs["axis"])
    return TensorType(tuple(d for i, d in enumerate(data.shape) if i not in axes), data.dtype)


_SQUEEZE = register_op("squeeze", ("data",),
                       attrs=("relay.attrs.SqueezeAttrs", [("axis", None)]),
                       type_rel=_squeeze_rel, pattern=OpPattern.INJECTIVE,
                       description="remove size-1 axes")
_SQUEEZE.def_impl(lambda data, axis=None: (
    np.squeeze(data, axis=_squeeze_axes(data.shape, axis)),))
_SQUEEZE.def_grad(lambda call, out_grad: [reshape_like(out_grad, call.args[0])])


def squeeze(data, axis=None):
    """Remove size-1 axes (all of them when ``axis`` is None).

    Args:
        data: the tensor.
        axis: the axes to remove (each must have size 1), or None.

    Returns:
        A Call of ``squeeze``.
    """
    if axis is not None:
        axis = tuple(int(a) for a in ([axis] if isinstance(axis, int) else axis))
    return make_call("squeeze", (data,), {"axis": axis})
