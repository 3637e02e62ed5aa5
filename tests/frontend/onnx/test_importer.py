"""from_onnx on one-node models and small onnx.helper models, checked against onnxruntime."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import interp  # noqa: E402
import irlib  # noqa: E402
from irlib.frontend import ModelFormatError, OpNotImplemented  # noqa: E402
from irlib.frontend.onnx import from_onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

RNG = np.random.default_rng(0)


def _model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    # outputs are declared untyped above; take their types from ONNX shape inference
    inferred = onnx.shape_inference.infer_shapes(model)
    known = {vi.name: vi for vi in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for output in model.graph.output:
        if not output.type.HasField("tensor_type") and output.name in known:
            output.type.CopyFrom(known[output.name].type)
    return model


def _info(name, shape, dtype=TensorProto.FLOAT):
    if shape is None:  # an output whose type onnxruntime and the importer infer
        return helper.make_empty_tensor_value_info(name)
    return helper.make_tensor_value_info(name, dtype, shape)


def _run_both(model, feeds, rtol=1e-4, atol=1e-5):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    mod, params = from_onnx(model)
    result = interp.create_executor("debug", mod=mod).evaluate()(*feeds.values())
    outputs = list(result) if isinstance(result, tuple) else [result]
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        np.testing.assert_allclose(got.numpy(), want, rtol=rtol, atol=atol)
    return mod, params


def _f32(*shape):
    return RNG.standard_normal(shape).astype("float32")


def _init(name, array):
    return numpy_helper.from_array(array, name)


@pytest.mark.parametrize("op,attrs", [
    ("Relu", {}), ("Sigmoid", {}), ("Tanh", {}), ("Exp", {}), ("Abs", {}),
    ("LeakyRelu", {"alpha": 0.2}), ("Elu", {}), ("Softplus", {}), ("HardSigmoid", {}),
    ("Softmax", {"axis": 1}), ("LogSoftmax", {"axis": -1}), ("Flatten", {"axis": 2}),
    ("Transpose", {"perm": [2, 0, 1, 3]}), ("GlobalAveragePool", {}), ("GlobalMaxPool", {}),
    ("MaxPool", {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    ("ReduceMean", {"axes": [1], "keepdims": 0}),
])
def test_unary_ops_match_onnxruntime(op, attrs):
    x = _f32(2, 3, 4, 6)
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    _run_both(_model([node], [_info("x", x.shape)], [_info("y", None)]), {"x": x})


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Max", "Min"])
def test_broadcasting_binary_ops(op):
    a, b = _f32(2, 3, 4), _f32(3, 1)
    node = helper.make_node(op, ["a", "b"], ["y"])
    _run_both(_model([node], [_info("a", a.shape), _info("b", b.shape)], [_info("y", None)]),
              {"a": a, "b": b})


def test_conv_with_bias_and_same_padding():
    x, w, b = _f32(1, 3, 7, 7), _f32(4, 3, 3, 3), _f32(4)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], auto_pad="SAME_UPPER", strides=[2, 2])
    model = _model([node], [_info("x", x.shape)], [_info("y", None)],
                   [_init("w", w), _init("b", b)])
    _run_both(model, {"x": x})


def test_gemm_matmul_concat_reshape():
    a, w, c = _f32(4, 5), _f32(3, 5), _f32(3)
    nodes = [helper.make_node("Gemm", ["a", "w", "c"], ["g"], transB=1, alpha=0.5, beta=2.0),
             helper.make_node("MatMul", ["g", "m"], ["mm"]),
             helper.make_node("Concat", ["mm", "mm"], ["cat"], axis=0),
             helper.make_node("Reshape", ["cat", "shape"], ["y"])]
    model = _model(nodes, [_info("a", a.shape)], [_info("y", None)],
                   [_init("w", w), _init("c", c), _init("m", _f32(3, 2)),
                    _init("shape", np.array([2, -1], dtype="int64"))])
    _run_both(model, {"a": a})


def test_batchnorm_inference():
    x = _f32(2, 3, 4, 4)
    inits = [_init("s", _f32(3)), _init("b", _f32(3)), _init("m", _f32(3)),
             _init("v", np.abs(_f32(3)) + 0.5)]
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3)
    _run_both(_model([node], [_info("x", x.shape)], [_info("y", None)], inits), {"x": x})


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_lstm(direction):
    steps, batch, features, hidden = 3, 2, 4, 5
    dirs = 2 if direction == "bidirectional" else 1
    x = _f32(steps, batch, features)
    inits = [_init("W", _f32(dirs, 4 * hidden, features)),
             _init("R", _f32(dirs, 4 * hidden, hidden)), _init("B", _f32(dirs, 8 * hidden))]
    node = helper.make_node("LSTM", ["x", "W", "R", "B"], ["Y", "Y_h", "Y_c"],
                            hidden_size=hidden, direction=direction)
    model = _model([node], [_info("x", x.shape)],
                   [_info("Y", None), _info("Y_h", None), _info("Y_c", None)], inits)
    _run_both(model, {"x": x})


def _small_cnn():
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["bn"]),
             helper.make_node("Relu", ["bn"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "fc"], ["logits"], transB=1),
             helper.make_node("Softmax", ["logits"], ["y"], axis=1)]
    inits = [_init("w", _f32(4, 3, 3, 3)), _init("s", _f32(4)), _init("b", _f32(4)),
             _init("m", _f32(4)), _init("v", np.abs(_f32(4)) + 0.5),
             _init("fc", _f32(10, 4 * 4 * 4))]
    return _model(nodes, [_info("x", ["batch", 3, 8, 8])], [_info("y", None)], inits)


def test_small_cnn_with_symbolic_batch():
    model = _small_cnn()
    mod, params = _run_both(model, {"x": _f32(2, 3, 8, 8)})
    assert set(params) == {"w", "s", "b", "m", "v", "fc"}
    main = mod["main"]
    assert len(main.params) == 1
    assert "batch" in irlib.astext(main.params[0].type_annotation)


def test_keep_params_in_input_binds_from_params():
    model = _small_cnn()
    x = _f32(1, 3, 8, 8)
    mod, params = from_onnx(model, keep_params_in_input=True)
    assert [p.name_hint for p in mod["main"].params] == ["x", "w", "s", "b", "m", "v", "fc"]
    got = interp.create_executor("debug", mod=mod, params=params).evaluate()(x)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got.numpy(), session.run(None, {"x": x})[0], rtol=1e-4,
                               atol=1e-6)


def test_runtime_shape_inputs_use_dynamic_ops():
    x = _f32(2, 6)
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"])]
    model = _model(nodes, [_info("x", x.shape), _info("shape", [2], TensorProto.INT64)],
                   [_info("y", None)])
    mod, _ = from_onnx(model)
    out = interp.create_executor("debug", mod=mod).evaluate()(x, np.array([3, -1], "int64"))
    np.testing.assert_array_equal(out.numpy(), x.reshape(3, 4))


def test_model_loads_from_path(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(_small_cnn(), str(path))
    mod, params = from_onnx(str(path))
    assert "fc" in params


def test_unsupported_ops_are_all_listed_at_once():
    nodes = [helper.make_node("FooOp", ["x"], ["a"], name="first"),
             helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("BarOp", ["b"], ["y"], name="second")]
    model = _model(nodes, [_info("x", [2])], [_info("y", [2])])
    with pytest.raises(OpNotImplemented, match=r"BarOp.*FooOp.*'first'.*'second'") as info:
        from_onnx(model)
    assert isinstance(info.value, irlib.UnsupportedOpError)
    assert {name for name, _, _ in info.value.nodes} == {"first", "second"}


def test_malformed_model_reports_checker_message():
    node = helper.make_node("Relu", ["missing"], ["y"], name="bad_relu")
    model = _model([node], [_info("x", [2])], [_info("y", [2])])
    with pytest.raises(ModelFormatError, match="bad_relu|missing"):
        from_onnx(model)


def test_non_model_argument_is_rejected():
    with pytest.raises(ModelFormatError, match="expected an onnx.ModelProto"):
        from_onnx(42)
