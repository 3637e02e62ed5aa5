"""Dense layers, activations and normalisation: ``nn.dense``, ``nn.relu``, ``nn.bias_add``,
``nn.batch_norm`` and ``nn.softmax``.

Before/after in the text format::

    nn.dense(%x, %w)           /* x: (n, 4), w: (3, 4) -- weight is (units, in_features) */
    -> Tensor[(n, 3), float32]
    nn.batch_norm(%x, %g, %b, %m, %v)   /* x: (2, 3, 4, 4); g, b, m, v: (3) */
    -> (Tensor[(2, 3, 4, 4), float32], Tensor[(3), float32], Tensor[(3), float32])
"""

from __future__ import annotations

import numpy as np

from ..errors import GradientError, TypeInferenceError
from ..ir.expr import TupleGetItem, TupleWrapper
from ..ir.types import TensorType, TupleType, normalize_dtype
from . import reduce as _reduce
from . import tensor as _tensor
from . import transform as _transform
from .registry import OpPattern, make_call, register_op
from .type_relations import (broadcast_shapes, dims_differ, expect_tensor, identity_rel,
                             named_rel, normalize_axis)

__all__ = ["dense", "relu", "bias_add", "batch_norm", "softmax", "batch_matmul"]


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
    except Exception:  # noqa: BLE001 - untyped: the 2-D rule needs no types
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


# -- relu ----------------------------------------------------------------------------------------

_RELU = register_op("nn.relu", ("data",), type_rel=named_rel("nn.relu", identity_rel),
                    pattern=OpPattern.ELEMWISE,
                    description="max(data, 0)", support_level=1)
_RELU.def_impl(lambda data: (np.maximum(data, np.zeros((), data.dtype)),))


@_RELU.def_grad
def _relu_grad(call, out_grad):
    data = call.args[0]
    positive = _tensor.greater(data, _tensor.zeros_like(data))
    return [_tensor.where(positive, out_grad, _tensor.zeros_like(out_grad))]


def relu(data):
    """Rectified linear unit ``max(data, 0)``.

    Returns:
        A Call of ``nn.relu``.
    """
    return make_call("nn.relu", (data,))


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


def _along_axis(vector, ndim: int, axis: int):
    """Reshape a 1-D numpy array so that it broadcasts along ``axis`` of an ndim array."""
    shape = [1] * ndim
    shape[axis] = -1
    return np.reshape(vector, shape)


_BIAS_ADD = register_op("nn.bias_add", ("data", "bias"),
                        attrs=("relay.attrs.BiasAddAttrs", [("axis", 1)]),
                        type_rel=_bias_add_rel, pattern=OpPattern.BROADCAST,
                        description="add a 1-D bias along an axis", support_level=1)
_BIAS_ADD.def_impl(lambda data, bias, axis=1: (
    data + _along_axis(bias, data.ndim, axis % data.ndim),))


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


# -- batch_norm -----------------------------------------------------------------------------------

_BN_FIELDS = [("axis", 1), ("epsilon", 1e-5), ("center", True), ("scale", True)]
_BN_PARAMS = ("gamma", "beta", "moving_mean", "moving_var")


def _batch_norm_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.batch_norm: data")
    axis = normalize_axis(attrs["axis"], data.ndim, "nn.batch_norm: axis")
    channels = data.shape[axis]
    for name, ty in zip(_BN_PARAMS, arg_types[1:]):
        param = expect_tensor(ty, f"nn.batch_norm: {name}")
        if param.ndim != 1 or dims_differ(param.shape[0], channels):
            raise TypeInferenceError(f"nn.batch_norm: {name} must have shape ({channels},) "
                                     f"(dimension {axis} of data), got {param.shape}")
        if param.dtype != data.dtype:
            # as Relay's BatchNormRel: every parameter has the data's dtype
            raise TypeInferenceError(f"nn.batch_norm: {name} must have the data's dtype "
                                     f"{data.dtype}, got {param.dtype}")
    vector = TensorType((channels,), data.dtype)
    return TupleType([data, vector, vector])


_BATCH_NORM = register_op("nn.batch_norm", ("data",) + _BN_PARAMS,
                          attrs=("relay.attrs.BatchNormAttrs", _BN_FIELDS),
                          type_rel=_batch_norm_rel, pattern=OpPattern.OPAQUE,
                          tuple_output=True, support_level=1,
                          description="normalise with moving statistics; returns "
                                      "(out, moving_mean, moving_var)")


