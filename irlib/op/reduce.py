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
from ..ir.expr import Tuple, TupleWrapper, const
from ..ir.types import TensorType
from .registry import OpPattern, make_call, register_op
from .type_relations import (broadcast_shapes, expect_tensor, named_rel, reduce_axes,
                             reduce_rel)

__all__ = ["sum", "mean", "max", "min", "prod", "all", "any", "argmax", "argmin", "variance",
           "std", "mean_variance", "mean_std", "logsumexp", "collapse_sum_like"]

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


_SUM = register_op("sum", ("data",), attrs=_REDUCE_ATTRS,
                   type_rel=named_rel("sum", reduce_rel),
                   pattern=OpPattern.COMM_REDUCE, description="sum over axes")
_SUM.def_impl(_reduce_ref(np.sum))


@_SUM.def_grad
def _sum_grad(call, out_grad):
    data = call.args[0]
    if not call.attrs["keepdims"]:
        out_grad = make_call("reshape_like", (out_grad, _keepdims_shape_of(call)))
    return [make_call("broadcast_to_like", (out_grad, data))]


_MEAN = register_op("mean", ("data",), attrs=_REDUCE_ATTRS,
                    type_rel=named_rel("mean", reduce_rel),
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


# -- more reductions -------------------------------------------------------------------------

def _grad_in_keepdims(call, out_grad):
    """``(out_grad reshaped to the keepdims shape, element count per output)``.

    The count ``sum(ones_like(data), axis, keepdims=True)`` doubles as the reshape target, so
    no static shape is needed.
    """
    attrs = call.attrs
    count = sum(make_call("ones_like", (call.args[0],)), attrs["axis"], keepdims=True,
                exclude=attrs["exclude"])
    if not attrs["keepdims"]:
        out_grad = make_call("reshape_like", (out_grad, count))
    return out_grad, count


def _reduction(name: str, numpy_fn, doc: str):
    op_def = register_op(name, ("data",), attrs=_REDUCE_ATTRS,
                         type_rel=named_rel(name, reduce_rel),
                         pattern=OpPattern.COMM_REDUCE, description=doc)
    op_def.def_impl(_reduce_ref(numpy_fn))
    return op_def


def _extreme_grad(call, out_grad):
    data = call.args[0]
    attrs = call.attrs
    grad, _ = _grad_in_keepdims(call, out_grad)
    kept = make_call(call.op.name, (data,), {**attrs, "keepdims": True})
    # Ties share the adjoint equally.
    hit = make_call("cast_like", (make_call("equal", (data, kept)), data))
    ties = sum(hit, attrs["axis"], keepdims=True, exclude=attrs["exclude"])
    return [make_call("multiply", (hit, make_call("divide", (grad, ties))))]


def _prod_grad(call, out_grad):
    data = call.args[0]
    grad, _ = _grad_in_keepdims(call, out_grad)
    kept = make_call("prod", (data,), {**call.attrs, "keepdims": True})
    return [make_call("divide", (make_call("multiply", (grad, kept)), data))]


def _zero_grad(call, out_grad):
    return [make_call("zeros_like", (call.args[0],))]


_MAX = _reduction("max", np.max, "maximum over axes")
_MAX.def_grad(_extreme_grad)
_MIN = _reduction("min", np.min, "minimum over axes")
_MIN.def_grad(_extreme_grad)
_PROD = _reduction("prod", np.prod, "product over axes")
_PROD.def_grad(_prod_grad)
_ALL = _reduction("all", np.all, "logical and over axes")
_ALL.def_grad(_zero_grad)
_ANY = _reduction("any", np.any, "logical or over axes")
_ANY.def_grad(_zero_grad)


def _reduce_builder(name: str, doc: str):
    def builder(data, axis=None, keepdims=False, exclude=False):
        return make_call(name, (data,), {"axis": _normalize_axis_attr(axis),
                                         "keepdims": builtins.bool(keepdims),
                                         "exclude": builtins.bool(exclude)})
    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = (f"{doc} of ``data`` over ``axis`` (attributes as :func:`sum`).\n\n"
                       f"Returns:\n    A Call of ``{name}``.\n")
    return builder


max = _reduce_builder("max", "Maximum")  # noqa: A001 - Relay's names
min = _reduce_builder("min", "Minimum")  # noqa: A001
prod = _reduce_builder("prod", "Product")
all = _reduce_builder("all", "Logical and")  # noqa: A001
any = _reduce_builder("any", "Logical or")  # noqa: A001


# -- argmax / argmin ------------------------------------------------------------------------------

_ARG_ATTRS = ("relay.attrs.ArgReduceAttrs", [("axis", None), ("keepdims", False),
                                             ("exclude", False), ("select_last_index", False)])


def _arg_rel(arg_types, attrs):
    out = reduce_rel(arg_types, attrs)
    return TensorType(out.shape, "int32")


def _arg_ref(numpy_fn):
    def reference(data, axis=None, keepdims=False, exclude=False, select_last_index=False):
        axes = reduce_axes(data.ndim, axis, exclude)
        kept = [a for a in range(data.ndim) if a not in axes]
        # Move the reduced axes last and flatten them: the index is into that flattening.
        moved = np.transpose(data, kept + list(axes))
        flat = moved.reshape(moved.shape[:len(kept)] + (-1,))
        if select_last_index:
            index = flat.shape[-1] - 1 - numpy_fn(flat[..., ::-1], axis=-1)
        else:
            index = numpy_fn(flat, axis=-1)
        if keepdims:
            index = index.reshape(tuple(1 if a in axes else d for a, d in enumerate(data.shape)))
        return (np.asarray(index).astype("int32"),)
    return reference


for _name, _fn in (("argmax", np.argmax), ("argmin", np.argmin)):
    _op_def = register_op(_name, ("data",), attrs=_ARG_ATTRS, type_rel=_arg_rel,
                          pattern=OpPattern.COMM_REDUCE, description=f"{_name} over axes")
    _op_def.def_impl(_arg_ref(_fn))
    _op_def.def_grad(_zero_grad)


def argmax(data, axis=None, keepdims=False, exclude=False, select_last_index=False):
    """Index (int32) of the maximum over ``axis`` (into the flattened reduced axes).

    Args:
        data: the input tensor.
        axis: the reduced axes (None: all).
        keepdims: keep the reduced axes with size 1.
        exclude: reduce the axes not in ``axis`` instead.
        select_last_index: on ties, the last index instead of the first.

    Returns:
        A Call of ``argmax``.
    """
    return make_call("argmax", (data,), {"axis": _normalize_axis_attr(axis),
                                         "keepdims": builtins.bool(keepdims),
                                         "exclude": builtins.bool(exclude),
                                         "select_last_index": builtins.bool(select_last_index)})


def argmin(data, axis=None, keepdims=False, exclude=False, select_last_index=False):
    """Index (int32) of the minimum over ``axis`` (into the flattened reduced axes).

    Arguments as :func:`argmax`.

    Returns:
        A Call of ``argmin``.
    """
    return make_call("argmin", (data,), {"axis": _normalize_axis_attr(axis),
                                         "keepdims": builtins.bool(keepdims),
                                         "exclude": builtins.bool(exclude),
                                         "select_last_index": builtins.bool(select_last_index)})


# -- variance and the functions built on it -------------------------------------------------------

def _variance_rel(arg_types, attrs):
    out = reduce_rel(arg_types[:1], attrs)
    data = arg_types[0]
    mean_type = expect_tensor(arg_types[1], "variance: mean")
    broadcast_shapes(data.shape, mean_type.shape)
    return out


_VARIANCE = register_op(
    "variance", ("data", "mean"),
    attrs=("relay.attrs.VarianceAttrs", [("axis", None), ("keepdims", False),
                                         ("exclude", False), ("unbiased", False)]),
    type_rel=_variance_rel, pattern=OpPattern.COMM_REDUCE,
    description="mean squared deviation from a given mean")


@_VARIANCE.def_impl
def _variance_ref(data, mean, axis=None, keepdims=False, exclude=False, unbiased=False):
    axes = reduce_axes(data.ndim, axis, exclude)
    count = int(np.prod([data.shape[a] for a in axes]))
    squares = np.sum(np.square(data - mean), axis=axes, keepdims=keepdims)
    return (np.asarray(squares / (count - 1 if unbiased else count)).astype(data.dtype),)


@_VARIANCE.def_grad
def _variance_grad(call, out_grad):
    data, mean_value = call.args
    grad, count = _grad_in_keepdims(call, out_grad)
    if call.attrs["unbiased"]:
        count = make_call("subtract", (count, make_call("ones_like", (count,))))
    two = make_call("cast_like", (const(2.0), data))
    # d/dx sum((x - m)^2) / N = 2 (x - m) / N; the mean receives minus the sum of that.
    data_grad = make_call("divide", (make_call("multiply", (
        make_call("multiply", (grad, two)), make_call("subtract", (data, mean_value)))), count))
    return [data_grad, collapse_sum_like(make_call("negative", (data_grad,)), mean_value)]


def variance(data, axis=None, keepdims=False, exclude=False, unbiased=False, with_mean=None):
    """Variance over ``axis`` (``unbiased`` divides by N-1).

    Args:
        with_mean: a precomputed mean (keepdims shape); computed with :func:`mean` if None.
        data: the input tensor.

    Returns:
        A Call of ``variance``.
    """
    axis = _normalize_axis_attr(axis)
    if with_mean is None:
        with_mean = mean(data, axis, keepdims=True, exclude=exclude)
    return make_call("variance", (data, with_mean),
                     {"axis": axis, "keepdims": builtins.bool(keepdims),
                      "exclude": builtins.bool(exclude), "unbiased": builtins.bool(unbiased)})


def std(data, axis=None, keepdims=False, exclude=False, unbiased=False):
    """Standard deviation: ``sqrt(variance(...))``.

    Args:
        data: the input tensor.
        axis: the reduced axes (None: all).
        keepdims: keep the reduced axes with size 1.
        exclude: reduce the axes not in ``axis`` instead.
        unbiased: divide by N-1 instead of N.

    Returns:
        A Call of ``sqrt``.
    """
    return make_call("sqrt", (variance(data, axis, keepdims, exclude, unbiased),))


def mean_variance(data, axis=None, keepdims=False, exclude=False, unbiased=False):
    """``(mean, variance)`` over ``axis`` as a 2-field TupleWrapper.

    Args:
        data: the input tensor.
        axis: the reduced axes (None: all).
        keepdims: keep the reduced axes with size 1.
        exclude: reduce the axes not in ``axis`` instead.
        unbiased: divide by N-1 instead of N.
    """
    kept_mean = mean(data, axis, keepdims=True, exclude=exclude)
    out_mean = kept_mean if keepdims else mean(data, axis, False, exclude)
    return TupleWrapper(Tuple([out_mean, variance(data, axis, keepdims, exclude, unbiased,
                                                  kept_mean)]), 2)


def mean_std(data, axis=None, keepdims=False, exclude=False):
    """``(mean, std)`` over ``axis`` as a 2-field TupleWrapper.

    Args:
        data: the input tensor.
        axis: the reduced axes (None: all).
        keepdims: keep the reduced axes with size 1.
        exclude: reduce the axes not in ``axis`` instead.
    """
    out_mean, out_variance = mean_variance(data, axis, keepdims, exclude)
    return TupleWrapper(Tuple([out_mean, make_call("sqrt", (out_variance,))]), 2)


def logsumexp(data, axis=None, keepdims=False):
    """``log(sum(exp(data), axis))``, computed stably (a composition, as in Relay).

    Returns:
        An expression built from ``max``, ``exp``, ``sum``, ``log`` (and ``squeeze``).
    """
    axis = _normalize_axis_attr(axis)
    peak = max(data, axis, keepdims=True)
    total = sum(make_call("exp", (make_call("subtract", (data, peak)),)), axis, keepdims=True)
    out = make_call("add", (make_call("log", (total,)), peak))
    if not keepdims:
        out = make_call("squeeze", (out,), {"axis": axis})
    return out
