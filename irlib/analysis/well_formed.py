"""Well-formedness: every variable is bound at most once and used only inside its scope.

A variable bound nowhere in the expression is *free*; free variables are allowed (a pass may
be given an open term) unless the caller lists the free variables it expects. A let variable
is in scope in its own value (recursive lets) and its body; a parameter in its function's body;
a pattern variable in its clause's right-hand side.

As in TVM's checker, each node of a DAG is checked once, in the first context the walk meets it
(variable occurrences are checked at every use). The walk is iterative.

Example::

    x = var("x")
    well_formed(Let(x, const(1), x))                    # True
    well_formed(Tuple([Let(x, const(1), x), x]))         # False: x used outside its let
"""

from __future__ import annotations

from ..errors import WellFormedError
from ..ir import expr as E
from ..ir.functor import children, pattern_vars

_VISIT, _CLAUSE, _EXIT = 0, 1, 2


def check_well_formed(expr, free_vars=None) -> None:
    """Raise unless ``expr`` is well formed.

    Args:
        expr: an expression.
        free_vars: if given, the only variables allowed to occur free.

    Raises:
        WellFormedError: naming the first variable that is bound twice, used outside its
            scope, or free without being allowed.
    """
    allowed = None if free_vars is None else set(free_vars)
    in_scope: set = set()
    ever_bound: set = set()
    seen_free: set = set()
    visited: set = set()

    def bind(var, where: str) -> None:
        if var in ever_bound:
            raise WellFormedError(f"variable %{var.name_hint} is bound more than once "
                                  f"(again by a {where})")
        if var in seen_free:
            raise WellFormedError(f"variable %{var.name_hint} is used outside the scope of its "
                                  f"binding (a {where} binds it after a use outside it)")
        ever_bound.add(var)
        in_scope.add(var)

    stack = [(_VISIT, expr)]
    while stack:
        action, item = stack.pop()
        if action == _EXIT:
            in_scope.difference_update(item)
            continue
        if action == _CLAUSE:
            variables = pattern_vars(item.lhs)
            for var in variables:
                bind(var, "match clause")
            stack.append((_EXIT, variables))
            stack.append((_VISIT, item.rhs))
            continue
        node = item
        kind = type(node)
        if kind is E.Var:
            _check_use(node, in_scope, ever_bound, seen_free, allowed)
            continue
        if node in visited:
            continue
        visited.add(node)
        if kind is E.Let:
            bind(node.var, "let")
            stack.append((_EXIT, (node.var,)))
            stack.append((_VISIT, node.body))
            stack.append((_VISIT, node.value))
        elif kind is E.Function:
            for param in node.params:
                bind(param, "function parameter list")
            stack.append((_EXIT, node.params))
            stack.append((_VISIT, node.body))
        elif kind is E.Match:
            for clause in reversed(node.clauses):
                stack.append((_CLAUSE, clause))
            stack.append((_VISIT, node.data))
        else:
            for child in reversed(children(node)):
                stack.append((_VISIT, child))


def _check_use(var, in_scope, ever_bound, seen_free, allowed) -> None:
    if var in in_scope:
        return
    if var in ever_bound:
        raise WellFormedError(f"variable %{var.name_hint} is used outside the scope of its "
                              f"binding")
    if allowed is not None and var not in allowed:
        raise WellFormedError(f"free variable %{var.name_hint} is not among the declared free "
                              f"variables")
    seen_free.add(var)


def well_formed(expr, free_vars=None) -> bool:
    """Whether ``expr`` is well formed (see :func:`check_well_formed`).

    Args:
        expr: an expression.
        free_vars: if given, the only variables allowed to occur free.

    Returns:
        True if every variable is bound at most once and used only in its scope.
    """
    try:
        check_well_formed(expr, free_vars)
    except WellFormedError:
        return False
    return True
