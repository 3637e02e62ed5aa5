"""CanonicalizeOps: rewrite ops into simpler ones later passes understand (Relay's
``CanonicalizeOps``).

``nn.bias_add(x, b, axis)`` becomes ``add(x, expand_dims(b, axis=1, num_newaxis=k))`` where
``k`` trailing unit axes make ``b`` broadcast along ``axis`` (none when ``axis`` is last).

Before/after::

    nn.bias_add(%x: Tensor[(1, 64, 56, 56), float32], %b: Tensor[(64), float32])
    add(%x, expand_dims(%b, axis=1, num_newaxis=2))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import expr as E
from ..ir.functor import ExprMutator
from ._typed import expand_to_axis, op, op_name, rewrite_typed_module, tensor_type
from .pass_infra import ModulePass


class _Canonicalize(ExprMutator):
    def enter_function(self, node):
        return not node.get_attr("Primitive")

    def visit_call(self, node, original):
        if op_name(node) != "nn.bias_add":
            return node
        ty = tensor_type(original.args[0])
        if ty is None:
            return node
        ndim = len(ty.shape)
        axis = node.attrs["axis"] % ndim
        return op("add", node.args[0], expand_to_axis(node.args[1], ndim, axis))


def canonicalize_ops(func: E.Function) -> E.Function:
    """``func`` (type-checked) with ``nn.bias_add`` expanded (see the module docstring)."""
    return _Canonicalize().visit(func)


@dataclass(frozen=True)
class CanonicalizeOps(ModulePass):
    """Expand ``nn.bias_add`` into ``expand_dims`` + ``add``."""

    name: ClassVar[str] = "CanonicalizeOps"
    opt_level: ClassVar[int] = 3
    required: ClassVar[tuple] = ("InferType",)

    def transform_module(self, mod, ctx=None):
        """The canonicalised, type-checked copy of ``mod``."""
        return rewrite_typed_module(mod, canonicalize_ops)
