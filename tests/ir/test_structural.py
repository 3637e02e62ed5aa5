"""structural_equal / structural_hash / assert_structural_equal on hand-built IR."""

import os
import subprocess
import sys

import numpy as np
import pytest

import irlib
from irlib import (Call, Clause, Constructor, FuncType, Function, GlobalTypeVar, GlobalVar, If,
                   IncompleteType, IRModule, Let, Match, PatternConstructor, PatternTuple,
                   PatternVar, PatternWildcard, RefCreate, RefRead, RefType, RefWrite, Span,
                   TensorType, Tuple, TupleGetItem, TupleType, TypeCall, TypeData, TypeVar,
                   assert_structural_equal, const, size_var, structural_equal, structural_hash,
                   var)
from irlib.ir.attrs import Attrs
from irlib.ir.structural import StructuralMismatchError

F32 = TensorType((), "float32")


def equal_and_same_hash(a, b, map_free_vars=False):
    assert structural_equal(a, b, map_free_vars)
    assert structural_equal(b, a, map_free_vars)
    assert structural_hash(a, map_free_vars) == structural_hash(b, map_free_vars)


def not_equal(a, b, map_free_vars=False):
    assert not structural_equal(a, b, map_free_vars)
    assert not structural_equal(b, a, map_free_vars)


# -- variables and binding ----------------------------------------------------------------------

def test_alpha_equivalent_functions_are_equal_and_hash_alike():
    x, y = var("x", F32), var("y", F32)
    a, b = var("a", F32), var("b", F32)
    equal_and_same_hash(Function([x, y], x - y), Function([a, b], a - b))
    not_equal(Function([x, y], x - y), Function([a, b], b - a))
    assert structural_hash(Function([x, y], x - y)) != structural_hash(Function([x, y], y - x))


def test_let_variables_are_matched_at_their_binding():
    x, y, a, b = var("x"), var("y"), var("a"), var("b")
    lhs = Let(x, const(1.0), Let(y, const(2.0), x))
    equal_and_same_hash(lhs, Let(a, const(1.0), Let(b, const(2.0), a)))
    not_equal(lhs, Let(a, const(1.0), Let(b, const(2.0), b)))
    assert structural_hash(lhs) != structural_hash(Let(a, const(1.0), Let(b, const(2.0), b)))


def test_a_shared_body_under_swapped_parameters_differs():
    # TVM's counterexample to an identity shortcut: both functions share their body object.
    x, y = var("x", F32), var("y", F32)
    body = x - y
    not_equal(Function([x, y], body), Function([y, x], body))
    assert structural_equal(Function([x, y], body), Function([x, y], body))


def test_recursive_let_binds_its_variable_in_its_value():
    f, g, n, m = var("f"), var("g"), var("n", F32), var("m", F32)
    lhs = Let(f, Function([n], Call(f, [n])), f)
    equal_and_same_hash(lhs, Let(g, Function([m], Call(g, [m])), g))


def test_free_variables_compare_by_identity_unless_mapped():
    x, y, a, b = var("x", F32), var("y", F32), var("a", F32), var("b", F32)
    assert structural_equal(x + y, x + y)
    not_equal(x + y, a + b)
    equal_and_same_hash(x + y, a + b, map_free_vars=True)
    # The correspondence must be consistent once made.
    not_equal(x + x, a + b, map_free_vars=True)
    not_equal(x + y, a + a, map_free_vars=True)
    not_equal(Tuple([x, y, x]), Tuple([a, b, b]), map_free_vars=True)


def test_a_bound_variable_never_matches_a_free_one():
    x, a = var("x", F32), var("a", F32)
    not_equal(Function([x], x), Function([a], x))
    not_equal(Function([x], x), Function([a], x), map_free_vars=True)


