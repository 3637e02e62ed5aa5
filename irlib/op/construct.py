"""Ops that build or replicate tensors: ``stack``, ``tile``, ``repeat``, ``broadcast_to``,
``full``, ``full_like``, ``zeros``, ``ones`` and ``arange``.

Before/after in the text format::

    stack((%a, %b), axis=1)          /* a, b: (2, 3) */   -> Tensor[(2, 2, 3), float32]
    tile(%x, reps=[2, 1])            /* x: (2, 3) */      -> Tensor[(4, 3), float32]
    zeros(shape=[2, 3], dtype="float32")                  -> Tensor[(2, 3), float32]
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import TypeInferenceError, UntypedError
from ..ir.dims import Any, AnyDim, DimExpr
from ..ir.expr import Constant, Tuple, TupleWrapper, const
from ..ir.types import TensorType, TupleType, normalize_dtype
from .registry import OpPattern, make_call, register_op
from .transform import checked_type_for_grad
from .type_relations import dim_mul, dims_differ, expect_tensor, normalize_axis

__all__ = ["stack", "tile", "repeat", "broadcast_to", "full", "full_like", "zeros", "ones",
           "arange"]


# -- stack -------------------------------------------------------------------------------------

def _stack_rel(arg_types, attrs):
    fields = arg_types[0]
    if not isinstance(fields, TupleType) or not fields.fields:
        raise TypeInferenceError(f"stack: data must be a non-empty tuple of tensors, got "
                                 f"{fields}")
    first = expect_tensor(fields.fields[0], "stack: field 0")
    for i, field in enumerate(fields.fields):
        field = expect_tensor(field, f"stack: field {i}")
        if field.ndim != first.ndim or field.dtype != first.dtype or any(
                dims_differ(a, b) for a, b in zip(field.shape, first.shape)):
            raise TypeInferenceError(f"stack: field {i} is {field} but field 0 is {first}; "
                                     f"all fields must have the same type")
    axis = normalize_axis(attrs["axis"], first.ndim + 1, "stack: axis")
    return TensorType(first.shape[:axis] + (len(fields.fields),) + first.shape[axis:],
                      first.dtype)


_STACK = register_op("stack", ("data",), attrs=("relay.attrs.StackAttrs", [("axis", 0)]),
                     type_rel=_stack_rel, pattern=OpPattern.INJECTIVE,
                     description="join same-shaped tensors along a new axis")
_STACK.def_impl(lambda data, axis=0: (np.stack(tuple(data), axis=axis),))


@_STACK.def_grad
def _stack_grad(call, out_grad):
    count = len(checked_type_for_grad(call.args[0], "stack").fields) \
        if not isinstance(call.args[0], Tuple) else len(call.args[0].fields)
    axis = call.attrs["axis"]
    pieces = make_call("split", (out_grad,), {"indices_or_sections": count, "axis": axis})
    return [Tuple([make_call("squeeze", (TupleWrapper(pieces, count)[i],), {"axis": (axis,)})
                   for i in range(count)])]


def stack(data, axis):
    """Stack same-shaped tensors along a new axis ``axis``.

    Args:
        data: a list/tuple of expressions (passed as one ``Tuple`` argument).
        axis: the position of the new axis.

    Returns:
        A Call of ``stack``.
    """
    if isinstance(data, (list, tuple)):
        data = Tuple(list(data))
    return make_call("stack", (data,), {"axis": int(axis)})


# -- tile and repeat --------------------------------------------------------------------------

def _tile_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "tile: data")
    reps = tuple(attrs["reps"])
    if any(r < 1 for r in reps):
        raise TypeInferenceError(f"tile: reps must be positive, got {reps}")
    rank = max(data.ndim, len(reps))
    shape = (1,) * (rank - data.ndim) + data.shape
    reps = (1,) * (rank - len(reps)) + reps
    return TensorType([dim_mul(d, r) for d, r in zip(shape, reps)], data.dtype)


_TILE = register_op("tile", ("data",), attrs=("relay.attrs.TileAttrs", [("reps", None)]),
                    type_rel=_tile_rel, pattern=OpPattern.INJECTIVE,
                    description="repeat the whole tensor reps times per axis")
_TILE.def_impl(lambda data, reps: (np.tile(data, reps),))


@_TILE.def_grad
def _tile_grad(call, out_grad):
    data = call.args[0]
    reps = tuple(call.attrs["reps"])
    if len(reps) < _rank(data, len(reps)):
        reps = (1,) * (_rank(data, len(reps)) - len(reps)) + reps
    # (r0*d0, r1*d1, ...) -> (r0, d0, r1, d1, ...), summed over the r axes.
    codes = []
    for r in reps:
        codes += [-4, r, -1]
    split_axes = make_call("reshape", (out_grad,), {"newshape": tuple(codes),
                                                    "allowzero": False})
    summed = make_call("sum", (split_axes,), {"axis": tuple(range(0, 2 * len(reps), 2)),
                                              "keepdims": False, "exclude": False})
    return [make_call("reshape_like", (summed, data))]


def _rank(expr, at_least: int) -> int:
    try:
        return expr.checked_type.ndim
    except UntypedError:  # assume reps cover every axis
        return at_least


def tile(data, reps):
    """Repeat ``data`` ``reps[i]`` times along each axis (numpy's ``tile``).

    Returns:
        A Call of ``tile``.
    """
    return make_call("tile", (data,), {"reps": tuple(int(r) for r in np.atleast_1d(reps))})


def _repeat_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "repeat: data")
    axis = normalize_axis(attrs["axis"], data.ndim, "repeat: axis")
    if attrs["repeats"] < 1:
        raise TypeInferenceError(f"repeat: repeats must be positive, got {attrs['repeats']}")
    shape = list(data.shape)
    shape[axis] = dim_mul(shape[axis], attrs["repeats"])
    return TensorType(shape, data.dtype)


_REPEAT = register_op("repeat", ("data",),
                      attrs=("relay.attrs.RepeatAttrs", [("repeats", 1), ("axis", 0)]),
                      type_rel=_repeat_rel, pattern=OpPattern.BROADCAST,
                      description="repeat each element along an axis")
_REPEAT.def_impl(lambda data, repeats, axis: (np.repeat(data, repeats, axis=axis),))


@_REPEAT.def_grad
def _repeat_grad(call, out_grad):
    data = call.args[0]
    axis = call.attrs["axis"]
    if axis < 0:
        axis %= checked_type_for_grad(data, "repeat").ndim
    repeats = call.attrs["repeats"]
    # (..., d*r, ...) -> (..., d, r, ...), summed over r.
    codes = (0,) * axis + (-4, -1, repeats, -2)
    grouped = make_call("reshape", (out_grad,), {"newshape": codes, "allowzero": False})
    return [make_call("sum", (grouped,), {"axis": (axis + 1,), "keepdims": False,
                                          "exclude": False})]


def repeat(data, repeats, axis):
    """Repeat each element of ``data`` ``repeats`` times along ``axis``.

    Returns:
        A Call of ``repeat``.
    """
    return make_call("repeat", (data,), {"repeats": int(repeats), "axis": int(axis)})


# -- broadcast_to, full, full_like, zeros, ones --------------------------------------------------

_INIT_ATTRS = ("relay.attrs.InitOpAttrs", [("shape", None), ("dtype", "")])


def _broadcast_to_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "broadcast_to: data")
    target = TensorType(attrs["shape"], data.dtype)
    offset = target.ndim - data.ndim
    if offset < 0 or any(not (isinstance(a, int) and a == 1) and dims_differ(a, b)
                         for a, b in zip(data.shape, target.shape[offset:])):
        raise TypeInferenceError(f"broadcast_to: shape {data.shape} does not broadcast to "
                                 f"{target.shape}")
    return target


_BROADCAST_TO = register_op("broadcast_to", ("data",), attrs=_INIT_ATTRS,
                            type_rel=_broadcast_to_rel, pattern=OpPattern.BROADCAST,
                            description="broadcast data to a given shape")
_BROADCAST_TO.def_impl(lambda data, shape, dtype="": (
    np.array(np.broadcast_to(data, shape)),))
_BROADCAST_TO.def_grad(lambda call, out_grad: [
    make_call("collapse_sum_like", (out_grad, call.args[0]))])


def broadcast_to(data, shape):
    """Broadcast ``data`` to ``shape`` (numpy rules).

    Returns:
        A Call of ``broadcast_to``.
    """
    return make_call("broadcast_to", (data,), {"shape": _shape_attr(shape), "dtype": ""})


def _shape_attr(shape) -> tuple:
    """A shape attribute: ints (symbolic dims and Any pass through)."""
    if not isinstance(shape, (list, tuple)):
        shape = [shape]
    return tuple(d if isinstance(d, (DimExpr, AnyDim)) else int(d) for d in shape)


def _full_rel(arg_types, attrs):
    fill = expect_tensor(arg_types[0], "full: fill_value")
    if fill.ndim != 0:
        raise TypeInferenceError(f"full: fill_value must be a scalar, got {fill}")
    dtype = normalize_dtype(attrs["dtype"]) if attrs["dtype"] else fill.dtype
    return TensorType(attrs["shape"], dtype)


_FULL = register_op("full", ("fill_value",), attrs=_INIT_ATTRS, type_rel=_full_rel,
                    pattern=OpPattern.ELEMWISE, description="a tensor filled with a scalar")
_FULL.def_impl(lambda fill_value, shape, dtype="": (
    np.full(shape, fill_value, dtype=normalize_dtype(dtype) if dtype else fill_value.dtype),))
_FULL.def_grad(lambda call, out_grad: [
    make_call("cast_like", (make_call("sum", (out_grad,), {"axis": None, "keepdims": False,
                                                           "exclude": False}),
                            call.args[0]))])


def full(fill_value, shape=(), dtype=""):
    """A tensor of ``shape`` filled with the scalar expression ``fill_value``.

    Args:
        fill_value: the scalar fill expression.
        shape: the result shape.
        dtype: the result dtype (default: the fill value's).

    Returns:
        A Call of ``full``.
    """
    return make_call("full", (fill_value,), {"shape": _shape_attr(shape),
                                             "dtype": normalize_dtype(dtype) if dtype else ""})


def _full_like_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "full_like: data")
    fill = expect_tensor(arg_types[1], "full_like: fill_value")
    if fill.ndim != 0:
        raise TypeInferenceError(f"full_like: fill_value must be a scalar, got {fill}")
    return data


_FULL_LIKE = register_op("full_like", ("data", "fill_value"), type_rel=_full_like_rel,
                         pattern=OpPattern.ELEMWISE,
                         description="a tensor like data filled with a scalar")
_FULL_LIKE.def_impl(lambda data, fill_value: (
    np.full(data.shape, fill_value, dtype=data.dtype),))
_FULL_LIKE.def_grad(lambda call, out_grad: [
    make_call("zeros_like", (call.args[0],)),
    make_call("cast_like", (make_call("sum", (out_grad,), {"axis": None, "keepdims": False,
                                                           "exclude": False}),
                            call.args[1]))])


def full_like(data, fill_value):
    """A tensor with the shape and dtype of ``data`` filled with ``fill_value``.

    Returns:
        A Call of ``full_like``.
    """
    return make_call("full_like", (data, fill_value))


def _constant_rel(arg_types, attrs):
    return TensorType(attrs["shape"], normalize_dtype(attrs["dtype"] or "float32"))


def _constant_op(name: str, value: int):
    op_def = register_op(name, (), attrs=_INIT_ATTRS, type_rel=_constant_rel,
                         pattern=OpPattern.ELEMWISE,
                         description=f"a tensor of {value}s of a given shape and dtype")
    op_def.def_impl(lambda shape, dtype: (
        np.full(shape, value, dtype=normalize_dtype(dtype or "float32")),))
    op_def.def_grad(lambda call, out_grad: [])


_constant_op("zeros", 0)
_constant_op("ones", 1)


def zeros(shape, dtype):
    """A tensor of zeros.

    Args:
        shape: the result shape.
        dtype: the result dtype.

    Returns:
        A Call of ``zeros``.
    """
    return make_call("zeros", (), {"shape": _shape_attr(shape), "dtype": normalize_dtype(dtype)})


def ones(shape, dtype):
    """A tensor of ones.

    Arguments as :func:`zeros`.

    Returns:
        A Call of ``ones``.
    """
    return make_call("ones", (), {"shape": _shape_attr(shape), "dtype": normalize_dtype(dtype)})


# -- arange --------------------------------------------------------------------------------------

def _arange_rel(arg_types, attrs):
    for name, ty in zip(("start", "stop", "step"), arg_types):
        ty = expect_tensor(ty, f"arange: {name}")
        if ty.ndim != 0:
            raise TypeInferenceError(f"arange: {name} must be a scalar, got {ty}")
    dtype = normalize_dtype(attrs["dtype"])
    bounds = (attrs["start"], attrs["stop"], attrs["step"])
    if any(b is None for b in bounds):
        return TensorType((Any,), dtype)
    start, stop, step = bounds
    if step == 0:
        raise TypeInferenceError("arange: step must be nonzero")
    return TensorType((max(math.ceil((stop - start) / step), 0),), dtype)


_ARANGE = register_op("arange", ("start", "stop", "step"),
                      attrs=("relay.attrs.ArangeAttrs", [("start", None), ("stop", None),
                                                          ("step", None),
                                                          ("dtype", "float32")]),
                      type_rel=_arange_rel, pattern=OpPattern.OPAQUE,
                      description="evenly spaced values in [start, stop)")


@_ARANGE.def_impl
def _arange_ref(*bounds, **attrs):
    # NOTE: the attrs repeat the names start/stop/step, so the inputs arrive positionally.
    start, stop, step = bounds
    count = max(math.ceil((stop.item() - start.item()) / step.item()), 0)
    dtype = normalize_dtype(attrs["dtype"])
    return ((start.item() + step.item() * np.arange(count)).astype(dtype),)


_ARANGE.def_grad(lambda call, out_grad: [make_call("zeros_like", (a,)) for a in call.args])


def arange(start, stop=None, step=None, dtype="float32"):
    """Evenly spaced values ``start, start+step, ...`` below ``stop`` (``relay.arange``).

    ``start``/``stop``/``step`` may be numbers or scalar expressions; when all three are
    numbers or constants, the result has a static length, else ``Any``.

    Args:
        start: the first value (or the stop, when ``stop`` is None, counting from 0).
        stop: the bound (exclusive).
        step: the step (default 1).
        dtype: the result dtype.

    Returns:
        A Call of ``arange``.
    """
    if stop is None:
        start, stop = 0, start
    if step is None:
        step = 1
    dtype = normalize_dtype(dtype)
    args = [value if not isinstance(value, (int, float, np.number))
            else const(np.array(value, dtype)) for value in (start, stop, step)]
    known = [a.data.numpy().item() if isinstance(a, Constant) else None for a in args]
    return make_call("arange", args, {"start": known[0], "stop": known[1], "step": known[2],
                                      "dtype": dtype})
