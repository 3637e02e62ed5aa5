"""The ``onnx.*`` ops TfIdfVectorizer and ImageDecoder (irlib/op/frontend/text.py,
image_decoder.py): type relations, and numpy references against hand-derived counts, onnxruntime one-node models and
images whose pixels the test writes itself (a hand-built BMP file)."""

import struct
import sys

import numpy as np
import pytest

from irlib.errors import OpImplError, TypeInferenceError
from irlib.ir.types import TensorType
from irlib.op.frontend import image_decoder
from irlib.testing.budget import examples
from op_test_helpers import evaluate_op as run, op_relation as relation

RNG = np.random.default_rng(0)


# -- TfIdfVectorizer ----------------------------------------------------------------------------

BIGRAMS = dict(min_gram_length=2, max_gram_length=2, ngram_counts=(0, 4),
               ngram_indexes=(0, 1, 2, 3, 4, 5, 6), pool=(2, 3, 5, 4, 5, 6, 7, 8, 6, 7))


def test_tfidf_bigrams_without_skips_hand_derived():
    # pool: unigrams 2 3 5 4 (columns 0-3), bigrams (5,6) (7,8) (6,7) (columns 4-6)
    data = np.array([1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8], "int32")
    got = run("onnx.tfidf_vectorizer", data, mode="TF", max_skip_count=0, **BIGRAMS)
    np.testing.assert_array_equal(got, [0, 0, 0, 0, 1, 1, 1])
    assert got.dtype == np.float32


def test_tfidf_skips_count_every_distance_but_unigrams_once():
    data = np.array([[5, 9, 6, 6], [3, 3, 2, 2]], "int64")
    # row 0: (5,6) at distance 2 and at distance 3; row 1: unigram 3 twice, 2 twice
    got = run("onnx.tfidf_vectorizer", data, mode="TF", max_skip_count=2,
              **dict(BIGRAMS, min_gram_length=1))
    np.testing.assert_array_equal(got, [[0, 0, 1, 0, 2, 0, 0], [2, 2, 0, 0, 0, 0, 0]])


def test_tfidf_idf_and_tfidf_weights():
    data = np.array([5, 6, 5, 6, 2], "int32")
    weights = (0.5, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0)
    base = dict(BIGRAMS, min_gram_length=1, max_skip_count=0, weights=weights)
    # counts: 2 once, 5 twice, (5,6) twice
    np.testing.assert_allclose(run("onnx.tfidf_vectorizer", data, mode="IDF", **base),
                               [0.5, 0, 2.0, 0, 4.0, 0, 0])
    np.testing.assert_allclose(run("onnx.tfidf_vectorizer", data, mode="TFIDF", **base),
                               [0.5, 0, 4.0, 0, 8.0, 0, 0])
    no_weights = dict(base, weights=())
    np.testing.assert_allclose(run("onnx.tfidf_vectorizer", data, mode="IDF", **no_weights),
                               [1, 0, 1, 0, 1, 0, 0])


def test_tfidf_weights_follow_their_ngram_to_its_column():
    got = run("onnx.tfidf_vectorizer", np.array([1, 2, 3], "int64"), mode="IDF",
              ngram_counts=(0,), ngram_indexes=(1, 2, 0), pool=(1, 2, 3),
              weights=(10.0, 20.0, 30.0))
    np.testing.assert_array_equal(got, [30, 10, 20])


def test_tfidf_strings():
    data = np.array([["a", "b", "a", "b", "c"]], dtype=object)
    got = run("onnx.tfidf_vectorizer", data, mode="TF", min_gram_length=1, max_gram_length=2,
              max_skip_count=0, ngram_counts=(0, 3), ngram_indexes=(0, 1, 2, 3),
              pool=("a", "b", "c", "a", "b"))
    np.testing.assert_array_equal(got, [[2, 2, 1, 2]])


def _ort_tfidf(data, attrs):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper
    onnx_attrs = {k: v for k, v in attrs.items() if k not in ("pool", "weights")}
    onnx_attrs["pool_int64s"] = list(attrs["pool"])
    if attrs.get("weights"):
        onnx_attrs["weights"] = list(attrs["weights"])
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], **onnx_attrs)
    elem = TensorProto.INT32 if data.dtype == np.int32 else TensorProto.INT64
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", elem, data.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 10
    assert onnx is not None
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": data})[0]


@pytest.mark.parametrize("seed", range(examples(6)))
def test_tfidf_matches_onnxruntime_on_random_pools(seed):
    rng = np.random.default_rng(seed)
    sizes = [int(rng.integers(0, 4)) for _ in range(3)]  # uni-, bi-, trigrams in the pool
    pool, counts = [], []
    for size, count in enumerate(sizes, start=1):
        counts.append(len(pool))
        grams = {tuple(rng.integers(0, 4, size).tolist()) for _ in range(count)}
        pool += [v for gram in sorted(grams) for v in gram]
    total = 0
    for i, start in enumerate(counts):
        end = counts[i + 1] if i + 1 < len(counts) else len(pool)
        total += (end - start) // (i + 1)
    if total == 0:
        pool, counts, total = [1], [0], 1
    # onnxruntime refuses a min_gram_length beyond the n-gram kinds the pool has
    min_gram = int(rng.integers(1, 3)) if len(counts) > 1 else 1
    attrs = dict(mode=str(rng.choice(["TF", "IDF", "TFIDF"])), min_gram_length=min_gram,
                 max_gram_length=int(rng.integers(min_gram, 4)),
                 max_skip_count=int(rng.integers(0, 3)), ngram_counts=tuple(counts),
                 ngram_indexes=tuple(rng.permutation(total).tolist()), pool=tuple(pool),
                 weights=tuple(rng.uniform(0.5, 2.0, total).round(2).tolist())
                 if rng.random() < 0.5 else ())
    shape = (3, 9) if seed % 2 else (11,)
    data = rng.integers(0, 4, shape).astype("int64" if seed % 3 else "int32")
    got = run("onnx.tfidf_vectorizer", data, **attrs)
    np.testing.assert_allclose(got, _ort_tfidf(data, attrs), rtol=1e-6)


