"""Differential tests: ``run_as_python`` against the interpreter on generated programs.

Dataflow graphs (``tensor_exprs``), control-flow programs (``programs``: if, closures,
globals, recursive loops) and ADT programs (``adt_programs``: Prelude types, match, refs,
recursion); the ADT programs are also checked against their own oracle.
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import interp
from interp import ConstructorValue, NDArray, RefValue, TupleValue
from interp.plain_values import runtime_value
from irlib.testing import strategies as irst
from irlib.testing.adt_strategies import forms
from irlib.testing.budget import examples


def assert_identical(actual, expected):
    """Same kind of value, same dtype/shape/contents, same tags (without recursion)."""
    stack = [(actual, expected)]
    while stack:
        got, want = stack.pop()
        assert type(got) is type(want), (got, want)
        if type(want) is NDArray:
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got.numpy(), want.numpy())
        elif type(want) is TupleValue:
            assert len(got) == len(want)
            stack.extend(zip(got, want))
        elif type(want) is ConstructorValue:
            assert got.tag == want.tag and len(got.fields) == len(want.fields)
            assert got.constructor is want.constructor
            stack.extend(zip(got.fields, want.fields))
        elif type(want) is RefValue:
            stack.append((got.value, want.value))
        else:
            raise AssertionError(f"unexpected value kind {type(want).__name__}")


def run_both(mod, args):
    args = [runtime_value(arg, mod) for arg in args]     # plain inputs -> runtime values
    interpreted = interp.create_executor(mod=mod).evaluate()(*args)
    python = interp.run_as_python(mod.get_global_var("main"), mod)(*args)
    return python, interpreted


@settings(max_examples=examples(40), deadline=None)
@given(program=irst.tensor_exprs(dtypes=("float32", "int32")), data=st.data())
def test_dataflow_programs_agree(program, data):
    inputs = data.draw(program.inputs_strategy())
    assert_identical(*run_both(program.module(), program.input_list(inputs)))


@settings(max_examples=examples(40), deadline=None)
@given(program=irst.programs(), data=st.data())
def test_control_flow_programs_agree(program, data):
    inputs = data.draw(program.inputs_strategy())
    assert_identical(*run_both(program.module(), program.input_list(inputs)))


@settings(max_examples=examples(60), deadline=None)
@given(program=irst.adt_programs(), data=st.data())
def test_adt_programs_agree_with_each_other_and_the_oracle(program, data):
    inputs = data.draw(program.inputs_strategy())
    python, interpreted = run_both(program.module(), program.input_list(inputs))
    assert_identical(python, interpreted)
    assert program.decode(python) == program.reference(inputs)


@settings(max_examples=examples(30), deadline=None)
@given(program=irst.adt_programs(max_depth=4, max_inputs=2), data=st.data())
def test_deeper_adt_programs_agree(program, data):
    inputs = data.draw(program.inputs_strategy())
    assert_identical(*run_both(program.module(), program.input_list(inputs)))


@pytest.mark.parametrize("root", forms())
def test_every_adt_form_agrees(root):
    @settings(max_examples=examples(4), deadline=None)
    @given(program=irst.adt_programs(root=root), data=st.data())
    def check(program, data):
        inputs = data.draw(program.inputs_strategy())
        python, interpreted = run_both(program.module(), program.input_list(inputs))
        assert_identical(python, interpreted)
        assert program.decode(python) == program.reference(inputs)
    check()
