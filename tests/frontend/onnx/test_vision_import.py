"""Col2Im, DeformConv, RoiAlign, MaxUnpool, MaxPool's Indices output and 3-D ConvTranspose:
from_onnx output equals onnxruntime's on one-node models, through the interpreter and the
graph executor; shape inputs given as initializers give static result types."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import interp  # noqa: E402
from irlib.frontend.onnx import from_onnx  # noqa: E402
from irlib.ir.types import TensorType  # noqa: E402

RNG = np.random.default_rng(3)
_TYPES = {"float32": TensorProto.FLOAT, "int64": TensorProto.INT64}


def _model(node, feeds, outputs, initializers=None, opset=22, shapes=None):
    """A one-node model; output shapes (the checker wants them) from ``shapes`` or, when
    None, from a first onnxruntime run of the model without them."""
    initializers = initializers or {}
    inputs = [helper.make_tensor_value_info(name, _TYPES[v.dtype.name], v.shape)
              for name, v in feeds.items()]
    if shapes is None:
        shapeless = _model(node, feeds, outputs, initializers, opset, [None] * len(outputs))
        session = ort.InferenceSession(shapeless.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        shapes = [value.shape for value in session.run(None, feeds)]
    outs = [helper.make_tensor_value_info(name, _TYPES[dtype], shape)
            for (name, dtype), shape in zip(outputs, shapes)]
    graph = helper.make_graph([node], "g", inputs, outs,
                              [numpy_helper.from_array(v, name)
                               for name, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 10)
    return model


def _check(model, feeds, executors=("debug", "graph")):
    """Run ``model`` on onnxruntime and on irlib's executors; returns the imported module."""
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    want = session.run(None, feeds)
    mod, params = from_onnx(model)
    for executor in executors:
        got = interp.create_executor(executor, mod=mod).evaluate()(*feeds.values())
        got = [g.numpy() for g in got] if isinstance(got, tuple) else [got.numpy()]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    return mod


@pytest.mark.parametrize("as_initializer", [True, False])
def test_col2im(as_initializer):
    data = RNG.standard_normal((2, 8, 8)).astype("float32")
    shapes = {"image": np.array([4, 5], "int64"), "block": np.array([2, 2], "int64")}
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], strides=[2, 1],
                            pads=[1, 0, 0, 1], dilations=[1, 2])
    feeds = {"x": data} if as_initializer else {"x": data, **shapes}
    model = _model(node, feeds, [("y", "float32")], shapes if as_initializer else None,
                   opset=18)
    mod = _check(model, feeds)
    call_op = mod["main"].body.op.name
    assert call_op == ("onnx.col2im" if as_initializer else "onnx.col2im_dyn")


@pytest.mark.parametrize("with_optional", [True, False])
def test_deform_conv(with_optional):
    feeds = {"x": RNG.standard_normal((1, 4, 5, 6)).astype("float32"),
             "w": RNG.standard_normal((2, 2, 2, 3)).astype("float32"),
             "offset": RNG.standard_normal((1, 2 * 2 * 6, 3, 2)).astype("float32")}
    names = ["x", "w", "offset"]
    if with_optional:
        feeds["b"] = RNG.standard_normal(2).astype("float32")
        feeds["mask"] = RNG.uniform(size=(1, 2 * 6, 3, 2)).astype("float32")
        names += ["b", "mask"]
    node = helper.make_node("DeformConv", names, ["y"], group=2, offset_group=2,
                            strides=[2, 2], pads=[1, 0, 0, 0], kernel_shape=[2, 3])
    _check(_model(node, feeds, [("y", "float32")], opset=19), feeds)


