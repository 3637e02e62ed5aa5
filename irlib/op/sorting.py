"""Ordering and scanning ops: ``sort``, ``argsort``, ``topk``, ``cumsum``, ``cumprod``,
``unique`` and ``argwhere`` (data-dependent output size: its first dim is ``Any``).

Before/after in the text format::

    topk(%x, k=2, axis=-1)        /* Tensor[(3, 5), float32], ret_type="both" */
    -> (Tensor[(3, 2), float32], Tensor[(3, 2), int32])
    argwhere(%c)                  /* Tensor[(3, 4), bool] */
    -> Tensor[(?, 2), int32]

Sorting is stable: ties keep their input order (ascending and descending alike).
"""

from __future__ import annotations

import numpy as np

from ..errors import TypeInferenceError
from ..ir.dims import Any
from ..ir.expr import TupleGetItem, TupleWrapper
from ..ir.types import TensorType, TupleType, normalize_dtype
from .gather import gather, scatter_elements
from .registry import OpPattern, make_call, register_op
from .type_relations import expect_tensor, normalize_axis, shape_product

__all__ = ["sort", "argsort", "topk", "cumsum", "cumprod", "unique", "argwhere", "nonzero"]


def stable_argsort(data: np.ndarray, axis: int, ascending: bool) -> np.ndarray:
    """Stable argsort along ``axis``; descending keeps ties in input order too.

    Args:
        data: the array.
        axis: the axis sorted along.
        ascending: the order.
    """
    if ascending:
        return np.argsort(data, axis=axis, kind="stable")
    # Reverse, sort ascending stably, reverse back, and map positions to the original order:
    # that keeps equal elements in their input order.
    flipped = np.flip(data, axis)
    order = np.flip(np.argsort(flipped, axis=axis, kind="stable"), axis)
    return data.shape[axis] - 1 - order


# -- sort / argsort ----------------------------------------------------------------------------

def _sort_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "sort: data")
    normalize_axis(attrs["axis"], data.ndim, "sort: axis")
    return data


_SORT = register_op("sort", ("data",),
                    attrs=("relay.attrs.ArgsortAttrs", [("axis", -1), ("is_ascend", True),
                                                        ("dtype", "int32")]),
                    type_rel=_sort_rel, pattern=OpPattern.OPAQUE,
                    description="data sorted along axis")


@_SORT.def_impl
def _sort_ref(data, axis=-1, is_ascend=True, dtype="int32"):
    order = stable_argsort(data, axis % data.ndim, bool(is_ascend))
    return (np.take_along_axis(data, order, axis % data.ndim),)


@_SORT.def_grad
def _sort_grad(call, out_grad):
    data = call.args[0]
    axis, ascend = call.attrs["axis"], call.attrs["is_ascend"]
    # sorted[j] = data[perm[j]], so data's adjoint at i is out_grad[inverse_perm[i]].
    perm = argsort(data, axis, ascend)
    inverse = argsort(perm, axis, True)
    return [gather(out_grad, axis, inverse)]


def sort(data, axis=-1, is_ascend=True):
    """Sort ``data`` along ``axis`` (``relay.sort``).

    Args:
        data: the tensor.
        axis: the axis sorted along.
        is_ascend: ascending (True) or descending order.

    Returns:
        A Call of ``sort``.
    """
    return make_call("sort", (data,), {"axis": int(axis), "is_ascend": bool(is_ascend)})


def _argsort_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "argsort: data")
    normalize_axis(attrs["axis"], data.ndim, "argsort: axis")
    return TensorType(data.shape, normalize_dtype(attrs["dtype"]))


_ARGSORT = register_op("argsort", ("data",),
                       attrs=("relay.attrs.ArgsortAttrs", [("axis", -1), ("is_ascend", True),
                                                           ("dtype", "int32")]),
                       type_rel=_argsort_rel, pattern=OpPattern.OPAQUE,
                       description="indices that sort data along axis (stable)")


@_ARGSORT.def_impl
def _argsort_ref(data, axis=-1, is_ascend=True, dtype="int32"):
    order = stable_argsort(data, axis % data.ndim, bool(is_ascend))
    return (order.astype(normalize_dtype(dtype)),)


