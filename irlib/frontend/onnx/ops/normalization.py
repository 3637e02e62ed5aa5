"""Normalization ONNX ops: BatchNormalization, InstanceNormalization, LayerNormalization,
GroupNormalization, RMSNormalization, LpNormalization, MeanVarianceNormalization.

Most are composed from reductions and elementwise ops, which makes their optional
statistics outputs (LayerNormalization's Mean and InvStdDev) fall out naturally.
"""

from __future__ import annotations

from ..registry import converter
from .common import normalize_axis, scalar, unsupported


def _channel_view(ctx, vector, ndim):
    """A per-channel vector reshaped to broadcast against NC... data."""
    return ctx.emit("reshape", vector, newshape=[-1] + [1] * (ndim - 2))


@converter("BatchNormalization")
def _batch_norm(ctx, inputs, attrs):
    data, gamma, beta, mean, var = inputs[:5]
    if attrs.get("training_mode", 0) and ctx.opset >= 14:
        return _batch_norm_training(ctx, inputs, attrs)
    if attrs.get("training_mode", 0) or ctx.num_outputs > 1 and ctx.opset >= 14:
        unsupported("BatchNormalization in training mode is not supported before opset 14, "
                    "nor its running statistics outside training mode")
    if ctx.num_outputs > 1:
        unsupported("BatchNormalization's training outputs are not supported")
    epsilon = float(attrs.get("epsilon", 1e-5))
    dtype = ctx.dtype(data)
    ndim = ctx.ndim(data)
    inv = ctx.emit("rsqrt", ctx.emit("add", var, scalar(ctx, epsilon, ctx.dtype(var))))
    scale = ctx.emit("multiply", gamma, inv)
    shift = ctx.emit("subtract", beta, ctx.emit("multiply", mean, scale))
    if ctx.dtype(scale) != dtype:
        scale = ctx.emit("cast", scale, dtype=dtype)
        shift = ctx.emit("cast", shift, dtype=dtype)
    if ndim == 1:
        return ctx.emit("add", ctx.emit("multiply", data, scale), shift)
    return ctx.emit("add", ctx.emit("multiply", data, _channel_view(ctx, scale, ndim)),
                    _channel_view(ctx, shift, ndim))


def _batch_norm_training(ctx, inputs, attrs):
    """Opset 14+ training mode: normalize with the batch's own statistics (over every axis
    but the channels, biased variance) and also return the running statistics
    ``input * momentum + batch * (1 - momentum)``."""
    data, gamma, beta, mean, var = inputs[:5]
    ndim = ctx.ndim(data)
    if ndim < 2:
        unsupported("BatchNormalization in training mode needs [N, C, ...] data")
    dtype, stats_dtype = ctx.dtype(data), ctx.dtype(mean)
    momentum = float(attrs.get("momentum", 0.9))
    axes = [0] + list(range(2, ndim))
    batch_mean = ctx.emit("mean", data, axis=axes, keepdims=True)
    centered = ctx.emit("subtract", data, batch_mean)
    batch_var = ctx.emit("mean", ctx.emit("multiply", centered, centered), axis=axes,
                         keepdims=True)
    inv = ctx.emit("rsqrt", ctx.emit("add", batch_var,
                                     scalar(ctx, float(attrs.get("epsilon", 1e-5)), dtype)))
    gamma, beta = (value if ctx.dtype(value) == dtype else
                   ctx.emit("cast", value, dtype=dtype) for value in (gamma, beta))
    outputs = [ctx.emit("add", ctx.emit("multiply", ctx.emit("multiply", centered, inv),
                                        _channel_view(ctx, gamma, ndim)),
                        _channel_view(ctx, beta, ndim))]
    for running, batch in ((mean, batch_mean), (var, batch_var)):
        batch = ctx.emit("reshape", batch, newshape=[-1])
        if ctx.dtype(batch) != stats_dtype:
            batch = ctx.emit("cast", batch, dtype=stats_dtype)
        outputs.append(ctx.emit(
            "add", ctx.emit("multiply", running, scalar(ctx, momentum, stats_dtype)),
            ctx.emit("multiply", batch, scalar(ctx, 1.0 - momentum, stats_dtype))))
    return outputs[:max(ctx.num_outputs, 1)]


def _normalize(ctx, data, axes, epsilon):
    """``(x - mean) * rsqrt(var + eps)`` over ``axes``; also returns mean and the inverse
    standard deviation (keepdims)."""
    mean = ctx.emit("mean", data, axis=axes, keepdims=True)
    centered = ctx.emit("subtract", data, mean)
    var = ctx.emit("mean", ctx.emit("multiply", centered, centered), axis=axes, keepdims=True)
    inv = ctx.emit("rsqrt", ctx.emit("add", var, scalar(ctx, epsilon, ctx.dtype(data))))
    return ctx.emit("multiply", centered, inv), mean, inv


