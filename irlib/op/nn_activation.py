"""Activations: ``nn.relu``, ``nn.leaky_relu``, ``nn.prelu``, ``nn.softmax``,
``nn.log_softmax``; plus the ELU-family activations ONNX needs (``elu``, ``selu``, ``celu``,
``softplus``, ``softsign``, ``hard_sigmoid``, ``hard_swish``, ``thresholded_relu``), builders
composing primitives (Relay has no ops for them either).

Before/after in the text format::

    nn.leaky_relu(%x, alpha=0.1)             /* x: (2, 3) */  -> Tensor[(2, 3), float32]
    nn.softmax(%x, axis=-1)                  /* x: (2, 3) */  -> Tensor[(2, 3), float32]
"""

from __future__ import annotations

import numpy as np

from . import reduce as _reduce
from . import tensor as _tensor
from ._composite import arg_types, call_op as _call, composite_grad, scalar_like as _scalar
from ._channels import along as _along, along_expr as _along_expr, check_param as _check_param
from .registry import OpPattern, make_call, register_op
from .type_relations import expect_tensor, identity_rel, named_rel, normalize_axis

__all__ = ["relu", "leaky_relu", "prelu", "softmax", "log_softmax", "elu", "selu", "celu",
           "softplus", "softsign", "hard_sigmoid", "hard_swish", "thresholded_relu"]


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


# -- log_softmax and leaky_relu -------------------------------------------------------------------

def _log_softmax_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.log_softmax: data")
    normalize_axis(attrs["axis"], data.ndim, "nn.log_softmax: axis")
    return data


_LOG_SOFTMAX = register_op("nn.log_softmax", ("data",),
                           attrs=("relay.attrs.SoftmaxAttrs", [("axis", -1)]),
                           type_rel=_log_softmax_rel, pattern=OpPattern.OPAQUE,
                           description="log(softmax(data)) along an axis")


@_LOG_SOFTMAX.def_impl
def _log_softmax_ref(data, axis=-1):
    shifted = data - np.max(data, axis=axis, keepdims=True)
    out = shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))
    return (out.astype(data.dtype, copy=False),)


@_LOG_SOFTMAX.def_grad
def _log_softmax_grad(call, out_grad):
    # d log_softmax: g - softmax * sum(g, axis)
    total = _reduce.sum(out_grad, axis=call.attrs["axis"], keepdims=True)
    return [_tensor.subtract(out_grad, _tensor.multiply(_tensor.exp(call), total))]


def log_softmax(data, axis=-1):
    """Log-softmax along ``axis``.

    Args:
        data: the input tensor.
        axis: the axis normalised over.

    Returns:
        A Call of ``nn.log_softmax``.
    """
    return make_call("nn.log_softmax", (data,), {"axis": int(axis)})


_LEAKY_RELU = register_op("nn.leaky_relu", ("data",),
                          attrs=("relay.attrs.LeakyReluAttrs", [("alpha", 0.01)]),
                          type_rel=named_rel("nn.leaky_relu", identity_rel),
                          pattern=OpPattern.ELEMWISE,
                          description="data if positive else alpha * data")
_LEAKY_RELU.def_impl(lambda data, alpha=0.01: (
    np.where(data > 0, data, data * alpha).astype(data.dtype, copy=False),))


@_LEAKY_RELU.def_grad
def _leaky_relu_grad(call, out_grad):
    data = call.args[0]
    positive = _tensor.greater(data, _tensor.zeros_like(data))
    scaled = _tensor.multiply(out_grad, _tensor.scalar_like(call.attrs["alpha"], out_grad))
    return [_tensor.where(positive, out_grad, scaled)]


def leaky_relu(data, alpha=0.01):
    """Leaky ReLU: ``data`` where positive, ``alpha * data`` elsewhere.

    Returns:
        A Call of ``nn.leaky_relu``.
    """
    return make_call("nn.leaky_relu", (data,), {"alpha": float(alpha)})


# -- prelu -------------------------------------------------------------------------------------

def _prelu_rel(types, attrs):
    data = expect_tensor(types[0], "nn.prelu: data")
    axis = normalize_axis(attrs["axis"], data.ndim, "nn.prelu: axis")
    _check_param("nn.prelu", "alpha", types[1], data.shape[axis])
    return data


_PRELU = register_op("nn.prelu", ("data", "alpha"),
                     attrs=("relay.attrs.PReluAttrs", [("axis", 1)]),
                     type_rel=_prelu_rel, pattern=OpPattern.BROADCAST,
                     description="data where positive, alpha * data elsewhere (alpha per "
                                 "channel on axis)")


