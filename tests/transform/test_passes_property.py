"""Property tests: every pass keeps the meaning of generated programs.

Programs come from :mod:`irlib.testing.strategies` with their own numpy oracle. The
transformed ``main`` is evaluated with the dataflow evaluator (dataflow programs: ops,
constants, lets, tuples, sharing) or, for programs with control flow, the reference
interpreter, compared with the oracle, checked well formed, type-checked, and checked
idempotent where the pass is. Every pass runs in verify mode (``PassContext`` config
``irlib.verify``), which also checks each pass inside a ``Sequential``.
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from irlib.analysis import check_basic_block_normal_form, check_well_formed, is_a_normal_form
from irlib.ir.structural import structural_equal
from irlib.testing import strategies as irst
from irlib.testing.budget import examples
from irlib.testing.dataflow_eval import evaluate
from irlib.transform import (DeadCodeElimination, EliminateCommonSubexpr, FoldConstant,
                             InferType, Inline, LambdaLift, PassContext, RemoveUnusedFunctions,
                             Sequential, ToANormalForm, ToGraphNormalForm)

from helpers import run, to_numpy

PASSES = {
    "dce": (DeadCodeElimination(), True),
    "dce_inline_once": (DeadCodeElimination(inline_once=True), True),
    "cse": (EliminateCommonSubexpr(), True),
    "fold": (FoldConstant(), True),
    "anf": (ToANormalForm(), True),
    "gnf": (ToGraphNormalForm(), True),
    "anf_then_gnf": (Sequential([ToANormalForm(), ToGraphNormalForm()]), False),
    "inline": (Inline(), True),
    "remove_unused": (RemoveUnusedFunctions(), True),
    "lambda_lift": (LambdaLift(), False),
}


#: Verify mode: after every pass (each pass of a Sequential too) the module is checked well
#: formed and type-checked, and a PassError names the pass that broke it.
VERIFY = {"irlib.verify": True}


def run_verified(pass_, mod):
    """``pass_(mod)`` in verify mode."""
    with PassContext(config=VERIFY):
        return pass_(mod)


def assert_same_value(actual, expected):
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same_value(a, e)
        return
    actual = np.asarray(actual)
    assert actual.dtype == np.asarray(expected).dtype
    # Folding may evaluate in a different order than the oracle: allow float rounding only.
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(PASSES))
@settings(max_examples=examples(25), deadline=None)
@given(program=irst.tensor_exprs(max_steps=10), data=st.data())
def test_pass_preserves_meaning(name, program, data):
    pass_, idempotent = PASSES[name]
    mod = program.module()
    before_text = mod.astext()
    out = run_verified(pass_, mod)
    assert mod.astext() == before_text              # the input is never mutated
    main = out["main"]
    check_well_formed(main)
    InferType()(out)
    inputs = data.draw(program.inputs_strategy())
    env = {param: inputs[param] for param in program.params}
    assert list(main.params) == list(program.params)
    assert_same_value(evaluate(main.body, env), program.reference(inputs))
    if idempotent:
        again = run_verified(pass_, out)
        assert structural_equal(again["main"], main, map_free_vars=True)


@settings(max_examples=examples(25), deadline=None)
@given(program=irst.tensor_exprs(max_steps=12))
def test_anf_output_is_in_normal_form(program):
    main = ToANormalForm()(program.module())["main"]
    assert is_a_normal_form(main.body)
    assert check_basic_block_normal_form(main)


@settings(max_examples=examples(25), deadline=None)
@given(program=irst.tensor_exprs(max_steps=12, allow_constants=True))
def test_fold_constant_leaves_no_all_constant_op_call(program):
    from irlib.ir import expr as E
    from irlib.ir.functor import post_order
    main = FoldConstant()(program.module())["main"]
    for node in post_order(main):
        if type(node) is E.Call and type(node.op) is E.Op and node.args:
            assert not all(isinstance(a, E.Constant) for a in node.args)


@settings(max_examples=examples(25), deadline=None)
@given(program=irst.tensor_exprs(max_steps=12))
def test_dce_leaves_no_unused_let(program):
    from irlib.ir import expr as E
    from irlib.ir.functor import post_order
    main = DeadCodeElimination()(program.module())["main"]
    used = {n for n in post_order(main.body) if type(n) is E.Var}
    for node in post_order(main):
        if type(node) is E.Let:
            assert any(n is node.var for n in post_order(node.body))
    assert used is not None


@settings(max_examples=examples(15), deadline=None)
@given(program=irst.programs(max_steps=8))
def test_structural_passes_keep_control_flow_programs_well_typed(program):
    mod = InferType()(program.module())
    for pass_ in (DeadCodeElimination(), EliminateCommonSubexpr(), FoldConstant(),
                  ToANormalForm(), ToGraphNormalForm(), Inline(), LambdaLift()):
        out = run_verified(pass_, mod)
        for _, func in out.items():
            check_well_formed(func)
        InferType()(out)


CONTROL_PASSES = {
    "dce": DeadCodeElimination(), "dce_inline_once": DeadCodeElimination(inline_once=True),
    "cse": EliminateCommonSubexpr(), "fold": FoldConstant(), "anf": ToANormalForm(),
    "gnf": ToGraphNormalForm(), "inline": Inline(), "lambda_lift": LambdaLift(),
}


@pytest.mark.parametrize("name", sorted(CONTROL_PASSES))
@settings(max_examples=examples(30), deadline=None)
@given(program=irst.programs(max_steps=12), data=st.data())
def test_pass_preserves_meaning_of_control_flow_programs(name, program, data):
    """Programs with if, closures, higher-order functions, globals and recursion, run by
    the reference interpreter before and after."""
    mod = InferType()(program.module())
    out = run_verified(CONTROL_PASSES[name], mod)
    inputs = data.draw(program.inputs_strategy())
    args = program.input_list(inputs)
    expected = program.reference(inputs)
    assert_same_value(to_numpy(run(out, *args)), expected)


@settings(max_examples=examples(20), deadline=None)
@given(program=irst.programs(max_steps=10))
def test_full_pipeline_in_verify_mode(program):
    """Verify mode checks well-formedness and types after every pass of a pipeline."""
    from irlib.transform import EtaExpand
    pipeline = Sequential([InferType(), FoldConstant(), EliminateCommonSubexpr(),
                           ToANormalForm(), DeadCodeElimination(inline_once=True),
                           ToGraphNormalForm(), Inline(), EtaExpand(expand_global_var=True),
                           LambdaLift(), RemoveUnusedFunctions()])
    with PassContext(opt_level=3, config=VERIFY):
        pipeline(program.module())