def test_variable_annotations_are_compared():
    not_equal(Function([var("x", F32)], const(1.0)), Function([var("x", "int32")], const(1.0)))
    not_equal(Function([var("x", F32)], const(1.0)), Function([var("x")], const(1.0)))
    not_equal(var("x", F32), var("y", "int32"), map_free_vars=True)


def test_names_spans_and_checked_types_are_ignored():
    x, y = var("x", F32), var("completely_different", F32)
    lhs = Function([x], irlib.exp(x), span=Span("a.rly", 1, 1, 1, 5))
    rhs = Function([y], irlib.exp(y))
    rhs.body.with_type(F32)
    equal_and_same_hash(lhs, rhs)


# -- sharing --------------------------------------------------------------------------------------

def test_a_shared_node_equals_two_separate_copies():
    x, y = var("x", F32), var("y", F32)
    shared = x * y
    equal_and_same_hash(Tuple([shared, shared]), Tuple([x * y, x * y]))


def test_a_shared_function_with_binders_equals_two_copies():
    def identity():
        p = var("p", F32)
        return Function([p], p)
    shared = identity()
    equal_and_same_hash(Tuple([shared, shared]), Tuple([identity(), identity()]))


# -- constants, ops, calls, attrs ----------------------------------------------------------------

def test_constants_compare_by_dtype_shape_and_bytes():
    equal_and_same_hash(const(np.array([1.0, np.nan], "float32")),
                        const(np.array([1.0, np.nan], "float32")))
    not_equal(const(1, "int32"), const(1, "int64"))
    not_equal(const(np.zeros((2, 3), "float32")), const(np.zeros((3, 2), "float32")))
    not_equal(const(0.0), const(-0.0))


def test_calls_compare_op_args_and_attrs():
    x = var("x", F32)
    not_equal(irlib.add(x, x), irlib.subtract(x, x))
    not_equal(irlib.add(x, const(1.0)), irlib.add(const(1.0), x))
    lhs = Function([x], x, attrs={"Primitive": 1})
    not_equal(lhs, Function([x], x, attrs={"Primitive": 2}))
    not_equal(lhs, Function([x], x))
    equal_and_same_hash(lhs, Function([x], x, attrs={"Primitive": 1}))


def test_attrs_compare_by_value():
    equal_and_same_hash(Attrs({"axis": [1, 2], "keepdims": False}, "relay.attrs.ReduceAttrs"),
                        Attrs({"keepdims": False, "axis": (1, 2)}, "relay.attrs.ReduceAttrs"))
    not_equal(Attrs({"axis": 1}, "A"), Attrs({"axis": 2}, "A"))
    not_equal(Attrs({"axis": 1}, "A"), Attrs({"axis": 1}, "B"))
    not_equal(Attrs({"axis": 1}, "A"), Attrs({"axis": True}, "A"))
    equal_and_same_hash(Attrs({"eps": float("nan")}, "A"), Attrs({"eps": float("nan")}, "A"))


def test_global_vars_match_by_name():
    equal_and_same_hash(Call(GlobalVar("f"), [const(1.0)]), Call(GlobalVar("f"), [const(1.0)]))
    not_equal(GlobalVar("f"), GlobalVar("g"))


def test_control_flow_tuples_and_refs():
    c = var("c", TensorType((), "bool"))
    x = var("x", F32)
    lhs = Function([c, x], If(c, TupleGetItem(Tuple([x, x]), 1), RefRead(RefCreate(x))))
    c2, x2 = var("c", TensorType((), "bool")), var("x", F32)
    equal_and_same_hash(lhs, Function([c2, x2], If(c2, TupleGetItem(Tuple([x2, x2]), 1),
                                                   RefRead(RefCreate(x2)))))
    not_equal(TupleGetItem(Tuple([x, x]), 0), TupleGetItem(Tuple([x, x]), 1))
    equal_and_same_hash(RefWrite(RefCreate(x), x), RefWrite(RefCreate(x), x))
    not_equal(RefWrite(RefCreate(x), x), RefWrite(RefCreate(x), const(1.0)))


