"""DeadCodeElimination: drop let bindings nobody uses (Relay's ``DeadCodeElimination``).

A binding is dead when its variable is not used by live code, so a binding used only by dead
bindings goes too. With ``inline_once=True`` a pure binding used exactly once is substituted
into its use (a use inside a nested function counts as two, so work is never moved into a
function that may run many times). Bindings whose value may have an effect (a ``ref_write``,
or a call of anything but an op or constructor) are kept even when unused.

Before/after::

    fn (%x) { let %a = add(%x, 1f); let %b = multiply(%x, 2f); %b }
    fn (%x) { let %b = multiply(%x, 2f); %b }

and with ``inline_once=True``: ``fn (%x) { multiply(%x, 2f) }``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import expr as E
from ..ir.functor import children, post_order
from ..ir.module import IRModule
from ..ir.functor import ExprMutator
from ._rewrite import map_functions
from .pass_infra import ModulePass


def may_have_effect(expr: E.Expr) -> dict:
    """For every node under ``expr``: whether evaluating it may have an effect.

    A ``ref_write`` or a call of anything other than an op or a constructor may; a function
    literal never does (building a closure runs nothing).

    Returns:
        A dict node -> bool.
    """
    effect: dict = {}
    for node in post_order(expr):
        kind = type(node)
        if kind is E.Function:
            effect[node] = False
        elif kind is E.RefWrite:
            effect[node] = True
        elif kind is E.Call and not isinstance(node.op, (E.Op, E.Constructor)):
            effect[node] = True
        else:
            effect[node] = any(effect[c] for c in children(node))
    return effect


def live_use_counts(expr: E.Expr, effect: dict) -> dict:
    """How often each let variable is used by live code (uses in nested functions count 2).

    A let's value is walked only once its variable is found used (or if it has an effect),
    so uses by dead code are not counted.

    Args:
        expr: the expression.
        effect: node -> whether evaluating it may have an effect (:func:`may_have_effect`; such let
            values are live even when unused).
    """
    counts: dict = {}
    pending: dict = {}   # let var -> (value, depth) not walked yet
    bound_depth: dict = {}
    seen: set = set()
    stack = [(expr, 0)]
    while stack:
        node, depth = stack.pop()
        kind = type(node)
        if kind is E.Var:
            weight = 1 if bound_depth.get(node, depth) == depth else 2
            counts[node] = counts.get(node, 0) + weight
            waiting = pending.pop(node, None)
            if waiting is not None:
                stack.append(waiting)
            continue
        if node in seen:
            continue
        seen.add(node)
        if kind is E.Let:
            bound_depth[node.var] = depth
            if effect[node.value]:
                stack.append((node.value, depth))
            else:
                pending[node.var] = (node.value, depth)
            stack.append((node.body, depth))
        elif kind is E.Function:
            stack.append((node.body, depth + 1))
        elif kind is E.Match:
            stack.append((node.data, depth))
            stack.extend((c.rhs, depth) for c in node.clauses)
        else:
            stack.extend((c, depth) for c in children(node))
    return counts


class _Eliminate(ExprMutator):
    def __init__(self, counts, effect, inline_once):
        super().__init__()
        self.counts = counts
        self.effect = effect
        self.inline_once = inline_once
        self.removed: set = set()

    def bind_let(self, let, new_value):
        if self.effect[let.value]:
            # ``let %v = e; %v`` is ``e`` whatever ``e`` does: nothing runs in between.
            if self.inline_once and let.body is let.var:
                self.memo[let.var] = new_value
                self.removed.add(let)
            return
        uses = self.counts.get(let.var, 0)
        if uses == 0:
            self.removed.add(let)
        elif uses == 1 and self.inline_once:
            self.memo[let.var] = new_value
            self.removed.add(let)

    def visit_let(self, node, original):
        return node.body if original in self.removed else node


def eliminate_dead_code(expr: E.Expr, inline_once: bool = False,
                        ignore_impurity: bool = False) -> E.Expr:
    """``expr`` without dead let bindings (see the module docstring).

    Args:
        expr: an expression.
        inline_once: also substitute pure bindings used exactly once.
        ignore_impurity: treat every binding as pure (unused effectful bindings go too).

    Returns:
        The new expression (``expr`` itself if nothing changed).
    """
    effect = may_have_effect(expr)
    if ignore_impurity:
        effect = dict.fromkeys(effect, False)
    counts = live_use_counts(expr, effect)
    return _Eliminate(counts, effect, inline_once).visit(expr)


@dataclass(frozen=True)
class DeadCodeElimination(ModulePass):
    """Remove unused let bindings in every function.

    Args:
        inline_once: also inline pure bindings used exactly once.
        ignore_impurity: also remove (and inline) bindings whose value may have an effect.
    """

    inline_once: bool = False
    ignore_impurity: bool = False
    name: ClassVar[str] = "DeadCodeElimination"
    opt_level: ClassVar[int] = 1

    def transform_module(self, mod: IRModule, ctx=None) -> IRModule:
        """The module with dead code removed from each function."""
        return map_functions(mod, lambda f: eliminate_dead_code(f, self.inline_once,
                                                                  self.ignore_impurity))
