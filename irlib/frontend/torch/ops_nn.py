"""Neural-network converters for functions and ATen ops: convolution, linear/matmul,
normalisation, softmax, pooling, dropout, embedding, attention, interpolate and pad."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from . import nn_helpers as H
from ._args import arg, norm_axis
from .errors import unsupported
from .registry import converter

aten = torch.ops.aten


# -- convolution -----------------------------------------------------------------------------

def _conv_function(ctx, args, kwargs):
    return H.conv(ctx, args[0], arg(args, kwargs, 1, "weight"), arg(args, kwargs, 2, "bias", None),
                  arg(args, kwargs, 3, "stride", 1), arg(args, kwargs, 4, "padding", 0),
                  arg(args, kwargs, 5, "dilation", 1), arg(args, kwargs, 6, "groups", 1))


converter(F.conv1d, F.conv2d, F.conv3d, aten.conv1d.default, aten.conv2d.default,
          aten.conv3d.default, getattr(aten.conv2d, "padding", None),
          getattr(aten.conv1d, "padding", None))(_conv_function)


@converter(F.conv_transpose1d, F.conv_transpose2d, aten.conv_transpose1d.default,
           aten.conv_transpose2d.input)
def _conv_transpose_function(ctx, args, kwargs):
    dilation = arg(args, kwargs, 7, "dilation", 1)
    return H.conv(ctx, args[0], arg(args, kwargs, 1, "weight"), arg(args, kwargs, 2, "bias", None),
                  arg(args, kwargs, 3, "stride", 1), arg(args, kwargs, 4, "padding", 0),
                  dilation, arg(args, kwargs, 6, "groups", 1), transposed=True,
                  output_padding=arg(args, kwargs, 5, "output_padding", 0))


@converter(aten.convolution.default)
def _convolution(ctx, args, kwargs):
    x, weight, bias, stride, padding, dilation, transposed, output_padding, groups = args[:9]
    return H.conv(ctx, x, weight, bias, stride, padding, dilation, groups,
                  transposed=bool(transposed), output_padding=output_padding)


# -- linear and matrix products ----------------------------------------------------------------

@converter(F.linear, aten.linear.default)
def _linear(ctx, args, kwargs):
    return H.linear(ctx, args[0], arg(args, kwargs, 1, "weight"), arg(args, kwargs, 2, "bias", None))


@converter(torch.matmul, "Tensor.matmul", aten.matmul.default, aten.mm.default,
           torch.mm, "Tensor.mm", __import__("operator").matmul)
def _matmul(ctx, args, kwargs):
    return H.matmul(ctx, args[0], arg(args, kwargs, 1, "other", None) if len(args) > 1 or
                    "other" in kwargs else arg(args, kwargs, 1, "mat2"))


@converter(torch.bmm, "Tensor.bmm", aten.bmm.default)
def _bmm(ctx, args, kwargs):
    return H.bmm(ctx, args[0], arg(args, kwargs, 1, "mat2"))


@converter(torch.addmm, aten.addmm.default)
def _addmm(ctx, args, kwargs):
    bias, a, b = args[0], args[1], args[2]
    beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
    product = H.matmul(ctx, a, b)
    if alpha != 1:
        product = ctx.emit("multiply", product, ctx.scalar(alpha, ctx.dtype(product)))
    if beta != 1:
        bias = ctx.emit("multiply", bias, ctx.scalar(beta, ctx.dtype(bias)))
    return ctx.emit("add", product, bias)


@converter(torch.einsum, aten.einsum.default)
def _einsum(ctx, args, kwargs):
    equation = args[0]
    operands = list(args[1]) if len(args) == 2 and isinstance(args[1], (list, tuple)) else \
        list(args[1:])
    return ctx.emit_tuple_op("einsum", operands, equation=equation.replace(" ", ""))


# -- normalisation and softmax -----------------------------------------------------------------

@converter(F.batch_norm)
def _batch_norm(ctx, args, kwargs):
    return H.batch_norm(ctx, args[0], arg(args, kwargs, 1, "running_mean"),
                        arg(args, kwargs, 2, "running_var"), arg(args, kwargs, 3, "weight", None),
                        arg(args, kwargs, 4, "bias", None), arg(args, kwargs, 7, "eps", 1e-5))


@converter(aten.batch_norm.default)
def _aten_batch_norm(ctx, args, kwargs):
    # (input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn)
    return H.batch_norm(ctx, args[0], args[3], args[4], args[1], args[2],
                        arg(args, kwargs, 7, "eps", 1e-5))


@converter(aten._native_batch_norm_legit_no_training.default)
def _native_batch_norm(ctx, args, kwargs):
    x, weight, bias, mean, var = args[:5]
    eps = arg(args, kwargs, 6, "eps", 1e-5)
    out = H.batch_norm(ctx, x, mean, var, weight, bias, eps)
    return (out, mean, var)


@converter(F.layer_norm, aten.layer_norm.default)
def _layer_norm(ctx, args, kwargs):
    return H.layer_norm(ctx, args[0], arg(args, kwargs, 1, "normalized_shape"),
                        arg(args, kwargs, 2, "weight", None), arg(args, kwargs, 3, "bias", None),
                        arg(args, kwargs, 4, "eps", 1e-5))


@converter(aten.native_layer_norm.default)
def _native_layer_norm(ctx, args, kwargs):
    out = H.layer_norm(ctx, args[0], args[1], args[2], args[3], args[4])
    return (out, None, None)


@converter(F.group_norm, aten.group_norm.default)
def _group_norm(ctx, args, kwargs):
    return H.group_norm(ctx, args[0], arg(args, kwargs, 1, "num_groups"),
                        arg(args, kwargs, 2, "weight", None), arg(args, kwargs, 3, "bias", None),
                        arg(args, kwargs, 4, "eps", 1e-5))


@converter(F.softmax, torch.softmax, "Tensor.softmax", aten.softmax.int)
def _softmax(ctx, args, kwargs):
    return H.softmax(ctx, args[0], arg(args, kwargs, 1, "dim", None),
                     arg(args, kwargs, 3 if len(args) > 3 else 2, "dtype", None))


@converter(F.log_softmax, torch.log_softmax, "Tensor.log_softmax", aten.log_softmax.int)
def _log_softmax(ctx, args, kwargs):
    return H.softmax(ctx, args[0], arg(args, kwargs, 1, "dim", None),
                     arg(args, kwargs, 3 if len(args) > 3 else 2, "dtype", None), log=True)


@converter(aten._softmax.default)
def _aten_softmax(ctx, args, kwargs):
    return H.softmax(ctx, args[0], args[1])


@converter(aten._log_softmax.default)
def _aten_log_softmax(ctx, args, kwargs):
    return H.softmax(ctx, args[0], args[1], log=True)


# -- pooling ---------------------------------------------------------------------------------

def _max_pool(rank):
    def convert(ctx, args, kwargs):
        if arg(args, kwargs, 6, "return_indices", False):
            unsupported("max_pool with return_indices=True")
        return H.pool(ctx, "max", args[0], arg(args, kwargs, 1, "kernel_size"),
                      arg(args, kwargs, 2, "stride", None), arg(args, kwargs, 3, "padding", 0),
                      arg(args, kwargs, 4, "dilation", 1), arg(args, kwargs, 5, "ceil_mode", False),
                      rank=rank)
    return convert


converter(F.max_pool1d, aten.max_pool1d.default)(_max_pool(1))
converter(F.max_pool2d, aten.max_pool2d.default)(_max_pool(2))
converter(F.max_pool3d, aten.max_pool3d.default)(_max_pool(3))


@converter(aten.max_pool2d_with_indices.default)
def _max_pool_with_indices(ctx, args, kwargs):
    out = _max_pool(2)(ctx, args, {})
    return (out, None)


def _avg_pool(rank):
    def convert(ctx, args, kwargs):
        if arg(args, kwargs, 6, "divisor_override", None) is not None:
            unsupported("avg_pool with divisor_override")
        return H.pool(ctx, "avg", args[0], arg(args, kwargs, 1, "kernel_size"),
                      arg(args, kwargs, 2, "stride", None), arg(args, kwargs, 3, "padding", 0),
                      ceil_mode=arg(args, kwargs, 4, "ceil_mode", False),
                      count_include_pad=arg(args, kwargs, 5, "count_include_pad", True),
                      rank=rank)
    return convert


converter(F.avg_pool1d, aten.avg_pool1d.default)(_avg_pool(1))
converter(F.avg_pool2d, aten.avg_pool2d.default)(_avg_pool(2))
converter(F.avg_pool3d, aten.avg_pool3d.default)(_avg_pool(3))


def _adaptive(kind, rank):
    def convert(ctx, args, kwargs):
        if kind == "max" and arg(args, kwargs, 2, "return_indices", False):
            unsupported("adaptive_max_pool with return_indices=True")
        return H.adaptive_pool(ctx, kind, args[0], arg(args, kwargs, 1, "output_size"), rank)
    return convert


converter(F.adaptive_avg_pool1d, aten.adaptive_avg_pool1d.default)(_adaptive("avg", 1))
converter(F.adaptive_avg_pool2d, aten.adaptive_avg_pool2d.default,
          aten._adaptive_avg_pool2d.default)(_adaptive("avg", 2))
converter(F.adaptive_max_pool2d)(_adaptive("max", 2))


@converter(aten.adaptive_max_pool2d.default)
def _aten_adaptive_max(ctx, args, kwargs):
    return (H.adaptive_pool(ctx, "max", args[0], args[1], 2), None)


# -- dropout, embedding ------------------------------------------------------------------------

@converter(F.dropout, F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout, torch.dropout,
           aten.dropout.default, aten.feature_dropout.default, aten.alpha_dropout.default,
           aten.dropout_.default)
def _dropout(ctx, args, kwargs):
    training = kwargs.get("training", kwargs.get("train", args[2] if len(args) > 2 else True))
    if training and arg(args, kwargs, 1, "p", 0.5) != 0:
        unsupported("dropout with training=True (random); trace the model in eval mode")
    return args[0]


@converter(aten.native_dropout.default)
def _native_dropout(ctx, args, kwargs):
    if arg(args, kwargs, 2, "train", False):
        unsupported("native_dropout with train=True")
    return (args[0], None)


def embedding(ctx, weight, indices):
    """Rows of ``weight`` at ``indices`` (take along axis 0)."""
    return ctx.emit("take", weight, indices, axis=0)


@converter(F.embedding)
def _embedding_function(ctx, args, kwargs):
    return embedding(ctx, arg(args, kwargs, 1, "weight"), args[0])


@converter(aten.embedding.default)
def _aten_embedding(ctx, args, kwargs):
    return embedding(ctx, args[0], args[1])


# -- attention ---------------------------------------------------------------------------------

@converter(F.scaled_dot_product_attention, aten.scaled_dot_product_attention.default)
def _sdpa(ctx, args, kwargs):
    if arg(args, kwargs, 4, "dropout_p", 0.0):
        unsupported("scaled_dot_product_attention with dropout_p > 0")
    if kwargs.get("enable_gqa", False):
        unsupported("scaled_dot_product_attention with enable_gqa=True")
    return H.attention(ctx, args[0], arg(args, kwargs, 1, "key"), arg(args, kwargs, 2, "value"),
                       arg(args, kwargs, 3, "attn_mask", None), arg(args, kwargs, 5, "is_causal", False),
                       kwargs.get("scale", args[6] if len(args) > 6 else None))


# -- resampling and padding --------------------------------------------------------------------

@converter(F.interpolate, F.upsample)
def _interpolate(ctx, args, kwargs):
    return H.interpolate(ctx, args[0], arg(args, kwargs, 1, "size", None),
                         arg(args, kwargs, 2, "scale_factor", None),
                         arg(args, kwargs, 3, "mode", "nearest"),
                         arg(args, kwargs, 4, "align_corners", None))


@converter(aten.upsample_nearest2d.vec)
def _upsample_nearest(ctx, args, kwargs):
    return H.interpolate(ctx, args[0], args[1], arg(args, kwargs, 2, "scale_factors", None),
                         "nearest")


@converter(aten.upsample_bilinear2d.vec)
def _upsample_bilinear(ctx, args, kwargs):
    return H.interpolate(ctx, args[0], args[1], arg(args, kwargs, 3, "scale_factors", None),
                         "bilinear", arg(args, kwargs, 2, "align_corners", False))


@converter(F.pad, aten.pad.default)
def _pad(ctx, args, kwargs):
    return H.pad(ctx, args[0], arg(args, kwargs, 1, "pad"), arg(args, kwargs, 2, "mode", "constant"),
                 arg(args, kwargs, 3, "value", None))


@converter(aten.constant_pad_nd.default)
def _constant_pad(ctx, args, kwargs):
    return H.pad(ctx, args[0], args[1], "constant", arg(args, kwargs, 2, "value", 0))


@converter(aten.reflection_pad2d.default, aten.reflection_pad1d.default)
def _reflection_pad(ctx, args, kwargs):
    return H.pad(ctx, args[0], args[1], "reflect")


@converter(aten.replication_pad2d.default, aten.replication_pad1d.default)
def _replication_pad(ctx, args, kwargs):
    return H.pad(ctx, args[0], args[1], "replicate")


@converter(torch.cumsum, "Tensor.cumsum", aten.cumsum.default)
def _cumsum(ctx, args, kwargs):
    from . import dtypes
    x = args[0]
    dtype = arg(args, kwargs, 2, "dtype", None)
    axis = norm_axis(arg(args, kwargs, 1, "dim"), ctx.ndim(x))
    if dtype is not None:
        x = ctx.cast(x, dtypes.to_irlib(dtype))
    elif not ctx.dtype(x).startswith(("float", "bfloat", "complex")):
        x = ctx.cast(x, "int64")
    return ctx.emit("cumsum", x, axis=axis)
