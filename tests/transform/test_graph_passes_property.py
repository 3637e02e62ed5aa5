"""Every graph-level pass keeps the meaning of generated programs (with control flow too),
never mutates its input, and leaves a module that type-checks. Passes run in verify mode
(``PassContext`` config ``irlib.verify``: every pass, each one inside a Sequential or the
optimize pipeline too, is followed by a well-formedness check and type inference)."""

import pytest
from hypothesis import given, settings, strategies as st

from irlib.testing import strategies as irst
from irlib.testing.budget import examples
from irlib.transform import (AlterOpLayout, AnnotateTarget, BackwardFoldScaleAxis,
                             CanonicalizeCast, CanonicalizeOps, ChangeBatch,
                             CombineParallelConv2D, CombineParallelDense, ConvertLayout, FastMath,
                             ForwardFoldScaleAxis, FuseOps, InferType, Legalize,
                             MergeCompilerRegions, PartitionGraph, PassContext, Sequential,
                             SimplifyInference, optimize)

from _graph_opt_helpers import assert_close, run

PASSES = {
    "simplify_inference": SimplifyInference(),
    "canonicalize_ops": CanonicalizeOps(),
    "canonicalize_cast": CanonicalizeCast(),
    "fast_math": FastMath(),
    "backward_fold": BackwardFoldScaleAxis(),
    "forward_fold": ForwardFoldScaleAxis(),
    "convert_layout": ConvertLayout({"nn.conv2d": ["NHWC", "default"]}),
    "alter_op_layout": AlterOpLayout(),
    "legalize": Legalize(),
    "combine_conv": CombineParallelConv2D(2),
    "combine_dense": CombineParallelDense(2),
    "change_batch_none": ChangeBatch({}),
    "byoc_default": Sequential([AnnotateTarget("none"), MergeCompilerRegions(),
                                PartitionGraph()]),
    "fuse": FuseOps(),
}


VERIFY = {"irlib.verify": True}


def _check(pass_, program, data):
    mod = program.module()
    text = mod.astext()
    with PassContext(config=VERIFY):
        out = pass_(mod)
    assert mod.astext() == text
    InferType()(out)
    inputs = data.draw(program.inputs_strategy())
    assert_close(run(out, [inputs[p] for p in program.params]), program.reference(inputs))


@pytest.mark.parametrize("name", sorted(PASSES))
@settings(max_examples=examples(10), deadline=None)
@given(program=irst.tensor_exprs(max_steps=10, dtypes=("float64",)), data=st.data())
def test_dataflow_programs(name, program, data):
    _check(PASSES[name], program, data)


@pytest.mark.parametrize("name", sorted(PASSES))
@settings(max_examples=examples(10), deadline=None)
@given(program=irst.programs(max_steps=8, dtypes=("float64",)), data=st.data())
def test_programs_with_control_flow(name, program, data):
    _check(PASSES[name], program, data)


@pytest.mark.parametrize("level", [0, 2, 3, 4])
@settings(max_examples=examples(10), deadline=None)
@given(program=irst.programs(max_steps=8, dtypes=("float64",)), data=st.data())
def test_optimize_pipeline(level, program, data):
    with PassContext(opt_level=level, config=VERIFY):
        out = optimize(program.module())
    inputs = data.draw(program.inputs_strategy())
    assert_close(run(out, [inputs[p] for p in program.params]), program.reference(inputs))
