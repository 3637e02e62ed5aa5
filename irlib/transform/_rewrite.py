"""Shared machinery of the passes: a let-aware iterative mutator, alpha-renaming copies,
and module helpers.

:class:`LetMutator` walks like :class:`~irlib.ir.functor.ExprMutator` (children first,
memoised by identity, explicit stack), with one difference that most passes need: a
``let`` is processed as *value, then bind, then body*. After the value is rewritten,
``bind_let(let, new_value)`` may set ``self.memo[let.var]`` to any expression, and every
use of the variable in the body is then replaced by it (inlining without a second walk).
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir.functor import children, node_kind, pattern_vars, post_order, rebuild
from ..ir.module import IRModule

_VISIT, _BOUND, _DONE = 0, 1, 2


class LetMutator:
    """Iterative bottom-up rewriter with a hook between a let's value and its body.

    Subclasses define any of:

    * ``visit_<kind>(self, node, original)``: ``node`` is ``original`` rebuilt with its
      rewritten children; return the replacement (default: ``node``).
    * ``enter_<kind>(self, node)``: called before the children; return False to keep the
      node as it is without visiting below it.
    * ``bind_let(self, let, new_value)``: called after a let's value is rewritten.

    A let whose variable was mapped to a non-Var keeps its original variable as binder.
    """

    def __init__(self):
        self.memo: dict = {}

    def bind_let(self, let: E.Let, new_value: E.Expr) -> None:
        """Hook between a let's value and body (default: nothing)."""

    def visit(self, expr: E.Expr) -> E.Expr:
        """Rewrite ``expr``; returns the new expression."""
        memo = self.memo
        if expr in memo:
            return memo[expr]
        stack = [(expr, _VISIT)]
        while stack:
            node, stage = stack.pop()
            if stage == _VISIT:
                if node in memo:
                    continue
                enter = getattr(self, "enter_" + node_kind(node), None)
                if enter is not None and enter(node) is False:
                    memo[node] = node
                    continue
                if type(node) is E.Let:
                    stack.append((node, _BOUND))
                    stack.append((node.value, _VISIT))
                    continue
                stack.append((node, _DONE))
                for child in reversed(children(node)):
                    if child not in memo:
                        stack.append((child, _VISIT))
            elif stage == _BOUND:
                self.bind_let(node, memo[node.value])
                if node.var not in memo:
                    memo[node.var] = self._finish(node.var, node.var)
                stack.append((node, _DONE))
                stack.append((node.body, _VISIT))
            else:
                if node in memo:
                    continue
                if type(node) is E.Let:
                    new_var = memo[node.var]
                    if not isinstance(new_var, E.Var):
                        new_var = node.var
                    rebuilt = node.replace(var=new_var, value=memo[node.value],
                                           body=memo[node.body])
                else:
                    rebuilt = rebuild(node, tuple(memo[c] for c in children(node)))
                memo[node] = self._finish(rebuilt, node)
        return memo[expr]

    def _finish(self, rebuilt, original):
        handler = getattr(self, "visit_" + node_kind(original), None)
        return rebuilt if handler is None else handler(rebuilt, original)

    __call__ = visit


def fresh_var(name: str, type_annotation=None) -> E.Var:
    """A new variable (a new object, so distinct from every existing one)."""
    return E.Var(name, type_annotation)


def binders(expr: E.Expr) -> list:
    """Every variable bound inside ``expr`` (let vars, params, pattern vars), each once."""
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


def fresh_copy(expr: E.Expr, substitution: dict | None = None) -> E.Expr:
    """``expr`` with every bound variable renamed to a fresh one and the free variables
    replaced per ``substitution`` (Var -> Expr).

    The copy can be placed next to ``expr`` (or next to another copy) and the program stays
    well formed.
    """
    mapping = dict(substitution or {})
    for var in binders(expr):
        mapping[var] = fresh_var(var.name_hint, var.type_annotation)
    return _Substitute(mapping).visit(expr)


def substitute(expr: E.Expr, substitution: dict) -> E.Expr:
    """``expr`` with free variables replaced per ``substitution`` (no renaming)."""
    if not substitution:
        return expr
    return _Substitute(dict(substitution)).visit(expr)


class _Substitute(LetMutator):
    def __init__(self, mapping):
        super().__init__()
        self.memo.update(mapping)


def map_functions(mod: IRModule, transform, skip_marked: bool = True) -> IRModule:
    """A copy of ``mod`` with ``transform(func)`` applied to each function.

    Args:
        mod: the module (not mutated).
        transform: a function Function -> Function.
        skip_marked: leave ``Compiler``/``Extern``/``SkipOptimization`` functions alone.
    """
    from .pass_infra import is_skipped_function
    new_mod = mod.copy()
    for gvar, func in mod.items():
        if skip_marked and is_skipped_function(func):
            continue
        new_func = transform(func)
        if new_func is not func:
            new_mod[gvar] = new_func
    return new_mod


def is_primitive(func: E.Function) -> bool:
    """Whether ``func`` is a fused ``Primitive=1`` function."""
    return bool(func.get_attr("Primitive"))


def known_type(node):
    """The node's inferred type, else its annotation (for vars), else None."""
    ty = node._checked_type
    if ty is None and isinstance(node, E.Var):
        ty = node.type_annotation
    return ty
