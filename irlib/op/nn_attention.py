"""Scaled dot-product attention: ``nn.attention`` (not in Relay v0.16; as Relax's).

Before/after in the text format::

    nn.attention(%q, %k, %v, causal=True)      /* q: (2, 4, 8), k: (2, 6, 8), v: (2, 6, 5) */
    -> Tensor[(2, 4, 5), float32]
"""

from __future__ import annotations

import numpy as np

from ..errors import GradientError, TypeInferenceError
from ..ir.expr import Tuple, const
from ..ir.types import TensorType
from ._composite import arg_types, call_op as _call, composite_grad, scalar_like as _scalar
from .registry import OpPattern, make_call, register_op
from .type_relations import broadcast_shapes, dims_differ, expect_tensor

__all__ = ["attention"]


# -- attention ---------------------------------------------------------------------------------

def _attention_rel(types, attrs):
    query = expect_tensor(types[0], "nn.attention: query")
    key = expect_tensor(types[1], "nn.attention: key")
    value = expect_tensor(types[2], "nn.attention: value")
    for name, ty in (("query", query), ("key", key), ("value", value)):
        if ty.ndim < 2:
            raise TypeInferenceError(f"nn.attention: {name} must have rank >= 2, got {ty}")
    if query.ndim != key.ndim or key.ndim != value.ndim:
        raise TypeInferenceError(f"nn.attention: query, key and value must have equal ranks, "
                                 f"got {query}, {key}, {value}")
    if len({query.dtype, key.dtype, value.dtype}) != 1:
        raise TypeInferenceError("nn.attention: query, key and value dtypes differ")
    if dims_differ(query.shape[-1], key.shape[-1]):
        raise TypeInferenceError(f"nn.attention: key head size {key.shape[-1]} differs from "
                                 f"query head size {query.shape[-1]}")
    if dims_differ(key.shape[-2], value.shape[-2]):
        raise TypeInferenceError(f"nn.attention: value has {value.shape[-2]} positions but key "
                                 f"has {key.shape[-2]}")
    try:
        batch = broadcast_shapes(broadcast_shapes(query.shape[:-2], key.shape[:-2]),
                                 value.shape[:-2])
    except TypeInferenceError as error:
        raise TypeInferenceError(f"nn.attention: batch dims: {error}") from None
    return TensorType(batch + (query.shape[-2], value.shape[-1]), query.dtype)


_ATTENTION = register_op("nn.attention", ("query", "key", "value"),
                         attrs=("relay.attrs.AttentionAttrs", [("scale", None),
                                                               ("causal", False)]),
                         type_rel=_attention_rel, pattern=OpPattern.OPAQUE,
                         description="softmax(query @ key^T * scale [+ causal mask]) @ value")


def _causal_mask(queries: int, keys: int) -> np.ndarray:
    """True where query ``i`` may attend to key ``j`` (top-left aligned: ``j <= i``)."""
    return np.arange(keys)[None, :] <= np.arange(queries)[:, None]


@_ATTENTION.def_impl
def _attention_ref(query, key, value, scale=None, causal=False):
    scale = 1.0 / np.sqrt(query.shape[-1]) if scale is None else scale
    scores = np.matmul(query.astype(np.float64), np.swapaxes(key, -1, -2)) * scale
    if causal:
        scores = np.where(_causal_mask(query.shape[-2], key.shape[-2]), scores, -np.inf)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    return (np.matmul(weights, value).astype(query.dtype),)


@_ATTENTION.def_grad
@composite_grad
def _attention_grad(query, key, value, scale=None, causal=False):
    q_type, k_type, _ = arg_types([query, key, value], "nn.attention")
    batch = "abcdefgh"[:q_type.ndim - 2]
    if scale is None:
        head = q_type.shape[-1]
        if not isinstance(head, int):
            raise GradientError("the gradient of nn.attention needs a static head size "
                                      "(or an explicit scale)")
        scale = 1.0 / np.sqrt(head)
    scores = _call("einsum", Tuple([query, key]), equation=f"{batch}qd,{batch}kd->{batch}qk")
    scores = _call("multiply", scores, _scalar(scale, scores))
    if causal:
        queries, keys = q_type.shape[-2], k_type.shape[-2]
        if not (isinstance(queries, int) and isinstance(keys, int)):
            raise GradientError("the gradient of a causal nn.attention needs static "
                                      "sequence lengths")
        scores = _call("where", const(_causal_mask(queries, keys)), scores,
                       _scalar(-np.inf, scores))
    weights = _call("nn.softmax", scores, axis=-1)
    return _call("einsum", Tuple([weights, value]), equation=f"{batch}qk,{batch}kv->{batch}qv")


def attention(query, key, value, scale=None, causal=False):
    """Scaled dot-product attention (irlib's ``nn.attention``; Relay v0.16 has none).

    ``out = softmax(query @ key^T * scale + mask) @ value`` over the last axis of the
    scores, with ``mask`` = -inf where ``causal`` and key position > query position
    (top-left aligned, like PyTorch's ``is_causal``).

    Args:
        query: ``(*batch, seq_q, head_dim)``.
        key: ``(*batch, seq_k, head_dim)``.
        value: ``(*batch, seq_k, value_dim)``; batch dims of the three broadcast (so heads
            may be an extra batch axis, e.g. ``(B, H, S, D)``).
        scale: the score multiplier (default ``1 / sqrt(head_dim)``).
        causal: apply the causal mask.

    Returns:
        A Call of ``nn.attention`` with shape ``(*batch, seq_q, value_dim)``.
    """
    return make_call("nn.attention", (query, key, value),
                     {"scale": None if scale is None else float(scale),
                      "causal": bool(causal)})
