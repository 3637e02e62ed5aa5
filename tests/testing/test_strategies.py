"""The program generators: programs are well formed, closed over their params, finite, and
their oracle agrees with an evaluation written independently of the generator."""

import numpy as np
import pytest
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st

import irlib
from irlib import analysis
from irlib.ir import expr as E
from irlib.ir.functor import post_order
from irlib.ir.types import FuncType, TensorType, TupleType
from irlib.testing import strategies as irst
from irlib.testing.dataflow_eval import evaluate
from helpers import assert_close


def leaves(value):
    """The arrays of a (nested) tuple value."""
    stack, found = [value], []
    while stack:
        current = stack.pop()
        if isinstance(current, tuple):
            stack.extend(current)
        else:
            found.append(current)
    return found


def assert_value_has_type(value, ty):
    if isinstance(ty, TupleType):
        assert isinstance(value, tuple) and len(value) == len(ty.fields)
        for item, field in zip(value, ty.fields):
            assert_value_has_type(item, field)
        return
    assert isinstance(ty, TensorType)
    assert isinstance(value, np.ndarray), type(value)
    assert value.shape == tuple(ty.shape)
    assert value.dtype == np.dtype(ty.dtype)


@settings(max_examples=60, deadline=None)
@given(irst.tensor_types(dtypes=("float32", "int8"), min_rank=1, max_rank=2, max_dim=3))
def test_tensor_types_respect_their_bounds(ty):
    assert 1 <= ty.ndim <= 2
    assert all(1 <= d <= 3 for d in ty.shape)
    assert ty.dtype in ("float32", "int8")


@settings(max_examples=80, deadline=None)
@given(irst.tensor_exprs())
def test_tensor_exprs_are_closed_well_formed_and_typed(program):
    assert set(analysis.free_vars(program.expr)) <= set(program.params)
    assert analysis.well_formed(program.expr)
    assert all(isinstance(p.type_annotation, TensorType) for p in program.params)
    assert program.types[program.expr] == program.result_type
    for node in post_order(program.expr):
        assert not isinstance(node, (E.If, E.Function, E.Match, E.GlobalVar))
    value = program.reference(program.random_inputs(seed=1))
    assert_value_has_type(value, program.result_type)
    for array in leaves(value):
        assert np.all(np.isfinite(array.astype("float64")))


@settings(max_examples=60, deadline=None)
@given(irst.tensor_exprs(dtypes=("float32", "float64", "int32")), st.data())
def test_oracle_agrees_with_the_dataflow_evaluator(program, data):
    inputs = data.draw(program.inputs_strategy())
    for param, (lo, hi) in zip(program.params, program.param_bounds):
        assert np.all(inputs[param] >= lo) and np.all(inputs[param] <= hi)
    assert_close(evaluate(program.expr, inputs), program.reference(inputs))


@settings(max_examples=80, deadline=None)
@given(irst.programs())
def test_programs_are_closed_well_formed_and_finite(program):
    assert set(analysis.free_vars(program.expr)) <= set(program.params)
    assert analysis.well_formed(program.expr)
    for function in program.global_functions.values():
        assert analysis.free_vars(function) == []
        assert analysis.well_formed(function)
    mod = program.module()
    assert set(g.name_hint for g in mod.get_global_vars()) == \
        {"main"} | {g.name_hint for g in program.global_functions}
    for seed in (0, 1):
        value = program.reference(program.random_inputs(seed))
        assert_value_has_type(value, program.result_type)
        for array in leaves(value):
            assert np.all(np.isfinite(array.astype("float64")))


@settings(max_examples=40, deadline=None)
@given(irst.tensor_exprs(allow_lets=False, allow_tuples=False, allow_shape_ops=False,
                         dtypes=("int32",), ops=("add", "negative")))
def test_config_restricts_what_is_generated(program):
    for node in post_order(program.expr):
        assert not isinstance(node, (E.Let, E.Tuple, E.TupleGetItem))
        if isinstance(node, E.Call):
            assert node.op.name in ("add", "negative")
    assert all(p.type_annotation.dtype == "int32" for p in program.params)


# ``find`` without shrinking: these tests only need one witness.
FIND = settings(max_examples=500, database=None, derandomize=True, phases=[Phase.generate])


def test_a_config_object_and_overrides_combine():
    config = irst.ProgramConfig(max_steps=2, allow_if=False)
    program = find(irst.programs(config, allow_lambdas=True, allow_globals=False,
                                 allow_higher_order=False),
                   lambda p: any(isinstance(n, E.Function) for n in post_order(p.expr)),
                   settings=FIND)
    assert not any(isinstance(n, E.If) for n in post_order(program.expr))


@pytest.mark.parametrize("wanted", [E.If, E.Function, E.GlobalVar, E.Let, E.TupleGetItem,
                                    E.Constant])
def test_programs_cover_each_feature(wanted):
    find(irst.programs(), lambda p: any(isinstance(n, wanted) for n in post_order(p.expr)),
         settings=FIND)


@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")
def test_programs_include_higher_order_calls():
    def passes_a_function(program):
        for node in post_order(program.expr):
            if isinstance(node, E.Call) and any(
                    isinstance(program.types.get(a), FuncType) for a in node.args):
                return True
        return False
    find(irst.programs(), passes_a_function, settings=FIND)


def test_programs_include_recursive_lets():
    def recursive(program):
        return any(isinstance(n, E.Let) and isinstance(n.value, E.Function)
                   and n.var in analysis.free_vars(n.value) for n in post_order(program.expr))
    program = find(irst.programs(), recursive, settings=FIND)
    for seed in range(3):
        value = program.reference(program.random_inputs(seed))
        assert all(np.all(np.isfinite(a)) for a in leaves(value))


def test_generated_oracle_matches_hand_computation():
    # Any generated program whose body is exactly exp(x0) checks the oracle by hand.
    program = find(irst.tensor_exprs(max_inputs=1, max_steps=1, allow_lets=False,
                                     allow_constants=False, allow_tuples=False,
                                     allow_shape_ops=False, ops=("exp",)),
                   lambda p: isinstance(p.expr, E.Call),
                   settings=FIND)
    inputs = program.random_inputs(seed=3)
    x = inputs[program.params[0]]
    np.testing.assert_allclose(program.reference(inputs), np.exp(x), rtol=1e-6)


def test_expected_types_cover_calls_and_vars():
    program = find(irst.programs(), lambda p: len(post_order(p.expr)) > 12,
                   settings=FIND)
    for node in post_order(program.expr):
        if isinstance(node, (E.Call, E.Var, E.Let, E.If, E.Tuple, E.TupleGetItem)):
            assert node in program.types, type(node).__name__
    assert irlib.structural_equal(program.function.params, program.params)


@settings(max_examples=60, deadline=None)
@given(irst.programs())
def test_expected_types_agree_with_type_inference(program):
    typed = irlib.transform.InferType()(program.module())
    assert irlib.structural_equal(typed["main"].body.checked_type, program.result_type)
    for gvar, function in program.global_functions.items():
        assert irlib.structural_equal(typed[gvar.name_hint].checked_type, program.types[gvar])
    original, inferred = post_order(program.function), post_order(typed["main"])
    if len(original) != len(inferred):
        return   # the typed copy need not keep sharing; the root check above still holds
    for before, after in zip(original, inferred):
        assert type(before) is type(after)
        if before in program.types and not isinstance(before, (E.Op, E.Constructor,
                                                                 E.GlobalVar)):
            assert irlib.structural_equal(after.checked_type, program.types[before]), \
                f"{type(before).__name__}: {after.checked_type} vs {program.types[before]}"
