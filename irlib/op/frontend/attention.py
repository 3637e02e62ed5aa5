"""Attention ops with ONNX semantics (``onnx.*``), each with a numpy reference, opaque to fusion.

The nodes below carry masking rules and optional inputs that would take dozens of core ops
each. Optional inputs are passed in a tuple whose roles an attribute names, so one op covers
every input combination.

* ``onnx.attention((q, k, v, extra...), roles=[...], ...)`` -- the standard ``Attention``
  op of opsets 23-25 (not com.microsoft's): 3-D or 4-D inputs, grouped-query heads, a
  boolean or additive mask, KV cache (``past_key``/``past_value``), ``nonpad_kv_seqlen``,
  causal and sliding-window masks, softcap, and the ``qk_matmul_output`` modes. Returns
  ``(y, present_key, present_value, qk_matmul_output)``.
* ``onnx.linear_attention((q, k, v, extra...), roles=[...], ...)`` -- linear attention with a
  recurrent state.
* ``onnx.rotary_embedding((x, cos, sin, positions...), ...)`` -- RotaryEmbedding.
"""

from __future__ import annotations

import numpy as np

from ...errors import TypeInferenceError
from ...ir.dims import Any
from ...ir.types import TensorType, TupleType
from ..registry import register_opaque
from ..type_relations import expect_tensor

__all__ = []


def _int(dim):
    return int(dim) if isinstance(dim, (int, np.integer)) else None


def _add(a, b):
    return Any if a is None or b is None else a + b


# -- Attention --------------------------------------------------------------------------------

def _attention_rel(arg_types, attrs):
    fields = arg_types[0].fields
    q, k, v = (expect_tensor(t, "onnx.attention: q/k/v") for t in fields[:3])
    roles = dict(zip(attrs["roles"], fields[3:]))
    if q.ndim not in (3, 4) or k.ndim != q.ndim or v.ndim != q.ndim:
        raise TypeInferenceError(f"onnx.attention: Q, K, V must all be 3-D or 4-D, got "
                                 f"{q}, {k}, {v}")
    if q.ndim == 3:
        heads_q, heads_kv = attrs["q_num_heads"], attrs["kv_num_heads"]
        if not heads_q or not heads_kv:
            raise TypeInferenceError("onnx.attention: 3-D inputs need q_num_heads and "
                                     "kv_num_heads")
        batch, seq_q, seq_kv = q.shape[0], q.shape[1], k.shape[1]
        head_k = _int(k.shape[2]) // heads_kv if _int(k.shape[2]) else None
        head_v = _int(v.shape[2]) // heads_kv if _int(v.shape[2]) else None
    else:
        batch, heads_q, seq_q = q.shape[0], q.shape[1], q.shape[2]
        heads_kv, seq_kv, head_k, head_v = k.shape[1], k.shape[2], _int(k.shape[3]), \
            _int(v.shape[3])
    past = roles.get("past_key")
    total = _add(_int(seq_kv), _int(past.shape[2])) if past is not None else seq_kv
    head_k = Any if head_k is None else head_k
    head_v = Any if head_v is None else head_v
    if q.ndim == 3:
        out = TensorType((batch, seq_q, Any if head_v is Any else heads_q * head_v), q.dtype)
    else:
        out = TensorType((batch, heads_q, seq_q, head_v), q.dtype)
    present_k = TensorType((batch, heads_kv, total, head_k), k.dtype)
    present_v = TensorType((batch, heads_kv, total, head_v), v.dtype)
    scores = TensorType((batch, heads_q, seq_q, total), q.dtype)
    return TupleType([out, present_k, present_v, scores])


