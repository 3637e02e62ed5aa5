"""Reductions (``ReduceAttrs``: ``axis``, ``keepdims``, ``exclude``) and ``collapse_sum_like``.

Before/after in the text format::

    sum(%x, axis=[1])                 /* Tensor[(2, 3, 4), float32] */
    -> Tensor[(2, 4), float32]
    mean(%x, axis=[1], exclude=True)  /* reduces axes 0 and 2 */
    -> Tensor[(3), float32]

``axis=None`` reduces every axis; ``exclude=True`` reduces every axis *not* listed.
"""

from __future__ import annotations

import builtins

import numpy as np

from ..errors import TypeInferenceError
from ..ir.types import TensorType
from .registry import OpPattern, make_call, register_op
from .type_relations import broadcast_shapes, expect_tensor, reduce_axes, reduce_rel

__all__ = ["sum", "mean", "collapse_sum_like"]

_REDUCE_ATTRS = ("relay.attrs.ReduceAttrs",
                 [("axis", None), ("keepdims", False), ("exclude", False)])


def _normalize_axis_attr(axis):
    if axis is None:
        return None
    if isinstance(axis, (int, np.integer)):
        return (int(axis),)
    return tuple(int(a) for a in axis)


def _reduce_ref(numpy_fn):
    def reference(data, axis=None, keepdims=False, exclude=False):
        axes = reduce_axes(data.ndim, axis, exclude)
        result = numpy_fn(data, axis=axes, keepdims=keepdims)
        return (np.asarray(result).astype(data.dtype, copy=False),)
    return reference


def _keepdims_shape_of(call):
    """An expression whose shape is the call's result with reduced axes kept as 1s."""
    attrs = call.attrs
    return sum(call.args[0], attrs["axis"], keepdims=True, exclude=attrs["exclude"])


_SUM = register_op("sum", ("data",), attrs=_REDUCE_ATTRS, type_rel=reduce_rel,
                   pattern=OpPattern.COMM_REDUCE, description="sum over axes")
_SUM.def_impl(_reduce_ref(np.sum))


@_SUM.def_grad
def _sum_grad(call, out_grad):
    data = call.args[0]
    if not call.attrs["keepdims"]:
        out_grad = make_call("reshape_like", (out_grad, _keepdims_shape_of(call)))
    return [make_call("broadcast_to_like", (out_grad, data))]


_MEAN = register_op("mean", ("data",), attrs=_REDUCE_ATTRS, type_rel=reduce_rel,
                    pattern=OpPattern.COMM_REDUCE, description="arithmetic mean over axes")
_MEAN.def_impl(_reduce_ref(np.mean))


@_MEAN.def_grad
def _mean_grad(call, out_grad):
    data = call.args[0]
    attrs = call.attrs
    # The element count per output, computed in the IR so no static shape is needed.
    count = sum(make_call("ones_like", (data,)), attrs["axis"], keepdims=True,
                exclude=attrs["exclude"])
    shaped = make_call("reshape_like", (out_grad, count))
    return [make_call("broadcast_to_like", (make_call("divide", (shaped, count)), data))]


def sum(data, axis=None, keepdims=False, exclude=False):  # noqa: A001 - Relay's name
    """Sum of ``data`` over ``axis``.

    Args:
        data: the input tensor.
        axis: None (every axis), an int, or a list/tuple of ints (negative counts from the end).
        keepdims: keep reduced axes as size-1 dims.
        exclude: reduce the axes *not* in ``axis`` instead.

    Returns:
        A Call of ``sum``.
    """
    return make_call("sum", (data,), {"axis": _normalize_axis_attr(axis),
                                      "keepdims": builtins.bool(keepdims),
                                      "exclude": builtins.bool(exclude)})


def mean(data, axis=None, keepdims=False, exclude=False):
    """Arithmetic mean of ``data`` over ``axis`` (same attributes as :func:`sum`).

    Returns:
        A Call of ``mean``.
    """
    return make_call("mean", (data,), {"axis": _normalize_axis_attr(axis),
                                       "keepdims": builtins.bool(keepdims),
                                       "exclude": builtins.bool(exclude)})


# -- collapse_sum_like: the adjoint of broadcasting ------------------------------------------

def _collapse_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "collapse_sum_like: data")
    target = expect_tensor(arg_types[1], "collapse_sum_like: collapse_type")
    if len(target.shape) > len(data.shape):
        raise TypeInferenceError(f"collapse_sum_like: cannot collapse shape {data.shape} to "
                                 f"the larger rank shape {target.shape}")
    try:
        broadcast_shapes(data.shape, target.shape)
    except TypeInferenceError:
        raise TypeInferenceError(f"collapse_sum_like: shape {target.shape} does not broadcast "
                                 f"to {data.shape}") from None
    return TensorType(target.shape, data.dtype)


def collapse_sum_to(data: np.ndarray, shape: tuple) -> np.ndarray:
    """Sum ``data`` down to ``shape`` (the inverse of numpy broadcasting ``shape`` to data)."""
    lead = data.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, size in enumerate(shape) if size == 1 and data.shape[lead + i] != 1)
    return np.sum(data, axis=axes, keepdims=True).reshape(shape) if axes else data.reshape(shape)


_COLLAPSE = register_op("collapse_sum_like", ("data", "collapse_type"), type_rel=_collapse_rel,
                        pattern=OpPattern.COMM_REDUCE,
                        description="sum data down to the shape of collapse_type")
_COLLAPSE.def_impl(lambda data, collapse_type: (
    np.asarray(collapse_sum_to(data, np.shape(collapse_type))).astype(data.dtype, copy=False),))


@_COLLAPSE.def_grad
def _collapse_grad(call, out_grad):
    data, target = call.args
    return [make_call("broadcast_to_like", (out_grad, data)), make_call("zeros_like", (target,))]


def collapse_sum_like(data, collapse_type):
    """Sum ``data`` over its broadcast axes so that it has the shape of ``collapse_type``.

    Args:
        data: the tensor to reduce.
        collapse_type: a tensor whose shape broadcasts to ``data``'s.

    Returns:
        A Call of ``collapse_sum_like``.
    """
    return make_call("collapse_sum_like", (data, collapse_type))