_ARGSORT.def_grad(lambda call, out_grad: [make_call("zeros_like", (call.args[0],))])


def argsort(data, axis=-1, is_ascend=True, dtype="int32"):
    """Indices that sort ``data`` along ``axis`` (``relay.argsort``), stable.

    Args:
        data: the tensor.
        axis: the axis sorted along.
        is_ascend: ascending (True) or descending order.
        dtype: the index dtype.

    Returns:
        A Call of ``argsort``.
    """
    return make_call("argsort", (data,), {"axis": int(axis), "is_ascend": bool(is_ascend),
                                          "dtype": normalize_dtype(dtype)})


# -- topk --------------------------------------------------------------------------------------

def _topk_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "topk: data")
    axis = normalize_axis(attrs["axis"], data.ndim, "topk: axis")
    k = attrs["k"]
    if not isinstance(k, int):
        raise TypeInferenceError(f"topk: k must be an int, got {k!r}")
    size = data.shape[axis]
    if k < 1:
        out_k = size  # Relay: k < 1 means every element
    else:
        if isinstance(size, int) and k > size:
            raise TypeInferenceError(f"topk: k={k} exceeds the axis size {size}")
        out_k = k
    shape = data.shape[:axis] + (out_k,) + data.shape[axis + 1:]
    values = TensorType(shape, data.dtype)
    indices = TensorType(shape, normalize_dtype(attrs["dtype"]))
    ret_type = attrs["ret_type"]
    if ret_type == "both":
        return TupleType([values, indices])
    if ret_type == "values":
        return values
    if ret_type == "indices":
        return indices
    raise TypeInferenceError(f"topk: ret_type must be 'both', 'values' or 'indices', got "
                             f"{ret_type!r}")


# NOTE: the output arity depends on ret_type, so the op is registered single-output and the
# implementation returns a (values, indices) pair as its one output when ret_type is "both".
_TOPK = register_op("topk", ("data",),
                    attrs=("relay.attrs.TopKAttrs", [("k", 1), ("axis", -1),
                                                     ("ret_type", "both"), ("is_ascend", False),
                                                     ("dtype", "int32")]),
                    type_rel=_topk_rel, pattern=OpPattern.OPAQUE,
                    description="the k largest (or smallest) elements along axis and their "
                                "indices")


@_TOPK.def_impl
def _topk_ref(data, k=1, axis=-1, ret_type="both", is_ascend=False, dtype="int32"):
    axis %= data.ndim
    order = stable_argsort(data, axis, bool(is_ascend))
    if k >= 1:
        order = np.take(order, np.arange(k), axis=axis)
    values = np.take_along_axis(data, order, axis)
    indices = order.astype(normalize_dtype(dtype))
    if ret_type == "both":
        return ((values, indices),)
    return (values if ret_type == "values" else indices,)


@_TOPK.def_grad
def _topk_grad(call, out_grad):
    data = call.args[0]
    attrs = call.attrs
    if attrs["ret_type"] == "indices":
        return [make_call("zeros_like", (data,))]
    values_grad = TupleGetItem(out_grad, 0) if attrs["ret_type"] == "both" else out_grad
    indices = topk(data, attrs["k"], attrs["axis"], "indices", attrs["is_ascend"],
                   attrs["dtype"])
    return [scatter_elements(make_call("zeros_like", (data,)), indices, values_grad,
                             attrs["axis"], "add")]


def topk(data, k=1, axis=-1, ret_type="both", is_ascend=False, dtype="int32"):
    """The top ``k`` elements along ``axis`` (``relay.topk``).

    Args:
        data: the input tensor.
        k: how many elements (``k < 1``: all of them).
        axis: the axis to search.
        ret_type: ``"both"`` (a tuple ``(values, indices)``), ``"values"`` or ``"indices"``.
        is_ascend: take the smallest instead of the largest.
        dtype: dtype of the indices.

    Returns:
        A TupleWrapper of two fields for ``ret_type="both"``, else a Call of ``topk``.
    """
    call = make_call("topk", (data,), {"k": int(k), "axis": int(axis), "ret_type": ret_type,
                                       "is_ascend": bool(is_ascend),
                                       "dtype": normalize_dtype(dtype)})
    return TupleWrapper(call, 2) if ret_type == "both" else call


