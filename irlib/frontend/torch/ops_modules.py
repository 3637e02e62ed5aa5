"""``call_module`` converters (FX graphs): ``torch.nn`` layers, their weights taken from the
module (named after its path in the model: ``layer1.0.conv1.weight``)."""

from __future__ import annotations

from torch import nn

from . import nn_helpers as H
from .errors import unsupported
from .ops_elementwise import elu, gelu, hardsigmoid, hardtanh, leaky_relu, relu, silu, softplus
from .ops_nn import embedding
from .registry import converter


def weight(ctx, module, name: str):
    """The expression of ``module.<name>`` (None when the module has no such tensor)."""
    tensor = getattr(module, name, None)
    if tensor is None:
        return None
    return ctx.weight(f"{ctx.module_path}.{name}", tensor)


@converter(nn.Conv1d, nn.Conv2d, nn.Conv3d)
def _conv(ctx, module, args, kwargs):
    if module.padding_mode != "zeros":
        unsupported(f"{type(module).__name__} with padding_mode={module.padding_mode!r}")
    return H.conv(ctx, args[0], weight(ctx, module, "weight"), weight(ctx, module, "bias"),
                  module.stride, module.padding, module.dilation, module.groups)


@converter(nn.ConvTranspose1d, nn.ConvTranspose2d)
def _conv_transpose(ctx, module, args, kwargs):
    if len(args) > 1 or kwargs.get("output_size") is not None:
        unsupported("ConvTranspose with output_size")
    return H.conv(ctx, args[0], weight(ctx, module, "weight"), weight(ctx, module, "bias"),
                  module.stride, module.padding, module.dilation, module.groups,
                  transposed=True, output_padding=module.output_padding)


@converter(nn.Linear)
def _linear(ctx, module, args, kwargs):
    return H.linear(ctx, args[0], weight(ctx, module, "weight"), weight(ctx, module, "bias"))


@converter(nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)
def _batch_norm(ctx, module, args, kwargs):
    if module.running_mean is None:
        unsupported(f"{type(module).__name__} without running statistics")
    return H.batch_norm(ctx, args[0], weight(ctx, module, "running_mean"),
                        weight(ctx, module, "running_var"), weight(ctx, module, "weight"),
                        weight(ctx, module, "bias"), module.eps)


@converter(nn.LayerNorm)
def _layer_norm(ctx, module, args, kwargs):
    return H.layer_norm(ctx, args[0], module.normalized_shape, weight(ctx, module, "weight"),
                        weight(ctx, module, "bias"), module.eps)


@converter(nn.GroupNorm)
def _group_norm(ctx, module, args, kwargs):
    return H.group_norm(ctx, args[0], module.num_groups, weight(ctx, module, "weight"),
                        weight(ctx, module, "bias"), module.eps)


@converter(nn.Embedding)
def _embedding(ctx, module, args, kwargs):
    return embedding(ctx, weight(ctx, module, "weight"), args[0])


# -- activations -----------------------------------------------------------------------------

converter(nn.ReLU)(lambda ctx, module, args, kwargs: relu(ctx, args[0]))
converter(nn.ReLU6)(lambda ctx, module, args, kwargs: hardtanh(ctx, args[0], 0.0, 6.0))
converter(nn.Hardtanh)(lambda ctx, module, args, kwargs:
                       hardtanh(ctx, args[0], module.min_val, module.max_val))
converter(nn.GELU)(lambda ctx, module, args, kwargs: gelu(ctx, args[0], module.approximate))
converter(nn.SiLU)(lambda ctx, module, args, kwargs: silu(ctx, args[0]))
converter(nn.LeakyReLU)(lambda ctx, module, args, kwargs:
                        leaky_relu(ctx, args[0], module.negative_slope))
converter(nn.Hardsigmoid)(lambda ctx, module, args, kwargs: hardsigmoid(ctx, args[0]))
converter(nn.Hardswish)(lambda ctx, module, args, kwargs:
                        ctx.emit("multiply", args[0], hardsigmoid(ctx, args[0])))
converter(nn.ELU)(lambda ctx, module, args, kwargs: elu(ctx, args[0], module.alpha))
converter(nn.Softplus)(lambda ctx, module, args, kwargs:
                       softplus(ctx, args[0], module.beta, module.threshold))
converter(nn.Softmax)(lambda ctx, module, args, kwargs: H.softmax(ctx, args[0], module.dim))
converter(nn.LogSoftmax)(lambda ctx, module, args, kwargs:
                         H.softmax(ctx, args[0], module.dim, log=True))


# -- pooling and resampling ------------------------------------------------------------------

def _max_pool(rank):
    def convert(ctx, module, args, kwargs):
        if module.return_indices:
            unsupported("MaxPool with return_indices=True")
        return H.pool(ctx, "max", args[0], module.kernel_size, module.stride, module.padding,
                      module.dilation, module.ceil_mode, rank=rank)
    return convert


converter(nn.MaxPool1d)(_max_pool(1))
converter(nn.MaxPool2d)(_max_pool(2))
converter(nn.MaxPool3d)(_max_pool(3))


def _avg_pool(rank):
    def convert(ctx, module, args, kwargs):
        if getattr(module, "divisor_override", None) is not None:
            unsupported("AvgPool with divisor_override")
        return H.pool(ctx, "avg", args[0], module.kernel_size, module.stride, module.padding,
                      ceil_mode=module.ceil_mode, count_include_pad=module.count_include_pad,
                      rank=rank)
    return convert


