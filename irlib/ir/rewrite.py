"""Rewriting helpers every pass shares, built on :class:`~irlib.ir.functor.ExprMutator`.

* :func:`substitute` replaces free variables by expressions (no renaming);
* :func:`fresh_copy` copies an expression with every bound variable renamed, so the copy can
  sit next to the original (inlining, gradients, specialisation);
* :func:`binders` lists the variables an expression binds; :func:`fresh_var` makes a new one;
* :func:`let_chain` flattens ``let x1 = v1; ...; result`` into ``([(x1, v1), ...], result)``
  and :func:`make_lets` builds it back -- the loop over a let chain that replaces recursion;
  :func:`nested_scopes` lists the scopes inside an A-normal-form scope (for
  ``post_order(children_of=nested_scopes)``).

All of it is iterative: a 100,000-deep let chain is an ordinary input.
"""

from __future__ import annotations

from . import expr as E
from .functor import ExprMutator, pattern_vars, post_order


def fresh_var(name: str, type_annotation=None) -> E.Var:
    """A new variable (a new object, so distinct from every existing one).

    Args:
        name: its name hint.
        type_annotation: its type annotation, or None.
    """
    return E.Var(name, type_annotation)


def binders(expr: E.Expr) -> list:
    """Every variable bound inside ``expr`` (let vars, params, pattern vars), each once, in
    post-order of their binding nodes.

    Args:
        expr: the expression to scan.
    """
    found, seen = [], set()
    for node in post_order(expr):
        kind = type(node)
        if kind is E.Let:
            new = (node.var,)
        elif kind is E.Function:
            new = node.params
        elif kind is E.Match:
            new = tuple(v for c in node.clauses for v in pattern_vars(c.lhs))
        else:
            continue
        for var in new:
            if var not in seen:
                seen.add(var)
                found.append(var)
    return found


class _Substitute(ExprMutator):
    """An :class:`ExprMutator` whose memo starts as the substitution (Var -> Expr)."""

    def __init__(self, mapping: dict):
        super().__init__()
        self.memo.update(mapping)


def substitute(expr: E.Expr, substitution: dict) -> E.Expr:
    """``expr`` with free variables replaced per ``substitution`` (no renaming).

    Args:
        expr: the expression (not modified).
        substitution: ``{Var: Expr}``; an empty mapping returns ``expr`` itself.
    """
    if not substitution:
        return expr
    return _Substitute(dict(substitution)).visit(expr)


def fresh_copy(expr: E.Expr, substitution: dict | None = None) -> E.Expr:
    """``expr`` with every bound variable renamed to a fresh one and the free variables
    replaced per ``substitution``.

    The copy can be placed next to ``expr`` (or next to another copy) and the program stays
    well formed.

    Args:
        expr: the expression (not modified).
        substitution: optional ``{Var: Expr}`` for free variables.
    """
    mapping = dict(substitution or {})
    for var in binders(expr):
        mapping[var] = fresh_var(var.name_hint, var.type_annotation)
    return _Substitute(mapping).visit(expr)


def let_chain(expr: E.Expr) -> tuple:
    """``(bindings, result)`` of a let chain: ``[(var, value), ...]`` outermost first and
    the first non-let body. A non-let ``expr`` gives ``([], expr)``.

    Args:
        expr: the expression to flatten.
    """
    bindings = []
    while type(expr) is E.Let:
        bindings.append((expr.var, expr.value))
        expr = expr.body
    return bindings, expr


def make_lets(bindings, result: E.Expr) -> E.Expr:
    """``let var1 = value1; ...; result`` from ``[(var, value), ...]`` (outermost first);
    the inverse of :func:`let_chain`.

    Args:
        bindings: ``(Var, Expr)`` pairs in binding order.
        result: the innermost body.
    """
    for var, value in reversed(list(bindings)):
        result = E.Let(var, value, result)
    return result


def nested_scopes(scope: E.Expr) -> list:
    """The scopes nested directly in an A-normal-form scope: the branches of an ``if``, the
    clause bodies of a ``match`` and the bodies of functions bound by its lets.

    With ``post_order(body, children_of=nested_scopes)`` a pass handles every scope of a
    function after the scopes inside it, without recursion.

    Args:
        scope: a let chain (or a single expression: a scope without bindings).
    """
    found = []
    for _, value in let_chain(scope)[0]:
        kind = type(value)
        if kind is E.If:
            found.extend((value.true_branch, value.false_branch))
        elif kind is E.Match:
            found.extend(c.rhs for c in value.clauses)
        elif kind is E.Function:
            found.append(value.body)
    return found
