"""Property tests: inferred types agree with what evaluating the program produces.

Programs come from :mod:`irlib.testing.strategies` (well-typed random programs, each with
the type the generator built every node for, and an independent numpy oracle).
"""

import numpy as np
from hypothesis import given, settings, strategies as st

from irlib import IRModule
from irlib.ir.functor import post_order
from irlib.ir.types import TensorType, TupleType
from irlib.testing import dataflow_eval
from irlib.testing import strategies as irst
from irlib.transform import infer_type


def assert_value_has_type(value, ty):
    """``value`` (an array or nested tuple of arrays) has the shape and dtype ``ty`` says."""
    stack = [(value, ty)]
    while stack:
        current, current_type = stack.pop()
        if isinstance(current_type, TupleType):
            assert isinstance(current, tuple) and len(current) == len(current_type.fields)
            stack.extend(zip(current, current_type.fields))
        else:
            assert isinstance(current_type, TensorType), current_type
            array = np.asarray(current)
            assert array.shape == current_type.concrete_shape, (array.shape, current_type)
            assert array.dtype == np.dtype(current_type.dtype), (array.dtype, current_type)


def assert_types_match_generator(program, typed_function):
    """Every node the generator typed has that type after inference.

    The typed function is rebuilt node for node, so the post-orders line up.
    """
    before = post_order(program.function)
    after = post_order(typed_function)
    assert len(before) == len(after)
    for old, new in zip(before, after):
        expected = program.types.get(old)
        if expected is not None:
            assert new.checked_type == expected, (old, new.checked_type, expected)


@settings(max_examples=60, deadline=None)
@given(program=irst.tensor_exprs(dtypes=("float32", "float64", "int32")), data=st.data())
def test_inferred_type_matches_numpy_evaluation(program, data):
    typed = infer_type(program.function)
    assert typed.ret_type == program.result_type
    assert_types_match_generator(program, typed)
    inputs = data.draw(program.inputs_strategy())
    assert_value_has_type(dataflow_eval.evaluate(program.expr, inputs), typed.ret_type)
    assert_value_has_type(program.reference(inputs), typed.ret_type)


@settings(max_examples=40, deadline=None)
@given(program=irst.programs())
def test_inferred_types_of_control_programs(program):
    typed = infer_type(program.function, IRModule(functions=dict(program.global_functions)))
    assert typed.ret_type == program.result_type
    assert_types_match_generator(program, typed)
    assert_value_has_type(program.reference(program.random_inputs()), typed.ret_type)
