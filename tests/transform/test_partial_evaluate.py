"""PartialEvaluate: what it computes at compile time, termination, and semantics on
generated programs."""

import numpy as np
from hypothesis import given, settings, strategies as st

import irlib
from irlib import Function, Let, const, var
from irlib.analysis import check_well_formed, count_ops
from irlib.ir import expr as E
from irlib.ir.functor import post_order
from irlib.ir.types import TensorType, TypeVar
from irlib.prelude import Prelude
from irlib.testing import strategies as irst
from irlib.testing.budget import examples
from irlib.transform import (DeadCodeElimination, InferType, PartialEvaluate, Sequential,
                             partial_evaluate)
from helpers import let_chain_function, run, to_numpy as plain, assert_close

F32 = TensorType((), "float32")
PE_DCE = Sequential([PartialEvaluate(), DeadCodeElimination(inline_once=True)])


def pe(func, mod=None):
    mod = irlib.IRModule.from_expr(func) if mod is None else mod.copy()
    if mod is not None and "main" not in mod:
        mod["main"] = func
    elif func is not None:
        mod["main"] = func
    out = PE_DCE(mod)
    InferType()(out)
    return out


def constant_body(func):
    assert isinstance(func.body, E.Constant), func.astext()
    return func.body.data.numpy()


# -- the reference's examples and constant folding ------------------------------------------------

def test_known_call_folds_to_a_constant():
    d = var("d", F32)
    out = pe(Function([], E.Call(Function([d], d + d), (const(4.0),))))
    assert constant_body(out["main"]) == 8.0


def test_projection_of_a_known_tuple_is_the_field():
    t = TypeVar("t")
    x = var("x", t)
    out = pe(Function([x], E.TupleGetItem(E.Tuple([const(4.0), x]), 1), type_params=[t]))
    assert out["main"].body is out["main"].params[0]


def test_reads_of_a_known_reference_are_resolved():
    d, r = var("d", F32), var("r")
    body = Let(r, E.RefCreate(d),
               Let(var("u"), E.RefWrite(r, E.RefRead(r) * E.RefRead(r)), E.RefRead(r)))
    out = pe(Function([d], body))
    main = out["main"]
    # The reference's result: %d * %d, with the write-only reference gone.
    assert type(main.body) is E.Call and main.body.op.name == "multiply"
    assert main.body.args == (main.params[0], main.params[0])
    np.testing.assert_allclose(plain(run(out, np.array(3.0, "float32"))), 9.0)


def test_folding_through_lets_and_ifs():
    x, a, b = var("x", F32), var("a"), var("b")
    body = Let(a, const(2.0) * const(3.0),
               Let(b, irlib.If(a > const(5.0), a + const(1.0), a - const(1.0)), x * b))
    out = pe(Function([x], body))
    assert not any(isinstance(n, E.If) for n in post_order(out["main"]))
    (mul,) = [n for n in post_order(out["main"]) if isinstance(n, E.Call)]
    assert mul.args[1].data.numpy() == 7.0


def test_match_on_a_known_adt_value_picks_the_clause():
    p = Prelude()
    x, y = var("x", F32), var("y", F32)
    clause_some = E.Clause(E.PatternConstructor(p.some, [E.PatternVar(y)]), y * const(2.0))
    clause_none = E.Clause(E.PatternConstructor(p.none, []), const(0.0))
    data = E.Call(p.some, (const(5.0),))
    body = E.Match(data, [clause_none, clause_some]) + x
    out = pe(Function([x], body), p.mod)
    assert not any(isinstance(n, E.Match) for n in post_order(out["main"]))
    np.testing.assert_allclose(plain(run(out, np.array(1.0, "float32"))), 11.0)


def test_match_on_unknown_data_is_residualised_with_the_store_forgotten():
    p = Prelude()
    opt = var("o", irlib.TypeCall(p.optional, [F32]))
    y = var("y", F32)
    body = E.Match(opt, [E.Clause(E.PatternConstructor(p.some, [E.PatternVar(y)]),
                                  y + const(1.0) * const(2.0)),
                         E.Clause(E.PatternConstructor(p.none, []), const(0.0))])
    out = pe(Function([opt], body), p.mod)
    matches = [n for n in post_order(out["main"]) if isinstance(n, E.Match)]
    assert len(matches) == 1 and count_ops(out["main"]) == {"add": 1}


def list_expr(p, values):
    lst = E.Call(p.nil, ())
    for v in reversed(values):
        lst = E.Call(p.cons, (v, lst))
    return lst


def test_map_over_a_known_length_list_is_unrolled():
    p = Prelude()
    x, y = var("x", F32), var("y", F32)
    square = Function([y], y * y)
    mapped = E.Call(p.map, (square, list_expr(p, [x, x + const(1.0), const(3.0)])))
    out = pe(Function([x], mapped), p.mod)
    main = out["main"]
    assert not any(type(n) is E.GlobalVar for n in post_order(main))
    assert not any(isinstance(n, E.Match) for n in post_order(main))
    # x*x and (x+1)*(x+1) stay; 3*3 is folded.
    assert count_ops(main) == {"multiply": 2, "add": 1}
    value = run(out, np.array(2.0, "float32"))
    got = []
    while value.fields:
        got.append(float(plain(value.fields[0])))
        value = value.fields[1]
    assert got == [4.0, 9.0, 9.0]


