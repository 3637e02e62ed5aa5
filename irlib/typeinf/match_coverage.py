"""Completeness of ``match``: which values no clause covers.

A complete ``match`` (``Match(..., complete=True)``, written ``match`` rather than ``match?``)
must handle every value of the scrutinee's type. :func:`missing_cases` finds example values
that no clause handles, as patterns with ``_`` for "anything"::

    match (%l) {                        missing: Cons(_, Cons(_, _)), Nil
      Cons(%x, Nil) => ...
    }

The algorithm is Relay's (``match_exhaustion.cc``). It keeps a list of *candidates*,
patterns that together describe the values not handled yet, starting with one wildcard. Each
clause pattern is compared with each candidate:

* the candidate is entirely handled by the pattern: it is dropped;
* the two can never match the same value (different constructors): it is kept;
* otherwise the candidate is *expanded* along the pattern: a wildcard where the pattern has
  constructor ``C`` becomes one candidate per constructor of the ADT (``C`` with its fields
  expanded the same way, the others with wildcard fields). Every expanded candidate is now
  either handled by the pattern or disjoint from it.

The candidates left after the last clause are the missing cases.

Patterns are shallow (they are written by hand), so the helpers here recurse over pattern
nesting; nothing recurses over expressions.
"""

from __future__ import annotations

import itertools

from ..ir import expr as E

_MATCH, _CLASH, _UNSPECIFIED = range(3)


class _Wild:
    """The candidate "any value"."""

    __slots__ = ()


WILD = _Wild()


class _CtorCase:
    """The candidate "a value built by ``ctor`` whose fields are ``fields``"."""

    __slots__ = ("ctor", "fields")

    def __init__(self, ctor, fields):
        self.ctor = ctor
        self.fields = tuple(fields)


class _TupleCase:
    """The candidate "a tuple whose fields are ``fields``"."""

    __slots__ = ("fields",)

    def __init__(self, fields):
        self.fields = tuple(fields)


def missing_cases(patterns, constructors_of) -> list:
    """Example values that none of ``patterns`` matches, as text (``["Nil", "Cons(_, Nil)"]``).

    Args:
        patterns: the clause patterns, in order.
        constructors_of: ``f(GlobalTypeVar) -> sequence of Constructor`` giving every
            constructor of an ADT.

    Returns:
        The missing cases printed in the text format; empty when the match is complete.
    """
    return [case_to_text(c) for c in _missing(patterns, constructors_of)]


def missing_case_patterns(patterns, constructors_of) -> list:
    """Like :func:`missing_cases`, but the cases as pattern nodes (``PatternWildcard``,
    ``PatternConstructor``, ``PatternTuple``), as Relay's ``unmatched_cases`` gives them.

    Args:
        patterns: the match's clause patterns.
        constructors_of: type -> its constructors (how a wildcard of an ADT type splits).
    """
    return [case_to_pattern(c) for c in _missing(patterns, constructors_of)]


def _missing(patterns, constructors_of) -> list:
    candidates = [WILD]
    for pattern in patterns:
        remaining = []
        for candidate in candidates:
            verdict = _compare(pattern, candidate)
            if verdict == _CLASH:
                remaining.append(candidate)
            elif verdict == _UNSPECIFIED:
                for expanded in _expand(candidate, pattern, constructors_of):
                    if _compare(pattern, expanded) != _MATCH:
                        remaining.append(expanded)
        candidates = remaining
        if not candidates:
            break
    return candidates


def _compare(pattern, candidate) -> int:
    """Whether every value of ``candidate`` matches ``pattern`` (_MATCH), none does (_CLASH),
    or it depends (_UNSPECIFIED)."""
    if isinstance(pattern, (E.PatternWildcard, E.PatternVar)):
        return _MATCH
    if isinstance(candidate, _Wild):
        return _UNSPECIFIED
    if isinstance(pattern, E.PatternConstructor):
        if not isinstance(candidate, _CtorCase) or candidate.ctor is not pattern.constructor:
            return _CLASH
        return _combine(_compare(p, c) for p, c in zip(pattern.patterns, candidate.fields))
    if isinstance(pattern, E.PatternTuple) and isinstance(candidate, _TupleCase):
        return _combine(_compare(p, c) for p, c in zip(pattern.patterns, candidate.fields))
    return _CLASH


