"""from_onnx on TfIdfVectorizer, ImageDecoder, BatchNormalization in training mode and the
ai.onnx.preview.training optimizers (Adagrad, Adam, Momentum): one-node models run by the
interpreter and the graph executor, against onnxruntime where it has the op, the update rules
written out in numpy here, and a hand-built BMP file."""

import struct

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

import interp  # noqa: E402
from irlib.frontend.onnx import OpNotImplemented, from_onnx  # noqa: E402
from irlib.op.frontend import image_decoder  # noqa: E402

RNG = np.random.default_rng(0)
TRAINING = "ai.onnx.preview.training"
_TYPES = {"float32": TensorProto.FLOAT, "int64": TensorProto.INT64,
          "int32": TensorProto.INT32, "uint8": TensorProto.UINT8, "object": TensorProto.STRING}


def _model(op_type, feeds, outputs, attrs=None, opset=15, domain=""):
    """A one-node model with the arrays of ``feeds`` as graph inputs."""
    inputs = [helper.make_tensor_value_info(name, _TYPES[value.dtype.name], value.shape)
              for name, value in feeds.items()]
    node = helper.make_node(op_type, list(feeds), list(outputs), domain=domain or None,
                            **(attrs or {}))
    graph = helper.make_graph([node], "g", inputs, [
        helper.make_tensor_value_info(name, _TYPES[dtype], shape)
        for name, (dtype, shape) in outputs.items()])
    imports = [helper.make_opsetid("", opset)]
    if domain:
        imports.append(helper.make_opsetid(domain, 1))
    model = helper.make_model(graph, opset_imports=imports)
    model.ir_version = 10
    return model


def _run_both(model, feeds):
    """The outputs of ``model`` on ``feeds`` from the interpreter and the graph executor."""
    mod, _ = from_onnx(model)
    results = {}
    for kind in ("debug", "graph"):
        result = interp.create_executor(kind, mod=mod).evaluate()(*feeds.values())
        results[kind] = [r.numpy() for r in (result if isinstance(result, tuple) else [result])]
    return results


def _ort(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _check(results, expected, rtol=1e-5, atol=1e-6):
    for kind, outputs in results.items():
        assert len(outputs) == len(expected), kind
        for got, want in zip(outputs, expected):
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=kind)


# -- TfIdfVectorizer ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,shape,mode", [("int32", (2, 10), "TF"), ("int64", (12,), "IDF"),
                                              ("int64", (3, 7), "TFIDF")])
def test_tfidf_integers_match_onnxruntime(dtype, shape, mode):
    feeds = {"x": RNG.integers(0, 5, shape).astype(dtype)}
    attrs = dict(mode=mode, min_gram_length=1, max_gram_length=3, max_skip_count=2,
                 ngram_counts=[0, 3, 7], ngram_indexes=[4, 0, 1, 2, 3, 5, 6, 7],
                 pool_int64s=[0, 2, 4, 1, 1, 3, 4, 2, 2, 0], weights=[0.5, 1, 2, 3, 4, 5, 6, 7])
    out_shape = [8] if len(shape) == 1 else [shape[0], 8]
    model = _model("TfIdfVectorizer", feeds, {"y": ("float32", out_shape)}, attrs)
    _check(_run_both(model, feeds), _ort(model, feeds))


def test_tfidf_strings_match_onnxruntime():
    feeds = {"x": np.array(["the", "cat", "sat", "the", "cat", "on", "the", "mat"], object)}
    attrs = dict(mode="TF", min_gram_length=1, max_gram_length=2, max_skip_count=1,
                 ngram_counts=[0, 3], ngram_indexes=[0, 1, 2, 3, 4],
                 pool_strings=["the", "cat", "mat", "the", "cat", "cat", "on"])
    model = _model("TfIdfVectorizer", feeds, {"y": ("float32", [5])}, attrs)
    expected = _ort(model, feeds)
    np.testing.assert_array_equal(expected[0], [3, 2, 1, 2, 1])  # counted by hand
    _check(_run_both(model, feeds), expected)


# -- BatchNormalization in training mode --------------------------------------------------------

@pytest.mark.parametrize("shape,attrs", [((2, 3, 4, 5), {}),
                                         ((4, 2, 6), {"momentum": 0.7, "epsilon": 1e-2})])
