"""EliminateCommonSubexpr: share identical op calls and projections (Relay's CSE).

Bottom-up, two calls are merged when they call the same op with equal attributes on
pairwise identical arguments (the same node after rewriting, or equal scalar constants).
Two projections of the same tuple at the same index are merged too. Calls without
arguments, calls of stateful ops, non-op callees and whatever ``fskip(expr)`` accepts are
left alone. The result shares nodes (a DAG), which every other pass handles.

Before/after::

    add(add(nn.relu(%x), 1f), add(nn.relu(%x), 1f))
    %0 = add(nn.relu(%x), 1f); add(%0, %0)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar, Optional

from ..ir import expr as E
from ..ir.functor import ExprMutator
from ..ir.module import IRModule
from ._rewrite import map_functions
from .pass_infra import ModulePass


def is_stateful(op: E.Op) -> bool:
    """Whether an op is marked stateful (``TOpIsStateful``) in the registry."""
    return bool(op.op_def.get_attr("TOpIsStateful", False))


def _argument_key(arg: E.Expr):
    # Scalar constants compare by value; everything else by identity.
    if isinstance(arg, E.Constant) and arg.data.shape == ():
        array = arg.data.numpy()
        return ("const", str(array.dtype), array.tobytes())
    if isinstance(arg, E.Tuple):
        return ("tuple",) + tuple(_argument_key(f) for f in arg.fields)
    return id(arg)


class _CommonSubexpr(ExprMutator):
    def __init__(self, fskip):
        super().__init__()
        self.fskip = fskip
        self.calls: dict = {}
        self.projections: dict = {}
        self.keep_alive: list = []   # ids in keys must stay valid

    def visit_call(self, node, original):
        if not isinstance(node.op, E.Op) or not node.args or is_stateful(node.op):
            return node
        if self.fskip is not None and self.fskip(node):
            return node
        key = (node.op.name, node.attrs, tuple(_argument_key(a) for a in node.args))
        existing = self.calls.get(key)
        if existing is not None:
            return existing
        self.calls[key] = node
        self.keep_alive.append(node)
        return node

    def visit_tuple_get_item(self, node, original):
        if self.fskip is not None and self.fskip(node):
            return node
        key = (id(node.tuple_value), node.index)
        existing = self.projections.get(key)
        if existing is not None:
            return existing
        self.projections[key] = node
        return node


def eliminate_common_subexpr(expr: E.Expr, fskip: Optional[Callable] = None) -> E.Expr:
    """``expr`` with identical op calls and projections shared.

    Args:
        expr: an expression.
        fskip: ``fskip(expr) -> bool``; True keeps that call or projection unmerged.

    Returns:
        The new expression.
    """
    return _CommonSubexpr(fskip).visit(expr)


@dataclass(frozen=True)
class EliminateCommonSubexpr(ModulePass):
    """Merge structurally identical op calls in every function.

    Args:
        fskip: a callback deciding whether an expression is skipped.
    """

    fskip: Optional[Callable] = None
    name: ClassVar[str] = "EliminateCommonSubexpr"
    opt_level: ClassVar[int] = 3

    def transform_module(self, mod: IRModule, ctx=None) -> IRModule:
        """The module with common subexpressions merged."""
        return map_functions(mod, lambda f: eliminate_common_subexpr(f, self.fskip))