@_PRELU.def_impl
def _prelu_ref(data, alpha, axis=1):
    slope = _along(alpha, axis % data.ndim, data.ndim)
    return (np.where(data < 0, data * slope, data).astype(data.dtype, copy=False),)


@_PRELU.def_grad
@composite_grad
def _prelu_grad(data, alpha, axis=1):
    ndim = arg_types([data], "nn.prelu")[0].ndim
    scaled = _call("multiply", data, _along_expr(alpha, axis % ndim, ndim))
    return _call("where", _call("less", data, _call("zeros_like", data)), scaled, data)


def prelu(data, alpha, axis=1):
    """Parametric ReLU (``relay.nn.prelu``): ``alpha[c] * x`` for negative ``x``.

    Args:
        data: the input.
        alpha: slopes, one per channel on ``axis``.
        axis: the channel axis.

    Returns:
        A Call of ``nn.prelu``.
    """
    return make_call("nn.prelu", (data, alpha), {"axis": int(axis)})


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

    Args:
        data: the input tensor.
        axis: the axis normalised over.

    Returns:
        A Call of ``nn.softmax``.
    """
    return make_call("nn.softmax", (data,), {"axis": int(axis)})


# -- ELU family (compositions, as Relay's ONNX frontend builds them) -------------------------------

def elu(data, alpha=1.0):
    """ONNX Elu: ``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` elsewhere.

    Args:
        data: the input tensor.
        alpha: the negative side's scale.

    Returns:
        An expression of primitive ops.
    """
    negative = _call("multiply", _scalar(alpha, data),
                     _call("subtract", _call("exp", data), _scalar(1.0, data)))
    return _call("where", _call("greater", data, _scalar(0.0, data)), data, negative)


def selu(data, alpha=1.67326319217681884765625, gamma=1.05070102214813232421875):
    """ONNX Selu: ``gamma * elu(x, alpha)``.

    Args:
        data: the input tensor.
        alpha: the elu's scale.
        gamma: the output scale.

    Returns:
        An expression of primitive ops.
    """
    return _call("multiply", _scalar(gamma, data), elu(data, alpha))


def celu(data, alpha=1.0):
    """ONNX Celu: ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    Args:
        data: the input tensor.
        alpha: the negative side's scale.

    Returns:
        An expression of primitive ops.
    """
    scaled = _call("divide", data, _scalar(alpha, data))
    negative = _call("multiply", _scalar(alpha, data),
                     _call("subtract", _call("exp", scaled), _scalar(1.0, data)))
    return _call("add", _call("nn.relu", data),
                 _call("minimum", _scalar(0.0, data), negative))


def softplus(data):
    """ONNX Softplus: ``log(1 + exp(x))``, computed stably as ``relu(x) + log(1 +
    exp(-|x|))``.

    Args:
        data: the input tensor.

    Returns:
        An expression of primitive ops.
    """
    tail = _call("log", _call("add", _scalar(1.0, data),
                              _call("exp", _call("negative", _call("abs", data)))))
    return _call("add", _call("nn.relu", data), tail)


def softsign(data):
    """ONNX Softsign: ``x / (1 + |x|)``.

    Args:
        data: the input tensor.

    Returns:
        An expression of primitive ops.
    """
    return _call("divide", data, _call("add", _scalar(1.0, data), _call("abs", data)))


def hard_sigmoid(data, alpha=0.2, beta=0.5):
    """ONNX HardSigmoid: ``clip(alpha * x + beta, 0, 1)``.

    Args:
        data: the input tensor.
        alpha: the slope.
        beta: the offset.

    Returns:
        An expression of primitive ops.
    """
    linear = _call("add", _call("multiply", _scalar(alpha, data), data), _scalar(beta, data))
    return _call("clip", linear, a_min=0.0, a_max=1.0)


def hard_swish(data):
    """ONNX HardSwish: ``x * hard_sigmoid(x, 1/6, 0.5)``.

    Args:
        data: the input tensor.

    Returns:
        An expression of primitive ops.
    """
    return _call("multiply", data, hard_sigmoid(data, 1.0 / 6.0, 0.5))


def thresholded_relu(data, alpha=1.0):
    """ONNX ThresholdedRelu: ``x`` where ``x > alpha``, else 0.

    Args:
        data: the input tensor.
        alpha: the threshold.

    Returns:
        An expression of primitive ops.
    """
    return _call("where", _call("greater", data, _scalar(alpha, data)), data,
                 _call("zeros_like", data))
