"""free_vars / bound_vars / all_vars and the type-variable analyses, with expected orders
written by hand."""

from hypothesis import given, settings

from irlib import (Call, Clause, Constructor, FuncType, Function, GlobalTypeVar, IRModule, Let,
                   Match, PatternConstructor, PatternTuple, PatternVar, TensorType, Tuple,
                   TupleType, TypeCall, TypeData, TypeVar, analysis, const, var)
from irlib.ir import expr as E
from irlib.testing import strategies as irst
from helpers import let_chain_function

F32 = TensorType((), "float32")


def test_function_params_are_bound_and_others_free():
    x, y = var("x"), var("y")
    f = Function([x], x + y)
    assert analysis.free_vars(f) == [y]
    assert analysis.bound_vars(f) == [x]
    assert analysis.all_vars(f) == [x, y]


def test_orders_follow_a_left_to_right_walk():
    a, b, c, d = var("a"), var("b"), var("c"), var("d")
    t = var("t")
    expr = Tuple([c, Let(t, a + b, t + d), a])
    assert analysis.free_vars(expr) == [c, a, b, d]
    assert analysis.bound_vars(expr) == [t]
    assert analysis.all_vars(expr) == [c, t, a, b, d]


def test_nested_functions_and_shadowing_free_use():
    x, y, z = var("x"), var("y"), var("z")
    inner = Function([y], x + y + z)
    outer = Function([x], Call(inner, [x]))
    assert analysis.free_vars(inner) == [x, z]
    assert analysis.free_vars(outer) == [z]
    assert analysis.bound_vars(outer) == [x, y]


def test_pattern_variables_are_bound():
    h, t, xs = var("h"), var("t"), var("xs")
    list_type = GlobalTypeVar("List")
    cons = Constructor("Cons", [F32, F32], list_type)
    pattern = PatternConstructor(cons, [PatternVar(h), PatternTuple([PatternVar(t)])])
    expr = Match(xs, [Clause(pattern, h + t)])
    assert analysis.free_vars(expr) == [xs]
    assert analysis.bound_vars(expr) == [h, t]
    assert analysis.bound_vars(pattern) == [h, t]


def test_shared_subexpressions_are_listed_once():
    x = var("x")
    shared = x + x
    assert analysis.free_vars(Tuple([shared, shared])) == [x]


@settings(max_examples=40, deadline=None)
@given(irst.programs())
def test_free_and_bound_partition_all_vars(program):
    everything = analysis.all_vars(program.expr)
    free, bound = analysis.free_vars(program.expr), analysis.bound_vars(program.expr)
    assert set(free) | set(bound) == set(everything)
    assert not set(free) & set(bound)
    assert len(everything) == len(set(everything))
    assert set(free) <= set(program.params)


def test_free_vars_of_a_hundred_thousand_deep_let_chain():
    first = var("v0")
    body = let_chain_function(100_000, lambda previous: Tuple([previous]), first=first).body
    assert analysis.free_vars(body) == [first]
    assert len(analysis.bound_vars(body)) == 100_000


# -- type variables -------------------------------------------------------------------------------

def test_type_vars_of_types():
    a, b = TypeVar("A"), TypeVar("B")
    ty = FuncType([a, b], TupleType([a]), [a])
    assert analysis.free_type_vars(ty) == [b]
    assert analysis.bound_type_vars(ty) == [a]
    assert analysis.all_type_vars(ty) == [a, b]


def test_type_vars_of_expressions():
    a, b, c = TypeVar("A"), TypeVar("B"), TypeVar("C")
    x, y = var("x", a), var("y", b)
    f = Function([x, y], x, ret_type=a, type_params=[a])
    assert analysis.free_type_vars(f) == [b]
    assert analysis.bound_type_vars(f) == [a]
    assert analysis.all_type_vars(f) == [a, b]
    call = Call(f, [const(1.0), const(2.0)], type_args=[c])
    assert analysis.free_type_vars(call) == [c, b]


def test_constructor_type_vars_are_bound_by_the_module():
    list_type, a = GlobalTypeVar("List"), TypeVar("A")
    cons = Constructor("Cons", [a, TypeCall(list_type, [a])], list_type)
    nil = Constructor("Nil", [], list_type)
    mod = IRModule()
    mod[list_type] = TypeData(list_type, [a], [cons, nil])
    expr = Call(cons, [const(1.0), Call(nil, [])])
    assert analysis.free_type_vars(expr, mod) == []
    assert analysis.bound_type_vars(expr, mod) == [a]
    assert analysis.all_type_vars(expr) == []


def test_post_order_visit_is_children_first_and_once_per_node():
    x = var("x")
    shared = x + x
    expr = Tuple([shared, E.TupleGetItem(Tuple([shared]), 0)])
    seen = []
    analysis.post_order_visit(expr, seen.append)
    assert len(seen) == len(set(seen))
    assert seen[-1] is expr
    for node in seen:
        if isinstance(node, E.Call):
            assert seen.index(node.args[0]) < seen.index(node)
    assert sum(1 for n in seen if n is shared) == 1
