"""Scaled dot-product attention of the nn builder (Relax's ``nn.scaled_dot_product_attention``),
composed of ``transpose``/``reshape``/``repeat``, ``nn.batch_matmul``, ``where`` and
``nn.softmax`` so the graph executor's matmul and softmax kernels run it.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ... import op as _op
from ...ir import expr as E
from ._op_common import check_tensor
from ._op_nn_util import check_float, const, emit_op, fail, same_dtype
from .core import Tensor

__all__ = ["scaled_dot_product_attention"]


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Optional[Tensor] = None,
                                 is_causal: Optional[bool] = False, scale: Optional[float] = None,
                                 name: str = "scaled_dot_product_attention") -> Tensor:
    """Scaled dot-product attention in Relax's layout: ``softmax(Q K^T * scale + mask) V``
    per batch and head.

    Layout (Relax's, **not** PyTorch's): ``query`` ``[batch, seq_q, heads, head_dim]``,
    ``key`` ``[batch, seq_kv, heads_kv, head_dim]``, ``value`` ``[batch, seq_kv, heads_kv,
    value_dim]``; the result is ``[batch, seq_q, heads, value_dim]``. ``heads_kv`` may divide
    ``heads`` (grouped-query attention: each key/value head serves ``heads / heads_kv``
    consecutive query heads, PyTorch's ``enable_gqa=True``).

    Masks: ``attn_mask`` broadcasts to ``[batch, heads, seq_q, seq_kv]`` (PyTorch's order); a
    bool mask marks the positions that take part, a float mask is added to the scores.
    ``is_causal=True`` is Relax's ``"TopLeft"`` causal mask, the same as PyTorch's
    ``is_causal``: query ``i`` sees keys ``j <= i``. When ``seq_q < seq_kv`` (decoding with a
    KV cache, the queries being the *last* ``seq_q`` positions) that mask hides the newest
    keys; pass ``is_causal="BottomRight"`` for the offset mask ``j <= i + seq_kv - seq_q``
    (PyTorch's ``causal_lower_right``). Both masks are built from the runtime sequence
    lengths, so symbolic ``seq_q``/``seq_kv`` work.

    Args:
        query: the queries.
        key: the keys.
        value: the values.
        attn_mask: an optional bool or float mask (see above).
        is_causal: False, True / ``"TopLeft"``, or ``"BottomRight"``.
        scale: the score multiplier (default ``1 / sqrt(head_dim)``).
        name: name hint.
    """
    query = check_tensor(query, "query", name)
    key = check_tensor(key, "key", name)
    value = check_tensor(value, "value", name)
    check_float(query, name)
    same_dtype(name, query, key=key, value=value)
    for what, t in (("query", query), ("key", key), ("value", value)):
        if t.ndim != 4:
            raise fail(name, f"{what} must be 4-D [batch, seq, heads, head_dim], got {t.shape}")
    heads, heads_kv, head_dim = query.shape[2], key.shape[2], query.shape[3]
    if not (isinstance(heads, int) and isinstance(heads_kv, int)):
        raise fail(name, f"the head counts must be static, got {heads} and {heads_kv}")
    if heads_kv < 1 or value.shape[2] != heads_kv or heads % heads_kv:
        raise fail(name, f"key/value heads {heads_kv}/{value.shape[2]} must be equal and "
                          f"divide the {heads} query heads")
    if isinstance(head_dim, int) and isinstance(key.shape[3], int) and head_dim != key.shape[3]:
        raise fail(name, f"query head_dim {head_dim} differs from key's {key.shape[3]}")
    causal = {False: None, None: None, True: "TopLeft", "TopLeft": "TopLeft",
              "BottomRight": "BottomRight"}.get(is_causal, "?")
    if causal == "?":
        raise fail(name, f"is_causal must be a bool, 'TopLeft' or 'BottomRight', got "
                          f"{is_causal!r}")
    if scale is None:
        if not isinstance(head_dim, int):
            raise fail(name, "a symbolic head_dim needs an explicit scale")
        scale = 1.0 / math.sqrt(head_dim)
    if attn_mask is not None:
        attn_mask = check_tensor(attn_mask, "attn_mask", name)
        if attn_mask.ndim > 4:
            raise fail(name, f"attn_mask must have rank <= 4, got {attn_mask.shape}")
        if attn_mask.dtype != "bool" and attn_mask.dtype != query.dtype:
            raise fail(name, f"attn_mask must be bool or {query.dtype}, got {attn_mask.dtype}")
    dtype = query.dtype
    group = heads // heads_kv

    def build():
        q = _op.reshape(_op.transpose(query._expr, (0, 2, 1, 3)), (-3, -2))   # [b*h, sq, d]
        k = _op.transpose(key._expr, (0, 2, 3, 1))                            # [b, hk, d, skv]
        v = _op.transpose(value._expr, (0, 2, 1, 3))                          # [b, hk, skv, dv]
        if group > 1:
            k, v = _op.repeat(k, group, axis=1), _op.repeat(v, group, axis=1)
        k, v = _op.reshape(k, (-3, -2)), _op.reshape(v, (-3, -2))
        q = _op.multiply(q, const(scale, dtype))
        scores = _op.nn.batch_matmul(q, k, transpose_b=False)               # [b*h, sq, skv]
        if attn_mask is not None:
            scores = _op.reshape(scores, (-4, -1, heads, -2))                # [b, h, sq, skv]
            if attn_mask.dtype == "bool":
                scores = _op.where(attn_mask._expr, scores, const(-np.inf, dtype))
            else:
                scores = _op.add(scores, attn_mask._expr)
            scores = _op.reshape(scores, (-3, -2))
        if causal is not None:
            mask = _causal_mask(query, key, causal)
            scores = _op.where(mask, scores, const(-np.inf, dtype))
        probs = _op.nn.softmax(scores, axis=-1)
        out = _op.nn.batch_matmul(probs, v, transpose_b=False)               # [b*h, sq, dv]
        out = _op.reshape(out, (-4, -1, heads, -2))
        return _op.transpose(out, (0, 2, 1, 3))
    return emit_op(build, name)


def _positions(t: Tensor):
    """``(1, 2, ..., seq)`` (int32) for a ``[batch, seq, heads, dim]`` tensor, read from its
    runtime shape (so a symbolic ``seq`` works), and the scalar ``seq``."""
    zero = const(0, "int32")
    row = _op.take(_op.take(_op.take(t._expr, zero, axis=0), zero, axis=1), zero, axis=1)
    ones = _op.ones_like(_op.cast(row, "int32"))
    return _op.cumsum(ones, axis=0), _op.sum(ones)


def _causal_mask(query: Tensor, key: Tensor, kind: str):
    """The ``[seq_q, seq_kv]`` bool mask: key ``j`` visible to query ``i`` when ``j <= i``
    (``TopLeft``) or ``j <= i + seq_kv - seq_q`` (``BottomRight``)."""
    seq_q, seq_kv = query.shape[1], key.shape[1]
    if isinstance(seq_q, int) and isinstance(seq_kv, int):
        offset = 0 if kind == "TopLeft" else seq_kv - seq_q
        return E.Constant(np.tril(np.ones((seq_q, seq_kv), dtype=bool), k=offset))
    q_pos, q_len = _positions(query)
    k_pos, k_len = _positions(key)
    if kind == "BottomRight":       # compare positions counted from the ends
        q_pos, k_pos = _op.subtract(q_pos, q_len), _op.subtract(k_pos, k_len)
    return _op.less_equal(_op.expand_dims(k_pos, axis=0), _op.expand_dims(q_pos, axis=1))
