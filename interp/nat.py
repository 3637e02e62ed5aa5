"""Peano naturals (``nat.rly``'s ``zero``/``succ``) as values and expressions.

``relay.testing.nat``'s helpers: :func:`count` reads a nat value back as a Python int,
:func:`make_nat_value` builds the value ``succ(succ(...zero))`` and :func:`make_nat_expr`
the expression ``s(s(...z()))``. All three are loops, so n = 100,000 works. They find the
ADT with ``prelude.mod.get_type("nat")``; import ``nat.rly`` into the Prelude's module
first (``p.mod.import_from_std("nat.rly")``). A module carrying the ``nat`` type can be
passed in place of the Prelude.
"""

from __future__ import annotations

from irlib.errors import InterpreterError
from irlib.ir.expr import Call

from .values import ConstructorValue, format_value


def _nat_constructors(prelude):
    mod = getattr(prelude, "mod", prelude)
    _, zero, succ = mod.get_type("nat")
    return zero, succ


def count(prelude, n) -> int:
    """The Python int a nat value stands for.

    Args:
        prelude: the Prelude (or module) defining ``nat``.
        n: a ``ConstructorValue`` built from ``zero`` and ``succ``.

    Returns:
        The number of ``succ`` constructors around ``zero``.

    Raises:
        InterpreterError: if ``value`` is not a nat.
    """
    zero, succ = _nat_constructors(prelude)
    total = 0
    current = n
    while True:
        if not isinstance(current, ConstructorValue):
            raise InterpreterError(f"count expects a nat value, got {format_value(current)}")
        if current.tag == zero.tag:
            return total
        if current.tag != succ.tag:
            raise InterpreterError(f"count expects a nat value, got a {current.name} "
                                   f"constructor")
        total += 1
        current = current.fields[0]


def make_nat_value(prelude, n: int) -> ConstructorValue:
    """The nat value ``succ`` applied ``n`` times to ``zero``.

    Args:
        prelude: the Prelude (or module) defining ``nat``.
        n: a non-negative int.

    Raises:
        ValueError: if ``n`` is negative.
    """
    if n < 0:
        raise ValueError(f"make_nat_value needs n >= 0, got {n}")
    zero, succ = _nat_constructors(prelude)
    value = ConstructorValue(zero.tag, (), zero)
    for _ in range(n):
        value = ConstructorValue(succ.tag, (value,), succ)
    return value


def make_nat_expr(prelude, n: int):
    """The expression ``succ(succ(...zero()))`` with ``n`` applications of ``succ``.

    Args:
        prelude: the Prelude (or module) defining ``nat``.
        n: a non-negative int.

    Raises:
        ValueError: if ``n`` is negative.
    """
    if n < 0:
        raise ValueError(f"make_nat_expr needs n >= 0, got {n}")
    zero, succ = _nat_constructors(prelude)
    expr = Call(zero, ())
    for _ in range(n):
        expr = Call(succ, (expr,))
    return expr
