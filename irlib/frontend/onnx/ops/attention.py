"""The standard ONNX ``Attention`` op (opsets 23-25; not com.microsoft's) and
``RotaryEmbedding``, through the ``onnx.*`` ops of :mod:`irlib.op.frontend.attention`."""

from __future__ import annotations

from ..importer import onnx_dtype
from ..registry import converter

_ROLES = ("mask", "past_key", "past_value", "nonpad_kv_seqlen")


@converter("Attention", since=23)
def _attention(ctx, inputs, attrs):
    fields = list(inputs[:3])
    roles = []
    for role, value in zip(_ROLES, list(inputs[3:]) + [None] * 4):
        if value is not None:
            roles.append(role)
            fields.append(value)
    precision = attrs.get("softmax_precision")
    tup = ctx.emit("onnx.attention", ctx.make_tuple(fields), roles=roles,
                   scale=float(attrs.get("scale", 0.0)),
                   is_causal=bool(attrs.get("is_causal", 0)),
                   q_num_heads=int(attrs.get("q_num_heads", 0)),
                   kv_num_heads=int(attrs.get("kv_num_heads", 0)),
                   softcap=float(attrs.get("softcap", 0.0)),
                   qk_matmul_output_mode=int(attrs.get("qk_matmul_output_mode", 0)),
                   softmax_precision=onnx_dtype(precision) if precision else "",
                   left_window=int(attrs.get("left_window_size", -1)),
                   right_window=int(attrs.get("right_window_size", -1)))
    return [ctx.tuple_get(tup, i) for i in range(ctx.num_outputs)]


@converter("LinearAttention", since=1)
def _linear_attention(ctx, inputs, attrs):
    fields = list(inputs[:3])
    roles = []
    for role, value in zip(("past_state", "decay", "beta"), list(inputs[3:6]) + [None] * 3):
        if value is not None:
            roles.append(role)
            fields.append(value)
    tup = ctx.emit("onnx.linear_attention", ctx.make_tuple(fields), roles=roles,
                   q_num_heads=int(attrs["q_num_heads"]),
                   kv_num_heads=int(attrs["kv_num_heads"]),
                   scale=float(attrs.get("scale", 0.0)),
                   update_rule=attrs.get("update_rule", "gated_delta"))
    return [ctx.tuple_get(tup, i) for i in range(ctx.num_outputs)]


@converter("CausalConvWithState", since=1)
def _causal_conv_with_state(ctx, inputs, attrs):
    import numpy as np
    padded_inputs = list(inputs) + [None] * (4 - len(inputs))
    data, weight, bias, past = padded_inputs[:4]
    shape = ctx.static_shape(data)
    kernel = ctx.static_shape(weight)
    if shape is None or kernel is None:
        from .common import unsupported
        unsupported("CausalConvWithState needs static input and weight shapes")
    batch, channels, _ = shape
    k = kernel[2]
    if past is None:
        past = ctx.const(np.zeros((batch, channels, k - 1), ctx.dtype(data)))
    padded = ctx.emit("concatenate", ctx.make_tuple([past, data]), axis=2) if k > 1 else data
    out = ctx.emit("nn.conv1d", padded, weight, strides=[1], padding=[0, 0], dilation=[1],
                   groups=channels, channels=channels, kernel_size=[k], data_layout="NCW",
                   kernel_layout="OIW")
    if bias is not None:
        out = ctx.emit("nn.bias_add", out, bias, axis=1)
    if attrs.get("activation", "none") in ("silu", "swish"):
        out = ctx.emit("multiply", out, ctx.emit("sigmoid", out))
    length = ctx.shape(padded)[2]
    state = ctx.emit("strided_slice", padded, begin=[int(length) - (k - 1)], end=[int(length)],
                     strides=[1], axes=[2])
    return [out, state][:ctx.num_outputs]


@converter("RotaryEmbedding", since=23)
def _rotary_embedding(ctx, inputs, attrs):
    fields = [value for value in inputs[:4] if value is not None]
    return ctx.emit("onnx.rotary_embedding", ctx.make_tuple(fields),
                    interleaved=bool(attrs.get("interleaved", 0)),
                    rotary_dim=int(attrs.get("rotary_embedding_dim", 0)),
                    num_heads=int(attrs.get("num_heads", 0)))


@converter("SwiGLU", since=1)
def _swiglu(ctx, inputs, attrs):
    from .common import scalar
    a, b = inputs[:2]
    alpha = scalar(ctx, float(attrs.get("alpha", 1.0)), ctx.dtype(a))
    gate = ctx.emit("sigmoid", ctx.emit("multiply", a, alpha))
    return ctx.emit("multiply", ctx.emit("multiply", a, gate), b)
