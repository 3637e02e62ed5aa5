"""FuseAttention: put each scaled dot-product attention into one ``Primitive`` function.

An imported transformer computes attention as a chain of ops (ONNX ``MatMul`` on 4-D
tensors imports as ``einsum`` with ``"...ij,...jk->...ik"``)::

    %q = transpose(reshape(%q_proj, [B, S, H, D]), [0, 2, 1, 3])
    %kt = transpose(reshape(%k_proj, [B, S, H, D]), [0, 2, 3, 1])
    %p = nn.softmax(add(divide(einsum((%q, %kt)), 8f), %mask), axis=-1)
    %o = reshape(transpose(einsum((%p, %v)), [0, 2, 1, 3]), [B, S, H * D])

FuseOps would cut it into three groups (scores, softmax, context), materialise the
transposed operands and the whole ``(B, H, S, S)`` score tensor. This pass finds the chain
with a dataflow pattern (:data:`PATTERN`: ``einsum`` of the queries and transposed keys,
optionally scaled by a constant (``divide`` or ``multiply``), optionally masked
(``add`` of a tensor, or ``where(mask, scores, constant)``), ``nn.softmax`` over the last
axis, ``einsum`` with the values, optionally followed by ``transpose`` and ``reshape``)
and replaces it by a call of a function marked ``Primitive=1`` and
``irlib.attention=1`` whose parameters are the tensors the chain starts from once the
reshapes and transposes in front of the queries, keys and values are peeled off (so they
become views inside the function, not copies). The body is the matched ops themselves,
so every executor and the numpy references still give the same result; FuseOps leaves the
function alone, and the CPU graph executor runs it as one fused kernel
(``jitkernels.cpu.attention``) described by :func:`describe_attention`.

Runs at ``opt_level`` 3, before FuseOps. Shapes must be static 4-D ``(B, H, Sq, D)`` float
tensors with equal ``(B, H)`` on all three operands; other chains are left as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..dataflow_pattern import DFPatternCallback, is_constant, is_op, is_tuple, rewrite, wildcard
from ..ir import expr as E
from ..ir.types import TensorType
from ._attention_plan import (ATTENTION_ATTR, _VIEW_OPS, AttentionPlan, _is_einsum, _split,
                              _static_shape, describe_attention)
from ._rewrite import substitute
from ._typed import rewrite_typed_module
from .pass_infra import ModulePass, register_pass

__all__ = ["FuseAttention", "fuse_attention", "describe_attention", "AttentionPlan",
           "ATTENTION_ATTR"]

MATMUL_EQUATION = "...ij,...jk->...ik"


def _einsum(a, b):
    return is_op("einsum")(is_tuple([a, b])).has_attr({"equation": MATMUL_EQUATION})


def _make_pattern():
    """The attention pattern and its leaf patterns ``(root, q, kt, v, mask, select_mask)``."""
    q, kt, v, mask, select_mask = wildcard(), wildcard(), wildcard(), wildcard(), wildcard()
    scores = _einsum(q, kt)
    scaled = is_op("divide")(scores, is_constant()) | is_op("multiply")(scores, is_constant()) \
        | scores
    masked = is_op("add")(scaled, mask) | is_op("where")(select_mask, scaled, is_constant()) \
        | scaled
    probs = is_op("nn.softmax")(masked)
    out = _einsum(probs, v)
    out = out.optional(lambda p: is_op("transpose")(p))
    out = out.optional(lambda p: is_op("reshape")(p))
    return out, q, kt, v, mask, select_mask


PATTERN = _make_pattern()[0]
"""The dataflow pattern of an attention chain (see the module docstring)."""


def _is_view(node) -> bool:
    return type(node) is E.Call and isinstance(node.op, E.Op) and node.op.name in _VIEW_OPS


def _peel(typed, node):
    """``(typed start, start)``: the tensor a chain of reshapes/transposes starts from, in the
    typed expression before rewriting and in its rewritten copy (same structure)."""
    while _is_view(typed) and _is_view(node):
        typed, node = typed.args[0], node.args[0]
    return typed, node


class _AttentionCallback(DFPatternCallback):
    """Replace each attention match by a call of a fused ``Primitive`` function (one round:
    the bodies of the new functions are not matched again)."""

    def __init__(self):
        super().__init__(rewrite_once=True)     # the input is typed (rewrite_typed_module)
        self.pattern, self.q, self.kt, self.v, self.mask, self.select_mask = _make_pattern()

    def callback(self, pre, post, node_map):
        """The call of the fused function, or ``post`` when the match does not qualify."""
        before = _operands(pre)
        shapes = [_static_shape(before[k]) for k in ("q", "kt", "v")]
        if any(s is None or len(s) != 4 for s in shapes):
            return post
        (qs, kts, vs) = shapes
        if not (qs[:2] == kts[:2] == vs[:2] and qs[3] == kts[2] and kts[3] == vs[2]):
            return post
        dtype = pre._checked_type.dtype if isinstance(pre._checked_type, TensorType) else None
        if dtype not in ("float32", "float64"):
            return post
        pairs = [_peel(before[k], node_map[p][0])
                 for k, p in (("q", self.q), ("kt", self.kt), ("v", self.v))]
        for pattern in (self.mask, self.select_mask):
            if node_map.get(pattern):
                pairs.append((before["mask"], node_map[pattern][0]))
        mapping, params = {}, []
        for typed_leaf, leaf in pairs:
            if leaf in mapping or type(leaf) is E.Constant:
                continue
            if not isinstance(typed_leaf._checked_type, TensorType):
                return post
            param = E.Var(f"p{len(params)}", typed_leaf._checked_type)
            mapping[leaf] = param
            params.append(param)
        body = substitute(post, mapping)
        func = E.Function(tuple(params), body, None, (),
                          {"Primitive": 1, ATTENTION_ATTR: 1})
        return E.Call(func, tuple(mapping))


def _operands(root) -> dict:
    """The ``q``/``kt``/``v``/``mask`` operand expressions of a matched chain."""
    node = root
    while not _is_einsum(node):
        node = node.args[0]
    found = {"v": node.args[0].fields[1]}
    node = node.args[0].fields[0].args[0]        # the softmax's argument
    while not _is_einsum(node):
        if node.op.name == "where":
            found["mask"], node = node.args[0], node.args[1]
        else:
            kind = node.op.name
            node, other = _split(node)
            if kind == "add":
                found["mask"] = other
    found["q"], found["kt"] = node.args[0].fields
    return found


def fuse_attention(func: E.Function, mod=None) -> E.Function:
    """``func`` (typed) with its attention chains in fused functions (module docstring).

    Args:
        func: a type-checked function.
        mod: the module ``func`` belongs to (its global functions), if it calls any.
    """
    return rewrite(_AttentionCallback(), func, mod)


@dataclass(frozen=True)
class FuseAttention(ModulePass):
    """Group each scaled dot-product attention chain into one ``Primitive`` function."""

    name: ClassVar[str] = "FuseAttention"
    opt_level: ClassVar[int] = 3
    required: ClassVar[tuple] = ("InferType",)

    def transform_module(self, mod, ctx=None):
        """The rewritten, type-checked copy of ``mod``."""
        return rewrite_typed_module(mod, lambda func: fuse_attention(func, mod))


register_pass("FuseAttention", FuseAttention)
