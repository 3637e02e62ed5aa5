"""Relay-compatibility tests for the reference interpreter (mirrors the behaviours of TVM's
``tests/python/relay/test_backend_interpreter.py``): tuple values, projections, arithmetic,
recursive global loops (built with ScopeBuilder), references, ``binds``, keyword arguments,
ADT / ref / tuple values through ``@id``, tuple arguments, dynamic shapes and a global called
from an expression. Expected results are computed by hand or with numpy.
"""

import numpy as np
import pytest

import irlib
from irlib.prelude import Prelude
from interp import (ConstructorValue, RefValue, TupleValue, cpu, create_executor, nd)
from irlib.errors import IRError


def check_eval(expr, args, expected, mod=None, rtol=1e-7):
    func = create_executor(mod=mod, device=cpu(0), target="llvm").evaluate(expr)
    result = func if args is None else func(*args)
    np.testing.assert_allclose(result.numpy(), expected, rtol=rtol)


def test_tuple_value_holds_constants():
    value = TupleValue(irlib.const(1), irlib.const(2), irlib.const(3))
    assert [v.data.numpy().item() for v in value] == [1, 2, 3]
    assert len(value) == 3 and value.fields[1].data.numpy() == 2


def test_tuple_getitem_id_add():
    pair = irlib.Tuple([irlib.const(1), irlib.const(2)])
    check_eval(irlib.Function([], irlib.TupleGetItem(pair, 0)), [], 1)
    x = irlib.var("x", "float32")
    one = np.array(1.0, "float32")
    check_eval(irlib.Function([x], x), [one], one)
    check_eval(irlib.Function([], irlib.add(irlib.const(1), irlib.const(1))), [], 2)


def test_mul_param_broadcast():
    rng = np.random.default_rng(0)
    x, y = irlib.var("x", shape=(10, 10)), irlib.var("y", shape=(1, 10))
    x_data = rng.random((10, 10), dtype=np.float32)
    y_data = rng.random((1, 10), dtype=np.float32)
    check_eval(irlib.Function([x, y], irlib.multiply(x, y)), [x_data, y_data], x_data * y_data)


def test_equal_with_constant_arguments():
    i = irlib.var("i", shape=[], dtype="int32")
    j = irlib.var("i", shape=[], dtype="int32")
    func = irlib.Function([i, j], irlib.equal(i, j), ret_type=irlib.TensorType([], "bool"))
    check_eval(func, [irlib.const(0, "int32"), irlib.const(0, "int32")], True)
    check_eval(func, [irlib.const(0, "int32"), irlib.const(4, "int32")], False)


def test_subtract():
    i = irlib.var("i", shape=[], dtype="int32")
    func = irlib.Function([i], irlib.subtract(i, irlib.const(1, dtype="int32")),
                          ret_type=irlib.TensorType([], "int32"))
    check_eval(func, [np.array(1, dtype="int32")], 0)


def _sum_up_module(accumulate: bool):
    mod = irlib.IRModule({})
    sum_up = irlib.GlobalVar("sum_up")
    i = irlib.var("i", shape=[], dtype="int32")
    accum = irlib.var("accum", shape=[], dtype="int32")
    sb = irlib.ScopeBuilder()
    with sb.if_scope(irlib.equal(i, irlib.const(0, dtype="int32"))):
        sb.ret(accum if accumulate else i)
    with sb.else_scope():
        one_less = irlib.subtract(i, irlib.const(1, dtype="int32"))
        if accumulate:
            sb.ret(irlib.Call(sum_up, [one_less, irlib.add(accum, i)]))
        else:
            sb.ret(irlib.add(irlib.Call(sum_up, [one_less]), i))
    params = [i, accum] if accumulate else [i]
    mod[sum_up] = irlib.Function(params, sb.get(), ret_type=irlib.TensorType([], "int32"))
    return mod, sum_up


def test_simple_loop_and_tail_loop():
    mod, sum_up = _sum_up_module(accumulate=False)
    check_eval(sum_up, [np.array(10, dtype="int32")], 55, mod=mod)
    mod, sum_up = _sum_up_module(accumulate=True)
    check_eval(sum_up, [np.array(10, dtype="int32"), np.array(0, dtype="int32")], 55, mod=mod)


