"""Dense layers and matrix products: ``nn.dense``, ``nn.bias_add``, ``nn.batch_matmul``,
``nn.matmul`` and ``nn.batch_flatten`` (the flatten in front of a dense layer).

Before/after in the text format::

    nn.dense(%x, %w)           /* x: (n, 4), w: (3, 4) -- weight is (units, in_features) */
    -> Tensor[(n, 3), float32]
    nn.batch_flatten(%x)                     /* x: (2, 3, 4) */  -> Tensor[(2, 12), float32]
"""

from __future__ import annotations

import numpy as np

from ..errors import GradientError, TypeInferenceError, UntypedError
from ..ir.types import TensorType, normalize_dtype
from . import reduce as _reduce
from . import transform as _transform
from ._composite import arg_types, call_op as _call, composite_grad
from ._channels import along as _along
from .registry import OpPattern, make_call, register_op
from .type_relations import (broadcast_shapes, dims_differ, expect_tensor, normalize_axis,
                             shape_product)

__all__ = ["dense", "bias_add", "batch_matmul", "matmul", "batch_flatten"]


# -- dense -------------------------------------------------------------------------------------

def _dense_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.dense: data")
    weight = expect_tensor(arg_types[1], "nn.dense: weight")
    if data.ndim < 1 or weight.ndim != 2:
        raise TypeInferenceError(f"nn.dense: data must have rank >= 1 and weight rank 2, got "
                                 f"{data} and {weight}")
    units, in_features = weight.shape
    if dims_differ(data.shape[-1], in_features):
        raise TypeInferenceError(f"nn.dense: data has {data.shape[-1]} input features but "
                                 f"weight expects {in_features}")
    if attrs["units"] is not None and dims_differ(attrs["units"], units):
        raise TypeInferenceError(f"nn.dense: units={attrs['units']} but weight has {units} "
                                 f"rows")
    dtype = normalize_dtype(attrs["out_dtype"]) if attrs["out_dtype"] else data.dtype
    return TensorType(data.shape[:-1] + (units,), dtype)


_DENSE = register_op("nn.dense", ("data", "weight"),
                     attrs=("relay.attrs.DenseAttrs", [("units", None), ("out_dtype", "")]),
                     type_rel=_dense_rel, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                     description="data @ weight.T (weight is (units, in_features))",
                     support_level=1)


@_DENSE.def_impl
def _dense_ref(data, weight, units=None, out_dtype=""):
    out = np.matmul(data, weight.T)
    return (out.astype(normalize_dtype(out_dtype) if out_dtype else data.dtype, copy=False),)


@_DENSE.def_grad
def _dense_grad(call, out_grad):
    data, weight = call.args
    data_grad = dense(out_grad, _transform.transpose(weight))
    flat_grad, flat_data = out_grad, data
    data_type = _maybe_type(data)
    if data_type is not None and data_type.ndim != 2:
        # Rows of every leading axis contribute to the weight gradient: flatten them.
        weight_type = _maybe_type(weight)
        units, in_features = weight_type.shape if weight_type is not None else (None, None)
        if not isinstance(units, int) or not isinstance(in_features, int):
            raise GradientError("the gradient of an N-D nn.dense needs a static weight "
                                      "shape")
        flat_grad = _transform.reshape(out_grad, (-1, units))
        flat_data = _transform.reshape(data, (-1, in_features))
    weight_grad = dense(_transform.transpose(flat_grad), _transform.transpose(flat_data))
    return [data_grad, weight_grad]


def _maybe_type(expr):
    try:
        return expr.checked_type
    except UntypedError:  # the 2-D rule needs no types
        return None


def dense(data, weight, units=None, out_dtype=""):
    """Fully connected layer ``data @ weight.T`` (``relay.nn.dense``).

    Args:
        data: ``(..., in_features)``.
        weight: ``(units, in_features)``.
        units: the number of output units (checked against the weight if given).
        out_dtype: the output dtype (default: the data dtype).

    Returns:
        A Call of ``nn.dense``.
    """
    return make_call("nn.dense", (data, weight), {"units": units, "out_dtype": out_dtype})


# -- bias_add ------------------------------------------------------------------------------------

def _bias_add_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.bias_add: data")
    bias = expect_tensor(arg_types[1], "nn.bias_add: bias")
    axis = normalize_axis(attrs["axis"], data.ndim, "nn.bias_add: axis")
    if bias.ndim != 1 or dims_differ(bias.shape[0], data.shape[axis]):
        raise TypeInferenceError(f"nn.bias_add: bias must have shape ({data.shape[axis]},) "
                                 f"(dimension {axis} of data), got {bias.shape}")
    if bias.dtype != data.dtype:
        raise TypeInferenceError(f"nn.bias_add: bias dtype {bias.dtype} differs from data "
                                 f"dtype {data.dtype}")
    return data


