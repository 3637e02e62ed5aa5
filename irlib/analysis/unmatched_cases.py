"""``unmatched_cases(match, mod=None)``: the values a ``match`` does not handle (Relay's
``relay.analysis.unmatched_cases``).

    match (%l) {                      unmatched_cases: [Cons(_, Cons(_, _)), Nil]
      Cons(_, Nil) => ...
    }

The cases are pattern nodes: ``PatternWildcard`` stands for "any value". The algorithm is the
one type inference uses to reject incomplete ``match`` expressions
(:mod:`irlib.typeinf.match_coverage`).
"""

from __future__ import annotations

from ..errors import IRError
from ..ir import expr as E
from ..typeinf.match_coverage import missing_case_patterns


def unmatched_cases(match, mod=None) -> list:
    """Patterns describing the values no clause of ``match`` handles.

    Args:
        match: a :class:`~irlib.ir.expr.Match`.
        mod: the module defining the ADTs whose constructors the patterns use (needed to
            know every constructor of a type); None when the patterns use no constructors.

    Returns:
        A list of patterns (empty when the match is exhaustive). A match with no clauses
        gives ``[PatternWildcard()]``.

    Raises:
        IRError: if ``match`` is not a Match, or a constructor's type is not defined in
            ``mod``.
    """
    if not isinstance(match, E.Match):
        raise IRError(f"unmatched_cases expects a Match, got {type(match).__name__}")
    definitions = mod.type_definitions if mod is not None else {}

    def constructors_of(adt):
        data = definitions.get(adt)
        if data is None:
            raise IRError(f"unmatched_cases: type {adt.name_hint} is not defined in the "
                          f"module; pass the module that defines it as mod=")
        return data.constructors

    return missing_case_patterns([clause.lhs for clause in match.clauses], constructors_of)
