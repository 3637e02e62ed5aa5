"""The ``onnx.*`` ops (irlib/op/frontend/): type relations and
numpy references against hand-derived values and small numpy oracles written here."""

import numpy as np
import pytest

from irlib.ir.dims import Any
from irlib.ir.types import TensorType, TupleType, normalize_dtype
from irlib.op.frontend import spectral
from irlib.op.registry import evaluate, get_def


def run(name, *inputs, **attrs):
    """The op's outputs as a tuple (single-output ops too)."""
    op_def = get_def(name)
    result = evaluate(name, list(inputs), op_def.make_attrs(attrs))
    return result if op_def.tuple_output else (result,)


def test_ml_dtypes_names_are_known():
    for name in ("bfloat16", "float8_e4m3fn", "float8_e5m2fnuz", "float4_e2m1fn", "int4",
                 "uint4", "int2", "uint2"):
        assert normalize_dtype(name) == name
    with pytest.raises(TypeError):
        normalize_dtype("float8_e9m9")


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_attention_matches_plain_scaled_dot_product():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, 2, 3, 4)).astype("float32") for _ in range(3))
    y, present_k, present_v, scores = run("onnx.attention", (q, k, v))
    expected = _softmax(q @ k.transpose(0, 1, 3, 2) / 2.0) @ v  # sqrt(head size 4) = 2
    np.testing.assert_allclose(y, expected, rtol=1e-5)
    np.testing.assert_array_equal(present_k, k)
    np.testing.assert_allclose(scores, q @ k.transpose(0, 1, 3, 2) / 2.0, rtol=1e-5)


def test_attention_causal_masks_future_keys():
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((1, 1, 3, 2)).astype("float32") for _ in range(3))
    y = run("onnx.attention", (q, k, v), is_causal=True)[0]
    raw = q[0, 0] @ k[0, 0].T / np.sqrt(2)
    for row in range(3):
        weights = _softmax(raw[row, :row + 1])
        np.testing.assert_allclose(y[0, 0, row], weights @ v[0, 0, :row + 1], rtol=1e-5)


def test_attention_type_relation_3d_with_past():
    q = TensorType((2, 5, 8), "float32")
    kv = TensorType((2, 5, 4), "float32")
    past = TensorType((2, 2, 3, 2), "float32")
    attrs = get_def("onnx.attention").make_attrs(
        {"roles": ["past_key", "past_value"], "q_num_heads": 4, "kv_num_heads": 2})
    ty = get_def("onnx.attention").type_rel([TupleType([q, kv, kv, past, past])], attrs)
    assert ty.fields[0] == TensorType((2, 5, 8), "float32")
    assert ty.fields[1] == TensorType((2, 2, 8, 2), "float32")
    assert ty.fields[3] == TensorType((2, 4, 5, 8), "float32")


def _resize(data, scales=(), sizes=(), **attrs):
    return run("onnx.resize", np.asarray(data, "float32"), np.zeros(0, "float32"),
               np.asarray(scales, "float32"), np.asarray(sizes, "int64"), **attrs)[0]


def test_resize_nearest_asymmetric_floor_repeats():
    out = _resize([[1, 2, 3]], scales=[1, 2], coordinate_transformation_mode="asymmetric",
                  nearest_mode="floor")
    np.testing.assert_array_equal(out, [[1, 1, 2, 2, 3, 3]])


def test_resize_linear_align_corners_interpolates_endpoints():
    out = _resize([0, 3], sizes=[4], method="linear",
                  coordinate_transformation_mode="align_corners")
    np.testing.assert_allclose(out, [0, 1, 2, 3])


def test_resize_half_pixel_linear_clamps_at_edges():
    # x_src = (x + 0.5) / 2 - 0.5 = [-0.25, 0.25, 0.75, 1.25] -> clamp at the edges
    out = _resize([0, 4], scales=[2], method="linear")
    np.testing.assert_allclose(out, [0, 1, 3, 4])


def test_resize_antialias_linear_downsample_averages():
    # scale 1/2 with antialias: a triangle filter two input pixels wide on each side
    out = _resize([0, 0, 4, 4], scales=[0.5], method="linear", antialias=True)
    assert out.shape == (2,)
    assert 0 < out[0] < 2 and 2 < out[1] < 4


def test_resize_type_relation_uses_static_shape_attr():
    op_def = get_def("onnx.resize")
    data = TensorType((1, 3, 4, 4), "float32")
    vector = TensorType((0,), "float32")
    assert op_def.type_rel([data, vector, vector, TensorType((0,), "int64")],
                           op_def.make_attrs({"out_shape": (1, 3, 8, 8)})) == \
        TensorType((1, 3, 8, 8), "float32")
    assert op_def.type_rel([data, vector, vector, TensorType((0,), "int64")],
                           op_def.make_attrs({})) == TensorType((Any,) * 4, "float32")


def test_grid_sample_identity_grid_returns_input():
    data = np.arange(12, dtype="float32").reshape(1, 1, 3, 4)
    ys, xs = np.meshgrid(np.linspace(-1, 1, 3), np.linspace(-1, 1, 4), indexing="ij")
    grid = np.stack([xs, ys], axis=-1)[None].astype("float32")
    for mode in ("linear", "nearest", "cubic"):
        out = run("onnx.grid_sample", data, grid, mode=mode, align_corners=True)[0]
        np.testing.assert_allclose(out, data, atol=1e-5)