def test_recursion_on_unknown_data_terminates_and_keeps_meaning():
    p = Prelude()
    xs = var("xs", irlib.TypeCall(p.l, [F32]))
    y = var("y", F32)
    out = pe(Function([xs], E.Call(p.length, (E.Call(p.map, (Function([y], y), xs)),))),
             p.mod)
    assert any(type(n) is E.GlobalVar for n in post_order(out["main"]))
    from interp.values import ConstructorValue
    items = ConstructorValue(p.nil.tag, [], p.nil)
    for v in (1.0, 2.0):
        items = ConstructorValue(p.cons.tag, [np.array(v, "float32"), items], p.cons)
    assert int(plain(run(out, items))) == 2


def test_loop_with_an_unknown_counter_terminates():
    n, i, acc, loop = var("n", "int32"), var("i", "int32"), var("acc", F32), var("loop")
    step = irlib.If(i > const(0, "int32"),
                    loop(i - const(1, "int32"), acc * const(2.0)), acc)
    body = Let(loop, Function([i, acc], step, ret_type=F32), loop(n, const(1.0)))
    out = pe(Function([n], body))
    np.testing.assert_allclose(plain(run(out, np.array(5, "int32"))), 32.0)


def test_effects_are_not_duplicated():
    x, r, f = var("x", F32), var("r"), var("f")
    bump = Function([], E.RefWrite(r, E.RefRead(r) + const(1.0)))
    body = Let(r, E.RefCreate(x), Let(f, bump, Let(var("u"), f(),
               Let(var("v"), f(), E.RefRead(r)))))
    out = pe(Function([x], body))
    np.testing.assert_allclose(plain(run(out, np.array(1.0, "float32"))), 3.0)


def test_a_reference_that_escapes_keeps_its_writes():
    d, r = var("d", F32), var("r")
    body = Let(r, E.RefCreate(d), Let(var("u"), E.RefWrite(r, d * d), E.Tuple([E.RefRead(r), r])))
    out = pe(Function([d], body))
    assert any(type(n) is E.RefWrite for n in post_order(out["main"]))
    value = run(out, np.array(3.0, "float32"))
    np.testing.assert_allclose(plain(value.fields[0]), 9.0)
    np.testing.assert_allclose(value.fields[1].value.numpy(), 9.0)


def test_unknown_call_forgets_the_store():
    x, r, g = var("x", F32), var("r"), var("g", irlib.FuncType([], irlib.TupleType([])))
    body = Let(r, E.RefCreate(x), Let(var("u"), g(), E.RefRead(r)))
    out = partial_evaluate(Function([x, g], body))
    assert any(type(n) is E.RefRead for n in post_order(out))


def test_idempotent_on_its_output():
    x, a = var("x", F32), var("a")
    func = Function([x], Let(a, const(2.0) + const(3.0), x * a))
    once = pe(func)
    twice = PE_DCE(once)
    assert irlib.structural_equal(once["main"], twice["main"], map_free_vars=True)


# -- generated programs ------------------------------------------------------------------------

@settings(max_examples=examples(30), deadline=None)
@given(program=irst.programs(max_steps=12), data=st.data())
def test_partial_evaluation_preserves_meaning(program, data):
    mod = InferType()(program.module())
    text = mod.astext()
    out = PE_DCE(mod)
    assert mod.astext() == text
    for _, func in out.items():
        check_well_formed(func)
    InferType()(out)
    inputs = data.draw(program.inputs_strategy())
    assert_close(plain(run(out, *program.input_list(inputs))), program.reference(inputs))


def test_loop_on_a_known_counter_moving_to_zero_unrolls_fully():
    """As in Relay (its triangle-number test), a known integer counter that moves toward 0
    is fuel: the loop unrolls to the end in one run, so a second run changes nothing."""
    x, i, acc, loop = var("x", F32), var("i", "int32"), var("acc", F32), var("loop")
    step = irlib.If(i < const(1, "int32"), acc,
                    loop(i - const(1, "int32"), acc * const(0.5)))
    func = Function([x], Let(loop, Function([i, acc], step, ret_type=F32),
                              loop(const(1, "int32"), x)))
    once = pe(func)
    twice = PE_DCE(once)
    assert irlib.structural_equal(once["main"], twice["main"], map_free_vars=True)
    for mod in (once, twice):
        np.testing.assert_allclose(plain(run(mod, np.array(4.0, "float32"))), 2.0)


def test_long_chain_without_recursion_error():
    """About 100,000 nodes, half of them folded."""
    out = partial_evaluate(let_chain_function(
        25_000, lambda previous: previous + (const(1.0) * const(2.0))))
    assert isinstance(out, Function)
    assert count_ops(out) == {"add": 25_000}


def test_deep_call_nest_and_deep_known_recursion():
    x = var("x", shape=(2,))
    body = x
    for _ in range(30_000):
        body = irlib.negative(body)
    out = partial_evaluate(Function([x], body))
    assert count_ops(out) == {"negative": 30_000}
    # A known 1,000-element list: map unrolls 1,000 nested inlinings without recursion.
    p = Prelude()
    y = var("y", F32)
    values = [const(float(i)) for i in range(1_000)]
    mapped = E.Call(p.length, (E.Call(p.map, (Function([y], y + const(1.0)), list_expr(p, values))),))
    out = pe(Function([], mapped), p.mod)
    assert isinstance(out["main"].body, E.Constant) and int(out["main"].body.data.numpy()) == 1_000