# -- types -----------------------------------------------------------------------------------------

def test_function_types_map_their_type_parameters():
    a, b, c = TypeVar("A"), TypeVar("B"), TypeVar("C")
    equal_and_same_hash(FuncType([a], a, [a]), FuncType([b], b, [b]))
    not_equal(FuncType([a, c], a, [a, c]), FuncType([b, c], c, [b, c]))
    not_equal(FuncType([a], a, [a]), FuncType([b], b, []))
    # Free type variables: identity unless mapped.
    not_equal(FuncType([a], a), FuncType([b], b))
    equal_and_same_hash(FuncType([a], a), FuncType([b], b), map_free_vars=True)


def test_polymorphic_functions_map_type_parameters():
    a, b = TypeVar("A"), TypeVar("B")
    x, y = var("x", a), var("y", b)
    equal_and_same_hash(Function([x], x, ret_type=a, type_params=[a]),
                        Function([y], y, ret_type=b, type_params=[b]))


def test_tensor_tuple_ref_and_symbolic_types():
    n = size_var("n")
    equal_and_same_hash(TensorType((n + n, 3)), TensorType((2 * n, 3)))
    not_equal(TensorType((n, 3)), TensorType((size_var("m"), 3)))
    not_equal(TensorType((2, 3)), TensorType((2, 3), "float16"))
    equal_and_same_hash(TupleType([F32, RefType(F32)]), TupleType([F32, RefType(F32)]))
    not_equal(TupleType([F32]), TupleType([F32, F32]))
    hole = IncompleteType()
    assert structural_equal(hole, hole)
    not_equal(hole, IncompleteType())


def make_list(name="List"):
    list_type = GlobalTypeVar(name)
    a = TypeVar("A")
    cons = Constructor("Cons", [a, TypeCall(list_type, [a])], list_type)
    nil = Constructor("Nil", [], list_type)
    return list_type, TypeData(list_type, [a], [cons, nil]), cons, nil


def test_type_definitions_built_twice_are_equal():
    _, first, _, _ = make_list()
    _, second, _, _ = make_list()
    equal_and_same_hash(first, second)
    _, other, _, _ = make_list("Seq")
    not_equal(first, other)


def length_of(cons, nil):
    xs, h, t = var("xs"), var("h"), var("t")
    return Function([xs], Match(xs, [
        Clause(PatternConstructor(cons, [PatternWildcard(), PatternVar(t)]), const(1)),
        Clause(PatternConstructor(nil), Tuple([])),
        Clause(PatternTuple([PatternVar(h)]), h),
    ]))


def test_match_maps_pattern_variables_and_constructors_by_name():
    _, _, cons, nil = make_list()
    _, _, cons2, nil2 = make_list()
    equal_and_same_hash(length_of(cons, nil), length_of(cons2, nil2))
    not_equal(length_of(cons, nil), length_of(nil, cons))
    xs = var("xs")
    partial = Match(xs, [Clause(PatternWildcard(), xs)], complete=False)
    not_equal(partial, Match(xs, [Clause(PatternWildcard(), xs)]))


def test_patterns_and_clauses_compare_on_their_own():
    _, _, cons, nil = make_list()
    _, _, cons2, _ = make_list()
    h, t, a, b = var("h", F32), var("t"), var("a", F32), var("b")
    lhs = PatternConstructor(cons, [PatternVar(h), PatternVar(t)])
    rhs = PatternConstructor(cons2, [PatternVar(a), PatternVar(b)])
    equal_and_same_hash(lhs, rhs)
    not_equal(lhs, PatternConstructor(cons2, [PatternVar(var("a", "int32")), PatternVar(b)]))
    not_equal(lhs, PatternConstructor(cons2, [PatternWildcard(), PatternVar(b)]))
    equal_and_same_hash(Clause(lhs, h), Clause(rhs, a))
    not_equal(Clause(lhs, h), Clause(rhs, b))
    with pytest.raises(AssertionError, match=r"at patterns\[0\]: .*different patterns"):
        assert_structural_equal(lhs, PatternConstructor(cons2, [PatternWildcard(), PatternVar(b)]))