def test_batchnorm_training_mode_matches_onnxruntime(shape, attrs):
    channels = shape[1]
    feeds = {"x": RNG.standard_normal(shape).astype("float32"),
             "scale": RNG.uniform(0.5, 1.5, channels).astype("float32"),
             "bias": RNG.standard_normal(channels).astype("float32"),
             "mean": RNG.standard_normal(channels).astype("float32"),
             "var": RNG.uniform(0.5, 2.0, channels).astype("float32")}
    outputs = {"y": ("float32", list(shape)), "running_mean": ("float32", [channels]),
               "running_var": ("float32", [channels])}
    model = _model("BatchNormalization", feeds, outputs, dict(attrs, training_mode=1))
    expected = _ort(model, feeds)
    # the running statistics, written out: biased batch variance over all but the channels
    x = feeds["x"].astype("float64")
    axes = (0,) + tuple(range(2, len(shape)))
    momentum = attrs.get("momentum", 0.9)
    np.testing.assert_allclose(expected[2], feeds["var"] * momentum + x.var(axis=axes) *
                               (1 - momentum), rtol=1e-5)
    _check(_run_both(model, feeds), expected, rtol=1e-4, atol=1e-5)


def test_batchnorm_training_outputs_before_opset_14_are_refused():
    feeds = {name: np.ones(s, "float32") for name, s in
             (("x", (2, 3)), ("s", 3), ("b", 3), ("m", 3), ("v", 3))}
    outputs = {"y": ("float32", [2, 3])}
    outputs.update({name: ("float32", [3]) for name in ("mean", "var", "saved_mean",
                                                         "saved_var")})
    model = _model("BatchNormalization", feeds, outputs, opset=12)
    with pytest.raises(OpNotImplemented, match="training outputs"):
        from_onnx(model)


# -- the training optimizers, written out ------------------------------------------------------

def _adagrad(r, t, x, g, h, decay=0.0, epsilon=1e-6, norm=0.0):
    rate = r / (1 + t * decay)
    grad = norm * x + g
    h_new = h + grad ** 2
    return x - rate * grad / (np.sqrt(h_new) + epsilon), h_new


def _adam(r, t, x, g, v, h, alpha=0.9, beta=0.999, epsilon=1e-6, norm=0.0, norm_post=0.0):
    grad = norm * x + g
    v_new = alpha * v + (1 - alpha) * grad
    h_new = beta * h + (1 - beta) * grad ** 2
    rate = r * np.sqrt(1 - beta ** t) / (1 - alpha ** t) if t > 0 else r
    return (1 - norm_post) * (x - rate * v_new / (np.sqrt(h_new) + epsilon)), v_new, h_new


def _momentum(r, t, x, g, v, alpha, beta, norm, nesterov):
    grad = norm * x + g
    v_new = alpha * v + (beta if t > 0 else 1.0) * grad
    step = grad + alpha * v_new if nesterov else v_new
    return x - r * step, v_new


def _optimizer_case(op_type, groups, count, t, attrs, rule):
    """Run ``op_type`` on ``count`` tensors and compare with ``rule`` applied per tensor."""
    feeds = {"R": np.array(0.1, "float32"), "T": np.array(t, "int64")}
    shapes = [(3, 2), (4,), (1, 2, 2)][:count]
    for group in range(groups):
        for i, shape in enumerate(shapes):
            value = RNG.standard_normal(shape).astype("float32")
            feeds[f"in{group}_{i}"] = np.abs(value) if group >= 2 else value
    out_groups = groups - 1
    outputs = {f"out{k}_{i}": ("float32", list(s)) for k in range(out_groups)
               for i, s in enumerate(shapes)}
    model = _model(op_type, feeds, outputs, attrs, domain=TRAINING)
    expected = [[] for _ in range(out_groups)]
    for i in range(count):
        args = [feeds[f"in{group}_{i}"].astype("float64") for group in range(groups)]
        for k, value in enumerate(rule(0.1, t, *args)):
            expected[k].append(value)
    _check(_run_both(model, feeds), [v for group in expected for v in group], rtol=1e-4,
           atol=1e-5)


