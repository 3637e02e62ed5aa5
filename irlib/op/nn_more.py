"""More ``irlib.nn`` ops: ``batch_flatten``, ``dropout``, ``log_softmax``, ``leaky_relu``,
``pad`` and ``layer_norm``.

Before/after in the text format::

    nn.batch_flatten(%x)                     /* x: (2, 3, 4) */  -> Tensor[(2, 12), float32]
    nn.pad(%x, 0f, pad_width=[[0, 0], [1, 2]])   /* x: (2, 3) */ -> Tensor[(2, 6), float32]
    nn.dropout(%x, rate=0.5)                 -> (Tensor[(2, 3), float32], Tensor[(2, 3), float32])

``dropout`` is evaluated in inference mode (the identity; the mask is all ones), as Relay's
reference does.
"""

from __future__ import annotations

import numpy as np

from ..errors import GradientError, TypeInferenceError
from ..ir.expr import Expr, TupleGetItem, TupleWrapper, const
from ..ir.types import TensorType, TupleType
from . import reduce as _reduce
from . import tensor as _tensor
from .indexing import strided_slice
from .nn_basic import bias_add
from .registry import OpPattern, make_call, register_op
from .type_relations import (dim_add, expect_tensor, identity_rel, named_rel,
                             normalize_axis, shape_product)

__all__ = ["batch_flatten", "dropout", "dropout_raw", "log_softmax", "leaky_relu", "pad",
           "layer_norm"]


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


# -- dropout -----------------------------------------------------------------------------------

def _dropout_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.dropout: data")
    if not 0.0 <= attrs["rate"] < 1.0:
        raise TypeInferenceError(f"nn.dropout: rate must be in [0, 1), got {attrs['rate']}")
    return TupleType([data, data])


_DROPOUT = register_op("nn.dropout", ("data",),
                       attrs=("relay.attrs.DropoutAttrs", [("rate", 0.5)]),
                       type_rel=_dropout_rel, pattern=OpPattern.OPAQUE, tuple_output=True,
                       description="dropout (inference: identity); returns (out, mask)")
_DROPOUT.def_impl(lambda data, rate=0.5: (np.array(data), np.ones_like(data)))
_DROPOUT.def_grad(lambda call, out_grad: [TupleGetItem(out_grad, 0)])


def dropout_raw(data, rate=0.5):
    """Dropout returning both outputs ``(out, mask)`` as a TupleWrapper."""
    return TupleWrapper(make_call("nn.dropout", (data,), {"rate": float(rate)}), 2)


def dropout(data, rate=0.5):
    """Dropout; returns field 0 of the ``nn.dropout`` call (``relay.nn.dropout``).

    Returns:
        A TupleGetItem of the ``nn.dropout`` call.
    """
    return dropout_raw(data, rate)[0]


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


# -- pad ------------------------------------------------------------------------------------------

_PAD_MODES = {"constant": "constant", "edge": "edge", "reflect": "reflect"}


def _pad_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.pad: data")
    value = expect_tensor(arg_types[1], "nn.pad: pad_value")
    widths = attrs["pad_width"]
    if value.ndim != 0:
        raise TypeInferenceError(f"nn.pad: pad_value must be a scalar, got {value}")
    if len(widths) != data.ndim or any(len(w) != 2 for w in widths):
        raise TypeInferenceError(f"nn.pad: pad_width needs one (before, after) pair per axis "
                                 f"({data.ndim}), got {widths}")
    if attrs["pad_mode"] not in _PAD_MODES:
        raise TypeInferenceError(f"nn.pad: pad_mode must be one of {sorted(_PAD_MODES)}, got "
                                 f"{attrs['pad_mode']!r}")
    return TensorType([dim_add(d, before, after) for d, (before, after) in zip(data.shape, widths)],
                      data.dtype)


_PAD = register_op("nn.pad", ("data", "pad_value"),
                   attrs=("relay.attrs.PadAttrs", [("pad_width", None),
                                                   ("pad_mode", "constant")]),
                   type_rel=_pad_rel, pattern=OpPattern.INJECTIVE,
                   description="pad each axis with (before, after) elements")


@_PAD.def_impl
def _pad_ref(data, pad_value, pad_width, pad_mode="constant"):
    if pad_mode == "constant":
        return (np.pad(data, pad_width, mode="constant",
                       constant_values=pad_value.astype(data.dtype)),)
    return (np.pad(data, pad_width, mode=_PAD_MODES[pad_mode]),)


@_PAD.def_grad
def _pad_grad(call, out_grad):
    if call.attrs["pad_mode"] != "constant":
        return _pad_copy_grad(call, out_grad)
    widths = call.attrs["pad_width"]
    begin = [before for before, _ in widths]
    end = [-after if after else 2 ** 31 - 1 for _, after in widths]
    inner = strided_slice(out_grad, begin, end)
    # The pad value appears everywhere outside the data: its adjoint is the rest of the sum.
    border = _tensor.subtract(_reduce.sum(out_grad), _reduce.sum(inner))
    return [inner, _tensor.cast_like(border, call.args[1])]


