"""``ai.onnx.preview.FlexAttention``: scaled dot-product attention over rank-4 Q, K, V with
optional ``score_mod`` / ``prob_mod`` subgraphs, built from core irlib ops.

The computation follows the op's definition::

    scores = (Q * sqrt(scale)) @ (K * sqrt(scale))^T      # in the input dtype
    scores = score_mod(cast(scores, compute))             # subgraph inlined, if given
    probs  = prob_mod(softmax(scores, axis=-1))           # subgraph inlined, if given
    Y      = cast(probs @ cast(V, compute), V.dtype)

``compute`` is ``softmax_precision`` when given, else float32 for 16-bit inputs and the input
dtype otherwise. Grouped-query attention repeats each K/V head ``Hq / Hkv`` times along the
head axis (query head ``h`` reads K/V head ``h // group``). The modifier subgraphs take the
whole ``(B, Hq, L, S)`` tensor as their one input, so they are converted once with that input
bound and their initializers as constants; they see outer values like any other subgraph.
"""

from __future__ import annotations

import numpy as np

from ... import ConversionError
from ..importer import GraphContext, convert_graph, onnx_dtype
from ..registry import converter
from .common import unsupported

_DOMAIN = "ai.onnx.preview"


@converter("FlexAttention", since=1, domain=_DOMAIN)
def _flex_attention(ctx, inputs, attrs):
    if len(inputs) < 3 or any(value is None for value in inputs[:3]):
        raise ConversionError("FlexAttention needs the three inputs Q, K and V")
    query, key, value = inputs[:3]
    for name, tensor in (("Q", query), ("K", key), ("V", value)):
        if ctx.ndim(tensor) != 4:
            raise ConversionError(f"FlexAttention: {name} must be rank 4, got shape "
                                  f"{ctx.shape(tensor)}")
    dtype = ctx.dtype(query)
    compute = _compute_dtype(dtype, attrs.get("softmax_precision"))
    group = _group_size(ctx, query, key, value)
    if group > 1:
        key = ctx.emit("repeat", key, repeats=group, axis=1)
        value = ctx.emit("repeat", value, repeats=group, axis=1)

    root = np.sqrt(np.float32(_scale(ctx, query, attrs)))
    scores = _scores(ctx, query, key, root, dtype)
    if ctx.dtype(scores) != compute:
        scores = ctx.emit("cast", scores, dtype=compute)
    if "score_mod" in attrs:
        scores = _apply_mod(ctx, attrs["score_mod"], scores, "score_mod")
    probs = ctx.emit("nn.softmax", scores, axis=-1)
    if "prob_mod" in attrs:
        probs = _apply_mod(ctx, attrs["prob_mod"], probs, "prob_mod")
    if ctx.dtype(value) != compute:
        value = ctx.emit("cast", value, dtype=compute)
    out = ctx.emit("einsum", ctx.make_tuple([probs, value]), equation="bhqk,bhkv->bhqv")
    out_dtype = ctx.dtype(inputs[2])
    return ctx.emit("cast", out, dtype=out_dtype) if ctx.dtype(out) != out_dtype else out


def _compute_dtype(dtype: str, precision) -> str:
    """The dtype the softmax and the modifiers run in."""
    if precision:
        name = onnx_dtype(int(precision))
        if name not in ("float16", "bfloat16", "float32", "float64"):
            raise ConversionError(f"FlexAttention: softmax_precision {precision} ({name}) is "
                                  "not a float type")
        # numpy has no arithmetic for bfloat16; float32 is the nearest wider stand-in.
        return "float32" if name == "bfloat16" else name
    return "float64" if dtype == "float64" else "float32"


def _group_size(ctx, query, key, value) -> int:
    """``Hq / Hkv`` after checking the shapes agree; 1 when the head counts match."""
    q_shape, k_shape, v_shape = ctx.shape(query), ctx.shape(key), ctx.shape(value)
    q_heads, kv_heads = q_shape[1], k_shape[1]
    if q_heads is kv_heads or q_heads == kv_heads:
        return 1
    if not isinstance(q_heads, (int, np.integer)) or not isinstance(kv_heads, (int, np.integer)):
        unsupported("FlexAttention with grouped heads needs static head counts")
    if int(kv_heads) <= 0 or int(q_heads) % int(kv_heads):
        raise ConversionError(f"FlexAttention: q_num_heads {q_heads} is not a multiple of "
                              f"kv_num_heads {kv_heads}")
    for index, what in ((1, "head count"), (2, "sequence length")):
        if _known(k_shape[index]) and _known(v_shape[index]) and \
                int(k_shape[index]) != int(v_shape[index]):
            raise ConversionError(f"FlexAttention: K and V differ in {what} "
                                  f"({k_shape[index]} vs {v_shape[index]})")
    return int(q_heads) // int(kv_heads)


def _known(dim) -> bool:
    return isinstance(dim, (int, np.integer))


def _scale(ctx, query, attrs) -> float:
    """The ``scale`` attribute, defaulting to ``1 / sqrt(head_size)``."""
    if "scale" in attrs:
        return float(attrs["scale"])
    head_size = ctx.shape(query)[3]
    if not _known(head_size):
        unsupported("FlexAttention without a scale attribute needs a static head size")
    return 1.0 / float(np.sqrt(int(head_size)))


def _scores(ctx, query, key, root, dtype: str):
    """``(Q * root) @ (K * root)^T`` in the input dtype (float32 for ml_dtypes floats)."""
    if dtype.startswith(("bfloat16", "float8", "float4")):
        query = ctx.emit("cast", query, dtype="float32")
        key = ctx.emit("cast", key, dtype="float32")
        dtype = "float32"
    factor = ctx.const(np.array(root, dtype=dtype))
    query = ctx.emit("multiply", query, factor)
    key = ctx.emit("multiply", key, factor)
    return ctx.emit("einsum", ctx.make_tuple([query, key]), equation="bhqd,bhkd->bhqk")


def _apply_mod(ctx, graph, tensor, what: str):
    """Inline modifier subgraph ``graph`` on ``tensor``; its one output, cast back to the
    tensor's dtype.

    Raises:
        ConversionError: when the subgraph does not have exactly one input and one output.
    """
    if len(graph.input) != 1 or len(graph.output) != 1:
        raise ConversionError(f"FlexAttention: {what} must have one input and one output, "
                              f"got {len(graph.input)} and {len(graph.output)}")
    (result,) = _convert_mod(ctx, graph, tensor)
    dtype = ctx.dtype(tensor)
    if ctx.ndim(result) != 4:
        raise ConversionError(f"FlexAttention: {what} must return a rank-4 tensor, got shape "
                              f"{ctx.shape(result)}")
    return ctx.emit("cast", result, dtype=dtype) if ctx.dtype(result) != dtype else result


def _convert_mod(ctx, graph, tensor) -> list:
    """Convert ``graph`` in a child context with its input bound to ``tensor`` (its own
    initializers become constants there, as for every subgraph)."""
    child = GraphContext(ctx.importer, parent=ctx)
    child.bind(graph.input[0].name, tensor)
    return convert_graph(child, graph)