# -- cumsum / cumprod --------------------------------------------------------------------------

_SCAN_ATTRS = ("relay.attrs.ScanopAttrs", [("axis", None), ("dtype", ""), ("exclusive", False)])


def _scan_rel(name):
    def relation(arg_types, attrs):
        data = expect_tensor(arg_types[0], f"{name}: data")
        dtype = normalize_dtype(attrs["dtype"]) if attrs["dtype"] else data.dtype
        if attrs["axis"] is None:
            return TensorType((shape_product(data.shape),), dtype)
        normalize_axis(attrs["axis"], data.ndim, f"{name}: axis")
        return TensorType(data.shape, dtype)
    return relation


def _scan_ref(numpy_fn, identity):
    def reference(data, axis=None, dtype="", exclusive=False):
        dtype = normalize_dtype(dtype) if dtype else data.dtype
        if axis is None:
            data, axis = data.reshape(-1), 0
        axis %= data.ndim
        out = numpy_fn(data.astype(dtype), axis=axis, dtype=dtype)
        if exclusive:
            # Shift by one along axis, the identity first.
            head = np.full(data.shape[:axis] + (1,) + data.shape[axis + 1:], identity, dtype)
            out = np.concatenate([head, np.delete(out, -1, axis=axis)], axis=axis)
        return (out,)
    return reference


def _reversed_cumsum(expr, axis, exclusive):
    flipped = make_call("reverse", (expr,), {"axis": axis})
    scanned = cumsum(flipped, axis, exclusive=exclusive)
    return make_call("reverse", (scanned,), {"axis": axis})


def _scan_grad(product: bool):
    def grad(call, out_grad):
        data = call.args[0]
        axis, exclusive = call.attrs["axis"], bool(call.attrs["exclusive"])
        flat = data
        if axis is None:
            flat = make_call("reshape", (data,), {"newshape": (-1,), "allowzero": False})
            axis = 0
        if product:
            # d out_j / d x_i = out_j / x_i for the j that include x_i (x must be nonzero).
            summed = _reversed_cumsum(make_call("multiply", (out_grad, call)), axis, exclusive)
            result = make_call("divide", (summed, flat))
        else:
            result = _reversed_cumsum(out_grad, axis, exclusive)
        return [make_call("reshape_like", (make_call("cast_like", (result, data)), data))]
    return grad


_CUMSUM = register_op("cumsum", ("data",), attrs=_SCAN_ATTRS, type_rel=_scan_rel("cumsum"),
                      pattern=OpPattern.OPAQUE,
                      description="running sum along axis (flattened if axis is None)")
_CUMSUM.def_impl(_scan_ref(np.cumsum, 0))
_CUMSUM.def_grad(_scan_grad(False))
_CUMPROD = register_op("cumprod", ("data",), attrs=_SCAN_ATTRS, type_rel=_scan_rel("cumprod"),
                       pattern=OpPattern.OPAQUE,
                       description="running product along axis (flattened if axis is None)")
_CUMPROD.def_impl(_scan_ref(np.cumprod, 1))
_CUMPROD.def_grad(_scan_grad(True))


def cumsum(data, axis=None, dtype=None, exclusive=None):
    """Cumulative sum (``relay.cumsum``).

    Args:
        data: the input tensor.
        axis: the axis to scan; None scans the flattened input.
        dtype: the accumulation/output dtype (default: data's).
        exclusive: exclude each element from its own sum (the first output is 0).

    Returns:
        A Call of ``cumsum``.
    """
    return make_call("cumsum", (data,), {"axis": None if axis is None else int(axis),
                                         "dtype": normalize_dtype(dtype) if dtype else "",
                                         "exclusive": bool(exclusive)})


