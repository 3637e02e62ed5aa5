"""LazyGradientInit: GradCell rewriting keeps signatures and values, and skips work on
Zero/One."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import irlib
from irlib import Function, Let, const, var
from irlib.errors import IRError
from irlib.ir import expr as E
from irlib.ir.functor import post_order
from irlib.ir.types import TensorType
from irlib.testing import strategies as irst
from irlib.testing.budget import examples
from irlib.transform import InferType, LazyGradientInit, gradient
from helpers import run, to_numpy as plain, assert_close

T2 = TensorType((2,), "float32")


def lazy(func):
    mod = irlib.IRModule.from_expr(func)
    return InferType()(LazyGradientInit()(mod))


def test_signature_is_kept_and_adding_zeros_gives_x():
    x = var("x", T2)
    out = lazy(Function([x], x + irlib.zeros_like(x)))
    main = InferType()(out)["main"]
    assert main.checked_type == irlib.FuncType([T2], T2)
    calls = [n.op.name_hint for n in post_order(main)
             if type(n) is E.Call and type(n.op) is E.GlobalVar]
    assert "AddGradCell" in calls
    zero = out.lookup_constructor("Zero")
    assert any(type(n) is E.Call and n.op is zero for n in post_order(main))
    value = np.array([1.0, -2.0], "float32")
    np.testing.assert_array_equal(plain(run(out, value)), value)


def test_multiply_by_zeros_and_ones():
    x = var("x", T2)
    func = Function([x], irlib.Tuple([x * irlib.zeros_like(x), x * irlib.ones_like(x),
                                      irlib.exp(x) * x]))
    out = lazy(func)
    value = np.array([1.5, -2.0], "float32")
    got = plain(run(out, value))
    np.testing.assert_array_equal(got[0], np.zeros(2, "float32"))
    np.testing.assert_array_equal(got[1], value)
    np.testing.assert_allclose(got[2], np.exp(value) * value, rtol=1e-6)


def test_other_ops_unwrap_and_rewrap():
    x = var("x", T2)
    out = lazy(Function([x], irlib.sum(irlib.tanh(x)) + const(1.0)))
    raw = out.lookup_constructor("Raw")
    assert any(type(n) is E.Call and n.op is raw for n in post_order(out["main"]))
    value = np.array([0.5, 1.0], "float32")
    np.testing.assert_allclose(plain(run(out, value)), np.tanh(value).sum() + 1, rtol=1e-6)


def test_on_a_gradient_function():
    x = var("x", TensorType((2,), "float64"))
    grad = gradient(Function([x], x * x + irlib.exp(x)))
    out = lazy(grad)
    value = np.array([0.25, -1.0])
    forward, (dx,) = plain(run(out, value))
    np.testing.assert_allclose(forward, value * value + np.exp(value))
    np.testing.assert_allclose(dx, 2 * value + np.exp(value))


def test_unsupported_constructs_are_reported():
    x, r = var("x", T2), var("r")
    with pytest.raises(IRError, match="RefCreate"):
        lazy(Function([x], Let(r, E.RefCreate(x), E.RefRead(r))))


@settings(max_examples=examples(25), deadline=None)
@given(program=irst.tensor_exprs(max_steps=10), data=st.data())
def test_preserves_meaning_on_generated_programs(program, data):
    out = lazy(program.function)
    assert out["main"].checked_type == InferType()(program.module())["main"].checked_type
    inputs = data.draw(program.inputs_strategy())
    assert_close(plain(run(out, *program.input_list(inputs))), program.reference(inputs))


@settings(max_examples=examples(15), deadline=None)
@given(program=irst.programs(max_steps=10, allow_globals=False, allow_recursion=False),
       data=st.data())
def test_preserves_meaning_with_if_and_closures(program, data):
    out = lazy(program.function)
    inputs = data.draw(program.inputs_strategy())
    assert_close(plain(run(out, *program.input_list(inputs))), program.reference(inputs))