converter(nn.AvgPool1d)(_avg_pool(1))
converter(nn.AvgPool2d)(_avg_pool(2))
converter(nn.AvgPool3d)(_avg_pool(3))
converter(nn.AdaptiveAvgPool1d)(lambda ctx, module, args, kwargs:
                                H.adaptive_pool(ctx, "avg", args[0], module.output_size, 1))
converter(nn.AdaptiveAvgPool2d)(lambda ctx, module, args, kwargs:
                                H.adaptive_pool(ctx, "avg", args[0], module.output_size, 2))


@converter(nn.AdaptiveMaxPool2d)
def _adaptive_max(ctx, module, args, kwargs):
    if module.return_indices:
        unsupported("AdaptiveMaxPool2d with return_indices=True")
    return H.adaptive_pool(ctx, "max", args[0], module.output_size, 2)


@converter(nn.Upsample)
def _upsample(ctx, module, args, kwargs):
    return H.interpolate(ctx, args[0], module.size, module.scale_factor, module.mode,
                         module.align_corners)


# -- attention -------------------------------------------------------------------------------

@converter(nn.MultiheadAttention)
def _multihead_attention(ctx, module, args, kwargs):
    """``nn.MultiheadAttention.forward`` (inference): in-projections, per-head scaled
    dot-product attention with key padding and attention masks, out-projection."""
    names = ["query", "key", "value", "key_padding_mask", "need_weights", "attn_mask",
             "average_attn_weights", "is_causal"]
    values = dict(zip(names, args))
    values.update(kwargs)
    query, key, value = values["query"], values["key"], values["value"]
    if values.get("need_weights", True):
        unsupported("MultiheadAttention with need_weights=True (pass need_weights=False)")
    if module.bias_k is not None or module.add_zero_attn:
        unsupported("MultiheadAttention with add_bias_kv or add_zero_attn")
    embed, heads = module.embed_dim, module.num_heads
    head_dim = embed // heads
    if module._qkv_same_embed_dim:
        packed = weight(ctx, module, "in_proj_weight")
        w_q, w_k, w_v = (ctx.emit("strided_slice", packed, begin=[i * embed],
                                  end=[(i + 1) * embed], strides=[1], axes=[0])
                         for i in range(3))
    else:
        w_q, w_k, w_v = (weight(ctx, module, f"{n}_proj_weight") for n in "qkv")
    in_bias = weight(ctx, module, "in_proj_bias")
    if in_bias is not None:
        b_q, b_k, b_v = (ctx.emit("strided_slice", in_bias, begin=[i * embed],
                                  end=[(i + 1) * embed], strides=[1], axes=[0])
                         for i in range(3))
    else:
        b_q = b_k = b_v = None
    batched = ctx.ndim(query) == 3
    if not batched:
        query, key, value = (ctx.emit("expand_dims", t, axis=1 if not module.batch_first
                                      else 0) for t in (query, key, value))
    if not module.batch_first:  # (L, N, E) -> (N, L, E)
        query, key, value = (ctx.emit("transpose", t, axes=[1, 0, 2])
                             for t in (query, key, value))
    batch, q_len = ctx.shape(query)[:2]
    k_len = ctx.shape(key)[1]

    def heads_of(x, w, b, length):
        projected = H.linear(ctx, x, w, b)
        split = ctx.emit("reshape", projected, newshape=[batch, length, heads, head_dim])
        return ctx.emit("transpose", split, axes=[0, 2, 1, 3])

    q = heads_of(query, w_q, b_q, q_len)
    k = heads_of(key, w_k, b_k, k_len)
    v = heads_of(value, w_v, b_v, k_len)
    mask = _combined_mask(ctx, values.get("attn_mask"), values.get("key_padding_mask"),
                          ctx.dtype(q), batch, heads, q_len, k_len)
    out = H.attention(ctx, q, k, v, mask, bool(values.get("is_causal", False)) and mask is None)
    out = ctx.emit("reshape", ctx.emit("transpose", out, axes=[0, 2, 1, 3]),
                   newshape=[batch, q_len, embed])
    proj = module.out_proj
    out = H.linear(ctx, out, ctx.weight(f"{ctx.module_path}.out_proj.weight", proj.weight),
                   None if proj.bias is None else
                   ctx.weight(f"{ctx.module_path}.out_proj.bias", proj.bias))
    if not module.batch_first:
        out = ctx.emit("transpose", out, axes=[1, 0, 2])
    if not batched:
        out = ctx.emit("squeeze", out, axis=[1 if not module.batch_first else 0])
    return (out, None)


def _as_additive(ctx, mask, dtype):
    if ctx.dtype(mask) == "bool":
        import numpy as np
        return ctx.emit("where", mask, ctx.scalar(-np.inf, dtype), ctx.scalar(0.0, dtype))
    return ctx.cast(mask, dtype)


def _combined_mask(ctx, attn_mask, key_padding_mask, dtype, batch, heads, q_len, k_len):
    """MultiheadAttention's masks as one additive mask broadcastable to (N, H, L, S)
    (True in a bool mask means *masked out*, unlike scaled_dot_product_attention)."""
    total = None
    if attn_mask is not None:
        mask = _as_additive(ctx, attn_mask, dtype)
        if ctx.ndim(mask) == 3:  # (N*H, L, S)
            mask = ctx.emit("reshape", mask, newshape=[batch, heads, q_len, k_len])
        total = mask
    if key_padding_mask is not None:
        pad = _as_additive(ctx, key_padding_mask, dtype)
        pad = ctx.emit("reshape", pad, newshape=[batch, 1, 1, k_len])
        total = pad if total is None else ctx.emit("add", total, pad)
    return total