@converter("InstanceNormalization")
def _instance_norm(ctx, inputs, attrs):
    data, gamma, beta = inputs
    ndim = ctx.ndim(data)
    normed, _, _ = _normalize(ctx, data, list(range(2, ndim)), float(attrs.get("epsilon", 1e-5)))
    return ctx.emit("add", ctx.emit("multiply", normed, _channel_view(ctx, gamma, ndim)),
                    _channel_view(ctx, beta, ndim))


@converter("LayerNormalization")
def _layer_norm(ctx, inputs, attrs):
    data, scale = inputs[0], inputs[1]
    bias = inputs[2] if len(inputs) > 2 else None
    ndim = ctx.ndim(data)
    axis = normalize_axis(attrs.get("axis", -1), ndim)
    dtype = ctx.dtype(data)
    work = data
    stash = attrs.get("stash_type", 1)
    if stash == 1 and dtype != "float32":
        work = ctx.emit("cast", data, dtype="float32")
    normed, mean, inv = _normalize(ctx, work, list(range(axis, ndim)),
                                   float(attrs.get("epsilon", 1e-5)))
    if ctx.dtype(normed) != dtype:
        normed = ctx.emit("cast", normed, dtype=dtype)
    result = ctx.emit("multiply", normed, scale)
    if bias is not None:
        result = ctx.emit("add", result, bias)
    return [result, mean, inv]


@converter("GroupNormalization", since=18)
def _group_norm(ctx, inputs, attrs):
    data, scale, bias = inputs
    shape = ctx.static_shape(data)
    if shape is None:
        unsupported("GroupNormalization needs a static input shape")
    groups = attrs["num_groups"]
    epsilon = float(attrs.get("epsilon", 1e-5))
    batch, channels = shape[0], shape[1]
    grouped = ctx.emit("reshape", data, newshape=[batch, groups, -1])
    normed, _, _ = _normalize(ctx, grouped, [2], epsilon)
    normed = ctx.emit("reshape", normed, newshape=list(shape))
    ndim = len(shape)
    if ctx.opset < 21 and ctx.shape(scale)[0] == groups and groups != channels:
        # opset 18-20: scale and bias are per group
        per = channels // groups
        scale = ctx.emit("repeat", scale, repeats=per, axis=0)
        bias = ctx.emit("repeat", bias, repeats=per, axis=0)
    return ctx.emit("add", ctx.emit("multiply", normed, _channel_view(ctx, scale, ndim)),
                    _channel_view(ctx, bias, ndim))


@converter("RMSNormalization")
def _rms_norm(ctx, inputs, attrs):
    data, scale = inputs
    ndim = ctx.ndim(data)
    axis = normalize_axis(attrs.get("axis", -1), ndim)
    dtype = ctx.dtype(data)
    work = ctx.emit("cast", data, dtype="float32") if dtype != "float32" else data
    square = ctx.emit("mean", ctx.emit("multiply", work, work), axis=list(range(axis, ndim)),
                      keepdims=True)
    inv = ctx.emit("rsqrt", ctx.emit("add", square,
                                     scalar(ctx, float(attrs.get("epsilon", 1e-5)), "float32")))
    normed = ctx.emit("multiply", work, inv)
    if dtype != "float32":
        normed = ctx.emit("cast", normed, dtype=dtype)
    return ctx.emit("multiply", normed, scale)


@converter("LpNormalization")
def _lp_norm(ctx, inputs, attrs):
    data = inputs[0]
    axis = normalize_axis(attrs.get("axis", -1), ctx.ndim(data))
    p = attrs.get("p", 2)
    if p == 1:
        norm = ctx.emit("sum", ctx.emit("abs", data), axis=[axis], keepdims=True)
    elif p == 2:
        norm = ctx.emit("sqrt", ctx.emit("sum", ctx.emit("multiply", data, data), axis=[axis],
                                         keepdims=True))
    else:
        unsupported(f"LpNormalization p={p} is not supported")
    zero = scalar(ctx, 0, ctx.dtype(data))
    safe = ctx.emit("where", ctx.emit("equal", norm, zero), scalar(ctx, 1, ctx.dtype(data)),
                    norm)
    return ctx.emit("where", ctx.emit("equal", norm, zero), zero,
                    ctx.emit("divide", data, safe))


@converter("MeanVarianceNormalization")
def _mvn(ctx, inputs, attrs):
    data = inputs[0]
    axes = [normalize_axis(a, ctx.ndim(data)) for a in attrs.get("axes", [0, 2, 3])]
    mean = ctx.emit("mean", data, axis=axes, keepdims=True)
    centered = ctx.emit("subtract", data, mean)
    var = ctx.emit("mean", ctx.emit("multiply", centered, centered), axis=axes, keepdims=True)
    std = ctx.emit("sqrt", var)
    return ctx.emit("divide", centered, ctx.emit("add", std, scalar(ctx, 1e-9, ctx.dtype(data))))
