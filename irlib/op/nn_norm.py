"""More nn ops: ``nn.matmul``, ``nn.group_norm``, ``nn.instance_norm``, ``nn.rms_norm``,
``nn.lrn``, ``nn.l2_normalize`` and ``nn.prelu``.

Before/after in the text format::

    nn.group_norm(%x, %g, %b, num_groups=2)    /* x: (1, 4, 5, 5), g, b: (4) */
    -> Tensor[(1, 4, 5, 5), float32]

The gradients are the gradients of each op written as a composition of primitives (see
``_composite``).
"""

from __future__ import annotations

import numpy as np

from ..errors import GradientError, TypeInferenceError
from ..ir.expr import const
from ..ir.types import TensorType, normalize_dtype
from ._composite import arg_types, composite_grad
from .registry import OpPattern, make_call, register_op
from .type_relations import dims_differ, expect_tensor, normalize_axes, normalize_axis

__all__ = ["matmul", "group_norm", "instance_norm", "rms_norm", "lrn", "l2_normalize", "prelu"]


def _call(name, *args, **attrs):
    return make_call(name, args, attrs or None)


def _scalar(value, like):
    return _call("cast_like", const(float(value)), like)


def _check_param(op: str, name: str, ty, size):
    param = expect_tensor(ty, f"{op}: {name}")
    if param.ndim != 1 or dims_differ(param.shape[0], size):
        raise TypeInferenceError(f"{op}: {name} must have shape ({size},), got {param.shape}")


def _along(vector, axis: int, ndim: int):
    """numpy: a 1-D ``vector`` shaped to broadcast along ``axis`` of a rank-``ndim`` array."""
    shape = [1] * ndim
    shape[axis] = -1
    return np.reshape(vector, shape)


def _along_expr(vector, axis: int, ndim: int):
    """The expression counterpart of :func:`_along`."""
    if ndim - 1 - axis == 0:
        return vector
    return _call("expand_dims", vector, axis=1, num_newaxis=ndim - 1 - axis)


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
    """Instance normalisation (``relay.nn.instance_norm``); arguments as
    :func:`group_norm` with one group per channel.

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

    Returns:
        A Call of ``nn.l2_normalize``.
    """
    axis = None if axis is None else [int(a) for a in np.atleast_1d(axis)]
    return make_call("nn.l2_normalize", (data,), {"eps": float(eps), "axis": axis})


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
