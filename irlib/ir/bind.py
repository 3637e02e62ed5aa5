"""``bind(expr, binds)``: replace free variables by expressions (Relay's ``relay.bind``).

    >>> x, y = var("x"), var("y")
    >>> bind(Function([x, y], x + y), {x: const(1.0)})      # fn (%y) { add(1f, %y) }
"""

from __future__ import annotations

from ..errors import IRError
from . import expr as E
from .rewrite import substitute


def bind(expr, binds: dict):
    """``expr`` with each variable in ``binds`` replaced by its expression.

    For a :class:`~irlib.ir.expr.Function`, bound parameters are removed from the parameter
    list (the others keep their order) and occurrences in the body are replaced; for any
    other expression, free occurrences are replaced. ``expr`` is not modified.

    Args:
        expr: the expression or function.
        binds: ``{Var: Expr}``; a non-expression value (numpy array, scalar) is made a
            constant.

    Returns:
        The new expression.

    Raises:
        IRError: if a key of ``binds`` is not a :class:`~irlib.ir.expr.Var`.
    """
    mapping = {}
    for key, value in binds.items():
        if not isinstance(key, E.Var):
            raise IRError(f"bind: keys must be Vars, got {type(key).__name__}")
        mapping[key] = value if isinstance(value, E.Expr) else E.const(value)
    if isinstance(expr, E.Function):
        kept = tuple(p for p in expr.params if p not in mapping)
        return expr.replace(params=kept, body=substitute(expr.body, mapping))
    return substitute(expr, mapping)