_BIAS_ADD = register_op("nn.bias_add", ("data", "bias"),
                        attrs=("relay.attrs.BiasAddAttrs", [("axis", 1)]),
                        type_rel=_bias_add_rel, pattern=OpPattern.BROADCAST,
                        description="add a 1-D bias along an axis", support_level=1)
_BIAS_ADD.def_impl(lambda data, bias, axis=1: (
    data + _along(bias, axis % data.ndim, data.ndim),))


@_BIAS_ADD.def_grad
def _bias_add_grad(call, out_grad):
    return [out_grad, _reduce.sum(out_grad, axis=call.attrs["axis"], exclude=True)]


@_BIAS_ADD.def_layout
def _bias_add_layout(attrs, desired_layout):
    """The same bias add with ``axis`` at the channel (``C``) axis of ``desired_layout``."""
    return attrs.with_changes(axis=desired_layout.index("C"))


def bias_add(data, bias, axis=1):
    """Add the 1-D ``bias`` along ``axis`` of ``data``.

    Returns:
        A Call of ``nn.bias_add``.
    """
    return make_call("nn.bias_add", (data, bias), {"axis": int(axis)})


# -- batch_matmul --------------------------------------------------------------------------------

def _batch_matmul_rel(arg_types, attrs):
    lhs = expect_tensor(arg_types[0], "nn.batch_matmul: tensor_a")
    rhs = expect_tensor(arg_types[1], "nn.batch_matmul: tensor_b")
    if lhs.ndim != 3 or rhs.ndim != 3:
        raise TypeInferenceError(f"nn.batch_matmul: both inputs must be 3-D, got {lhs} and "
                                 f"{rhs}")
    rows, inner = (lhs.shape[2], lhs.shape[1]) if attrs["transpose_a"] else lhs.shape[1:]
    cols, rhs_inner = (rhs.shape[1], rhs.shape[2]) if attrs["transpose_b"] else \
        (rhs.shape[2], rhs.shape[1])
    if dims_differ(inner, rhs_inner):
        raise TypeInferenceError(f"nn.batch_matmul: tensor_a has reduction size {inner} but "
                                 f"tensor_b has {rhs_inner}")
    batch = broadcast_shapes(lhs.shape[:1], rhs.shape[:1])
    dtype = normalize_dtype(attrs["out_dtype"]) if attrs["out_dtype"] else lhs.dtype
    return TensorType(batch + (rows, cols), dtype)


_BATCH_MATMUL = register_op(
    "nn.batch_matmul", ("tensor_a", "tensor_b"),
    attrs=("relay.attrs.BatchMatmulAttrs", [("out_dtype", ""), ("transpose_a", False),
                                            ("transpose_b", True)]),
    type_rel=_batch_matmul_rel, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    description="batched matrix product (tensor_b transposed by default)", support_level=10)


@_BATCH_MATMUL.def_impl
def _batch_matmul_ref(tensor_a, tensor_b, out_dtype="", transpose_a=False, transpose_b=True):
    lhs = np.swapaxes(tensor_a, 1, 2) if transpose_a else tensor_a
    rhs = np.swapaxes(tensor_b, 1, 2) if transpose_b else tensor_b
    out = np.matmul(lhs, rhs)
    return (out.astype(normalize_dtype(out_dtype) if out_dtype else tensor_a.dtype,
                       copy=False),)


@_BATCH_MATMUL.def_grad
def _batch_matmul_grad(call, out_grad):
    # With A = op(a), B = op(b) and out = A @ B: dA = g @ B^T and dB = A^T @ g.
    lhs, rhs = call.args
    trans_a, trans_b = call.attrs["transpose_a"], call.attrs["transpose_b"]
    if trans_a:
        lhs_grad = batch_matmul(rhs, out_grad, transpose_a=trans_b, transpose_b=True)
    else:
        lhs_grad = batch_matmul(out_grad, rhs, transpose_a=False, transpose_b=not trans_b)
    if trans_b:
        rhs_grad = batch_matmul(out_grad, lhs, transpose_a=True, transpose_b=trans_a)
    else:
        rhs_grad = batch_matmul(lhs, out_grad, transpose_a=not trans_a, transpose_b=False)
    return [make_call("collapse_sum_like", (lhs_grad, lhs)),
            make_call("collapse_sum_like", (rhs_grad, rhs))]


def batch_matmul(tensor_a, tensor_b, out_dtype="", transpose_a=False, transpose_b=True):
    """Batched matrix product ``op(tensor_a) @ op(tensor_b)`` (``relay.nn.batch_matmul``).

    Args:
        tensor_a: ``(batch, M, K)`` (``(batch, K, M)`` if ``transpose_a``).
        tensor_b: ``(batch, N, K)`` by default (``transpose_b=True``), else ``(batch, K, N)``.
        out_dtype: the output dtype (default: tensor_a's).

    Returns:
        A Call of ``nn.batch_matmul``.
    """
    return make_call("nn.batch_matmul", (tensor_a, tensor_b),
                     {"out_dtype": out_dtype, "transpose_a": bool(transpose_a),
                      "transpose_b": bool(transpose_b)})


