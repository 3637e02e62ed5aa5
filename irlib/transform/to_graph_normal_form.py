"""ToGraphNormalForm: remove let bindings by substitution (Relay's ``ToGraphNormalForm``).

Every ``let %v = e; body`` becomes ``body`` with ``e`` put (shared, by reference) where
``%v`` was used, so the result is a DAG. A binding whose value refers to its own variable
(a recursive function) is kept. Meant for pure code: an unused binding with an effect
disappears, as in Relay.

Before/after::

    fn (%x) { let %a = add(%x, %x); multiply(%a, %a) }
    fn (%x) { %0 = add(%x, %x); multiply(%0, %0) }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import expr as E
from ..ir.functor import post_order
from ..ir.module import IRModule
from ..ir.functor import ExprMutator
from ._rewrite import map_functions
from .pass_infra import ModulePass


def _is_recursive(let: E.Let) -> bool:
    # Only a function can refer to its own binder (anything else would be ill formed).
    return isinstance(let.value, E.Function) and any(n is let.var for n in post_order(let.value))


class _ToGraph(ExprMutator):
    def __init__(self):
        super().__init__()
        self.removed: set = set()

    def bind_let(self, let, new_value):
        if not _is_recursive(let):
            self.memo[let.var] = new_value
            self.removed.add(let)

    def visit_let(self, node, original):
        return node.body if original in self.removed else node


def to_graph_normal_form(expr: E.Expr) -> E.Expr:
    """``expr`` with its non-recursive lets substituted away.

    Args:
        expr: an expression.

    Returns:
        The new expression (a DAG).
    """
    return _ToGraph().visit(expr)


@dataclass(frozen=True)
class ToGraphNormalForm(ModulePass):
    """Convert every function of the module to graph normal form."""

    name: ClassVar[str] = "ToGraphNormalForm"
    opt_level: ClassVar[int] = 1

    def transform_module(self, mod: IRModule, ctx=None) -> IRModule:
        """The module in graph normal form."""
        return map_functions(mod, to_graph_normal_form)
