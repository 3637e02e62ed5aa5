"""ToCPS / to_cps / un_cps: structure of the CPS form, and un_cps(to_cps(f)) runs like f."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import irlib
from irlib import Function, Let, const, var
from irlib.errors import IRError
from irlib.ir import expr as E
from irlib.ir.functor import post_order
from irlib.ir.types import FuncType, TensorType, TypeVar
from irlib.prelude import Prelude
from irlib.testing import strategies as irst
from irlib.testing.budget import examples
from irlib.transform import InferType, ToCPS, to_cps, un_cps
from irlib.typeinf import infer_expr
from helpers import let_chain_function, run, to_numpy as plain, assert_close

F32 = TensorType((), "float32")


def roundtrip(func, mod=None):
    """A module whose main is un_cps(to_cps(func))."""
    mod = mod if mod is not None else irlib.IRModule()
    mod["main"] = un_cps(to_cps(func, mod))
    return mod


# -- structure --------------------------------------------------------------------------------

def test_identity_gets_an_answer_type_and_a_continuation():
    x = var("x", F32)
    out = infer_expr(to_cps(Function([x], x)))
    answer = out.type_params[-1]
    assert isinstance(answer, TypeVar) and len(out.params) == 2
    assert out.checked_type.arg_types[1] == FuncType([F32], answer)
    assert out.checked_type.ret_type == answer
    k = out.params[1]
    assert isinstance(out.body, E.Call) and out.body.op is k and out.body.args[0] is out.params[0]


def test_every_call_of_a_function_value_is_a_tail_call():
    x = var("x", F32)
    f = var("f")
    g = Function([var("y", F32)], var("y", F32))
    y = g.params[0]
    g = Function([y], y * y)
    body = Let(f, g, f(f(x) + const(1.0)) * const(2.0))
    out = to_cps(Function([x], body))
    # No call of a non-op is the value of a let: each one is the tail of its scope.
    for node in post_order(out):
        if type(node) is E.Let and type(node.value) is E.Call:
            assert type(node.value.op) in (E.Op, E.Constructor)
    mod = roundtrip(Function([x], body))
    value = np.array(1.5, "float32")
    np.testing.assert_allclose(plain(run(mod, value)), ((value * value + 1) ** 2) * 2)


def test_if_reifies_the_join_continuation_once():
    x, c = var("x", F32), var("c", "bool")
    func = Function([x, c], irlib.If(c, x * x, x + x) * const(3.0))
    out = to_cps(func)
    joins = [n for n in post_order(out) if type(n) is E.Let and n.var.name_hint == "join"]
    assert len(joins) == 1
    mod = roundtrip(func)
    for flag in (True, False):
        v = np.array(2.0, "float32")
        expect = (v * v if flag else v + v) * 3
        np.testing.assert_allclose(plain(run(mod, v, np.array(flag))), expect)


def test_nat_iterate_double_three_times_gives_eight_x():
    p = Prelude()
    mod = p.mod
    mod.import_from_std("nat.rly")
    from interp.nat import make_nat_expr
    x, y = var("x", F32), var("y", F32)
    double = Function([y], y + y)
    it = mod.get_global_var("nat_iterate")
    func = Function([x], E.Call(E.Call(it, (double, make_nat_expr(p, 3))), (x,)))
    mod = roundtrip(func, mod)
    assert mod.get_global_var("nat_iterate_cps") is not None
    np.testing.assert_allclose(plain(run(mod, np.array(1.25, "float32"))), 10.0)


def test_map_over_a_list_and_a_recursive_global():
    p = Prelude()
    mod = p.mod
    y = var("y", F32)
    xs = var("xs", irlib.TypeCall(p.l, [F32]))
    a, b = var("a", F32), var("b", F32)
    add = Function([a, b], a + b)
    squares = E.Call(p.map, (Function([y], y * y), xs))
    func = Function([xs], E.Call(p.foldl, (add, const(0.0), squares)))
    mod = roundtrip(func, mod)
    from interp.values import ConstructorValue
    cons, nil = p.cons, p.nil
    items = ConstructorValue(nil.tag, [], nil)
    for v in (3.0, 2.0, 1.0):
        items = ConstructorValue(cons.tag, [np.array(v, "float32"), items], cons)
    np.testing.assert_allclose(plain(run(mod, items)), 14.0)


def test_refs_and_closures_keep_their_order():
    x = var("x", F32)
    r = var("r")
    bump = var("bump")
    body = Let(r, E.RefCreate(x),
               Let(bump, Function([], E.RefWrite(r, E.RefRead(r) * const(2.0))),
                   Let(var("u1"), bump(), Let(var("u2"), bump(), E.RefRead(r)))))
    mod = roundtrip(Function([x], body))
    np.testing.assert_allclose(plain(run(mod, np.array(3.0, "float32"))), 12.0)


def test_constructor_as_a_value_is_eta_expanded():
    p = Prelude()
    mod = p.mod
    x = var("x", F32)
    lst = E.Call(p.cons, (x, E.Call(p.nil, ())))
    func = Function([x], E.Call(p.hd, (E.Call(p.map, (p.some, lst)),)))
    mod = roundtrip(func, mod)
    out = run(mod, np.array(4.0, "float32"))
    assert out.constructor.name_hint == "Some"
    np.testing.assert_allclose(plain(out.fields[0]), 4.0)


def test_to_cps_errors():
    x = var("x", F32)
    g = irlib.GlobalVar("g")
    with pytest.raises(IRError, match="@g"):
        to_cps(Function([x], g(x)))
    with pytest.raises(IRError, match="un_cps"):
        un_cps(Function([x], x))


def test_pass_converts_every_global_and_keeps_names():
    x, y = var("x", F32), var("y", F32)
    g = irlib.GlobalVar("g")
    mod = irlib.IRModule({g: Function([y], y * y)})
    mod["main"] = Function([x], g(x) + const(1.0))
    out = ToCPS()(mod)
    InferType()(out)
    assert len(out["g"].params) == 2 and len(out["main"].params) == 2
    out["main"] = un_cps(out["main"])
    np.testing.assert_allclose(plain(run(out, np.array(3.0, "float32"))), 10.0)
    assert len(mod["main"].params) == 1   # the input is not mutated


def test_pass_on_an_expression_returns_a_function():
    x = var("x", F32)
    out = ToCPS()(Function([x], x))
    assert isinstance(out, Function) and len(out.params) == 2


# -- generated programs ------------------------------------------------------------------------

@settings(max_examples=examples(30), deadline=None)
@given(program=irst.programs(max_steps=12), data=st.data())
def test_un_cps_of_to_cps_preserves_meaning(program, data):
    mod = program.module()
    main = mod["main"]
    work = mod.copy()
    cps = to_cps(main, work)
    work["main"] = un_cps(cps)
    InferType()(work)
    irlib.analysis.check_well_formed(work["main"])
    inputs = data.draw(program.inputs_strategy())
    assert_close(plain(run(work, *program.input_list(inputs))), program.reference(inputs))


@settings(max_examples=examples(20), deadline=None)
@given(program=irst.programs(max_steps=10), data=st.data())
def test_pass_then_un_cps_preserves_meaning(program, data):
    out = ToCPS()(InferType()(program.module()))
    out["main"] = un_cps(out["main"])
    inputs = data.draw(program.inputs_strategy())
    assert_close(plain(run(out, *program.input_list(inputs))), program.reference(inputs))


def test_long_let_chain_without_recursion_error():
    """About 100,000 nodes (three per binding)."""
    out = to_cps(let_chain_function(34_000, lambda previous: previous + const(1.0)))
    assert isinstance(out, Function)


def test_branches_shared_between_ifs_keep_their_own_join():
    """Two ifs whose branches are the same variable object: each branch must call its own
    if's join continuation (they were memoised per expression and both called the last)."""
    x = var("x0", shape=(), dtype="float32")
    cond = irlib.less(x, const(np.float32(0.5)))
    v1, v2 = var("v1"), var("v2")
    body = Let(v1, irlib.If(cond, x, x),
               Let(v2, irlib.If(cond, x, irlib.negative(x)), irlib.add(v1, v2)))
    mod = InferType()(irlib.IRModule.from_expr(Function([x], body)))
    work = roundtrip(mod["main"], mod.copy())
    irlib.analysis.check_well_formed(work["main"])
    for value in (np.float32(0.25), np.float32(2.0)):     # x + x, and x + (-x)
        expected = value + (value if value < 0.5 else -value)
        np.testing.assert_allclose(plain(run(work, value)), expected)


def test_one_if_bound_by_two_lets():
    x = var("x0", shape=(), dtype="float32")
    branch = irlib.If(irlib.less(x, const(np.float32(0.0))), irlib.negative(x), x)
    a, b = var("a"), var("b")
    body = Let(a, branch, Let(b, branch, irlib.multiply(a, b)))
    mod = InferType()(irlib.IRModule.from_expr(Function([x], body)))
    work = roundtrip(mod["main"], mod.copy())
    irlib.analysis.check_well_formed(work["main"])
    np.testing.assert_allclose(plain(run(work, np.float32(-3.0))), 9.0)
