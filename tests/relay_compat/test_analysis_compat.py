"""Relay-compatibility tests for analyses (mirrors the behaviours of TVM's
``test_pass_vars.py``, ``test_ir_well_formed.py`` and ``test_layer_count.py``): free, bound
and all variables and type variables (with their first-occurrence order), well-formedness
(each variable bound once), and ``count_layers`` on the resnets.
"""

import numpy as np
import pytest

import irlib
from irlib.analysis import (all_type_vars, all_vars, bound_type_vars, bound_vars,
                            count_layers, free_type_vars, free_vars, well_formed)
from irlib.prelude import Prelude
from zoo import resnet


def assert_vars_match(actual, expected):
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        assert got is want


def test_free_vars():
    ty = irlib.TensorType([], "int32")
    x = irlib.Var("x", ty)
    assert_vars_match(free_vars(x), [x])
    ten = irlib.Constant(irlib.NDArray(np.array(10, dtype="int32")))
    assert free_vars(irlib.Let(x, ten, x)) == []
    assert free_vars(irlib.Function([x], x, ty)) == []
    t = irlib.Var("t")
    assert_vars_match(free_vars(irlib.Tuple([t, t])), [t])
    assert_vars_match(free_vars(irlib.TupleGetItem(t, 123)), [t])


def test_free_type_vars():
    tp = irlib.TypeVar("")
    x = irlib.Var("x", irlib.TupleType([tp, irlib.TensorType([], "int32")]))
    y = irlib.Var("y")
    let = irlib.Let(x, y, x)
    assert_vars_match(free_vars(let), [y])
    assert_vars_match(free_type_vars(let), [tp])


def test_bound_vars():
    x, y, z, a = (irlib.Var(n) for n in "xyza")
    f1 = irlib.Function([x, y, z], irlib.Let(a, x, irlib.Tuple([])))
    assert_vars_match(bound_vars(f1), [x, y, z, a])
    assert bound_vars(irlib.Tuple([x, y, z, a])) == []
    assert_vars_match(bound_vars(irlib.Function([x, y], irlib.Tuple([x, y, z, a]))), [x, y])


def test_match_vars_in_clause_order():
    mod = irlib.IRModule()
    p = Prelude(mod)
    _, cons, nil = p.mod.get_type("List")
    x, y, z = (irlib.Var(n) for n in "xyz")
    match1 = irlib.Match(nil(), [
        irlib.Clause(irlib.PatternConstructor(nil), z),
        irlib.Clause(irlib.PatternConstructor(cons, [irlib.PatternVar(x), irlib.PatternVar(y)]),
                     cons(x, y))])
    match2 = irlib.Match(nil(), [
        irlib.Clause(irlib.PatternConstructor(cons, [irlib.PatternWildcard(),
                                                     irlib.PatternVar(x)]), y),
        irlib.Clause(irlib.PatternWildcard(), z)])
    assert_vars_match(bound_vars(match1), [x, y])
    assert_vars_match(free_vars(match1), [z])
    assert_vars_match(all_vars(match1), [z, x, y])
    assert_vars_match(bound_vars(match2), [x])
    assert_vars_match(free_vars(match2), [y, z])
    assert_vars_match(all_vars(match2), [x, y, z])


def test_bound_type_vars():
    a, b, c = (irlib.TypeVar(n) for n in "abc")
    assert_vars_match(bound_type_vars(irlib.FuncType([a], b, [a, b])), [a, b])
    assert_vars_match(bound_type_vars(irlib.FuncType([], c, [a])), [a])
    assert bound_type_vars(irlib.TupleType([a, b, c])) == []
    assert_vars_match(bound_type_vars(irlib.Function([], irlib.Tuple([]), type_params=[a, b])),
                      [a, b])
    assert bound_type_vars(irlib.Function([], irlib.Tuple([]), c)) == []
    x = irlib.Var("x", a)
    assert bound_type_vars(irlib.Let(x, irlib.Tuple([]), x)) == []
    let2 = irlib.Let(x, irlib.Function([], irlib.Tuple([]), type_params=[b, c]), x)
    assert_vars_match(bound_type_vars(let2), [b, c])


