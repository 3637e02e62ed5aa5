"""com.microsoft BERT ops (Attention, QAttention, EmbedLayerNormalization,
QEmbedLayerNormalization): from_onnx's output equals onnxruntime's (which implements them) on
both executors, for each mask form; unsupported variants raise OpNotImplemented."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from irlib.frontend import OpNotImplemented  # noqa: E402
from irlib.frontend.onnx import from_onnx  # noqa: E402

from ._running import run_outputs  # noqa: E402

MS = "com.microsoft"
RNG = np.random.default_rng(0)
B, S, HIDDEN, HEADS = 3, 5, 8, 2  # B != HEADS: a mis-broadcast mask shows


def _model(node, feeds, initializers, outputs):
    inputs = [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(v.dtype),
                                            v.shape) for name, v in feeds.items()]
    graph = helper.make_graph([node], "g", inputs, outputs,
                              [numpy_helper.from_array(v, name)
                               for name, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid(MS, 1)])
    model.ir_version = 8
    return model


def _check(node, feeds, initializers, outputs, executor):
    model = _model(node, feeds, initializers, outputs)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    want = session.run(None, feeds)
    mod, params = from_onnx(model)
    got = run_outputs(mod, params, executor, [feeds[p.name_hint] for p in mod["main"].params])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def _out(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


# mask forms: none, key lengths (B,), raw (B, keys), raw per query (B, queries, keys)
MASKS = {
    "none": None,
    "key_lengths": np.array([S, 3, 1], "int32"),
    "raw_2d": np.array([[1, 1, 1, 1, 1], [1, 1, 0, 1, 0], [1, 0, 0, 0, 0]], "int32"),
    "raw_3d": (RNG.random((B, S, S)) > 0.3).astype("int32"),
}


def _mask_inputs(mask_form):
    mask = MASKS[mask_form]
    return ({} if mask is None else {"mask": mask}), ([] if mask is None else ["mask"])


@pytest.mark.parametrize("executor", ["debug", "graph"])
@pytest.mark.parametrize("mask_form", sorted(MASKS))
def test_attention(mask_form, executor):
    feeds = {"x": RNG.standard_normal((B, S, HIDDEN)).astype("float32")}
    mask_feeds, mask_names = _mask_inputs(mask_form)
    feeds.update(mask_feeds)
    weights = {"w": RNG.standard_normal((HIDDEN, 3 * HIDDEN)).astype("float32") * 0.5,
               "b": RNG.standard_normal(3 * HIDDEN).astype("float32")}
    node = helper.make_node("Attention", ["x", "w", "b"] + mask_names, ["y"], domain=MS,
                            num_heads=HEADS)
    _check(node, feeds, weights, [_out("y", [B, S, HIDDEN])], executor)


@pytest.mark.parametrize("executor", ["debug", "graph"])
def test_attention_value_size_scale_and_filter_value(executor):
    """qkv_hidden_sizes with a wider value projection, an explicit scale and
    mask_filter_value."""
    feeds = {"x": RNG.standard_normal((B, S, HIDDEN)).astype("float32"),
             "mask": MASKS["raw_2d"]}
    weights = {"w": RNG.standard_normal((HIDDEN, 8 + 8 + 12)).astype("float32"),
               "b": RNG.standard_normal(8 + 8 + 12).astype("float32")}
    node = helper.make_node("Attention", ["x", "w", "b", "mask"], ["y"], domain=MS,
                            num_heads=HEADS, qkv_hidden_sizes=[8, 8, 12], scale=0.2,
                            mask_filter_value=-50.0)
    _check(node, feeds, weights, [_out("y", [B, S, 12])], executor)


@pytest.mark.parametrize("executor", ["debug", "graph"])
@pytest.mark.parametrize("weight_dtype,per_column", [("int8", True), ("uint8", False)])
def test_qattention(weight_dtype, per_column, executor):
    columns = 3 * HIDDEN
    low, high = (-127, 128) if weight_dtype == "int8" else (0, 256)
    feeds = {"x": RNG.integers(0, 256, (B, S, HIDDEN)).astype("uint8"),
             "x_scale": np.array(0.02, "float32"), "x_zp": np.array(131, "uint8"),
             "mask": MASKS["key_lengths"]}
    weights = {
        "w": RNG.integers(low, high, (HIDDEN, columns)).astype(weight_dtype),
        "b": RNG.standard_normal(columns).astype("float32"),
        "w_scale": (RNG.random(columns if per_column else ()) * 0.01 + 0.005)
        .astype("float32"),
        "w_zp": RNG.integers(low // 4, high // 4, columns if per_column else ())
        .astype(weight_dtype)}
    node = helper.make_node("QAttention", ["x", "w", "b", "x_scale", "w_scale", "mask",
                                           "x_zp", "w_zp"], ["y"], domain=MS,
                            num_heads=HEADS)
    _check(node, feeds, weights, [_out("y", [B, S, HIDDEN])], executor)


def _tables():
    return {"word": RNG.standard_normal((30, HIDDEN)).astype("float32"),
            "position": RNG.standard_normal((16, HIDDEN)).astype("float32"),
            "segment": RNG.standard_normal((2, HIDDEN)).astype("float32"),
            "gamma": RNG.random(HIDDEN).astype("float32") + 0.5,
            "beta": RNG.standard_normal(HIDDEN).astype("float32")}


def _ids():
    return {"ids": RNG.integers(0, 30, (B, S)).astype("int32"),
            "segments": RNG.integers(0, 2, (B, S)).astype("int32")}


@pytest.mark.parametrize("executor", ["debug", "graph"])
@pytest.mark.parametrize("form", ["mask_and_sum", "no_mask", "position_ids"])
def test_embed_layer_normalization(form, executor):
    feeds = _ids()
    names = ["ids", "segments", "word", "position", "segment", "gamma", "beta"]
    outputs = [_out("y", [B, S, HIDDEN]), _out("mask_index", [B], TensorProto.INT32)]
    if form == "mask_and_sum":
        feeds["mask"] = MASKS["raw_2d"]
        names.append("mask")
        outputs.append(_out("sum", [B, S, HIDDEN]))
    elif form == "position_ids":
        feeds["mask"] = MASKS["raw_2d"]
        feeds["position_ids"] = RNG.integers(0, 16, (B, S)).astype("int32")
        names += ["mask", "position_ids"]
    node = helper.make_node("EmbedLayerNormalization", names,
                            [o.name for o in outputs], domain=MS, epsilon=1e-5)
    _check(node, feeds, _tables(), outputs, executor)


@pytest.mark.parametrize("executor", ["debug", "graph"])
def test_qembed_layer_normalization(executor):
    feeds = _ids()
    feeds["mask"] = MASKS["raw_2d"]
    quantized = {}
    for name, table in _tables().items():
        low, high = float(min(table.min(), 0)), float(max(table.max(), 0))
        scale = np.float32((high - low) / 255)
        zero_point = np.uint8(round(-low / scale))
        quantized[f"{name}_q"] = np.clip(np.round(table / scale) + zero_point, 0, 255) \
            .astype("uint8")
        quantized[f"{name}_scale"], quantized[f"{name}_zp"] = np.array(scale), \
            np.array(zero_point)
    order = ("word", "position", "segment", "gamma", "beta")
    names = (["ids", "segments"] + [f"{n}_q" for n in order] + ["mask"] +
             [f"{n}_scale" for n in order] + [f"{n}_zp" for n in order])
    node = helper.make_node("QEmbedLayerNormalization", names, ["y", "mask_index"],
                            domain=MS, epsilon=1e-5)
    _check(node, feeds, quantized, [_out("y", [B, S, HIDDEN]),
                                    _out("mask_index", [B], TensorProto.INT32)], executor)


@pytest.mark.parametrize("variant", ["past", "unidirectional"])
def test_attention_unsupported_variants_raise(variant):
    feeds = {"x": np.zeros((B, S, HIDDEN), "float32")}
    weights = {"w": np.zeros((HIDDEN, 3 * HIDDEN), "float32")}
    names, attrs = ["x", "w", "", ""], {"num_heads": HEADS}
    if variant == "past":
        feeds["past"] = np.zeros((2, B, HEADS, 1, HIDDEN // HEADS), "float32")
        names.append("past")
    else:
        attrs["unidirectional"] = 1
    node = helper.make_node("Attention", names, ["y"], domain=MS, **attrs)
    with pytest.raises(OpNotImplemented, match="Attention"):
        from_onnx(_model(node, feeds, weights, [_out("y", [B, S, HIDDEN])]))