# -- matmul ------------------------------------------------------------------------------------

def _matmul_rel(arg_types_, attrs):
    a = expect_tensor(arg_types_[0], "nn.matmul: tensor_a")
    b = expect_tensor(arg_types_[1], "nn.matmul: tensor_b")
    if b.ndim != 2 or a.ndim < 1 or (attrs["transpose_a"] and a.ndim != 2):
        raise TypeInferenceError(f"nn.matmul: tensor_b must be 2-D and tensor_a at least 1-D "
                                 f"(2-D when transpose_a), got {a} and {b}")
    k_a = a.shape[0] if attrs["transpose_a"] else a.shape[-1]
    rows = (a.shape[1],) if attrs["transpose_a"] else a.shape[:-1]
    k_b, units = (b.shape[1], b.shape[0]) if attrs["transpose_b"] else b.shape
    if dims_differ(k_a, k_b):
        raise TypeInferenceError(f"nn.matmul: tensor_a has {k_a} columns but tensor_b has "
                                 f"{k_b} rows (transpose_a={attrs['transpose_a']}, "
                                 f"transpose_b={attrs['transpose_b']})")
    if attrs["units"] is not None and dims_differ(attrs["units"], units):
        raise TypeInferenceError(f"nn.matmul: units={attrs['units']} but tensor_b gives {units}")
    dtype = normalize_dtype(attrs["out_dtype"]) if attrs["out_dtype"] else a.dtype
    return TensorType(tuple(rows) + (units,), dtype)


_MATMUL = register_op("nn.matmul", ("tensor_a", "tensor_b"),
                      attrs=("relay.attrs.MatmulAttrs", [("units", None), ("out_dtype", ""),
                                                         ("transpose_a", False),
                                                         ("transpose_b", False)]),
                      type_rel=_matmul_rel, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                      description="tensor_a @ tensor_b, either side optionally transposed")


@_MATMUL.def_impl
def _matmul_ref(tensor_a, tensor_b, units=None, out_dtype="", transpose_a=False,
                transpose_b=False):
    a = tensor_a.T if transpose_a else tensor_a
    b = tensor_b.T if transpose_b else tensor_b
    out = np.matmul(a, b)
    return (out.astype(normalize_dtype(out_dtype) if out_dtype else tensor_a.dtype,
                       copy=False),)


@_MATMUL.def_grad
@composite_grad
def _matmul_grad(tensor_a, tensor_b, units=None, out_dtype="", transpose_a=False,
                 transpose_b=False):
    a = _call("transpose", tensor_a, axes=None) if transpose_a else tensor_a
    b = tensor_b if transpose_b else _call("transpose", tensor_b, axes=None)
    return _call("nn.dense", a, b, units=None, out_dtype=out_dtype)


def matmul(tensor_a, tensor_b, units=None, out_dtype="", transpose_a=False,
           transpose_b=False):
    """Matrix product (``relay.nn.matmul``); ``nn.dense`` is the ``transpose_b`` case.

    Args:
        tensor_a: ``(..., K)``, or ``(K, M)`` when ``transpose_a``.
        tensor_b: ``(K, N)``, or ``(N, K)`` when ``transpose_b``.
        units: N (checked if given).
        out_dtype: the output dtype (default: tensor_a's).

    Returns:
        A Call of ``nn.matmul``.
    """
    return make_call("nn.matmul", (tensor_a, tensor_b),
                     {"units": units, "out_dtype": out_dtype, "transpose_a": bool(transpose_a),
                      "transpose_b": bool(transpose_b)})


# -- batch_flatten -----------------------------------------------------------------------------

def _batch_flatten_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.batch_flatten: data")
    if data.ndim < 1:
        raise TypeInferenceError(f"nn.batch_flatten: data must have rank >= 1, got {data}")
    return TensorType((data.shape[0], shape_product(data.shape[1:])), data.dtype)


_BATCH_FLATTEN = register_op("nn.batch_flatten", ("data",), type_rel=_batch_flatten_rel,
                             pattern=OpPattern.INJECTIVE,
                             description="flatten every axis but the first")
_BATCH_FLATTEN.def_impl(lambda data: (np.reshape(data, (data.shape[0], -1)),))
_BATCH_FLATTEN.def_grad(lambda call, out_grad: [
    make_call("reshape_like", (out_grad, call.args[0]))])


def batch_flatten(data):
    """Flatten ``data`` to ``(batch, rest)``.

    Returns:
        A Call of ``nn.batch_flatten``.
    """
    return make_call("nn.batch_flatten", (data,))