def test_grid_sample_zeros_padding_outside():
    data = np.ones((1, 1, 2, 2), "float32")
    grid = np.array([[[[3.0, 3.0]]]], "float32")
    assert run("onnx.grid_sample", data, grid)[0].item() == 0.0
    assert run("onnx.grid_sample", data, grid, padding_mode="border")[0].item() == 1.0


def test_unique_sorted_and_first_occurrence_order():
    data = np.array([2, 1, 1, 3, 4, 3], "float32")
    values, first, inverse, counts = run("onnx.unique", data)
    np.testing.assert_array_equal(values, [1, 2, 3, 4])
    np.testing.assert_array_equal(first, [1, 0, 3, 4])
    np.testing.assert_array_equal(inverse, [1, 0, 0, 2, 3, 2])
    np.testing.assert_array_equal(counts, [2, 1, 2, 1])
    values, first, inverse, counts = run("onnx.unique", data, sorted=False)
    np.testing.assert_array_equal(values, [2, 1, 3, 4])
    np.testing.assert_array_equal(inverse, [0, 1, 1, 2, 3, 2])


def test_non_max_suppression_drops_overlaps():
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 5, 1, 6]]], "float32")
    scores = np.array([[[0.9, 0.8, 0.7]]], "float32")
    selected = run("onnx.non_max_suppression", boxes, scores, np.array([3], "int64"),
                   np.array([0.5], "float32"), np.zeros(0, "float32"))[0]
    np.testing.assert_array_equal(selected, [[0, 0, 0], [0, 0, 2]])


def test_scatter_nd_reductions():
    data = np.array([1, 5, 3], "float32")
    indices = np.array([[1], [1]], "int64")
    updates = np.array([2, 7], "float32")
    assert run("onnx.scatter_nd", data, indices, updates, reduction="max")[0].tolist() == \
        [1, 7, 3]
    assert run("onnx.scatter_nd", data, indices, updates, reduction="mul")[0].tolist() == \
        [1, 70, 3]


def test_bitcast_reinterprets_bits():
    out = run("onnx.bitcast", np.array([1.0], "float32"), dtype="int32")[0]
    assert out.tolist() == [0x3F800000]
    wide = run("onnx.bitcast", np.array([1.0], "float64"), dtype="int32")[0]
    assert wide.shape == (1, 2)


def test_det_dft_window_cumprod():
    assert run("onnx.det", np.array([[2, 1], [1, 3]], "float32"))[0] == pytest.approx(5.0)
    signal = np.array([[[1.0], [2.0], [0.0], [-1.0]]], "float32")
    out = run("onnx.dft", signal, np.zeros(0, "int64"), np.array([1], "int64"))[0]
    n = np.arange(4)
    expected = [sum(signal[0, t, 0] * np.exp(-2j * np.pi * f * t / 4) for t in n) for f in n]
    np.testing.assert_allclose(out[0, :, 0] + 1j * out[0, :, 1], expected, atol=1e-5)
    np.testing.assert_allclose(spectral.window_values(4, "hann", True, "float32"),
                               [0, 0.5, 1, 0.5], atol=1e-7)
    out = run("onnx.cumprod", np.array([1, 2, 3, 4], "float32"), np.array(0), exclusive=True,
              reverse=True)[0]
    assert out.tolist() == [24, 12, 4, 1]


def test_string_ops():
    assert run("onnx.string_concat", np.array(["a", "b"]), np.array("!"))[0].tolist() == \
        ["a!", "b!"]
    pieces, counts = run("onnx.string_split", np.array(["a.b", "c"]), delimiter=".")
    assert pieces.tolist() == [["a", "b"], ["c", ""]] and counts.tolist() == [2, 1]
    assert run("onnx.regex_full_match", np.array(["ab1", "x"]),
               pattern="[a-z]+[0-9]")[0].tolist() == [True, False]
    out = run("onnx.string_normalizer", np.array(["The", "cat"]), case_change_action="UPPER",
              stopwords=("the",))[0]
    assert out.tolist() == ["CAT"]


def test_rotary_embedding_quarter_turn():
    x = np.arange(8, dtype="float32").reshape(1, 1, 2, 4)  # (batch, heads, seq, head)
    cos = np.zeros((2, 2), "float32")
    sin = np.ones((2, 2), "float32")
    out = run("onnx.rotary_embedding", (x, cos, sin, np.array([[0, 1]], "int64")))[0]
    # rotate-half: (x1, x2) -> (-x2, x1)
    np.testing.assert_array_equal(out[0, 0, 0], [-2, -3, 0, 1])


def test_linear_attention_single_step_is_outer_product_read():
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((1, 1, 2)).astype("float32") for _ in range(3))
    out, state = run("onnx.linear_attention", (q, k, v), update_rule="linear")
    np.testing.assert_allclose(state[0, 0], np.outer(k[0, 0], v[0, 0]), rtol=1e-6)
    np.testing.assert_allclose(out[0, 0], q[0, 0] @ np.outer(k[0, 0], v[0, 0]) / np.sqrt(2),
                               rtol=1e-5)


def test_center_crop_pad():
    data = np.arange(5, dtype="float32")
    assert run("onnx.center_crop_pad", data, np.array([3]))[0].tolist() == [1, 2, 3]
    # 3 extra: 1 before, 2 after
    assert run("onnx.center_crop_pad", data, np.array([8]))[0].tolist() == \
        [0, 0, 1, 2, 3, 4, 0, 0]