def test_all_vars():
    x, y, z = (irlib.Var(n) for n in "xyz")
    assert_vars_match(all_vars(irlib.Function([x, y], z)), [x, y, z])
    assert_vars_match(all_vars(irlib.Function([x], irlib.Let(y, irlib.Tuple([]), z))), [x, y, z])
    assert_vars_match(all_vars(irlib.Function([x], irlib.Tuple([y, z]))), [x, y, z])
    assert_vars_match(all_vars(irlib.Tuple([x, y, z])), [x, y, z])


def test_all_type_vars():
    a, b, c = (irlib.TypeVar(n) for n in "abc")
    assert_vars_match(all_type_vars(irlib.FuncType([b], c, [a])), [a, b, c])
    assert_vars_match(all_type_vars(irlib.FuncType([], irlib.TupleType([a, b, c]), [])),
                      [a, b, c])
    w = irlib.Var("w")
    x, y, z = irlib.Var("x", a), irlib.Var("y", b), irlib.Var("z", c)
    assert_vars_match(all_type_vars(irlib.Function([x], y, b, [a])), [a, b])
    assert_vars_match(all_type_vars(irlib.Function([x], irlib.Let(y, x, z))), [a, b, c])
    f3 = irlib.Function([], irlib.Tuple([x, y, z]), ret_type=irlib.TupleType([a, b, c]))
    assert_vars_match(all_type_vars(f3), [a, b, c])
    assert_vars_match(all_type_vars(irlib.Function([w], irlib.Tuple([]), type_params=[a, b, c])),
                      [a, b, c])
    assert all_type_vars(irlib.Function([w], w)) == []


def test_well_formed_let():
    x = irlib.Var("x")
    assert well_formed(x)
    v = irlib.Constant(irlib.NDArray(np.array(10, dtype="int32")))
    let = irlib.Let(x, v, x)
    assert well_formed(let)
    assert not well_formed(irlib.Let(x, v, let))        # x bound twice
    f = irlib.Function([x], x, None)
    assert well_formed(f)
    # the same function value used twice is one binding (the IR is a DAG)
    assert well_formed(irlib.Let(irlib.Var("y"), f, irlib.Let(irlib.Var("z"), f, v)))


def test_well_formed_tuple_and_projection():
    x = irlib.Var("x")
    let = irlib.Let(x, irlib.const(1), x)
    assert well_formed(let)
    assert well_formed(irlib.Tuple([let, let]))
    assert well_formed(irlib.TupleGetItem(irlib.Var("t"), 2))


def test_well_formed_match():
    mod = irlib.IRModule()
    p = Prelude(mod)
    _, some, none = p.mod.get_type("Option")
    x = irlib.Var("x")
    some_case = irlib.Clause(irlib.PatternConstructor(some, [irlib.PatternVar(x)]), x)
    default_case = irlib.Clause(irlib.PatternVar(x), x)
    assert well_formed(irlib.Match(none(), [default_case]))
    assert not well_formed(irlib.Match(none(), [some_case, default_case]))
    for gv in mod.get_global_vars():
        assert well_formed(mod[gv]), gv.name_hint


def test_count_layers_resnet():
    for layers in (18, 50):
        mod, _ = resnet.get_workload(batch_size=1, num_layers=layers)
        assert count_layers(mod, ["nn.conv2d", "nn.dense"]) == layers


def test_count_layers_parallel_branches_count_once():
    x = irlib.var("x", shape=(1, 4))
    w = irlib.var("w", shape=(4, 4))
    left = irlib.nn.dense(irlib.nn.dense(x, w), w)
    right = irlib.nn.dense(x, w)
    joined = irlib.add(left, right)
    assert count_layers(joined, ["nn.dense"]) == 2
    assert count_layers(irlib.nn.relu(joined), ["nn.relu"]) == 1
    assert count_layers(joined, ["nn.conv2d"]) == 0
