"""Normalisation: ``nn.batch_norm``, ``nn.layer_norm``, ``nn.group_norm``,
``nn.instance_norm``, ``nn.rms_norm``, ``nn.lrn`` and ``nn.l2_normalize``.

Before/after in the text format::

    nn.batch_norm(%x, %g, %b, %m, %v)   /* x: (2, 3, 4, 4); g, b, m, v: (3) */
    -> (Tensor[(2, 3, 4, 4), float32], Tensor[(3), float32], Tensor[(3), float32])
    nn.group_norm(%x, %g, %b, num_groups=2)    /* x: (1, 4, 5, 5), g, b: (4) */
    -> Tensor[(1, 4, 5, 5), float32]

Most gradients are the gradients of each op written as a composition of primitives (see
``_composite``).
"""

from __future__ import annotations

import numpy as np

from ..errors import GradientError, TypeInferenceError
from ..ir.expr import TupleGetItem, TupleWrapper
from ..ir.types import TensorType, TupleType
from . import reduce as _reduce
from . import tensor as _tensor
from ._composite import arg_types, call_op as _call, composite_grad, scalar_like as _scalar
from ._channels import along as _along, along_expr as _along_expr, check_param as _check_param
from .registry import OpPattern, make_call, register_op
from .type_relations import dims_differ, expect_tensor, normalize_axes, normalize_axis
from .nn_dense import bias_add

__all__ = ["batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm", "lrn",
           "l2_normalize"]


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
        return _along(vector, axis, data.ndim)

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

    Args:
        data: the input tensor.
        gamma: the per-channel scale.
        beta: the per-channel offset.
        moving_mean: the per-channel mean.
        moving_var: the per-channel variance.
        axis: the channel axis.
        epsilon: added to the variance.
        center: add ``beta`` (False: leave it out).
        scale: multiply by ``gamma`` (False: leave it out).

    Returns:
        A :class:`~irlib.ir.expr.TupleWrapper` of 3 fields over the ``nn.batch_norm`` call.
    """
    call = make_call("nn.batch_norm", (data, gamma, beta, moving_mean, moving_var),
                     {"axis": int(axis), "epsilon": float(epsilon), "center": bool(center),
                      "scale": bool(scale)})
    return TupleWrapper(call, 3)


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

    Args:
        data: the input tensor.
        gamma: the scale along ``axis``.
        beta: the offset along ``axis``.
        axis: the normalised axis.
        epsilon: added to the variance.
        center: add ``beta``.
        scale: multiply by ``gamma``.

    Returns:
        A Call of ``nn.layer_norm``.
    """
    return make_call("nn.layer_norm", (data, gamma, beta),
                     {"axis": int(axis), "epsilon": float(epsilon), "center": bool(center),
                      "scale": bool(scale)})


# -- group_norm / instance_norm ------------------------------------------------------------------

_NORM_FIELDS = [("axis", 1), ("epsilon", 1e-5), ("center", True), ("scale", True)]


def _norm_rel(name: str, grouped: bool):
    def relation(types, attrs):
        data = expect_tensor(types[0], f"{name}: data")
        axis = normalize_axis(attrs["axis"], data.ndim, f"{name}: axis")
        if axis == 0:
            raise TypeInferenceError(f"{name}: axis must not be the batch axis 0")
        channels = data.shape[axis]
        if grouped:
            groups = attrs["num_groups"]
            if not isinstance(groups, int) or groups < 1 or (
                    isinstance(channels, int) and channels % groups):
                raise TypeInferenceError(f"{name}: num_groups={groups!r} must divide the "
                                         f"{channels} channels")
        for param, ty in zip(("gamma", "beta"), types[1:]):
            _check_param(name, param, ty, channels)
        return data
    return relation


def _normalize(data, axes, epsilon):
    mean = np.mean(data, axis=axes, keepdims=True)
    variance = np.mean(np.square(data - mean), axis=axes, keepdims=True)
    return (data - mean) / np.sqrt(variance + epsilon)


def _affine(out, gamma, beta, axis, center, scale):
    if scale:
        out = out * _along(gamma, axis, out.ndim)
    if center:
        out = out + _along(beta, axis, out.ndim)
    return out


def _affine_expr(out, gamma, beta, axis, ndim, center, scale):
    if scale:
        out = _call("multiply", out, _along_expr(gamma, axis, ndim))
    if center:
        out = _call("add", out, _along_expr(beta, axis, ndim))
    return out