@_BATCH_NORM.def_impl
def _batch_norm_ref(data, gamma, beta, moving_mean, moving_var, axis=1, epsilon=1e-5,
                    center=True, scale=True):
    axis = axis % data.ndim

    def shaped(vector):
        return _along_axis(vector, data.ndim, axis)

    out = (data - shaped(moving_mean)) / np.sqrt(shaped(moving_var) + epsilon)
    if scale:
        out = out * shaped(gamma)
    if center:
        out = out + shaped(beta)
    return (out.astype(data.dtype, copy=False), moving_mean, moving_var)


@_BATCH_NORM.def_grad
def _batch_norm_grad(call, out_grad):
    data, gamma, _beta, mean, var = call.args
    attrs = call.attrs
    axis = attrs["axis"]
    grad = TupleGetItem(out_grad, 0)

    def spread(vector):  # broadcast a (C,) vector along `axis` without knowing the rank
        return bias_add(_tensor.zeros_like(data), vector, axis)

    def per_channel(value):
        return _reduce.sum(value, axis=axis, exclude=True)

    inv_std = _tensor.divide(_tensor.ones_like(var),
                             _tensor.sqrt(_tensor.add(var, _tensor.scalar_like(
                                 attrs["epsilon"], var))))
    centered = _tensor.subtract(data, spread(mean))
    scaled_grad = _tensor.multiply(grad, spread(inv_std))
    if attrs["scale"]:
        scaled_grad = _tensor.multiply(scaled_grad, spread(gamma))
        gamma_grad = per_channel(_tensor.multiply(grad, _tensor.multiply(centered,
                                                                           spread(inv_std))))
    else:
        gamma_grad = _tensor.zeros_like(gamma)
    beta_grad = per_channel(grad) if attrs["center"] else _tensor.zeros_like(_beta)
    mean_grad = _tensor.add(_tensor.negative(per_channel(scaled_grad)),
                            TupleGetItem(out_grad, 1))
    # d/dvar (var + eps)^(-1/2) = -1/2 * inv_std^3; one inv_std is already in scaled_grad.
    var_grad = _tensor.add(
        _tensor.multiply(per_channel(_tensor.multiply(scaled_grad, centered)),
                         _tensor.multiply(_tensor.scalar_like(-0.5, var),
                                          _tensor.multiply(inv_std, inv_std))),
        TupleGetItem(out_grad, 2))
    return [scaled_grad, gamma_grad, beta_grad, mean_grad, var_grad]


def batch_norm(data, gamma, beta, moving_mean, moving_var, axis=1, epsilon=1e-5, center=True,
               scale=True):
    """Batch normalisation with the given (moving) statistics (``relay.nn.batch_norm``).

    ``out = (data - moving_mean) / sqrt(moving_var + epsilon) * gamma + beta`` along
    ``axis``; the second and third outputs are ``moving_mean`` and ``moving_var``.

    Returns:
        A :class:`~irlib.ir.expr.TupleWrapper` of 3 fields over the ``nn.batch_norm`` call.
    """
    call = make_call("nn.batch_norm", (data, gamma, beta, moving_mean, moving_var),
                     {"axis": int(axis), "epsilon": float(epsilon), "center": bool(center),
                      "scale": bool(scale)})
    return TupleWrapper(call, 3)


# -- softmax --------------------------------------------------------------------------------------

def _softmax_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.softmax: data")
    normalize_axis(attrs["axis"], data.ndim, "nn.softmax: axis")
    return data


_SOFTMAX = register_op("nn.softmax", ("data",),
                       attrs=("relay.attrs.SoftmaxAttrs", [("axis", -1)]),
                       type_rel=_softmax_rel, pattern=OpPattern.OPAQUE,
                       description="exp(data) / sum(exp(data)) along an axis", support_level=1)


@_SOFTMAX.def_impl
def _softmax_ref(data, axis=-1):
    shifted = np.exp(data - np.max(data, axis=axis, keepdims=True))
    return ((shifted / np.sum(shifted, axis=axis, keepdims=True)).astype(data.dtype,
                                                                          copy=False),)


@_SOFTMAX.def_grad
def _softmax_grad(call, out_grad):
    # d softmax: y * (g - sum(g * y, axis))
    weighted = _reduce.sum(_tensor.multiply(out_grad, call), axis=call.attrs["axis"],
                           keepdims=True)
    return [_tensor.multiply(_tensor.subtract(out_grad, weighted), call)]


def softmax(data, axis=-1):
    """Softmax along ``axis``.

    Returns:
        A Call of ``nn.softmax``.
    """
    return make_call("nn.softmax", (data,), {"axis": int(axis)})



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
