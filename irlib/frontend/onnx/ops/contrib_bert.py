"""com.microsoft BERT ops that onnxruntime's transformer optimizer fuses encoders into, and
their quantized forms (``quantize_dynamic`` of an optimized model): Attention, QAttention,
EmbedLayerNormalization, QEmbedLayerNormalization, composed from core ops.

Supported: self-attention without past state (no ``past``/``present``, not unidirectional,
no rotary or attention bias), with no mask, a 1-D ``mask_index`` of key lengths (what
EmbedLayerNormalization outputs: keys at or after the length are masked), or a raw 2-D
(batch, keys) / 3-D (batch, queries, keys) 0/1 mask. Masked scores get ``mask_filter_value``
(-10000 by default) added before the softmax, as onnxruntime does.
"""

from __future__ import annotations

import numpy as np

from ..registry import converter
from . import normalization, quantize
from .common import scalar, unsupported

MS = "com.microsoft"


def _input(inputs, index):
    return inputs[index] if len(inputs) > index else None


def _split_sizes(attrs, total):
    if not isinstance(total, int):
        unsupported("Attention weights with a run-time column count are not supported")
    sizes = [int(s) for s in attrs.get("qkv_hidden_sizes", [])] or [total // 3] * 3
    if len(sizes) != 3 or sum(sizes) != total or sizes[0] != sizes[1]:
        unsupported(f"Attention qkv_hidden_sizes {sizes} do not split {total} columns "
                    f"into equal query/key sizes and a value size")
    return sizes


def _heads(ctx, value, num_heads):
    """(B, S, N*H) -> (B, N, S, H)."""
    split = ctx.emit("reshape", value, newshape=[0, 0, num_heads, -1])
    return ctx.emit("transpose", split, axes=[0, 2, 1, 3])


def _mask_bias(ctx, mask, keys, filter_value):
    """The additive score bias (0 or ``filter_value``) of ``mask_index``, broadcastable
    against (B, N, S, keys) scores."""
    rank = ctx.ndim(mask)
    if rank == 1:
        shape = ctx.shape(mask)
        if isinstance(shape[0], int) and isinstance(ctx.shape(keys)[0], int) \
                and shape[0] != ctx.shape(keys)[0]:
            unsupported("Attention mask_index of shape (2 * batch) (start and end positions) "
                        "is not supported")
        length = ctx.emit("cast", mask, dtype="int64")
        positions = ctx.emit("arange", scalar(ctx, 0, "int64"),
                             ctx.emit("take", ctx.emit("shape_of", keys, dtype="int64"),
                                      scalar(ctx, 2, "int64"), axis=0),
                             scalar(ctx, 1, "int64"), dtype="int64")
        keep = ctx.emit("less", positions, ctx.emit("reshape", length, newshape=[-1, 1]))
        keep = ctx.emit("reshape", keep, newshape=[0, 1, 1, -1])
    elif rank in (2, 3):
        keep = ctx.emit("greater", ctx.emit("cast", mask, dtype="float32"),
                        scalar(ctx, 0, "float32"))
        keep = ctx.emit("expand_dims", keep, axis=1, num_newaxis=4 - rank)
    else:
        unsupported(f"Attention mask_index of rank {rank} is not supported")
    return ctx.emit("where", keep, scalar(ctx, 0, "float32"),
                    scalar(ctx, filter_value, "float32"))


def _attend(ctx, qkv, mask, attrs):
    """Multi-head self-attention of the projected ``qkv`` (B, S, Dq+Dk+Dv) -> (B, S, Dv)."""
    if attrs.get("unidirectional", 0) or attrs.get("do_rotary", 0):
        unsupported("Attention with unidirectional=1 or do_rotary=1 is not supported")
    if "num_heads" not in attrs:
        unsupported("Attention without its required num_heads attribute")
    num_heads = int(attrs["num_heads"])
    q_size, k_size, _ = _split_sizes(attrs, ctx.shape(qkv)[-1])
    parts = ctx.emit("split", qkv, indices_or_sections=[q_size, q_size + k_size], axis=-1)
    query, key, value = (_heads(ctx, ctx.tuple_get(parts, i), num_heads) for i in range(3))
    scale = float(attrs.get("scale", 0.0)) or 1.0 / np.sqrt(q_size // num_heads)
    query = ctx.emit("multiply", query, scalar(ctx, scale, "float32"))
    scores = ctx.emit("einsum", ctx.make_tuple([query, key]), equation="bnqh,bnkh->bnqk")
    if mask is not None:
        filter_value = float(attrs.get("mask_filter_value", -10000.0))
        scores = ctx.emit("add", scores, _mask_bias(ctx, mask, key, filter_value))
    probs = ctx.emit("nn.softmax", scores, axis=-1)
    context = ctx.emit("einsum", ctx.make_tuple([probs, value]), equation="bnqk,bnkh->bnqh")
    return ctx.emit("reshape", ctx.emit("transpose", context, axes=[0, 2, 1, 3]),
                    newshape=[0, 0, -1])


def _no_past(inputs, first_extra):
    if any(value is not None for value in inputs[first_extra:]):
        unsupported("Attention with past state, attention bias or past_sequence_length is "
                    "not supported")


@converter("Attention", domain=MS)
def _attention(ctx, inputs, attrs):
    data, weights = inputs[0], inputs[1]
    bias, mask = _input(inputs, 2), _input(inputs, 3)
    _no_past(inputs, 4)
    if ctx.num_outputs > 1:
        unsupported("Attention's present output is not supported")
    qkv = ctx.emit("nn.matmul", data, weights)
    if bias is not None:
        qkv = ctx.emit("add", qkv, bias)
    return _attend(ctx, qkv, mask, attrs)


@converter("QAttention", domain=MS)
def _qattention(ctx, inputs, attrs):
    data, weights, bias, data_scale, weight_scale = inputs[:5]
    mask = _input(inputs, 5)
    data_zp, weight_zp = _input(inputs, 6), _input(inputs, 7)
    _no_past(inputs, 8)
    if ctx.num_outputs > 1:
        unsupported("QAttention's present output is not supported")
    product = quantize._matmul_integer(ctx, [data, weights, data_zp, weight_zp], {})
    # onnxruntime's order: int32 accumulator * (input scale * weight scale) + bias
    rescale = ctx.emit("multiply", ctx.emit("cast", data_scale, dtype="float32"),
                       ctx.emit("cast", weight_scale, dtype="float32"))
    qkv = ctx.emit("multiply", ctx.emit("cast", product, dtype="float32"), rescale)
    if bias is not None:
        qkv = ctx.emit("add", qkv, bias)
    return _attend(ctx, qkv, mask, attrs)


def _embed_layer_norm(ctx, ids, segment_ids, tables, gamma, beta, mask, position_ids, attrs):
    """Word + position (+ segment) embeddings, layer-normalised; and the mask index."""
    word, position, segment = tables
    hidden = ctx.emit("take", word, ctx.emit("cast", ids, dtype="int64"), axis=0)
    if position_ids is None:
        count = ctx.emit("take", ctx.emit("shape_of", ids, dtype="int64"),
                         scalar(ctx, 1, "int64"), axis=0)
        position_ids = ctx.emit("arange", scalar(ctx, 0, "int64"), count,
                                scalar(ctx, 1, "int64"), dtype="int64")
    total = ctx.emit("add", hidden, ctx.emit(
        "take", position, ctx.emit("cast", position_ids, dtype="int64"), axis=0))
    if segment is not None and segment_ids is not None:
        total = ctx.emit("add", total, ctx.emit(
            "take", segment, ctx.emit("cast", segment_ids, dtype="int64"), axis=0))
    out = normalization._layer_norm(
        ctx, [total, gamma, beta], {"epsilon": attrs.get("epsilon", 1e-12), "axis": -1})[0]
    if mask is not None:
        ones = ctx.emit("equal", mask, ctx.const(np.array(1, ctx.dtype(mask))))
        mask_index = ctx.emit("sum", ctx.emit("cast", ones, dtype="int32"), axis=[1])
    else:
        mask_index = ctx.emit("sum", ctx.emit("multiply", ctx.emit("cast", ids, dtype="int32"),
                                              ctx.const(np.int32(0))), axis=[1])
    return [out, mask_index, total][:ctx.num_outputs]


@converter("EmbedLayerNormalization", domain=MS)
def _embed_layer_normalization(ctx, inputs, attrs):
    padded = list(inputs) + [None] * (9 - len(inputs))
    ids, segment_ids, word, position, segment, gamma, beta, mask, position_ids = padded[:9]
    return _embed_layer_norm(ctx, ids, segment_ids, (word, position, segment), gamma, beta,
                             mask, position_ids, attrs)


@converter("QEmbedLayerNormalization", domain=MS)
def _qembed_layer_normalization(ctx, inputs, attrs):
    padded = list(inputs) + [None] * (18 - len(inputs))
    ids, segment_ids = padded[0], padded[1]
    quantized = padded[2:7]           # word, position, segment, gamma, beta
    scales, zero_points = padded[8:13], padded[13:18]
    real = [None if value is None else
            quantize._dequantized(ctx, value, scale, zero_point)
            for value, scale, zero_point in zip(quantized, scales, zero_points)]
    if ctx.num_outputs > 2:
        unsupported("QEmbedLayerNormalization has two outputs")
    return _embed_layer_norm(ctx, ids, segment_ids, real[:3], real[3], real[4], padded[7],
                             None, attrs)
