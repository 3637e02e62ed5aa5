"""onnx_models: generated models are valid, respect their knobs, and irlib's importer agrees
with onnxruntime (the independent oracle) on them."""

import numpy as np
import onnx
import pytest
from hypothesis import given, settings, strategies as st

import interp
from irlib.frontend.onnx import from_onnx
from irlib.testing import sample
from irlib.testing.budget import examples
from irlib.testing.onnx_strategies import ONNX_OPS, onnx_models


def run_irlib(case, feeds):
    mod, params = from_onnx(case.model)
    out = interp.create_executor("debug", mod=mod, params=params).evaluate()(
        *[feeds[name] for name in case.inputs])
    return [o.numpy() for o in out] if isinstance(out, tuple) else [out.numpy()]


@settings(max_examples=examples(25), deadline=None)
@given(case=onnx_models(), data=st.data())
def test_importer_agrees_with_onnxruntime(case, data):
    feeds = data.draw(case.inputs_strategy())
    expected = case.reference(feeds)
    actual = run_irlib(case, feeds)
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@settings(max_examples=examples(10), deadline=None)
@given(case=onnx_models(dynamic_batch=True, opsets=(18,)))
def test_dynamic_batch_and_opset_18(case):
    onnx.checker.check_model(case.model, full_check=True)
    assert case.opset == 18
    for value in case.model.graph.input:
        assert value.type.tensor_type.shape.dim[0].dim_param == "N"
    feeds = case.random_inputs(seed=1)
    for got, want in zip(run_irlib(case, feeds), case.reference(feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@settings(max_examples=examples(15), deadline=None)
@given(case=onnx_models(ops=("Add", "Relu", "MatMul"), max_nodes=3, max_inputs=1))
def test_knobs_are_respected(case):
    op_types = {node.op_type for node in case.model.graph.node}
    assert op_types <= {"Add", "Relu", "MatMul"}
    assert 1 <= len(case.model.graph.node) <= 3
    assert list(case.inputs) == ["in0"]
    assert "generated (" in repr(case) and "in0" in repr(case)


def test_unknown_ops_are_refused():
    with pytest.raises(ValueError, match="unknown ops \\['Conv'\\]"):
        sample(onnx_models(ops=("Conv",)))
    assert "Gemm" in ONNX_OPS