def test_tfidf_relation_shapes_and_errors():
    assert relation("onnx.tfidf_vectorizer", [TensorType((4, 9), "int32")], **BIGRAMS) == \
        TensorType((4, 7), "float32")
    assert relation("onnx.tfidf_vectorizer", [TensorType((9,), "int64")], **BIGRAMS) == \
        TensorType((7,), "float32")
    with pytest.raises(TypeInferenceError, match="pool of integers"):
        relation("onnx.tfidf_vectorizer", [TensorType((9,), "float32")], **BIGRAMS)
    with pytest.raises(TypeInferenceError, match=r"\[C\] or \[B, C\]"):
        relation("onnx.tfidf_vectorizer", [TensorType((1, 2, 3), "int32")], **BIGRAMS)
    with pytest.raises(TypeInferenceError, match="mode"):
        relation("onnx.tfidf_vectorizer", [TensorType((9,), "int32")], mode="BM25", **BIGRAMS)
    with pytest.raises(TypeInferenceError, match="weights"):
        relation("onnx.tfidf_vectorizer", [TensorType((9,), "int32")], weights=(1.0,),
                 **BIGRAMS)


def test_tfidf_bad_pool_segments_raise():
    with pytest.raises(OpImplError, match="whole 2-grams"):
        run("onnx.tfidf_vectorizer", np.zeros(4, "int32"), min_gram_length=1,
            max_gram_length=2, ngram_counts=(0, 1), ngram_indexes=(0, 1), pool=(1, 2, 3, 4))


# -- ImageDecoder -------------------------------------------------------------------------------

def bmp_bytes(pixels: np.ndarray) -> np.ndarray:
    """A 24-bit bottom-up BMP file of RGB ``pixels`` [H, W, 3], written field by field."""
    height, width, _ = pixels.shape
    stride = (3 * width + 3) // 4 * 4
    rows = b""
    for row in pixels[::-1]:  # bottom-up, BGR, rows padded to 4 bytes
        line = row[:, ::-1].astype("uint8").tobytes()
        rows += line + b"\0" * (stride - len(line))
    header = struct.pack("<2sIHHI", b"BM", 54 + len(rows), 0, 0, 54)
    info = struct.pack("<IiiHHIIiiII", 40, width, height, 1, 24, 0, len(rows), 2835, 2835, 0, 0)
    return np.frombuffer(header + info + rows, "uint8")


needs_pillow = pytest.mark.skipif(not image_decoder.pillow_available(),
                                  reason="Pillow is not installed")


@needs_pillow
@pytest.mark.parametrize("width", [1, 5, 8])
def test_image_decoder_reads_hand_built_bmp(width):
    pixels = RNG.integers(0, 256, (3, width, 3)).astype("uint8")
    encoded = bmp_bytes(pixels)
    np.testing.assert_array_equal(run("onnx.image_decoder", encoded, pixel_format="RGB"),
                                  pixels)
    np.testing.assert_array_equal(run("onnx.image_decoder", encoded, pixel_format="BGR"),
                                  pixels[:, :, ::-1])
    gray = run("onnx.image_decoder", encoded, pixel_format="Grayscale")
    # ITU-R 601-2 luma, L = 0.299 R + 0.587 G + 0.114 B, to within rounding
    want = pixels.astype("float64") @ np.array([0.299, 0.587, 0.114])
    assert gray.shape == (3, width, 1) and gray.dtype == np.uint8
    assert np.abs(gray[:, :, 0] - want).max() <= 1.0


@needs_pillow
def test_image_decoder_corrupt_stream_raises():
    with pytest.raises(OpImplError, match="cannot decode the 5-byte stream"):
        run("onnx.image_decoder", np.arange(5, dtype="uint8"))


def test_image_decoder_without_pillow_raises(monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    monkeypatch.setitem(sys.modules, "PIL.Image", None)
    assert not image_decoder.pillow_available()
    with pytest.raises(OpImplError, match="needs Pillow"):
        run("onnx.image_decoder", np.zeros(4, "uint8"))


def test_image_decoder_relation():
    ty = relation("onnx.image_decoder", [TensorType((100,), "uint8")], pixel_format="Grayscale")
    assert ty.ndim == 3 and ty.shape[2] == 1 and ty.dtype == "uint8"
    with pytest.raises(TypeInferenceError, match="1-D uint8"):
        relation("onnx.image_decoder", [TensorType((10, 10), "uint8")])
    with pytest.raises(TypeInferenceError, match="pixel_format"):
        relation("onnx.image_decoder", [TensorType((10,), "uint8")], pixel_format="CMYK")
