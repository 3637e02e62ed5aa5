"""Rearranging and attention ops: ``nn.depth_to_space``, ``nn.space_to_depth`` and
``nn.attention``; plus the ELU-family activations ONNX needs, as compositions of
primitives (Relay has no ops for them either).

Before/after in the text format::

    nn.depth_to_space(%x, block_size=2)        /* Tensor[(1, 8, 3, 3), float32] */
    -> Tensor[(1, 2, 6, 6), float32]
    nn.attention(%q, %k, %v, causal=True)      /* q: (2, 4, 8), k: (2, 6, 8), v: (2, 6, 5) */
    -> Tensor[(2, 4, 5), float32]
"""

from __future__ import annotations

import numpy as np

from ..errors import GradientError, TypeInferenceError
from ..ir.expr import Tuple, const
from ..ir.types import TensorType
from ._composite import arg_types, composite_grad
from ._layouts import from_canonical, layout_positions, to_canonical
from .registry import OpPattern, make_call, register_op
from .type_relations import broadcast_shapes, dims_differ, expect_tensor

__all__ = ["depth_to_space", "space_to_depth", "attention", "elu", "selu", "celu",
           "softplus", "softsign", "hard_sigmoid", "hard_swish", "thresholded_relu"]


def _call(name, *args, **attrs):
    return make_call(name, args, attrs or None)


def _scalar(value, like):
    return _call("cast_like", const(float(value)), like)


# -- depth_to_space / space_to_depth -------------------------------------------------------------

def _d2s_plan(shape, block, mode):
    """(reshape, transpose, final shape) of depth_to_space on an NCHW shape."""
    n, c, h, w = shape
    depth = c // (block * block)
    if mode == "DCR":
        return ((n, block, block, depth, h, w), (0, 3, 4, 1, 5, 2),
                (n, depth, h * block, w * block))
    return ((n, depth, block, block, h, w), (0, 1, 4, 2, 5, 3), (n, depth, h * block, w * block))


