"""Differential tests on generated programs: the interpreter against the dataflow evaluator
(irlib.testing.dataflow_eval) and against each program's independent numpy oracle."""

import numpy as np
from hypothesis import given, settings, strategies as st

from irlib.testing import dataflow_eval, strategies as irst
from irlib.testing.budget import examples
import interp
from interp import NDArray, TupleValue


def assert_same(actual, expected, dtype_check=True):
    """Compare a value with a (nested) tuple of numpy arrays, without recursion."""
    stack = [(actual, expected)]
    while stack:
        got, want = stack.pop()
        if isinstance(want, tuple):
            assert type(got) is TupleValue and len(got) == len(want)
            stack.extend(zip(got, want))
            continue
        assert type(got) is NDArray
        want = np.asarray(want)
        assert got.shape == want.shape
        if dtype_check:
            assert got.dtype == want.dtype.name
        np.testing.assert_allclose(got.numpy(), want, rtol=2e-5, atol=1e-6)


@settings(max_examples=examples(60), deadline=None)
@given(program=irst.tensor_exprs(), data=st.data())
def test_interpreter_agrees_with_dataflow_eval(program, data):
    inputs = data.draw(program.inputs_strategy())
    expected = dataflow_eval.evaluate(program.expr, inputs)
    f = interp.create_executor(mod=program.module()).evaluate()
    assert_same(f(*program.input_list(inputs)), expected)


@settings(max_examples=examples(60), deadline=None)
@given(program=irst.tensor_exprs(dtypes=("float32", "int32")), data=st.data())
def test_interpreter_agrees_with_numpy_oracle_on_dataflow(program, data):
    inputs = data.draw(program.inputs_strategy())
    f = interp.create_executor(mod=program.module()).evaluate()
    assert_same(f(*program.input_list(inputs)), program.reference(inputs), dtype_check=False)


@settings(max_examples=examples(60), deadline=None)
@given(program=irst.programs(), data=st.data())
def test_interpreter_agrees_with_numpy_oracle_on_control_flow(program, data):
    inputs = data.draw(program.inputs_strategy())
    f = interp.create_executor(mod=program.module()).evaluate()
    assert_same(f(*program.input_list(inputs)), program.reference(inputs), dtype_check=False)
