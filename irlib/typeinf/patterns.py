"""Type constraints of ``match`` patterns.

A clause pattern says what shape the scrutinee has and binds variables to its parts:

* ``_`` constrains nothing;
* ``%x`` gives ``%x`` the type of the matched part;
* ``Cons(p1, p2)`` requires the part to be a ``List[t]`` (fresh ``t`` per use of the
  constructor) and checks ``p1`` against ``t`` and ``p2`` against ``List[t]``, the
  constructor's field types with the ADT's type variables replaced;
* ``(p1, p2)`` requires a 2-tuple and checks each field.

The walk uses an explicit stack of ``(pattern, expected type)`` pairs.
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir.types import TupleType
from .match_coverage import pattern_to_text
from .unifier import fresh_hole, instantiate


def check_pattern(checker, pattern, scrutinee_type, match) -> bool:
    """Add the constraints of ``pattern`` matching a value of ``scrutinee_type``.

    Args:
        checker: the :class:`~irlib.typeinf.checker.Checker` (unifier, types, errors).
        pattern: the clause pattern.
        scrutinee_type: the type of the matched value.
        match: the :class:`~irlib.ir.expr.Match` (blamed in reports).

    Returns:
        True if no error was found.
    """
    errors_before = len(checker.errors)
    stack = [(pattern, scrutinee_type)]
    while stack:
        current, expected = stack.pop()
        kind = type(current)
        if kind is E.PatternVar:
            checker.unify_or_report(
                expected, checker.types[current.var], match,
                f"pattern variable %{current.var.name_hint} is annotated with a type the "
                f"matched value does not have")
        elif kind is E.PatternConstructor:
            stack.extend(_constructor_parts(checker, current, expected, match))
        elif kind is E.PatternTuple:
            holes = tuple(fresh_hole() for _ in current.patterns)
            if checker.unify_or_report(
                    expected, TupleType(holes), match,
                    f"tuple pattern {pattern_to_text(current)} cannot match the value") \
                    is not None:
                stack.extend(zip(current.patterns, holes))
    return len(checker.errors) == errors_before


def _constructor_parts(checker, pattern, expected, match) -> list:
    """Check a constructor pattern's outer type; returns its (sub-pattern, type) pairs."""
    ctor = pattern.constructor
    ctor_type = checker.constructor_type(ctor, match)
    if ctor_type is None:
        return []
    field_types = instantiate(ctor_type)[0]
    text = pattern_to_text(pattern)
    if checker.unify_or_report(expected, field_types.ret_type, match,
                               f"pattern {text} cannot match the value") is None:
        return []
    if len(pattern.patterns) != len(field_types.arg_types):
        checker.errors.add(match, f"pattern {text} gives {len(pattern.patterns)} sub-pattern(s) "
                                  f"but constructor {ctor.name_hint} has "
                                  f"{len(field_types.arg_types)} field(s)")
        return []
    return list(zip(pattern.patterns, field_types.arg_types))
