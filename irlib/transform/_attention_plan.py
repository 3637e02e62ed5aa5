"""Reading a fused attention function back: the :class:`AttentionPlan` a kernel runs.

:class:`~irlib.transform.fuse_attention.FuseAttention` wraps each attention chain in a
``Primitive`` function marked :data:`ATTENTION_ATTR`; :func:`describe_attention` reads such a
function's body (view steps of the queries, keys and values, the scale, the mask mode, a
causal mask recognised from its constant) so that a fused kernel can run it on arrays. The
pattern side lives in ``fuse_attention.py``; both share the small node tests here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import expr as E
from ..ir.types import TensorType

ATTENTION_ATTR = "irlib.attention"
"""The function attribute that marks a fused attention (value 1)."""

_VIEW_OPS = ("reshape", "transpose")


def _static_shape(node):
    """The static integer shape of a typed tensor node, or None (not a tensor, or symbolic)."""
    ty = node._checked_type
    if not isinstance(ty, TensorType):
        return None
    try:
        return tuple(int(d) for d in ty.shape)
    except (TypeError, ValueError):
        return None


def _is_einsum(node) -> bool:
    return type(node) is E.Call and isinstance(node.op, E.Op) and node.op.name == "einsum"


def _is_scores(node) -> bool:
    """Whether ``node`` is the score einsum, or a divide/multiply of it by a constant."""
    if _is_einsum(node):
        return True
    return (type(node) is E.Call and isinstance(node.op, E.Op)
            and node.op.name in ("divide", "multiply") and any(map(_is_einsum, node.args)))


def _split(node):
    """``(chain argument, other argument)`` of a binary call in the score chain (``add`` and
    ``multiply`` may have their arguments either way round)."""
    first, second = node.args[0], node.args[1]
    return (second, first) if _is_scores(second) and not _is_scores(first) else (first, second)


@dataclass
class AttentionPlan:
    """How to run a fused attention function on arrays.

    Attributes:
        q, kt, v: ``(parameter index, view steps)``: apply the steps (``("reshape",
            shape)`` / ``("transpose", axes)``) to that parameter's array to get the 4-D
            queries ``(B, H, Sq, D)``, transposed keys ``(B, H, D, Sk)``, values
            ``(B, H, Sk, Dv)``.
        out_steps: the view steps from the ``(B, H, Sq, Dv)`` result to the function's
            output (invert them on the output array to write in place).
        scale: the score multiplier (``1 / c`` for a ``divide`` by ``c``).
        mode: ``"none"``, ``"add"`` or ``"select"``.
        mask: ``(parameter index, None)`` or ``(None, constant array)`` or None.
        fill: the select mode's fill value.
        causal, offset: a constant mask recognised as causal (then ``mode`` is ``"none"``).
    """

    q: tuple
    kt: tuple
    v: tuple
    out_steps: list
    scale: float
    mode: str
    mask: tuple | None
    fill: float
    causal: bool = False
    offset: int = 0


def _view_steps(node, params: dict):
    """``(parameter index, steps)`` of a reshape/transpose chain from a parameter, or None."""
    steps = []
    while type(node) is E.Call and isinstance(node.op, E.Op) and node.op.name in _VIEW_OPS:
        shape = _static_shape(node)
        if shape is None:
            return None
        if node.op.name == "reshape":
            steps.append(("reshape", shape))
        else:
            axes = node.attrs["axes"]
            if axes is None:
                return None
            steps.append(("transpose", tuple(int(a) for a in axes)))
        node = node.args[0]
    if node not in params:
        return None
    return params[node], steps[::-1]


def _causal_offset(mask: np.ndarray, seq_q: int, seq_k: int, select: bool):
    """The causal diagonal a constant mask encodes (hidden: -1e4 or below, or False), or
    None when it is not a causal mask."""
    if mask.ndim < 2 or mask.shape[-2:] != (seq_q, seq_k) or any(d != 1 for d in mask.shape[:-2]):
        return None
    grid = mask.reshape(seq_q, seq_k)
    visible = grid if select else grid == 0
    if not select and not np.all(visible | (grid <= -1e4)):
        return None
    for offset in {0, seq_k - seq_q}:
        if np.array_equal(visible, np.tril(np.ones((seq_q, seq_k), bool), k=offset)):
            return offset
    return None


def describe_attention(func: E.Function):
    """The :class:`AttentionPlan` of a typed function made by this pass, or None when its
    body is not one this planner understands (the caller then runs the body op by op).

    Args:
        func: a typed function marked :data:`ATTENTION_ATTR`.
    """
    if not func.get_attr(ATTENTION_ATTR):
        return None
    params = {p: i for i, p in enumerate(func.params)}
    node, out_steps = func.body, []
    while type(node) is E.Call and node.op.name in _VIEW_OPS:
        shape = _static_shape(node)
        if node.op.name == "reshape":
            out_steps.append(("reshape", shape))
        else:
            out_steps.append(("transpose", tuple(int(a) for a in node.attrs["axes"])))
        node = node.args[0]
    out_steps.reverse()
    probs, v = node.args[0].fields
    node = probs.args[0]
    if int(probs.attrs["axis"]) not in (-1, 3):
        return None
    mode, mask, fill, scale = "none", None, 0.0, 1.0
    if node.op.name == "add":
        node, mask_node = _split(node)
        mode = "add"
    elif node.op.name == "where":
        mode, mask_node = "select", node.args[0]
        fill = float(node.args[2].data.numpy())
        node = node.args[1]
    if node.op.name in ("divide", "multiply"):
        kind = node.op.name
        node, factor = _split(node)
        value = factor.data.numpy()
        if value.size != 1:
            return None
        value = float(value.reshape(()))
        scale = 1.0 / value if kind == "divide" else value
    q, kt = node.args[0].fields
    views = [_view_steps(x, params) for x in (q, kt, v)]
    if any(view is None for view in views):
        return None
    plan = AttentionPlan(views[0], views[1], views[2], out_steps, scale, mode, None, fill)
    if mode != "none":
        if type(mask_node) is E.Constant:
            data = mask_node.data.numpy()
            seq_q, seq_k = _static_shape(q)[2], _static_shape(kt)[3]
            offset = _causal_offset(data, seq_q, seq_k, mode == "select")
            if offset is not None:
                plan.mode, plan.causal, plan.offset = "none", True, offset
            else:
                plan.mask = (None, data)
        elif mask_node in params:
            plan.mask = (params[mask_node], None)
        else:
            return None
    return plan