def cumprod(data, axis=None, dtype=None, exclusive=None):
    """Cumulative product (``relay.cumprod``); arguments as :func:`cumsum` (the first
    exclusive output is 1).

    Args:
        data: the tensor.
        axis: the axis (None: over the flattened data).
        dtype: the result dtype (default: ``data``'s).
        exclusive: leave each element's own factor out.

    Returns:
        A Call of ``cumprod``.
    """
    return make_call("cumprod", (data,), {"axis": None if axis is None else int(axis),
                                          "dtype": normalize_dtype(dtype) if dtype else "",
                                          "exclusive": bool(exclusive)})


# -- unique ------------------------------------------------------------------------------------

def _unique_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "unique: data")
    if data.ndim != 1:
        raise TypeInferenceError(f"unique: data must be 1-D, got {data}")
    n = data.shape[0]
    fields = [TensorType((n,), data.dtype), TensorType((n,), "int32"),
              TensorType((n,), "int32"), TensorType((1,), "int32")]
    if attrs["return_counts"]:
        fields.append(TensorType((n,), "int32"))
    return TupleType(fields)


_UNIQUE = register_op("unique", ("data",),
                      attrs=("relay.attrs.UniqueAttrs", [("sorted", True),
                                                         ("return_counts", False)]),
                      type_rel=_unique_rel, pattern=OpPattern.OPAQUE, tuple_output=True,
                      description="unique elements of a 1-D tensor, padded to its length: "
                                  "(output, indices, inverse_indices, num_unique[, counts])")


@_UNIQUE.def_impl
def _unique_ref(data, sorted=True, return_counts=False):  # noqa: A002 - Relay's attr name
    n = data.shape[0]
    values, first, inverse, counts = np.unique(data, return_index=True, return_inverse=True,
                                               return_counts=True)
    if not sorted:
        # Order of first occurrence instead of ascending value.
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        values, first, counts, inverse = values[order], first[order], counts[order], \
            rank[inverse.reshape(-1)]
    count = values.size

    def padded(array, dtype):
        out = np.zeros(n, dtype)
        out[:count] = array
        return out

    result = (padded(values, data.dtype), padded(first, np.int32),
              np.asarray(inverse, np.int32).reshape(n), np.array([count], np.int32))
    if return_counts:
        result += (padded(counts, np.int32),)
    return result


def unique(data, is_sorted=True, return_counts=False):
    """Unique elements of a 1-D tensor (``relay.unique``).

    Every output has the input's length; only the first ``num_unique`` entries of
    ``output``, ``indices`` and ``counts`` are meaningful (the rest are 0).

    Args:
        data: a 1-D tensor.
        is_sorted: ascending unique values (else in order of first occurrence).
        return_counts: also return how often each unique value occurs.

    Returns:
        A TupleWrapper ``(output, indices, inverse_indices, num_unique[, counts])``.
    """
    call = make_call("unique", (data,), {"sorted": bool(is_sorted),
                                         "return_counts": bool(return_counts)})
    return TupleWrapper(call, 5 if return_counts else 4)


# -- argwhere ----------------------------------------------------------------------------------

def _argwhere_rel(arg_types, attrs):
    condition = expect_tensor(arg_types[0], "argwhere: condition")
    return TensorType((Any, condition.ndim), "int32")


_ARGWHERE = register_op("argwhere", ("condition",), type_rel=_argwhere_rel,
                        pattern=OpPattern.OPAQUE,
                        description="coordinates (one row each) of the nonzero elements")
_ARGWHERE.def_impl(lambda condition: (np.argwhere(condition).astype(np.int32),))


def argwhere(condition):
    """Coordinates of the nonzero elements of ``condition`` (``relay.argwhere``): a
    ``(count, rank)`` int32 tensor whose first dim is ``Any``.

    Returns:
        A Call of ``argwhere``.
    """
    return make_call("argwhere", (condition,))


def nonzero(condition):
    """ONNX ``NonZero``: ``transpose(argwhere(condition))``, shape ``(rank, count)``.

    Returns:
        A Call of ``transpose``.
    """
    return make_call("transpose", (argwhere(condition),), {"axes": (1, 0)})