@pytest.mark.parametrize("opset,attrs", [
    (16, {"mode": "max", "output_height": 2, "output_width": 3, "sampling_ratio": 2}),
    (16, {"coordinate_transformation_mode": "output_half_pixel", "spatial_scale": 0.5}),
    (10, {"output_height": 3, "output_width": 2}),  # before 16: output_half_pixel
])
def test_roi_align(opset, attrs):
    feeds = {"x": RNG.standard_normal((2, 3, 9, 8)).astype("float32"),
             "rois": np.array([[0.3, 1.2, 6.4, 7.0], [-1.0, 2.0, 4.5, 3.5]], "float32"),
             "idx": np.array([1, 0], "int64")}
    node = helper.make_node("RoiAlign", ["x", "rois", "idx"], ["y"], **attrs)
    _check(_model(node, feeds, [("y", "float32")], opset=opset), feeds)


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
    {"kernel_shape": [2, 3], "pads": [1, 1, 0, 1], "storage_order": 1, "ceil_mode": 1},
])
def test_max_pool_indices_then_unpool(attrs):
    feeds = {"x": RNG.standard_normal((2, 3, 7, 6)).astype("float32")}
    pool = helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)
    _check(_model(pool, feeds, [("y", "float32"), ("i", "int64")]), feeds)
    if attrs.get("storage_order"):
        return  # MaxUnpool reads row-major indices
    pooled = ort.InferenceSession(
        _model(pool, feeds, [("y", "float32"), ("i", "int64")]).SerializeToString(),
        providers=["CPUExecutionProvider"]).run(None, feeds)
    unpool_feeds = {"y": pooled[0], "i": pooled[1]}
    unpool = helper.make_node("MaxUnpool", ["y", "i"], ["z"], kernel_shape=[3, 3],
                              strides=[2, 2], pads=[1, 0, 1, 1])  # SAME_UPPER's pads
    mod = _check(_model(unpool, unpool_feeds, [("z", "float32")]), unpool_feeds)
    assert mod["main"].body.op.name == "onnx.max_unpool"


def test_max_unpool_with_runtime_output_shape_matches_the_spec_reference():
    from onnx.reference import ReferenceEvaluator
    feeds = {"x": np.array([[[[5, 6], [7, 8]]]], "float32"),
             "i": np.array([[[[5, 7], [13, 15]]]], "int64"),
             "s": np.array([1, 1, 5, 5], "int64")}
    node = helper.make_node("MaxUnpool", ["x", "i", "s"], ["z"], kernel_shape=[2, 2],
                            strides=[2, 2])
    model = _model(node, feeds, [("z", "float32")], shapes=[(1, 1, 5, 5)])
    want = ReferenceEvaluator(model).run(None, feeds)[0]
    mod, _ = from_onnx(model)
    for executor in ("debug", "graph"):
        got = interp.create_executor(executor, mod=mod).evaluate()(*feeds.values()).numpy()
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("attrs", [
    {"strides": [2, 1, 2], "pads": [1, 0, 1, 0, 1, 0], "output_padding": [1, 0, 0],
     "group": 2},
    {"strides": [2, 2, 2], "output_shape": [7, 6, 8]},
])
def test_conv_transpose_3d(attrs):
    feeds = {"x": RNG.standard_normal((1, 4, 3, 3, 4)).astype("float32"),
             "w": RNG.standard_normal((4, 2, 3, 2, 3)).astype("float32"),
             "b": RNG.standard_normal(2 * attrs.get("group", 1)).astype("float32")}
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)
    mod = _check(_model(node, feeds, [("y", "float32")]), feeds)
    assert "nn.conv3d_transpose" in mod["main"].astext()


def test_static_result_types():
    import irlib
    data = np.zeros((1, 8, 8), "float32")
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], strides=[2, 1],
                            pads=[1, 0, 0, 1], dilations=[1, 2])
    model = _model(node, {"x": data}, [("y", "float32")],
                   {"image": np.array([4, 5], "int64"), "block": np.array([2, 2], "int64")},
                   opset=18, shapes=[(1, 2, 4, 5)])
    mod, _ = from_onnx(model)
    typed = irlib.infer_type(mod["main"])
    assert typed.ret_type == TensorType((1, 2, 4, 5), "float32")


def test_conv3d_transpose_exports_to_onnx():
    import irlib
    from irlib.frontend.onnx import to_onnx
    x, w = irlib.var("x", shape=(1, 4, 3, 3, 4)), irlib.var("w", shape=(4, 2, 3, 2, 3))
    mod = irlib.IRModule.from_expr(irlib.Function([x, w], irlib.nn.conv3d_transpose(
        x, w, strides=2, padding=(1, 0, 1, 0, 1, 0), output_padding=(1, 0, 0), groups=2)))
    feeds = {"x": RNG.standard_normal((1, 4, 3, 3, 4)).astype("float32"),
             "w": RNG.standard_normal((4, 2, 3, 2, 3)).astype("float32")}
    model = to_onnx(mod)
    assert "ConvTranspose" in [n.op_type for n in model.graph.node]
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    got = session.run(None, dict(zip(names, feeds.values())))[0]
    want = interp.create_executor("debug", mod=mod).evaluate()(*feeds.values()).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