def _normalize_expr(data, axes, epsilon):
    reduce = {"axis": list(axes), "keepdims": True, "exclude": False}
    centered = _call("subtract", data, _call("mean", data, **reduce))
    variance = _call("mean", _call("multiply", centered, centered), **reduce)
    return _call("multiply", centered,
                 _call("rsqrt", _call("add", variance, _scalar(epsilon, variance))))


_GROUP_NORM = register_op("nn.group_norm", ("data", "gamma", "beta"),
                          attrs=("relay.attrs.GroupNormAttrs",
                                 [("num_groups", 1)] + _NORM_FIELDS),
                          type_rel=_norm_rel("nn.group_norm", True), pattern=OpPattern.OPAQUE,
                          description="normalise over groups of channels (and the spatial "
                                      "axes), then scale and shift per channel")


def _grouped_shape(shape, axis, groups):
    return shape[:axis] + (groups, shape[axis] // groups) + shape[axis + 1:]


@_GROUP_NORM.def_impl
def _group_norm_ref(data, gamma, beta, num_groups=1, axis=1, epsilon=1e-5, center=True,
                    scale=True):
    axis %= data.ndim
    grouped = data.reshape(_grouped_shape(data.shape, axis, num_groups))
    reduce_axes = tuple(a for a in range(grouped.ndim) if a not in (0, axis))
    out = _normalize(grouped, reduce_axes, epsilon).reshape(data.shape)
    return (_affine(out, gamma, beta, axis, center, scale).astype(data.dtype, copy=False),)


@_GROUP_NORM.def_grad
@composite_grad
def _group_norm_grad(data, gamma, beta, num_groups=1, axis=1, epsilon=1e-5, center=True,
                     scale=True):
    shape = tuple(arg_types([data], "nn.group_norm")[0].shape)
    axis %= len(shape)
    grouped = _call("reshape", data, newshape=_grouped_shape(shape, axis, num_groups),
                    allowzero=False)
    axes = [a for a in range(len(shape) + 1) if a not in (0, axis)]
    out = _call("reshape_like", _normalize_expr(grouped, axes, epsilon), data)
    return _affine_expr(out, gamma, beta, axis, len(shape), center, scale)


def group_norm(data, gamma, beta, num_groups, axis=1, epsilon=1e-5, center=True, scale=True):
    """Group normalisation (``relay.nn.group_norm``).

    Args:
        data: ``(N, C, ...)`` with channels on ``axis``.
        gamma: per-channel scale ``(C,)``.
        beta: per-channel shift ``(C,)``.
        num_groups: channel groups (must divide C); statistics are per sample and group.
        axis: the channel axis.
        epsilon: added to the variance.
        center: add beta.
        scale: multiply by gamma.

    Returns:
        A Call of ``nn.group_norm``.
    """
    return make_call("nn.group_norm", (data, gamma, beta),
                     {"num_groups": int(num_groups), "axis": int(axis),
                      "epsilon": float(epsilon), "center": bool(center), "scale": bool(scale)})


_INSTANCE_NORM = register_op("nn.instance_norm", ("data", "gamma", "beta"),
                             attrs=("relay.attrs.InstanceNormAttrs", _NORM_FIELDS),
                             type_rel=_norm_rel("nn.instance_norm", False),
                             pattern=OpPattern.OPAQUE,
                             description="normalise each sample and channel over the other "
                                         "axes, then scale and shift per channel")


@_INSTANCE_NORM.def_impl
def _instance_norm_ref(data, gamma, beta, axis=1, epsilon=1e-5, center=True, scale=True):
    axis %= data.ndim
    reduce_axes = tuple(a for a in range(data.ndim) if a not in (0, axis))
    out = _normalize(data, reduce_axes, epsilon)
    return (_affine(out, gamma, beta, axis, center, scale).astype(data.dtype, copy=False),)


@_INSTANCE_NORM.def_grad
@composite_grad
def _instance_norm_grad(data, gamma, beta, axis=1, epsilon=1e-5, center=True, scale=True):
    ndim = arg_types([data], "nn.instance_norm")[0].ndim
    axis %= ndim
    axes = [a for a in range(ndim) if a not in (0, axis)]
    return _affine_expr(_normalize_expr(data, axes, epsilon), gamma, beta, axis, ndim, center,
                        scale)


def instance_norm(data, gamma, beta, axis=1, epsilon=1e-5, center=True, scale=True):
    """Instance normalisation (``relay.nn.instance_norm``): :func:`group_norm` with one group
    per channel. Arguments as :func:`group_norm` (no ``num_groups``).

    Returns:
        A Call of ``nn.instance_norm``.
    """
    return make_call("nn.instance_norm", (data, gamma, beta),
                     {"axis": int(axis), "epsilon": float(epsilon), "center": bool(center),
                      "scale": bool(scale)})


# -- rms_norm ----------------------------------------------------------------------------------

def _rms_axes(axis, ndim, what):
    return tuple(sorted(normalize_axes([axis] if isinstance(axis, int) else axis, ndim, what)))


def _rms_norm_rel(types, attrs):
    data = expect_tensor(types[0], "nn.rms_norm: data")
    gamma = expect_tensor(types[1], "nn.rms_norm: gamma")
    axes = _rms_axes(attrs["axis"], data.ndim, "nn.rms_norm: axis")
    expected = tuple(data.shape[a] for a in axes)
    if gamma.ndim != len(expected) or any(dims_differ(a, b)
                                          for a, b in zip(gamma.shape, expected)):
        raise TypeInferenceError(f"nn.rms_norm: gamma must have shape {expected}, got "
                                 f"{gamma.shape}")
    return data


_RMS_NORM = register_op("nn.rms_norm", ("data", "gamma"),
                        attrs=("relay.attrs.RMSNormAttrs", [("axis", -1), ("epsilon", 1e-5)]),
                        type_rel=_rms_norm_rel, pattern=OpPattern.OPAQUE,
                        description="data / sqrt(mean(data**2 over axis) + epsilon) * gamma")


def _gamma_shape(ndim, axes, gamma_shape):
    shape = [1] * ndim
    for a, size in zip(axes, gamma_shape):
        shape[a] = size
    return tuple(shape)


@_RMS_NORM.def_impl
def _rms_norm_ref(data, gamma, axis=-1, epsilon=1e-5):
    axes = _rms_axes(axis, data.ndim, "axis")
    scale = 1.0 / np.sqrt(np.mean(np.square(data), axis=axes, keepdims=True) + epsilon)
    out = data * scale * gamma.reshape(_gamma_shape(data.ndim, axes, gamma.shape))
    return (out.astype(data.dtype, copy=False),)


@_RMS_NORM.def_grad
@composite_grad
def _rms_norm_grad(data, gamma, axis=-1, epsilon=1e-5):
    data_type, gamma_type = arg_types([data, gamma], "nn.rms_norm")
    axes = _rms_axes(axis, data_type.ndim, "axis")
    mean_square = _call("mean", _call("multiply", data, data), axis=list(axes), keepdims=True,
                        exclude=False)
    inv = _call("rsqrt", _call("add", mean_square, _scalar(epsilon, mean_square)))
    shaped = _call("reshape", gamma, newshape=_gamma_shape(data_type.ndim, axes,
                                                           gamma_type.shape), allowzero=False)
    return _call("multiply", _call("multiply", data, inv), shaped)


def rms_norm(data, gamma, axis=-1, epsilon=1e-5):
    """Root-mean-square normalisation (as ``relax.op.nn.rms_norm``; not in Relay v0.16).

    Args:
        data: the input.
        gamma: the scale, shaped like ``data``'s dims on ``axis``.
        axis: an int or a list of ints: the normalised axes.
        epsilon: added to the mean square.

    Returns:
        A Call of ``nn.rms_norm``.
    """
    axis = int(axis) if isinstance(axis, (int, np.integer)) else [int(a) for a in axis]
    return make_call("nn.rms_norm", (data, gamma), {"axis": axis, "epsilon": float(epsilon)})


# -- lrn ---------------------------------------------------------------------------------------

def _lrn_rel(types, attrs):
    data = expect_tensor(types[0], "nn.lrn: data")
    normalize_axis(attrs["axis"], data.ndim, "nn.lrn: axis")
    if not isinstance(attrs["size"], int) or attrs["size"] < 1:
        raise TypeInferenceError(f"nn.lrn: size must be a positive int, got {attrs['size']!r}")
    return data


_LRN = register_op("nn.lrn", ("data",),
                   attrs=("relay.attrs.LRNAttrs", [("size", 5), ("axis", 1), ("bias", 2.0),
                                                   ("alpha", 1e-5), ("beta", 0.75)]),
                   type_rel=_lrn_rel, pattern=OpPattern.OPAQUE,
                   description="local response normalisation across a window of channels")


@_LRN.def_impl
def _lrn_ref(data, size=5, axis=1, bias=2.0, alpha=1e-5, beta=0.75):
    axis %= data.ndim
    # Window of `size` channels starting size // 2 before each channel (TVM's topi.nn.lrn).
    widths = [(0, 0)] * data.ndim
    widths[axis] = (size // 2, size - 1 - size // 2)
    padded = np.pad(np.square(data), widths)
    window_sum = np.sum(np.lib.stride_tricks.sliding_window_view(padded, size, axis=axis),
                        axis=-1)
    out = data / np.power(bias + alpha * window_sum / size, beta)
    return (out.astype(data.dtype, copy=False),)


@_LRN.def_grad
@composite_grad
def _lrn_grad(data, size=5, axis=1, bias=2.0, alpha=1e-5, beta=0.75):
    data_type = arg_types([data], "nn.lrn")[0]
    axis %= data_type.ndim
    channels = data_type.shape[axis]
    if not isinstance(channels, int):
        raise GradientError("the gradient of nn.lrn needs a static channel count")
    square = _call("multiply", data, data)
    widths = [(0, 0)] * data_type.ndim
    widths[axis] = (size // 2, size - 1 - size // 2)
    padded = _call("nn.pad", square, _scalar(0.0, data), pad_width=tuple(widths),
                   pad_mode="constant")
    total = None
    for offset in range(size):
        window = _call("strided_slice", padded, begin=[offset], end=[offset + channels],
                       strides=[1], axes=[axis], slice_mode="end")
        total = window if total is None else _call("add", total, window)
    denominator = _call("power", _call("add", _scalar(bias, data),
                                       _call("multiply", _scalar(alpha / size, data), total)),
                        _scalar(beta, data))
    return _call("divide", data, denominator)


def lrn(data, size=5, axis=1, bias=2.0, alpha=1e-5, beta=0.75):
    """Local response normalisation (``relay.nn.lrn``):
    ``data / (bias + alpha / size * sum(data**2 over the window)) ** beta``; the window
    spans channels ``[c - size // 2, c - size // 2 + size - 1]``.

    Args:
        data: the input tensor.
        size: the window length along ``axis``.
        axis: the channel axis.
        bias: the constant term.
        alpha: the scale of the window sum.
        beta: the exponent.

    Returns:
        A Call of ``nn.lrn``.
    """
    return make_call("nn.lrn", (data,), {"size": int(size), "axis": int(axis),
                                         "bias": float(bias), "alpha": float(alpha),
                                         "beta": float(beta)})


# -- l2_normalize ------------------------------------------------------------------------------

def _l2_axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    return tuple(sorted(normalize_axes([axis] if isinstance(axis, int) else axis, ndim,
                                       "nn.l2_normalize: axis")))


def _l2_rel(types, attrs):
    data = expect_tensor(types[0], "nn.l2_normalize: data")
    _l2_axes(attrs["axis"], data.ndim)
    return data


_L2_NORMALIZE = register_op("nn.l2_normalize", ("data",),
                            attrs=("relay.attrs.L2NormalizeAttrs", [("eps", 1e-12),
                                                                    ("axis", None)]),
                            type_rel=_l2_rel, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                            description="data / sqrt(max(sum(data**2 over axis), eps))")


@_L2_NORMALIZE.def_impl
def _l2_ref(data, eps=1e-12, axis=None):
    total = np.sum(np.square(data), axis=_l2_axes(axis, data.ndim), keepdims=True)
    return ((data / np.sqrt(np.maximum(total, eps))).astype(data.dtype, copy=False),)


@_L2_NORMALIZE.def_grad
@composite_grad
def _l2_grad(data, eps=1e-12, axis=None):
    axes = None if axis is None else ([axis] if isinstance(axis, int) else list(axis))
    total = _call("sum", _call("multiply", data, data), axis=axes, keepdims=True, exclude=False)
    return _call("divide", data, _call("sqrt", _call("maximum", total, _scalar(eps, total))))


def l2_normalize(data, eps, axis=None):
    """L2 normalisation over ``axis`` (``relay.nn.l2_normalize``; None: every axis).

    Args:
        data: the input tensor.
        eps: the lower bound of the squared norm.
        axis: the axes normalised over.

    Returns:
        A Call of ``nn.l2_normalize``.
    """
    axis = None if axis is None else [int(a) for a in np.atleast_1d(axis)]
    return make_call("nn.l2_normalize", (data,), {"eps": float(eps), "axis": axis})
