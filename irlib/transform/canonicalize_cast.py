"""CanonicalizeCast: give each elementwise consumer of a shared up-cast its own cast (Relay's
``CanonicalizeCast``), so that FuseOps can fuse the cast into every consumer instead of
materialising the wider tensor.

An *up-cast* is a ``cast`` to a dtype of more bits than its input. When such a cast has more
than one use, every use by an ELEMWISE or BROADCAST op gets a fresh copy of the cast; other
uses keep the shared one.

Before/after (``%x`` int8)::

    %1 = cast(%x, dtype="int32"); (add(%1, %b1), add(%1, %b2))
    (add(cast(%x, dtype="int32"), %b1), add(cast(%x, dtype="int32"), %b2))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..ir import expr as E
from ..ir.functor import use_counts
from ..op.registry import OpPattern, get_def
from ..ir.functor import ExprMutator
from ._typed import op_name, rewrite_typed_module, tensor_type
from .pass_infra import ModulePass


def _bits(dtype: str) -> int:
    return 1 if dtype == "bool" else np.dtype(dtype).itemsize * 8


def _is_up_cast(node) -> bool:
    if op_name(node) != "cast":
        return False
    source, target = tensor_type(node.args[0]), tensor_type(node)
    return source is not None and target is not None and \
        _bits(target.dtype) > _bits(source.dtype)


class _SplitCasts(ExprMutator):
    def __init__(self, uses):
        super().__init__()
        self.uses = uses

    def enter_function(self, node):
        return not node.get_attr("Primitive")

    def visit_call(self, node, original):
        name = op_name(node)
        if name is None or get_def(name).pattern > OpPattern.BROADCAST:
            return node
        args = list(node.args)
        for i, arg in enumerate(original.args):
            if self.uses.get(arg, 0) > 1 and _is_up_cast(arg):
                new_cast = self.memo[arg]
                args[i] = E.Call(new_cast.op, new_cast.args, new_cast.attrs, span=arg.span)
        return node.replace(args=tuple(args))


def canonicalize_cast(func: E.Function) -> E.Function:
    """``func`` (type-checked) with shared up-casts split per elementwise consumer."""
    return _SplitCasts(use_counts(func)).visit(func)


@dataclass(frozen=True)
class CanonicalizeCast(ModulePass):
    """Duplicate shared up-casts for their elementwise consumers."""

    name: ClassVar[str] = "CanonicalizeCast"
    opt_level: ClassVar[int] = 3
    required: ClassVar[tuple] = ("InferType",)

    def transform_module(self, mod, ctx=None):
        """The rewritten, type-checked copy of ``mod``."""
        return rewrite_typed_module(mod, canonicalize_cast)