# -- modules ---------------------------------------------------------------------------------------

def make_module(constant=1.0, name="main"):
    list_type, data, cons, nil = make_list()
    mod = IRModule()
    mod[list_type] = data
    x = var("x", F32)
    mod["helper"] = Function([x], x + const(constant))
    y = var("y", F32)
    mod[name] = Function([y], Call(GlobalVar("helper"), [y]))
    return mod


def test_modules_compare_function_by_function():
    equal_and_same_hash(make_module(), make_module())
    not_equal(make_module(), make_module(constant=2.0))
    not_equal(make_module(), make_module(name="entry"))
    with pytest.raises(AssertionError, match=r"at @helper\.body\.args\[1\]\.data"):
        assert_structural_equal(make_module(), make_module(constant=2.0))


# -- messages --------------------------------------------------------------------------------------

def test_assert_names_the_path_and_both_values():
    x = var("x", F32)
    with pytest.raises(AssertionError) as info:
        assert_structural_equal(Function([x], x + const(1.0)), Function([x], x + const(2.0)))
    message = str(info.value)
    assert "body.args[1].data" in message
    assert "1.0" in message and "2.0" in message
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, StructuralMismatchError)


def test_assert_reports_kind_mismatch():
    x = var("x", F32)
    with pytest.raises(AssertionError, match=r"at body: Call vs Tuple \(different kinds"):
        assert_structural_equal(Function([x], irlib.exp(x)), Function([x], Tuple([x])))


def test_plain_values_compare_by_value():
    equal_and_same_hash((1, "a", 2.5), [1, "a", 2.5])
    not_equal((1, 2), (1, 2, 3))
    not_equal(1, True)
    equal_and_same_hash({"k": (1, 2)}, {"k": (1, 2)})


# -- depth and sharing at scale -------------------------------------------------------------------

def let_chain(depth, last_constant=1.0):
    """``fn (%v0) { let %v1 = %v0 * 2f; ...; %v<depth> + <last_constant> }``."""
    multiply, two = irlib.op.get("multiply"), const(2.0)
    variables = [var("v0", F32)] + [var(f"v{i + 1}") for i in range(depth)]
    body = variables[-1] + const(last_constant)
    for i in reversed(range(depth)):
        body = Let(variables[i + 1], Call(multiply, (variables[i], two)), body)
    return Function([variables[0]], body)


def test_hundred_thousand_deep_let_chains_compare_and_hash():
    lhs, rhs = let_chain(100_000), let_chain(100_000)
    assert structural_equal(lhs, rhs)
    assert structural_hash(lhs) == structural_hash(rhs)
    with pytest.raises(AssertionError, match=r"at body\*100001\.args\[1\]\.data"):
        assert_structural_equal(lhs, let_chain(100_000, last_constant=3.0))


def test_hashing_and_comparing_a_doubling_dag_is_linear():
    # 100,000 nodes each used twice: as a tree it would have 2**100000 nodes.
    x = var("x", F32)
    lhs, rhs = x, x
    for _ in range(100_000):
        lhs = lhs + lhs
        rhs = rhs + rhs
    assert structural_hash(lhs) == structural_hash(rhs)
    assert structural_equal(lhs, rhs)


def test_hash_is_the_same_in_every_process():
    code = ("import irlib;from irlib import *;x=var('x',shape=(2,),dtype='float32');"
            "print(structural_hash(Function([x], x + const(1.5))))")
    outputs = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed,
                   PYTHONPATH=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                env=env, check=True)
        outputs.add(result.stdout.strip())
    assert len(outputs) == 1