def _combine(verdicts) -> int:
    result = _MATCH
    for verdict in verdicts:
        if verdict == _CLASH:
            return _CLASH
        if verdict == _UNSPECIFIED:
            result = _UNSPECIFIED
    return result


def _expand(candidate, pattern, constructors_of) -> list:
    """``candidate`` split into candidates that are each handled by ``pattern`` or disjoint
    from it (see the module docstring)."""
    if isinstance(pattern, (E.PatternWildcard, E.PatternVar)):
        return [candidate]
    if isinstance(pattern, E.PatternConstructor):
        target = pattern.constructor
        if isinstance(candidate, _Wild):
            cases = []
            for ctor in constructors_of(target.belong_to):
                if ctor is target:
                    cases.extend(_expand_fields(ctor, [WILD] * len(ctor.inputs),
                                                pattern.patterns, constructors_of))
                else:
                    cases.append(_CtorCase(ctor, [WILD] * len(ctor.inputs)))
            return cases
        if isinstance(candidate, _CtorCase) and candidate.ctor is target:
            return _expand_fields(target, candidate.fields, pattern.patterns, constructors_of)
        return [candidate]
    if isinstance(pattern, E.PatternTuple):
        if isinstance(candidate, _Wild):
            candidate = _TupleCase([WILD] * len(pattern.patterns))
        if isinstance(candidate, _TupleCase):
            return _expand_fields(None, candidate.fields, pattern.patterns, constructors_of)
    return [candidate]


def _expand_fields(ctor, fields, sub_patterns, constructors_of) -> list:
    per_field = [_expand(c, p, constructors_of) for c, p in zip(fields, sub_patterns)]
    if ctor is None:
        return [_TupleCase(combo) for combo in itertools.product(*per_field)]
    return [_CtorCase(ctor, combo) for combo in itertools.product(*per_field)]


def case_to_text(case) -> str:
    """A candidate in text-format pattern syntax: ``_``, ``Nil``, ``Cons(_, Nil)``, ``(_, _)``.

    Args:
        case: the candidate case.
    """
    if isinstance(case, _Wild):
        return "_"
    if isinstance(case, _TupleCase):
        inner = ", ".join(case_to_text(c) for c in case.fields)
        return f"({inner},)" if len(case.fields) == 1 else f"({inner})"
    if not case.fields:
        return case.ctor.name_hint
    return f"{case.ctor.name_hint}(" + ", ".join(case_to_text(c) for c in case.fields) + ")"


def case_to_pattern(case):
    """A candidate as a pattern node (wildcards for "anything").

    Args:
        case: the candidate case.
    """
    if isinstance(case, _Wild):
        return E.PatternWildcard()
    fields = [case_to_pattern(c) for c in case.fields]
    if isinstance(case, _TupleCase):
        return E.PatternTuple(fields)
    return E.PatternConstructor(case.ctor, fields)


def pattern_to_text(pattern) -> str:
    """A pattern in text-format syntax (``Cons(%x, _)``), for error messages."""
    if isinstance(pattern, E.PatternWildcard):
        return "_"
    if isinstance(pattern, E.PatternVar):
        return f"%{pattern.var.name_hint}"
    if isinstance(pattern, E.PatternTuple):
        inner = ", ".join(pattern_to_text(p) for p in pattern.patterns)
        return f"({inner},)" if len(pattern.patterns) == 1 else f"({inner})"
    if not pattern.patterns:
        return pattern.constructor.name_hint
    return (f"{pattern.constructor.name_hint}("
            + ", ".join(pattern_to_text(p) for p in pattern.patterns) + ")")