def _pad_copy_forward(data, pad_value, pad_width, pad_mode):
    """Edge/reflect padding as slices of the data concatenated onto it, axis by axis."""
    from ._composite import arg_types
    from ..ir.expr import Tuple
    shape = list(arg_types([data], "nn.pad")[0].shape)
    out = data
    for axis, (before, after) in enumerate(pad_width):
        size = shape[axis]
        if not (before or after):
            continue
        if not isinstance(size, int):
            raise GradientError("the gradient of edge/reflect nn.pad needs static sizes")

        def piece(start, stop, reverse_it):
            part = strided_slice(out, [start], [stop], [1], axes=[axis])
            return make_call("reverse", (part,), {"axis": axis}) if reverse_it else part

        pieces = []
        if before:
            pieces.append(make_call("repeat", (piece(0, 1, False),),
                                    {"repeats": before, "axis": axis})
                          if pad_mode == "edge" else piece(1, before + 1, True))
        pieces.append(out)
        if after:
            pieces.append(make_call("repeat", (piece(size - 1, size, False),),
                                    {"repeats": after, "axis": axis})
                          if pad_mode == "edge" else piece(size - 1 - after, size - 1, True))
        out = make_call("concatenate", (Tuple(pieces),), {"axis": axis})
        shape[axis] = size + before + after
    return out


def _pad_copy_grad(call, out_grad):
    from ._composite import composite_grad
    return composite_grad(_pad_copy_forward)(call, out_grad)


def pad(data, pad_width, pad_value=0.0, pad_mode="constant"):
    """Pad ``data`` by ``pad_width[i] = (before, after)`` along each axis.

    Args:
        data: the input tensor.
        pad_width: one ``(before, after)`` pair per axis.
        pad_value: a number or a scalar expression (for ``"constant"`` mode).
        pad_mode: ``"constant"``, ``"edge"`` or ``"reflect"``.

    Returns:
        A Call of ``nn.pad``.
    """
    if not isinstance(pad_value, Expr):
        pad_value = const(pad_value)
    widths = tuple((int(before), int(after)) for before, after in pad_width)
    return make_call("nn.pad", (data, pad_value), {"pad_width": widths, "pad_mode": pad_mode})


# -- layer_norm -----------------------------------------------------------------------------------

_LN_FIELDS = [("axis", -1), ("epsilon", 1e-5), ("center", True), ("scale", True)]


def _layer_norm_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.layer_norm: data")
    axis = normalize_axis(attrs["axis"], data.ndim, "nn.layer_norm: axis")
    for name, ty in zip(("gamma", "beta"), arg_types[1:]):
        param = expect_tensor(ty, f"nn.layer_norm: {name}")
        if param.ndim != 1 or (isinstance(param.shape[0], int)
                               and isinstance(data.shape[axis], int)
                               and param.shape[0] != data.shape[axis]):
            raise TypeInferenceError(f"nn.layer_norm: {name} must have shape "
                                     f"({data.shape[axis]},), got {param.shape}")
    return data


_LAYER_NORM = register_op("nn.layer_norm", ("data", "gamma", "beta"),
                          attrs=("relay.attrs.LayerNormAttrs", _LN_FIELDS),
                          type_rel=_layer_norm_rel, pattern=OpPattern.OPAQUE,
                          description="normalise over one axis, then scale and shift")


@_LAYER_NORM.def_impl
def _layer_norm_ref(data, gamma, beta, axis=-1, epsilon=1e-5, center=True, scale=True):
    axis %= data.ndim
    mean = np.mean(data, axis=axis, keepdims=True)
    variance = np.mean(np.square(data - mean), axis=axis, keepdims=True)
    out = (data - mean) / np.sqrt(variance + epsilon)
    shape = [1] * data.ndim
    shape[axis] = -1
    if scale:
        out = out * np.reshape(gamma, shape)
    if center:
        out = out + np.reshape(beta, shape)
    return (out.astype(data.dtype, copy=False),)


@_LAYER_NORM.def_grad
def _layer_norm_grad(call, out_grad):
    data, gamma, beta = call.args
    attrs = call.attrs
    axis = attrs["axis"]

    def mean_along(value):
        return _reduce.mean(value, axis=axis, keepdims=True)

    centre = mean_along(data)
    centered = _tensor.subtract(data, centre)
    variance = mean_along(_tensor.multiply(centered, centered))
    inv_std = make_call("rsqrt", (_tensor.add(variance, _tensor.scalar_like(
        attrs["epsilon"], variance)),))
    normalized = _tensor.multiply(centered, inv_std)
    grad_normalized = out_grad
    if attrs["scale"]:
        grad_normalized = _tensor.multiply(out_grad,
                                           bias_add(_tensor.zeros_like(data), gamma, axis))
    # dx = inv_std * (dn - mean(dn) - n * mean(dn * n)), the usual layer-norm backward.
    data_grad = _tensor.multiply(inv_std, _tensor.subtract(
        _tensor.subtract(grad_normalized, mean_along(grad_normalized)),
        _tensor.multiply(normalized, mean_along(_tensor.multiply(grad_normalized,
                                                                 normalized)))))
    per_channel = {"axis": axis, "exclude": True}
    gamma_grad = (_reduce.sum(_tensor.multiply(out_grad, normalized), **per_channel)
                  if attrs["scale"] else _tensor.zeros_like(gamma))
    beta_grad = _reduce.sum(out_grad, **per_channel) if attrs["center"] \
        else _tensor.zeros_like(beta)
    return [data_grad, gamma_grad, beta_grad]


def layer_norm(data, gamma, beta, axis=-1, epsilon=1e-5, center=True, scale=True):
    """Layer normalisation over ``axis`` (``relay.nn.layer_norm``).

    Returns:
        A Call of ``nn.layer_norm``.
    """
    return make_call("nn.layer_norm", (data, gamma, beta),
                     {"axis": int(axis), "epsilon": float(epsilon), "center": bool(center),
                      "scale": bool(scale)})
