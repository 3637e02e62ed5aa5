"""Shape vectors built from constant and run-time pieces, float16 products, joined
sequence/optional If branches (the deterministic ONNX suite cases fixed for issue #19),
each checked against onnxruntime on a model written here."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from irlib.frontend.onnx import from_onnx  # noqa: E402
from irlib.transform import InferType  # noqa: E402

from ._running import run_outputs  # noqa: E402


def _model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=8)
    onnx.checker.check_model(model)
    return model


def _onnxruntime(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _expand_split_squeeze_model():
    """AffineGrid's expanded pattern: ``Expand(c[2, 3], Concat(Shape(x)[0:1], [2, 3]))``, then
    Split on axis 1, Squeeze without axes and a rank-2 Transpose."""
    const = numpy_helper.from_array(np.arange(6, dtype="float32").reshape(2, 3), "c")
    tail = numpy_helper.from_array(np.array([2, 3], "int64"), "tail")
    nodes = [helper.make_node("Shape", ["x"], ["n"], start=0, end=1),
             helper.make_node("Concat", ["n", "tail"], ["target"], axis=0),
             helper.make_node("Expand", ["c", "target"], ["e"]),
             helper.make_node("Split", ["e"], ["r1", "r2"], axis=1, num_outputs=2),
             helper.make_node("Squeeze", ["r2"], ["s"]),
             helper.make_node("Transpose", ["s"], ["t"], perm=[1, 0]),
             helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0]),
             helper.make_node("Mul", ["t", "xt"], ["y"])]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, "N"])],
                  [const, tail], opset=18)


@pytest.mark.parametrize("executor", ["debug", "graph"])
def test_expand_to_a_partly_constant_shape_keeps_the_constant_dims(executor):
    model = _expand_split_squeeze_model()
    mod, params = from_onnx(model)
    assert InferType()(mod)["main"].ret_type.ndim == 2
    for n in (2, 4):      # (N = 1 would squeeze the batch axis too, in onnxruntime as well)
        x = np.random.default_rng(n).standard_normal((n, 3)).astype("float32")
        want = _onnxruntime(model, {"x": x})
        got = run_outputs(mod, params, executor, [x])
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6)


def test_constant_of_shape_from_pieces_types_known_dims():
    tail = numpy_helper.from_array(np.array([4], "int64"), "tail")
    nodes = [helper.make_node("Shape", ["x"], ["n"], start=0, end=1),
             helper.make_node("Concat", ["n", "tail"], ["shape"], axis=0),
             helper.make_node("ConstantOfShape", ["shape"], ["z"],
                              value=numpy_helper.from_array(np.array([1.5], "float32"))),
             # ReduceSum over the known axis: onnxruntime checks the result's shape
             helper.make_node("ReduceSum", ["z", "axes"], ["y"], keepdims=0)]
    axes = numpy_helper.from_array(np.array([1], "int64"), "axes")
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N"])],
                   [tail, axes])
    mod, params = from_onnx(model)
    x = np.zeros(5, "float32")
    got = run_outputs(mod, params, "debug", [x])
    np.testing.assert_array_equal(got[0], np.full(5, 6.0, "float32"))     # 4 x 1.5
    np.testing.assert_array_equal(got[0], _onnxruntime(model, {"x": x})[0])


@settings(max_examples=6, deadline=None)
@given(batch=st.integers(1, 3), m=st.integers(1, 5), k=st.integers(1, 40),
       n=st.integers(1, 5), seed=st.integers(0, 2 ** 16))
def test_float16_batched_matmul_rounds_once(batch, m, k, n, seed):
    """float16 MatMul accumulates in float32 and rounds once, as numpy's float16 matmul and
    onnxruntime do (an einsum in float16 rounded every partial sum)."""
    model = _model([helper.make_node("MatMul", ["a", "b"], ["y"])],
                   [helper.make_tensor_value_info("a", TensorProto.FLOAT16, [batch, m, k]),
                    helper.make_tensor_value_info("b", TensorProto.FLOAT16, [batch, k, n])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [batch, m, n])])
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((batch, m, k)).astype("float16")
    b = rng.standard_normal((batch, k, n)).astype("float16")
    want = (a.astype("float32") @ b.astype("float32")).astype("float16")
    mod, params = from_onnx(model)
    got = run_outputs(mod, params, "debug", [a, b])[0]
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, want)


def test_if_joins_optional_sequences_of_different_element_shapes():
    """``if_opt``'s pattern: an empty optional declared ``optional(seq(float[5]))`` in one
    branch, ``Optional(SequenceConstruct(x))`` of a static ``x`` in the other."""
    seq_type = helper.make_sequence_type_proto(
        helper.make_tensor_type_proto(TensorProto.FLOAT, [5]))
    opt_type = helper.make_optional_type_proto(seq_type)
    then = helper.make_graph([helper.make_node("Optional", [], ["empty"], type=seq_type)],
                             "then", [], [helper.make_value_info("empty", opt_type)])
    other = helper.make_graph(
        [helper.make_node("SequenceConstruct", ["x"], ["s"]),
         helper.make_node("Optional", ["s"], ["full"])],
        "else", [], [helper.make_value_info("full", opt_type)])
    model = _model([helper.make_node("If", ["c"], ["o"], then_branch=then, else_branch=other),
                    helper.make_node("OptionalHasElement", ["o"], ["has"])],
                   [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                    helper.make_tensor_value_info("x", TensorProto.FLOAT, [5])],
                   [helper.make_tensor_value_info("has", TensorProto.BOOL, [])], opset=18)
    mod, params = from_onnx(model)
    x = np.arange(5, dtype="float32")
    for cond in (True, False):
        got = run_outputs(mod, params, "debug", [np.array(cond), x])[0]
        assert bool(got) is (not cond)