def test_deep_tail_loop():
    mod, sum_up = _sum_up_module(accumulate=True)
    check_eval(sum_up, [np.array(3000, dtype="int32"), np.array(0, dtype="int32")],
               3000 * 3001 // 2, mod=mod)


def test_ref_read_write_read():
    mod = irlib.IRModule()
    three_with_ref = irlib.GlobalVar("three_with_ref")
    i, iv, u, uv = (irlib.Var(n) for n in ("i", "iv", "u", "uv"))
    body = irlib.add(iv, uv)
    body = irlib.Let(uv, irlib.RefRead(i), body)
    body = irlib.Let(u, irlib.RefWrite(i, irlib.const(2)), body)
    body = irlib.Let(iv, irlib.RefRead(i), body)
    body = irlib.Let(i, irlib.RefCreate(irlib.const(1)), body)
    mod[three_with_ref] = irlib.Function([], body)
    check_eval(three_with_ref, [], 3, mod=mod)
    # ref_write gives the empty tuple
    r = irlib.Var("r")
    unit = create_executor().evaluate(
        irlib.Let(r, irlib.RefCreate(irlib.const(1)), irlib.RefWrite(r, irlib.const(5))))
    assert isinstance(unit, TupleValue) and len(unit) == 0


def test_binds():
    x = irlib.var("x")
    xx = np.ones((10, 20))
    res = create_executor().evaluate(irlib.add(x, x), binds={x: xx}).numpy()
    np.testing.assert_allclose(res, xx + xx)


def test_kwargs_params():
    rng = np.random.default_rng(1)
    x, y, z = (irlib.var(n, shape=(1, 10)) for n in "xyz")
    f = irlib.Function([x, y, z], x + y + z)
    xd, yd, zd = (rng.random((1, 10), dtype=np.float32) for _ in range(3))
    res = create_executor().evaluate(f)(xd, **{"y": yd, "z": zd})
    np.testing.assert_allclose(res.numpy(), xd + yd + zd, rtol=1e-6)


def test_function_taking_adt_ref_tuple():
    mod = irlib.IRModule()
    prelude = Prelude(mod)
    _, cons, nil = prelude.mod.get_type("List")
    rng = np.random.default_rng(2)
    nil_value = ConstructorValue(nil.tag, [], nil)
    cons_value = ConstructorValue(cons.tag, [nd.array(rng.random((1, 10), dtype=np.float32)),
                                             nil_value], cons)
    ref_value = RefValue(nd.array(rng.random((1, 10), dtype=np.float32)))
    tuple_value = TupleValue(*(nd.array(rng.random((1, 10), dtype=np.float32))
                               for _ in range(10)))
    id_func = create_executor(mod=mod).evaluate(prelude.id)

    res_nil = id_func(nil_value)
    assert res_nil.tag == nil_value.tag and len(res_nil.fields) == 0
    res_cons = id_func(cons_value)
    assert res_cons.tag == cons_value.tag and len(res_cons.fields) == 2
    np.testing.assert_allclose(res_cons.fields[0].numpy(), cons_value.fields[0].numpy())
    assert isinstance(res_cons.fields[1], ConstructorValue)
    assert res_cons.fields[1].tag == nil.tag and len(res_cons.fields[1].fields) == 0
    res_ref = id_func(ref_value)
    np.testing.assert_allclose(res_ref.value.numpy(), ref_value.value.numpy())
    res_tuple = id_func(tuple_value)
    for i in range(10):
        np.testing.assert_allclose(res_tuple[i].numpy(), tuple_value[i].numpy())


def test_tuple_passing():
    pair = irlib.TupleType([irlib.TensorType((), "int64"), irlib.TensorType((), "int64")])
    x = irlib.var("x", type_annotation=pair)
    mod = irlib.IRModule({})
    gv = irlib.GlobalVar("main")
    mod[gv] = irlib.Function([x], irlib.TupleGetItem(x, 0))
    mod = irlib.transform.InferType()(mod)
    f = create_executor(mod=mod, device=cpu(0), target="llvm").evaluate(gv)
    np.testing.assert_allclose(f((10, 8)).numpy(), 10)
    np.testing.assert_allclose(f(TupleValue(nd.array(np.array(11)), nd.array(np.array(12))))
                               .numpy(), 11)


def test_dynamic_shapes():
    x = irlib.Var("x", irlib.TensorType([irlib.Any(), 2], "float32"))
    y = irlib.Var("y", irlib.TensorType([irlib.Any(), 2], "float32"))
    joined = irlib.concatenate([x - irlib.const(3.0), y * irlib.const(5.0)], axis=0)
    mod = irlib.IRModule()
    mod["main"] = irlib.Function([x, y], joined)
    rng = np.random.default_rng(3)
    x_np = rng.random((3, 2), dtype=np.float32)
    y_np = rng.random((4, 2), dtype=np.float32)
    check_eval(None, [x_np, y_np], np.concatenate([x_np - 3.0, y_np * 5.0], axis=0), mod,
               rtol=1e-6)


def test_global_called_from_expression_and_keyword_args():
    x = irlib.Var("x", irlib.TensorType([3], "float32"))
    y = irlib.Var("y", irlib.TensorType([3], "float32"))
    mod = irlib.IRModule()
    mod["add"] = irlib.Function([x, y], irlib.add(x, y))
    mod["main"] = irlib.Function([x, y], irlib.subtract(x, y))
    a = np.array([1.0, 2.0, 3.0], "float32")
    b = np.array([10.0, 20.0, 30.0], "float32")
    expr = irlib.Call(mod.get_global_var("add"), [irlib.const(a), irlib.const(b)])
    check_eval(expr, None, [11.0, 22.0, 33.0], mod)
    actual = create_executor(mod=mod).evaluate()(y=b, x=a)
    np.testing.assert_allclose(actual.numpy(), [-9.0, -18.0, -27.0])


def test_keyword_argument_errors():
    x = irlib.var("x", shape=(2,))
    f = create_executor().evaluate(irlib.Function([x], x))
    with pytest.raises(IRError, match="duplicate|twice|more than once"):
        f(np.ones(2, "float32"), x=np.ones(2, "float32"))
    with pytest.raises(IRError, match="x"):
        f()


def test_unknown_execution_strategy():
    with pytest.raises(IRError, match="unknown execution strategy"):
        create_executor("no-such-kind")


def test_let_bound_function_is_recursive():
    # let %f = fn (%n) { if (%n == 0) { 0 } else { %n + %f(%n - 1) } }; %f(4)
    n = irlib.var("n", shape=(), dtype="int32")
    f = irlib.var("f")
    zero = irlib.const(0, "int32")
    body = irlib.If(irlib.equal(n, zero), zero,
                    irlib.add(n, irlib.Call(f, [irlib.subtract(n, irlib.const(1, "int32"))])))
    expr = irlib.Let(f, irlib.Function([n], body, irlib.scalar_type("int32")),
                     irlib.Call(f, [irlib.const(4, "int32")]))
    assert create_executor().evaluate(expr).numpy() == 10


def test_if_requires_bool_and_picks_branch():
    x = irlib.var("x", shape=(), dtype="bool")
    f = create_executor().evaluate(irlib.Function([x], irlib.If(x, irlib.const(1), irlib.const(2))))
    assert f(True).numpy() == 1 and f(False).numpy() == 2


def test_scope_builder_rules():
    sb = irlib.ScopeBuilder()
    x = sb.let(("x", irlib.scalar_type("int32")), irlib.const(1))
    assert x.type_annotation == irlib.scalar_type("int32")
    with pytest.raises(IRError):
        sb.get()                                   # no result yet
    sb.ret(x)
    with pytest.raises(IRError):
        sb.ret(x)                                  # one result per scope
    assert create_executor().evaluate(sb.get()).numpy() == 1
    dangling = irlib.ScopeBuilder()
    with dangling.if_scope(irlib.const(True)):
        dangling.ret(irlib.const(1))
    with pytest.raises(IRError, match="else_scope"):
        dangling.get()


def test_bind_replaces_free_vars_and_parameters():
    x, y = irlib.var("x", shape=(), dtype="int32"), irlib.var("y", shape=(), dtype="int32")
    func = irlib.Function([x, y], irlib.subtract(x, y))
    bound = irlib.bind(func, {x: irlib.const(10)})
    assert bound.params == (y,)
    assert create_executor().evaluate(bound)(np.array(3, "int32")).numpy() == 7
    body = irlib.bind(irlib.subtract(x, y), {x: irlib.const(5), y: irlib.const(2)})
    assert irlib.analysis.free_vars(body) == []
    assert create_executor().evaluate(body).numpy() == 3

