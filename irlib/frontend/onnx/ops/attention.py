"""The standard ONNX ``Attention`` op (opsets 23-25; not com.microsoft's) and
``RotaryEmbedding``, through the ``onnx.*`` ops of :mod:`irlib.op.onnx_extra_ops`."""

from __future__ import annotations

from ....op import onnx_extra_ops  # noqa: F401  (registers the onnx.* ops)
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
