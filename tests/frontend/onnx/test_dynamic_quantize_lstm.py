"""com.microsoft DynamicQuantizeLSTM (what quantize_dynamic makes of an LSTM): irlib vs
onnxruntime running a plain LSTM on the weights dequantized in numpy here (tight), and vs
onnxruntime's own DynamicQuantizeLSTM (which also rounds the activations: loose)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import interp
import irlib

onnx = pytest.importorskip("onnx")
onnxruntime = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from irlib.frontend.onnx import from_onnx  # noqa: E402


def _model(node, inits, steps, size, hidden, directions):
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [steps, 1, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                       [steps, directions, 1, hidden])],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("com.microsoft", 1)])


def _run_irlib(model, x):
    mod, params = from_onnx(model)
    func = interp.create_executor("graph", mod=irlib.transform.InferType()(mod),
                                  device=interp.cpu(0), target="cpu", params=params).evaluate()
    return func(x).numpy()


def _run_ort(model, x):
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


@settings(max_examples=6, deadline=None)
@given(signed=st.booleans(), per_column=st.booleans(), bidirectional=st.booleans(),
       hidden=st.sampled_from([3, 8]), size=st.sampled_from([2, 5]), seed=st.integers(0, 99))
def test_dynamic_quantize_lstm(signed, per_column, bidirectional, hidden, size, seed):
    rng = np.random.default_rng(seed)
    directions, steps = (2 if bidirectional else 1), 3
    dtype, low, high = ("int8", -127, 128) if signed else ("uint8", 0, 256)
    scale_shape = (directions, 4 * hidden) if per_column else (directions,)
    inits = {}
    for name, rows in (("W", size), ("R", hidden)):
        inits[name] = rng.integers(low, high, (directions, rows, 4 * hidden)).astype(dtype)
        inits[name + "_scale"] = rng.uniform(0.002, 0.02, scale_shape).astype("float32")
        inits[name + "_zp"] = rng.integers(low // 4, high // 4, scale_shape).astype(dtype)
    inits["B"] = rng.standard_normal((directions, 8 * hidden)).astype("float32") * 0.1
    direction = "bidirectional" if bidirectional else "forward"
    node = helper.make_node(
        "DynamicQuantizeLSTM", ["x", "W", "R", "B", "", "", "", "", "W_scale", "W_zp",
                                "R_scale", "R_zp"], ["y"], domain="com.microsoft",
        hidden_size=hidden, direction=direction)
    x = rng.standard_normal((steps, 1, size)).astype("float32")
    got = _run_irlib(_model(node, inits, steps, size, hidden, directions), x)

    def dequantized(name):          # numpy: (q - zp) * scale, to LSTM's [dirs, 4h, rows]
        scale, zp = inits[name + "_scale"], inits[name + "_zp"].astype("float32")
        if not per_column:
            scale, zp = scale[:, None, None], zp[:, None, None]
        else:
            scale, zp = scale[:, None, :], zp[:, None, :]
        return ((inits[name].astype("float32") - zp) * scale).transpose(0, 2, 1)
    plain = helper.make_node("LSTM", ["x", "W", "R", "B"], ["y"], hidden_size=hidden,
                             direction=direction)
    want = _run_ort(_model(plain, {"W": dequantized("W"), "R": dequantized("R"),
                                   "B": inits["B"]}, steps, size, hidden, directions), x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_matches_onnxruntimes_own_kernel():
    rng = np.random.default_rng(3)
    hidden, size, steps = 8, 6, 4
    inits = {"W": rng.integers(-127, 128, (1, size, 4 * hidden)).astype("int8"),
             "R": rng.integers(-127, 128, (1, hidden, 4 * hidden)).astype("int8"),
             "W_scale": np.array([0.01], "float32"), "W_zp": np.zeros(1, "int8"),
             "R_scale": np.array([0.01], "float32"), "R_zp": np.zeros(1, "int8")}
    node = helper.make_node(
        "DynamicQuantizeLSTM", ["x", "W", "R", "", "", "", "", "", "W_scale", "W_zp",
                                "R_scale", "R_zp"], ["y"], domain="com.microsoft",
        hidden_size=hidden)
    model = _model(node, inits, steps, size, hidden, 1)
    x = rng.standard_normal((steps, 1, size)).astype("float32")
    got, want = _run_irlib(model, x), _run_ort(model, x)
    assert np.abs(want).max() > 0.1
    np.testing.assert_allclose(got, want, atol=0.03)
