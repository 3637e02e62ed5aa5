"""Match completeness (missing cases listed by hand) and the call-graph ordering of globals."""

import pytest

from irlib import (Constructor, GlobalTypeVar, PatternConstructor, PatternTuple, PatternVar,
                   PatternWildcard, TypeCall, TypeVar, var)
from irlib.typeinf.driver import strongly_connected_components
from irlib.typeinf.match_coverage import missing_cases

LIST = GlobalTypeVar("List")
_A = TypeVar("A")
CONS = Constructor("Cons", [_A, TypeCall(LIST, [_A])], LIST)
NIL = Constructor("Nil", [], LIST)
BOOL_ADT = GlobalTypeVar("Bool")
TRUE = Constructor("T", [], BOOL_ADT)
FALSE = Constructor("F", [], BOOL_ADT)
CONSTRUCTORS = {LIST: (CONS, NIL), BOOL_ADT: (TRUE, FALSE)}


def missing(*patterns):
    return missing_cases(list(patterns), CONSTRUCTORS.__getitem__)


def cons(head, tail):
    return PatternConstructor(CONS, [head, tail])


NIL_P = PatternConstructor(NIL)
W = PatternWildcard


def test_wildcard_and_variable_cover_everything():
    assert missing(W()) == []
    assert missing(PatternVar(var("x"))) == []
    assert missing() == ["_"]


def test_both_constructors_cover_a_list():
    assert missing(cons(W(), W()), NIL_P) == []
    assert missing(NIL_P, cons(PatternVar(var("h")), PatternVar(var("t")))) == []


def test_missing_constructor():
    assert missing(cons(W(), W())) == ["Nil"]
    assert missing(NIL_P) == ["Cons(_, _)"]


def test_nested_patterns():
    assert missing(cons(W(), NIL_P), NIL_P) == ["Cons(_, Cons(_, _))"]
    assert missing(cons(W(), cons(W(), W()))) == ["Cons(_, Nil)", "Nil"]
    assert missing(cons(W(), cons(W(), W())), cons(W(), NIL_P), NIL_P) == []


def test_nested_constructor_in_the_head():
    true_p, false_p = PatternConstructor(TRUE), PatternConstructor(FALSE)
    assert missing(cons(true_p, W()), NIL_P) == ["Cons(F, _)"]
    assert missing(cons(true_p, W()), cons(false_p, W()), NIL_P) == []


def test_tuple_patterns():
    true_p, false_p = PatternConstructor(TRUE), PatternConstructor(FALSE)
    assert missing(PatternTuple([true_p, W()])) == ["(F, _)"]
    assert missing(PatternTuple([true_p, true_p]), PatternTuple([false_p, W()])) == ["(T, F)"]
    assert missing(PatternTuple([W(), W()])) == []


def test_clauses_after_full_coverage_change_nothing():
    assert missing(W(), NIL_P) == []


@pytest.mark.parametrize("edges, expected", [
    ({"a": ["b"], "b": []}, [["b"], ["a"]]),
    ({"even": ["odd"], "odd": ["even"], "main": ["even"]}, [["odd", "even"], ["main"]]),
    ({"f": ["f"]}, [["f"]]),
    ({"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": []}, [["d"], ["c", "b", "a"]]),
])
def test_components_come_callees_first(edges, expected):
    nodes = sorted(edges)
    components = strongly_connected_components(nodes, edges)
    assert sorted(map(sorted, components)) == sorted(map(sorted, expected))
    position = {n: i for i, comp in enumerate(components) for n in comp}
    for node, successors in edges.items():
        for succ in successors:
            assert position[succ] <= position[node]


def test_components_of_a_long_chain_need_no_recursion():
    n = 50_000
    edges = {i: [i + 1] if i + 1 < n else [] for i in range(n)}
    components = strongly_connected_components(list(range(n)), edges)
    assert [c[0] for c in components] == list(range(n - 1, -1, -1))
