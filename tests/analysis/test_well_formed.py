"""well_formed / check_well_formed: double binding and out-of-scope uses."""

import pytest
from hypothesis import given, settings

from irlib import (Clause, Constructor, Function, GlobalTypeVar, Let, Match, PatternConstructor,
                   PatternVar, TensorType, Tuple, WellFormedError, analysis, const, var)
from irlib.testing import strategies as irst

F32 = TensorType((), "float32")


def test_simple_let_and_function_are_well_formed():
    x, y = var("x"), var("y")
    assert analysis.well_formed(Let(x, const(1.0), x))
    assert analysis.well_formed(Function([x], x + y))


def test_recursive_let_may_use_its_variable_in_its_value():
    f, n = var("f"), var("n")
    assert analysis.well_formed(Let(f, Function([n], f(n)), f))


def test_a_variable_bound_twice_is_rejected():
    x = var("x")
    twice = Let(x, const(1.0), Let(x, const(2.0), x))
    assert not analysis.well_formed(twice)
    with pytest.raises(WellFormedError, match=r"%x is bound more than once"):
        analysis.check_well_formed(twice)
    assert not analysis.well_formed(Tuple([Function([x], x), Function([x], x)]))


def test_use_outside_scope_is_rejected():
    x = var("x")
    with pytest.raises(WellFormedError, match=r"%x is used outside the scope"):
        analysis.check_well_formed(Tuple([Let(x, const(1.0), x), x]))
    with pytest.raises(WellFormedError, match=r"%x is used outside the scope"):
        analysis.check_well_formed(Tuple([x, Let(x, const(1.0), x)]))


def test_pattern_variables_are_scoped_to_their_clause():
    h, xs = var("h"), var("xs")
    list_type = GlobalTypeVar("List")
    cons = Constructor("Cons", [F32], list_type)
    good = Match(xs, [Clause(PatternConstructor(cons, [PatternVar(h)]), h)])
    assert analysis.well_formed(good)
    bad = Tuple([good, h])
    with pytest.raises(WellFormedError, match="%h"):
        analysis.check_well_formed(bad)


def test_declared_free_vars():
    x, y = var("x"), var("y")
    assert analysis.well_formed(x + y, free_vars=[x, y])
    with pytest.raises(WellFormedError, match=r"free variable %y is not among"):
        analysis.check_well_formed(x + y, free_vars=[x])


def test_shared_subexpression_is_fine():
    x = var("x")
    shared = Let(var("t"), x, x)
    assert analysis.well_formed(Tuple([shared, shared]))


def test_hundred_thousand_deep_let_chain_is_checked_without_recursion():
    variables = [var("v0")] + [var(f"v{i + 1}") for i in range(100_000)]
    body = variables[-1]
    for i in reversed(range(100_000)):
        body = Let(variables[i + 1], Tuple([variables[i]]), body)
    assert analysis.well_formed(body, free_vars=[variables[0]])
    assert not analysis.well_formed(Tuple([body, variables[5]]))


@settings(max_examples=40, deadline=None)
@given(irst.programs())
def test_generated_programs_are_well_formed(program):
    analysis.check_well_formed(program.function, free_vars=[])
