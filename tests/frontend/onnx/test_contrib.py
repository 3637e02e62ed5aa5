"""com.microsoft ops: from_onnx output equals onnxruntime's (which implements them)."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

import interp  # noqa: E402
from irlib.frontend.onnx import from_onnx  # noqa: E402

F = TensorProto.FLOAT


def _check(node, inputs, outputs, values):
    graph = helper.make_graph([node], "g", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    want = session.run(None, {i.name: v for i, v in zip(inputs, values)})
    mod, _ = from_onnx(model)
    got = interp.create_executor("debug", mod=mod).evaluate()(*values)
    got = [g.numpy() for g in got] if isinstance(got, tuple) else [got.numpy()]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


RNG = np.random.default_rng(0)


def _v(name, shape):
    return helper.make_tensor_value_info(name, F, shape)


def test_fused_matmul():
    a, b = RNG.random((2, 3, 4), "float32"), RNG.random((2, 5, 4), "float32")
    node = helper.make_node("FusedMatMul", ["a", "b"], ["y"], domain="com.microsoft",
                            alpha=0.5, transB=1)
    _check(node, [_v("a", [2, 3, 4]), _v("b", [2, 5, 4])], [_v("y", [2, 3, 5])], [a, b])


@pytest.mark.parametrize("op", ["Gelu", "FastGelu", "BiasGelu", "QuickGelu"])
def test_gelu_family(op):
    x, bias = RNG.standard_normal((2, 4)).astype("float32"), RNG.random(4, "float32")
    with_bias = op in ("FastGelu", "BiasGelu")
    node = helper.make_node(op, ["x", "bias"] if with_bias else ["x"], ["y"],
                            domain="com.microsoft")
    inputs = [_v("x", [2, 4])] + ([_v("bias", [4])] if with_bias else [])
    _check(node, inputs, [_v("y", [2, 4])], [x, bias] if with_bias else [x])


def test_skip_layer_normalization():
    x, skip = RNG.random((2, 3, 4), "float32"), RNG.random((2, 3, 4), "float32")
    gamma, beta, bias = (RNG.random(4, "float32") for _ in range(3))
    node = helper.make_node("SkipLayerNormalization", ["x", "skip", "gamma", "beta", "bias"],
                            ["y"], domain="com.microsoft", epsilon=1e-5)
    _check(node, [_v("x", [2, 3, 4]), _v("skip", [2, 3, 4]), _v("gamma", [4]),
                  _v("beta", [4]), _v("bias", [4])], [_v("y", [2, 3, 4])],
           [x, skip, gamma, beta, bias])


def test_skip_simplified_layer_normalization():
    x, skip, gamma = RNG.random((2, 4), "float32"), RNG.random((2, 4), "float32"), \
        RNG.random(4, "float32")
    node = helper.make_node("SkipSimplifiedLayerNormalization", ["x", "skip", "gamma"], ["y"],
                            domain="com.microsoft", epsilon=1e-5)
    _check(node, [_v("x", [2, 4]), _v("skip", [2, 4]), _v("gamma", [4])], [_v("y", [2, 4])],
           [x, skip, gamma])
