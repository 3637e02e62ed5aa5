"""irlib.testing.differential: every executor on one module, compared; mismatches and
failures are reported naming the executor; inputs given or drawn."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import interp  # noqa: F401  (registers the executors)
import irlib
from irlib.errors import IRError
from irlib.testing import ExecutorMismatch, differential, register_runner
from irlib.testing import strategies as irst
from irlib.testing.executor_diff import random_inputs
from irlib.testing.runners import Adt, compare, plain, ValueMismatch


def small_mlp():
    x = irlib.var("x", shape=(2, 4))
    w = irlib.var("w", shape=(3, 4))
    body = irlib.nn.softmax(irlib.nn.relu(irlib.nn.dense(x, w)))
    return irlib.IRModule.from_expr(irlib.Function([x, w], body))


def test_all_executors_agree_on_a_small_model():
    mod = small_mlp()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4)).astype("float32")
    w = rng.standard_normal((3, 4)).astype("float32")
    results = differential(mod, inputs={"x": x, "w": w})
    assert set(results) == {"debug", "graph", "python"}
    logits = np.maximum(x @ w.T, 0)
    expected = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)   # numpy oracle
    np.testing.assert_allclose(results["graph"], expected, rtol=1e-5)


def test_a_wrong_executor_is_named_with_the_difference():
    def off_by_one(mod, args):
        return interp.create_executor("debug", mod=mod).evaluate()(*args).numpy() + 1
    with pytest.raises(ExecutorMismatch, match="'off_by_one' disagrees with 'debug'") as caught:
        differential(small_mlp(), executors=("debug", off_by_one))
    assert "values differ" in str(caught.value) and "main: fn" in str(caught.value)
    assert set(caught.value.results) == {"debug", "off_by_one"}


def test_a_failing_executor_is_named():
    def broken(mod, args):
        raise RuntimeError("no kernel")
    register_runner("broken-for-test", broken)
    with pytest.raises(ExecutorMismatch, match="executor 'broken-for-test' failed: "
                                               "RuntimeError: no kernel"):
        differential(small_mlp(), executors=("debug", "broken-for-test"))


def test_inputs_are_checked_and_drawn():
    mod = small_mlp()
    with pytest.raises(IRError, match=r"unknown \['y'\], missing \['w'\]"):
        differential(mod, inputs={"x": np.zeros((2, 4), "float32"), "y": 1})
    drawn = random_inputs(mod, seed=3)
    assert [a.shape for a in drawn] == [(2, 4), (3, 4)] and drawn[0].dtype == np.float32
    assert np.all(np.abs(drawn[0]) <= 1)
    x = irlib.var("x")                            # no type: nothing to draw from
    with pytest.raises(IRError, match="parameter %x"):
        random_inputs(irlib.IRModule.from_expr(irlib.Function([x], x)))


@settings(max_examples=10, deadline=None)
@given(program=irst.adt_programs(max_depth=2), data=st.data())
def test_interpreter_and_to_python_agree_on_adt_programs(program, data):
    inputs = data.draw(program.inputs_strategy())
    results = differential(program.module(), executors=("debug", "python"),
                           inputs=program.input_list(inputs), exact=True)
    assert set(results) == {"debug", "python"}


def test_plain_values_and_compare():
    mod = irlib.IRModule()
    mod.import_from_std("prelude.rly")
    _, cons, nil = mod.get_type("List")
    three = interp.ConstructorValue(cons.tag, [interp.nd.array(np.int32(3)),
                                               interp.ConstructorValue(nil.tag, [], nil)], cons)
    shown = plain(three)
    assert shown == Adt("Cons", (np.int32(3), Adt("Nil", ())))
    compare(three, three, exact=True)
    with pytest.raises(ValueMismatch, match=r"expected constructor Cons, got a tensor"):
        compare(np.int32(3), three)
    with pytest.raises(ValueMismatch, match=r"result\[1\]: expected float32\[2\], got "
                                            r"float64\[2\]"):
        compare((np.zeros(1), np.zeros(2)), (np.zeros(1), np.zeros(2, "float32")))