def _split_heads(x, heads):
    batch, seq, hidden = x.shape
    return x.reshape(batch, seq, heads, hidden // heads).transpose(0, 2, 1, 3)


def _frontier_bias(q_len, kv_len, offset, dtype, allowed_fn):
    """0 where ``allowed_fn(diff)`` holds (diff = query position + offset - key), -inf
    elsewhere; ``offset`` a scalar (shape (q, kv)) or per batch (shape (b, 1, q, kv))."""
    rows = np.arange(q_len).reshape(q_len, 1)
    cols = np.arange(kv_len).reshape(1, kv_len)
    offset = np.asarray(offset)
    if offset.ndim:
        diff = rows + offset.reshape(-1, 1, 1) - cols
        return np.where(allowed_fn(diff), 0, -np.inf).astype(dtype)[:, None]
    return np.where(allowed_fn(rows + int(offset) - cols), 0, -np.inf).astype(dtype)


def _softmax_rows(x):
    top = np.max(x, axis=-1, keepdims=True)
    top = np.where(np.isneginf(top), 0, top)
    e = np.exp(x - top)
    total = np.sum(e, axis=-1, keepdims=True)
    return e / np.where(total == 0, 1, total)


def _attention_ref(inputs, roles=(), scale=0.0, is_causal=False, q_num_heads=0,
                   kv_num_heads=0, softcap=0.0, qk_matmul_output_mode=0,
                   softmax_precision="", left_window=-1, right_window=-1):
    q, k, v = inputs[:3]
    extra = dict(zip(roles, inputs[3:]))
    mask, nonpad = extra.get("mask"), extra.get("nonpad_kv_seqlen")
    past_k, past_v = extra.get("past_key"), extra.get("past_value")
    rank = q.ndim
    dtype = q.dtype
    if rank == 3:
        q, k, v = (_split_heads(q, q_num_heads), _split_heads(k, kv_num_heads),
                   _split_heads(v, kv_num_heads))
    factor = dtype.type(np.sqrt(scale if scale else 1 / np.sqrt(q.shape[3])))
    present_k = k if past_k is None else np.concatenate([past_k, k], axis=2)
    present_v = v if past_v is None else np.concatenate([past_v, v], axis=2)
    q_len, kv_len = q.shape[2], present_k.shape[2]
    bias = np.zeros((q_len, kv_len), dtype)
    if mask is not None and mask.shape[-1] < kv_len:
        widths = [(0, 0)] * (mask.ndim - 1) + [(0, kv_len - mask.shape[-1])]
        mask = np.pad(mask, widths, constant_values=False if mask.dtype == bool else -np.inf)
    if mask is not None and mask.dtype == bool:
        mask = np.where(mask, 0, -np.inf).astype(dtype)
    if past_k is None and nonpad is not None:
        offset = nonpad.reshape(-1).astype("int64") - q_len
    else:
        offset = past_k.shape[2] if past_k is not None else 0
    if is_causal:
        base = bias if mask is None else mask
        if left_window >= 0 or right_window >= 0:
            base = bias + base
        bias = base + _frontier_bias(q_len, kv_len, offset, dtype, lambda d: d >= 0)
    elif mask is not None:
        bias = bias + mask
    if left_window >= 0 or right_window >= 0:
        bias = np.zeros((q_len, kv_len), dtype) + bias

        def inside(diff):
            ok = np.ones(diff.shape, bool)
            if left_window >= 0:
                ok &= diff <= left_window
            if right_window >= 0:
                ok &= -diff <= right_window
            return ok
        bias = bias + _frontier_bias(q_len, kv_len, offset, dtype, inside)
    if nonpad is not None:
        keep = np.arange(kv_len) < nonpad.reshape(-1, 1)
        bias = bias + np.where(keep, 0, -np.inf).astype(bias.dtype).reshape(
            q.shape[0], 1, 1, kv_len)
    heads_q, heads_kv = q.shape[1], present_k.shape[1]
    k_all, v_all = present_k, present_v
    if heads_q != heads_kv and heads_q % heads_kv == 0:
        k_all = np.repeat(k_all, heads_q // heads_kv, axis=1)
        v_all = np.repeat(v_all, heads_q // heads_kv, axis=1)
    # numpy promotes bfloat16 products to float32; ONNX keeps the input type
    scores = np.matmul(q * factor, np.swapaxes(k_all, 2, 3) * factor).astype(dtype)
    if softcap:
        scores = (np.tanh(scores / dtype.type(softcap)) * dtype.type(softcap)).astype(dtype)
    biased = scores + bias
    exposed = scores
    if qk_matmul_output_mode == 2:
        exposed = biased
    work = biased.astype(softmax_precision) if softmax_precision else biased
    probs = _softmax_rows(work)
    fully_masked = np.isneginf(np.max(bias, axis=-1, keepdims=True))
    probs = np.where(fully_masked, 0, probs)
    if qk_matmul_output_mode == 3:
        exposed = probs
    probs = probs.astype(dtype)
    out = np.matmul(probs, v_all).astype(dtype)
    if rank == 3:
        out = out.transpose(0, 2, 1, 3).reshape(out.shape[0], out.shape[2], -1)
    exposed = np.broadcast_to(exposed, (q.shape[0], heads_q, q_len, kv_len)).astype(dtype)
    return (out, present_k, present_v, exposed)


register_opaque("onnx.attention", ("inputs",),
                ("onnx.attrs.AttentionAttrs", [("roles", ()), ("scale", 0.0), ("is_causal", False),
                                         ("q_num_heads", 0), ("kv_num_heads", 0),
                                         ("softcap", 0.0), ("qk_matmul_output_mode", 0),
                                         ("softmax_precision", ""), ("left_window", -1),
                                         ("right_window", -1)]),
                _attention_rel, _attention_ref,
                "ONNX Attention (opset 23+): scaled dot-product attention with masks and KV cache",
                tuple_output=True)


# -- LinearAttention ---------------------------------------------------------------------------

def _heads_first(x, heads):
    batch, steps, hidden = x.shape
    return x.reshape(batch, steps, heads, hidden // heads).transpose(0, 2, 1, 3)


def _linear_attention_rel(arg_types, attrs):
    fields = arg_types[0].fields
    q, k, v = (expect_tensor(t, "onnx.linear_attention: q/k/v") for t in fields[:3])
    roles = dict(zip(attrs["roles"], fields[3:]))
    heads_q, heads_kv = attrs["q_num_heads"], attrs["kv_num_heads"]
    d_k = _int(q.shape[2]) // heads_q if _int(q.shape[2]) else Any
    d_v = _int(v.shape[2]) // heads_kv if _int(v.shape[2]) else Any
    out = TensorType((q.shape[0], q.shape[1], Any if d_v is Any else heads_q * d_v), q.dtype)
    past = roles.get("past_state")
    state = TensorType((q.shape[0], heads_kv, d_k, d_v), past.dtype if past else q.dtype)
    return TupleType([out, state])


def _linear_attention_ref(inputs, roles=(), q_num_heads=1, kv_num_heads=1, scale=0.0,
                          update_rule="gated_delta"):
    query, key, value = inputs[:3]
    extra = dict(zip(roles, inputs[3:]))
    past, decay, beta = extra.get("past_state"), extra.get("decay"), extra.get("beta")
    batch, steps, _ = query.shape
    d_k = query.shape[-1] // q_num_heads
    d_v = value.shape[-1] // kv_num_heads
    q = _heads_first(query, q_num_heads).astype("float32")
    k = _heads_first(key, kv_num_heads).astype("float32")
    v = _heads_first(value, kv_num_heads).astype("float32")
    gated = update_rule in ("gated", "gated_delta")
    delta = update_rule in ("delta", "gated_delta")
    if gated:
        if decay.shape[-1] == kv_num_heads:
            decay = decay.reshape(batch, steps, kv_num_heads, 1).transpose(0, 2, 1, 3)
        else:
            decay = _heads_first(decay, kv_num_heads)
        decay = decay.astype("float32")
    if delta:
        beta = beta.reshape(batch, steps, beta.shape[-1], 1).transpose(0, 2, 1, 3)
        beta = beta.astype("float32")
    state = np.zeros((batch, kv_num_heads, d_k, d_v), "float32") if past is None else \
        past.astype("float32")
    factor = float(scale) if scale else 1.0 / np.sqrt(d_k)
    group = q_num_heads // kv_num_heads
    out = np.zeros((batch, q_num_heads, steps, d_v), "float32")
    for t in range(steps):
        k_t, v_t = k[:, :, t], v[:, :, t]
        if gated:
            state = state * np.exp(decay[:, :, t])[..., None]
        if delta:
            recalled = np.einsum("bhdm,bhd->bhm", state, k_t)
            v_t = beta[:, :, t] * (v_t - recalled)
        state = state + k_t[..., :, None] * v_t[..., None, :]
        read = state if group == 1 else np.repeat(state, group, axis=1)
        out[:, :, t] = factor * np.einsum("bhd,bhdm->bhm", q[:, :, t], read)
    out = out.transpose(0, 2, 1, 3).reshape(batch, steps, q_num_heads * d_v)
    return (out.astype(query.dtype), state.astype(query.dtype if past is None else past.dtype))


register_opaque("onnx.linear_attention", ("inputs",),
                ("onnx.attrs.LinearAttentionAttrs", [("roles", ()), ("q_num_heads", 1),
                                               ("kv_num_heads", 1), ("scale", 0.0),
                                               ("update_rule", "gated_delta")]),
                _linear_attention_rel, _linear_attention_ref,
                "ONNX LinearAttention: recurrent linear attention (linear, gated, delta, "
                "gated_delta update rules); returns (output, present_state)", tuple_output=True)


# -- RotaryEmbedding ---------------------------------------------------------------------------

def _rotary_ref(inputs, interleaved=False, rotary_dim=0, num_heads=0):
    x, cos, sin = inputs[:3]
    positions = inputs[3] if len(inputs) > 3 else None
    shape = x.shape
    # work in (batch, seq, heads, head_size)
    work = x.transpose(0, 2, 1, 3) if x.ndim == 4 else \
        x.reshape(shape[0], shape[1], num_heads, shape[2] // num_heads)
    dim = rotary_dim or work.shape[3]
    rotated, kept = work[..., :dim], work[..., dim:]
    if positions is not None:
        cos, sin = cos[positions], sin[positions]
    cos, sin = cos[:, :, None, :], sin[:, :, None, :]
    if interleaved:
        first, second = rotated[..., 0::2], rotated[..., 1::2]
    else:
        first, second = rotated[..., :dim // 2], rotated[..., dim // 2:]
    real = cos * first - sin * second
    imag = sin * first + cos * second
    if interleaved:
        rotated = np.stack([real, imag], axis=-1).reshape(rotated.shape)
    else:
        rotated = np.concatenate([real, imag], axis=-1)
    out = np.concatenate([rotated, kept], axis=-1).astype(x.dtype)
    return (out.reshape(shape) if x.ndim == 3 else out.transpose(0, 2, 1, 3),)


register_opaque("onnx.rotary_embedding", ("inputs",),
                ("onnx.attrs.RotaryEmbeddingAttrs", [("interleaved", False), ("rotary_dim", 0),
                                               ("num_heads", 0)]),
                lambda arg_types, attrs: expect_tensor(arg_types[0].fields[0],
                                                 "onnx.rotary_embedding: data"),
                _rotary_ref, "ONNX RotaryEmbedding (rotate-half or interleaved, optional "
                "position ids and partial rotary dim)")