def _s2d_plan(shape, block):
    n, c, h, w = shape
    return ((n, c, h // block, block, w // block, block), (0, 3, 5, 1, 2, 4),
            (n, c * block * block, h // block, w // block))


def _space_rel(name: str):
    def relation(types, attrs):
        data = expect_tensor(types[0], f"{name}: data")
        if data.ndim != 4:
            raise TypeInferenceError(f"{name}: data must be 4-D, got {data}")
        pos = layout_positions(attrs["layout"], "NCHW", f"{name}: layout")
        block = attrs["block_size"]
        if not isinstance(block, int) or block < 1:
            raise TypeInferenceError(f"{name}: block_size must be a positive int, got {block!r}")
        n, c, h, w = (data.shape[pos[letter]] for letter in "NCHW")
        if name == "nn.depth_to_space":
            if attrs["mode"] not in ("DCR", "CRD"):
                raise TypeInferenceError(f"{name}: mode must be 'DCR' or 'CRD', got "
                                         f"{attrs['mode']!r}")
            if isinstance(c, int) and c % (block * block):
                raise TypeInferenceError(f"{name}: {c} channels are not divisible by "
                                         f"block_size**2 = {block * block}")
            dims = {"N": n, "C": c // (block * block), "H": h * block, "W": w * block}
        else:
            for size in (h, w):
                if isinstance(size, int) and size % block:
                    raise TypeInferenceError(f"{name}: spatial size {size} is not divisible "
                                             f"by block_size={block}")
            dims = {"N": n, "C": c * block * block, "H": h // block, "W": w // block}
        shape = [None] * 4
        for letter, position in pos.items():
            shape[position] = dims[letter]
        return TensorType(shape, data.dtype)
    return relation


def _space_ref(to_depth: bool):
    def reference(data, block_size, layout="NCHW", mode="DCR"):
        x = to_canonical(data, layout, "NCHW")
        if to_depth:
            reshape, perm, final = _s2d_plan(x.shape, block_size)
        else:
            reshape, perm, final = _d2s_plan(x.shape, block_size, mode)
        out = x.reshape(reshape).transpose(perm).reshape(final)
        return (from_canonical(out, "NCHW", layout),)
    return reference


def _space_forward(to_depth: bool):
    def forward(data, block_size, layout="NCHW", mode="DCR"):
        shape = tuple(arg_types([data], "nn.depth_to_space")[0].shape)
        nchw = tuple(shape[layout.index(c)] for c in "NCHW")
        if to_depth:
            reshape, perm, final = _s2d_plan(nchw, block_size)
        else:
            reshape, perm, final = _d2s_plan(nchw, block_size, mode)
        x = _call("transpose", data, axes=tuple(layout.index(c) for c in "NCHW"))
        x = _call("reshape", x, newshape=reshape, allowzero=False)
        x = _call("reshape", _call("transpose", x, axes=perm), newshape=final, allowzero=False)
        return _call("transpose", x, axes=tuple("NCHW".index(c) for c in layout))
    return forward


_D2S = register_op("nn.depth_to_space", ("data",),
                   attrs=("relay.attrs.SubPixelAttrs", [("block_size", 1), ("layout", "NCHW"),
                                                        ("mode", "DCR")]),
                   type_rel=_space_rel("nn.depth_to_space"), pattern=OpPattern.INJECTIVE,
                   description="move channel blocks into spatial blocks (mode DCR or CRD)")
_D2S.def_impl(_space_ref(False))
_D2S.def_grad(composite_grad(_space_forward(False)))
_S2D = register_op("nn.space_to_depth", ("data",),
                   attrs=("relay.attrs.SubPixelAttrs", [("block_size", 1), ("layout", "NCHW"),
                                                        ("mode", "DCR")]),
                   type_rel=_space_rel("nn.space_to_depth"), pattern=OpPattern.INJECTIVE,
                   description="move spatial blocks into channels")
_S2D.def_impl(_space_ref(True))
_S2D.def_grad(composite_grad(_space_forward(True)))


def depth_to_space(data, block_size, layout="NCHW", mode="DCR"):
    """Rearrange channel blocks into spatial blocks (``relay.nn.depth_to_space``).

    Args:
        data: 4-D input in ``layout`` (a permutation of ``NCHW``).
        block_size: the spatial block edge.
        layout: the data layout.
        mode: ``"DCR"`` (depth-column-row, ONNX default) or ``"CRD"``.

    Returns:
        A Call of ``nn.depth_to_space``.
    """
    return make_call("nn.depth_to_space", (data,), {"block_size": int(block_size),
                                                    "layout": layout, "mode": mode})


def space_to_depth(data, block_size, layout="NCHW"):
    """Rearrange spatial blocks into channels (``relay.nn.space_to_depth``), the inverse of
    ``depth_to_space`` in DCR mode.

    Returns:
        A Call of ``nn.space_to_depth``.
    """
    return make_call("nn.space_to_depth", (data,), {"block_size": int(block_size),
                                                    "layout": layout})


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


# -- ELU family (compositions, as Relay's ONNX frontend builds them) -------------------------------

def elu(data, alpha=1.0):
    """ONNX Elu: ``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` elsewhere.

    Returns:
        An expression of primitive ops.
    """
    negative = _call("multiply", _scalar(alpha, data),
                     _call("subtract", _call("exp", data), _scalar(1.0, data)))
    return _call("where", _call("greater", data, _scalar(0.0, data)), data, negative)


def selu(data, alpha=1.67326319217681884765625, gamma=1.05070102214813232421875):
    """ONNX Selu: ``gamma * elu(x, alpha)``.

    Returns:
        An expression of primitive ops.
    """
    return _call("multiply", _scalar(gamma, data), elu(data, alpha))


def celu(data, alpha=1.0):
    """ONNX Celu: ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    Returns:
        An expression of primitive ops.
    """
    scaled = _call("divide", data, _scalar(alpha, data))
    negative = _call("multiply", _scalar(alpha, data),
                     _call("subtract", _call("exp", scaled), _scalar(1.0, data)))
    return _call("add", _call("nn.relu", data),
                 _call("minimum", _scalar(0.0, data), negative))


def softplus(data):
    """ONNX Softplus: ``log(1 + exp(x))``, computed stably as ``relu(x) + log(1 +
    exp(-|x|))``.

    Returns:
        An expression of primitive ops.
    """
    tail = _call("log", _call("add", _scalar(1.0, data),
                              _call("exp", _call("negative", _call("abs", data)))))
    return _call("add", _call("nn.relu", data), tail)


def softsign(data):
    """ONNX Softsign: ``x / (1 + |x|)``.

    Returns:
        An expression of primitive ops.
    """
    return _call("divide", data, _call("add", _scalar(1.0, data), _call("abs", data)))


def hard_sigmoid(data, alpha=0.2, beta=0.5):
    """ONNX HardSigmoid: ``clip(alpha * x + beta, 0, 1)``.

    Returns:
        An expression of primitive ops.
    """
    linear = _call("add", _call("multiply", _scalar(alpha, data), data), _scalar(beta, data))
    return _call("clip", linear, a_min=0.0, a_max=1.0)


def hard_swish(data):
    """ONNX HardSwish: ``x * hard_sigmoid(x, 1/6, 0.5)``.

    Returns:
        An expression of primitive ops.
    """
    return _call("multiply", data, hard_sigmoid(data, 1.0 / 6.0, 0.5))


def thresholded_relu(data, alpha=1.0):
    """ONNX ThresholdedRelu: ``x`` where ``x > alpha``, else 0.

    Returns:
        An expression of primitive ops.
    """
    return _call("where", _call("greater", data, _scalar(alpha, data)), data,
                 _call("zeros_like", data))