@pytest.mark.parametrize("t,count", [(0, 1), (3, 2)])
def test_adagrad(t, count):
    attrs = {"decay_factor": 0.1, "epsilon": 1e-5, "norm_coefficient": 0.01}
    _optimizer_case("Adagrad", 3, count, t, attrs,
                    lambda r, t, x, g, h: _adagrad(r, t, x, g, h, 0.1, 1e-5, 0.01))


@pytest.mark.parametrize("t,count", [(0, 2), (4, 1), (2, 3)])
def test_adam(t, count):
    attrs = {"alpha": 0.95, "beta": 0.1, "epsilon": 1e-7, "norm_coefficient": 0.001,
             "norm_coefficient_post": 0.02}
    _optimizer_case("Adam", 4, count, t, attrs,
                    lambda r, t, x, g, v, h: _adam(r, t, x, g, v, h, 0.95, 0.1, 1e-7, 0.001,
                                                   0.02))


@pytest.mark.parametrize("mode,t,count", [("standard", 0, 1), ("standard", 5, 2),
                                          ("nesterov", 0, 2), ("nesterov", 3, 1)])
def test_momentum(mode, t, count):
    attrs = {"alpha": 0.95, "beta": 0.85, "mode": mode, "norm_coefficient": 0.01}
    _optimizer_case("Momentum", 3, count, t, attrs,
                    lambda r, t, x, g, v: _momentum(r, t, x, g, v, 0.95, 0.85, 0.01,
                                                    mode == "nesterov"))


def test_momentum_bad_mode_and_uneven_inputs_are_refused():
    feeds = {"R": np.array(0.1, "float32"), "T": np.array(1, "int64"),
             "x": np.ones(2, "float32"), "g": np.ones(2, "float32"), "v": np.ones(2, "float32")}
    outputs = {"x2": ("float32", [2]), "v2": ("float32", [2])}
    attrs = {"alpha": 0.9, "beta": 0.9, "mode": "heavy", "norm_coefficient": 0.0}
    with pytest.raises(OpNotImplemented, match="mode"):
        from_onnx(_model("Momentum", feeds, outputs, attrs, domain=TRAINING))
    del feeds["v"]
    with pytest.raises(OpNotImplemented, match="equally many"):
        from_onnx(_model("Momentum", feeds, outputs, dict(attrs, mode="standard"),
                         domain=TRAINING))


# -- ImageDecoder -------------------------------------------------------------------------------

def _bmp(pixels):
    """A 24-bit bottom-up BMP file of RGB ``pixels`` [H, W, 3]: 14 + 40 header bytes, then
    rows of BGR triples padded to 4 bytes, last row first."""
    height, width, _ = pixels.shape
    stride = (3 * width + 3) // 4 * 4
    body = b"".join(row[:, ::-1].tobytes().ljust(stride, b"\0") for row in pixels[::-1])
    header = struct.pack("<2sIHHI", b"BM", 54 + len(body), 0, 0, 54)
    info = struct.pack("<IiiHHIIiiII", 40, width, height, 1, 24, 0, len(body), 2835, 2835, 0, 0)
    return np.frombuffer(header + info + body, "uint8")


@pytest.mark.skipif(not image_decoder.pillow_available(), reason="needs Pillow")
@pytest.mark.parametrize("pixel_format", ["RGB", "BGR"])
def test_image_decoder_hand_built_bmp(pixel_format):
    pixels = RNG.integers(0, 256, (4, 3, 3)).astype("uint8")
    feeds = {"encoded": _bmp(pixels)}
    model = _model("ImageDecoder", feeds, {"image": ("uint8", [4, 3, 3])},
                   {"pixel_format": pixel_format}, opset=20)
    want = pixels if pixel_format == "RGB" else pixels[:, :, ::-1]
    _check(_run_both(model, feeds), [want], rtol=0, atol=0)


def test_image_decoder_without_pillow_is_refused(monkeypatch):
    monkeypatch.setattr(image_decoder, "pillow_available", lambda: False)
    feeds = {"encoded": np.zeros(10, "uint8")}
    model = _model("ImageDecoder", feeds, {"image": ("uint8", [1, 1, 3])}, opset=20)
    with pytest.raises(OpNotImplemented, match="needs Pillow"):
        from_onnx(model)
