"""DynamicQuantizeLinear, and a quantize_dynamic-style Linear (DynamicQuantizeLinear ->
MatMulInteger -> Cast -> Mul -> Add), imported by from_onnx and run on the graph executor at
opt_level 3 (the quantize arithmetic in generated code, the product as exact float GEMMs)
against onnxruntime: integers, scales and zero points bit for bit, including exact ties
(``x / scale`` at k + 0.5, where round half to even matters), all-zero tensors (onnxruntime's
scale 1) and depths that need a split product."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import interp
import irlib
from irlib.testing.budget import examples

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _run_both(model, feed):
    from irlib.frontend.onnx import from_onnx
    mod, params = from_onnx(model)
    with irlib.transform.PassContext(opt_level=3):
        func = interp.create_executor("graph", mod=irlib.transform.InferType()(mod),
                                      device=interp.cpu(0), target="cpu",
                                      params=params).evaluate()
    got = func(*feed.values())
    got = [np.asarray(v.numpy()) for v in (got if isinstance(got, (tuple, list)) else [got])]
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return got, session.run(None, feed)


def _dql_model(shape):
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])
    graph = helper.make_graph(
        [node], "dql", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, list(shape)),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("z", TensorProto.UINT8, [])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@st.composite
def _activations(draw):
    """Float tensors: random, all zero, or on a grid where ``x / scale`` hits k + 0.5."""
    shape = draw(st.sampled_from([(7,), (3, 5), (2, 4, 16)]))
    kind = draw(st.sampled_from(["normal", "zeros", "ties", "positive"]))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    if kind == "zeros":
        return np.zeros(shape, np.float32)
    if kind == "normal":
        return (rng.standard_normal(shape) * 3 + draw(st.sampled_from([0.0, 2.0]))) \
            .astype(np.float32)
    if kind == "positive":
        return rng.uniform(0.5, 4.0, shape).astype(np.float32)
    # scale = 255 * 2^-e / 255 = 2^-e exactly: min = -m * 2^-e, max = (255 - m) * 2^-e
    step, m = 2.0 ** -draw(st.integers(2, 6)), draw(st.integers(0, 255))
    values = (rng.integers(-m, 255 - m, size=shape) + 0.5) * step
    flat = values.reshape(-1)
    flat[0], flat[-1] = -m * step, (255 - m) * step
    return values.astype(np.float32)


@settings(max_examples=examples(25), deadline=None)
@given(x=_activations())
def test_dynamic_quantize_linear_bit_for_bit(x):
    got, want = _run_both(_dql_model(x.shape), {"x": x})
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def _linear_model(depth, units, seed):
    rng = np.random.default_rng(seed)
    weight = rng.integers(-127, 128, size=(depth, units)).astype(np.int8)
    inits = [numpy_helper.from_array(weight, "W"),
             numpy_helper.from_array(np.array(0, np.int8), "Wzp"),
             numpy_helper.from_array(np.array(0.0037, np.float32), "Ws"),
             numpy_helper.from_array(rng.standard_normal(units).astype(np.float32), "B")]
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "qs", "qz"]),
             helper.make_node("MatMulInteger", ["q", "W", "qz", "Wzp"], ["acc"]),
             helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["qs", "Ws"], ["s"]),
             helper.make_node("Mul", ["accf", "s"], ["y0"]),
             helper.make_node("Add", ["y0", "B"], ["y"])]
    graph = helper.make_graph(
        nodes, "qlinear", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, depth])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, units])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@settings(max_examples=examples(8), deadline=None)
@given(rows=st.sampled_from([1, 16]), depth=st.sampled_from([24, 384, 1536]),
       seed=st.integers(0, 100))
def test_quantized_linear_matches_onnxruntime(rows, depth, seed):
    model = _linear_model(depth, 24, seed)
    x = np.random.default_rng(seed + 1).standard_normal((rows, depth)).astype(np.float32)
    got, want = _run_both(model, {"x": x})
    # exact: the product's integers are exact in the float GEMM (split depth included), and
    # the scale and bias are applied in the graph's order, as onnxruntime does
    np.testing.assert_array_equal(got[0], want[0])
