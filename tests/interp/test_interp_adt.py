"""ADTs: building and matching values, nested and tuple patterns, match errors, constructors
as function values, global and mutual recursion (modules built by hand in adt_programs)."""

import numpy as np
import pytest

import irlib
from irlib import (Call, Clause, Function, Let, Match, PatternConstructor, PatternTuple,
                   PatternVar, PatternWildcard, Span, Tuple, TypeCall, Var, const, var)
from irlib.errors import InterpreterError, MatchError
import interp
from interp import ConstructorValue

from adt_programs import INT, from_list_value, list_expr, to_list_value


def run(mod, expr):
    return interp.create_executor(mod=mod).evaluate(expr)


def test_constructor_call_builds_a_value(program):
    mod, names = program
    value = run(mod, list_expr(names, [1, 2]))
    assert isinstance(value, ConstructorValue)
    assert value.tag == names["Cons"].tag and value.constructor is names["Cons"]
    assert from_list_value(names, value) == [1, 2]
    assert repr(value) == "Cons(1, Cons(2, Nil))"


def nested_sum(names):
    """fn (xs) { match (xs) { Cons(a, Cons(b, _)) => a + b, Cons(a, Nil) => a, Nil => 0 } }"""
    cons, nil = names["Cons"], names["Nil"]
    xs, a, b, a2 = Var("xs", TypeCall(names["List"], [INT])), var("a"), var("b"), var("a")
    return Function([xs], Match(xs, [
        Clause(PatternConstructor(cons, [PatternVar(a), PatternConstructor(
            cons, [PatternVar(b), PatternWildcard()])]), irlib.add(a, b)),
        Clause(PatternConstructor(cons, [PatternVar(a2), PatternConstructor(nil)]), a2),
        Clause(PatternConstructor(nil), const(0))]))


@pytest.mark.parametrize("items, expected", [([], 0), ([7], 7), ([3, 4], 7), ([5, 6, 100], 11)])
def test_nested_patterns(program, items, expected):
    mod, names = program
    f = run(mod, nested_sum(names))
    assert f(to_list_value(names, items)).numpy().item() == expected


def test_tuple_pattern(program):
    mod, names = program
    cons = names["Cons"]
    list_int = TypeCall(names["List"], [INT])
    xs, ys, x, y = Var("xs", list_int), Var("ys", list_int), var("x"), var("y")
    # match ((xs, ys)) { (Cons(x, _), Cons(y, _)) => x * y, _ => -1 }
    body = Match(Tuple([xs, ys]), [
        Clause(PatternTuple([PatternConstructor(cons, [PatternVar(x), PatternWildcard()]),
                             PatternConstructor(cons, [PatternVar(y), PatternWildcard()])]),
               irlib.multiply(x, y)),
        Clause(PatternWildcard(), const(-1))])
    f = run(mod, Function([xs, ys], body))
    assert f(to_list_value(names, [3, 9]), to_list_value(names, [4])).numpy().item() == 12
    assert f(to_list_value(names, []), to_list_value(names, [4])).numpy().item() == -1


def test_match_error_names_value_and_span(program):
    mod, names = program
    cons = names["Cons"]
    xs, h = Var("xs", TypeCall(names["List"], [INT])), var("h")
    partial = Match(xs, [Clause(PatternConstructor(cons, [PatternVar(h), PatternWildcard()]), h)],
                    complete=False, span=Span("prelude.rly", 40, 3))
    hd = run(mod, Function([xs], partial))
    assert hd(to_list_value(names, [8, 9])).numpy().item() == 8
    with pytest.raises(MatchError) as info:
        hd(to_list_value(names, []))
    message = str(info.value)
    assert "match? (%xs) {...}" in message and "prelude.rly:40:3" in message
    assert "matches the value Nil" in message
    assert isinstance(info.value, InterpreterError)


def test_constructor_as_function_value(program):
    mod, names = program
    c = var("c")
    # let c = Cons; c(1, Nil)
    value = run(mod, Let(c, names["Cons"], Call(c, [const(1), Call(names["Nil"], [])])))
    assert repr(value) == "Cons(1, Nil)"


def test_map_with_constructor_argument(program):
    mod, names = program
    zero, succ = names["zero"], names["succ"]
    # map(succ, [zero, succ(zero)])  ->  [succ(zero), succ(succ(zero))]
    nats = Call(names["Cons"], [Call(zero, []), Call(names["Cons"], [
        Call(succ, [Call(zero, [])]), Call(names["Nil"], [])])])
    value = run(mod, Call(names["map"], [succ, nats]))
    assert repr(value) == "Cons(succ(zero), Cons(succ(succ(zero)), Nil))"


def test_map_with_capturing_closure(program):
    mod, names = program
    k, x = var("k", INT), var("x", INT)
    # let k = 10; map(fn (x) { x * k }, [1, 2, 3])  ->  [10, 20, 30]
    expr = Let(k, const(10), Call(names["map"], [Function([x], irlib.multiply(x, k)),
                                                  list_expr(names, [1, 2, 3])]))
    assert from_list_value(names, run(mod, expr)) == [10, 20, 30]


def test_foldl_builds_reversed_list(program):
    mod, names = program
    acc, x = Var("acc", TypeCall(names["List"], [INT])), var("x", INT)
    snoc = Function([acc, x], Call(names["Cons"], [x, acc]))
    expr = Call(names["foldl"], [snoc, Call(names["Nil"], []), list_expr(names, [1, 2, 3])])
    assert from_list_value(names, run(mod, expr)) == [3, 2, 1]


def test_global_recursion_length(program):
    mod, names = program
    length = run(mod, names["length"])
    assert length(to_list_value(names, [])).numpy().item() == 0
    assert length(to_list_value(names, [4, 5, 6])).numpy().item() == 3


@pytest.mark.parametrize("n, even", [(0, True), (1, False), (7, False), (10, True)])
def test_mutual_recursion(program, n, even):
    mod, names = program
    assert run(mod, names["even"])(n).numpy().item() is even
    assert run(mod, names["odd"])(n).numpy().item() is (not even)


def test_nat_add(program):
    mod, names = program
    from interp.nat import count, make_nat_value
    value = run(mod, names["nat_add"])(make_nat_value(mod, 2), make_nat_value(mod, 3))
    assert count(mod, value) == 5
    assert repr(value) == "succ(succ(succ(succ(succ(zero)))))"


def test_adt_values_pass_through_identity(program):
    mod, names = program
    xs = Var("xs", TypeCall(names["List"], [INT]))
    value = to_list_value(names, [1])
    assert run(mod, Function([xs], xs))(value) is value


def test_constructor_value_in_a_tuple_argument(program):
    mod, names = program
    list_int = TypeCall(names["List"], [INT])
    pair = Var("pair", irlib.TupleType([list_int, INT]))
    f = run(mod, Function([pair], Call(names["length"], [irlib.TupleGetItem(pair, 0)])))
    assert f((to_list_value(names, [1, 2]), np.array(0, "int32"))).numpy().item() == 2
