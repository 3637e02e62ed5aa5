"""The image-window ``onnx.*`` ops (irlib/op/frontend/sliding_windows.py, bilinear_sampling.py) and
``nn.conv3d_transpose``: references against onnxruntime one-node models (onnx's
ReferenceEvaluator where onnxruntime disagrees with the spec's test data) and hand-derived
values; type relations through the registry and the type checker."""

import numpy as np
import pytest

import irlib
from irlib.errors import OpImplError, TypeInferenceError
from irlib.ir.dims import Any, size_var
from irlib.ir.types import TensorType, TupleType
from irlib.op.frontend import sliding_windows
from irlib.op.registry import evaluate, get_def, make_call

from ort_oracle import run_node
from op_test_helpers import op_relation as relation
from helpers import tvar

RNG = np.random.default_rng(7)


def run(name, *inputs, **attrs):
    """The op's outputs as a tuple (single-output ops too)."""
    op_def = get_def(name)
    result = evaluate(name, list(inputs), op_def.make_attrs(attrs))
    return result if op_def.tuple_output else (result,)


def f32(*shape):
    return RNG.standard_normal(shape).astype("float32")


def checked(name, args, **attrs):
    """The type the type checker gives ``name(*args, **attrs)`` (args: typed vars)."""
    return irlib.infer_type(make_call(name, args, attrs)).checked_type


# -- Col2Im -------------------------------------------------------------------------------------

COL2IM_CASES = [
    ((5, 5), (1, 5), {}),
    ((5, 5), (2, 2), {"strides": (2, 2)}),
    ((5, 5), (2, 2), {"pads": (0, 1, 0, 1)}),
    ((6, 6), (2, 2), {"dilations": (2, 2), "strides": (1, 2)}),
    ((3, 4, 5), (1, 2, 2), {"pads": (1, 0, 1, 0, 1, 1), "strides": (2, 1, 2)}),
]


@pytest.mark.parametrize("image,block,attrs", COL2IM_CASES)
def test_col2im_matches_onnxruntime(image, block, attrs):
    n = len(image)
    dilations = attrs.get("dilations", (1,) * n)
    pads = attrs.get("pads", (0,) * 2 * n)
    strides = attrs.get("strides", (1,) * n)
    counts = sliding_windows.col2im_blocks(image, block, dilations, pads, strides)
    data = f32(2, 3 * int(np.prod(block)), int(np.prod(counts)))
    expected = run_node("Col2Im", [data, np.array(image, "int64"), np.array(block, "int64")],
                        {k: list(v) for k, v in attrs.items()})[0]
    static = run("onnx.col2im", data, image_shape=image, block_shape=block, **attrs)[0]
    dynamic = run("onnx.col2im_dyn", data, np.array(image, "int64"), np.array(block, "int64"),
                  **attrs)[0]
    np.testing.assert_allclose(static, expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(dynamic, static)
    assert relation("onnx.col2im", [TensorType(data.shape, "float32")], image_shape=image,
                    block_shape=block, **attrs) == TensorType((2, 3) + image, "float32")


def test_col2im_overlapping_blocks_add_up():
    # a 3-wide image, blocks of 2 with stride 1: the middle pixel is in both blocks
    data = np.array([[[1.0, 10.0], [2.0, 20.0]]], "float32")  # (N=1, C*2, L=2)
    out = run("onnx.col2im", data, image_shape=(1, 3), block_shape=(1, 2))[0]
    np.testing.assert_array_equal(out, [[[[1.0, 2.0 + 10.0, 20.0]]]])


def test_col2im_relations_and_errors():
    data = TensorType((size_var("n"), 12, 6), "float32")
    assert relation("onnx.col2im_dyn", [data, TensorType((2,), "int64"),
                                        TensorType((2,), "int64")]) == \
        TensorType((size_var("n"), Any, Any, Any), "float32")
    with pytest.raises(TypeInferenceError, match="multiple of the block size"):
        relation("onnx.col2im", [TensorType((1, 10, 6), "float32")], image_shape=(3, 4),
                 block_shape=(2, 2))
    with pytest.raises(TypeInferenceError, match="blocks"):
        relation("onnx.col2im", [TensorType((1, 12, 5), "float32")], image_shape=(3, 4),
                 block_shape=(2, 2))
    with pytest.raises(OpImplError, match="onnx.col2im_dyn"):
        run("onnx.col2im_dyn", f32(1, 4, 5), np.array([3, 4]), np.array([2, 2]))


# -- MaxPool with indices -----------------------------------------------------------------------

POOL_CASES = [
    ((2, 3, 7), {"kernel_shape": (3,), "strides": (2,), "pads": (1, 1)}),
    ((1, 2, 6, 7), {"kernel_shape": (3, 2), "strides": (2, 2), "pads": (1, 0, 1, 1),
                    "ceil_mode": True, "dilations": (1, 2)}),
    ((1, 2, 5, 6), {"kernel_shape": (2, 3), "storage_order": 1}),
    ((1, 2, 4, 5, 6), {"kernel_shape": (2, 2, 3), "strides": (2, 1, 2),
                       "pads": (1, 0, 1, 0, 1, 1)}),
]


@pytest.mark.parametrize("shape,attrs", POOL_CASES)
def test_max_pool_with_indices_matches_onnxruntime(shape, attrs):
    data = f32(*shape)
    onnx_attrs = {k: (list(v) if isinstance(v, tuple) else int(v)) for k, v in attrs.items()}
    values, indices = run_node("MaxPool", [data], onnx_attrs, outputs=2, opset=12,
                               output_types=["float32", "int64"])
    got = run("onnx.max_pool_with_indices", data, **attrs)
    np.testing.assert_array_equal(got[0], values)
    np.testing.assert_array_equal(got[1], indices)
    ty = relation("onnx.max_pool_with_indices", [TensorType(shape, "float32")], **attrs)
    assert ty == TupleType([TensorType(values.shape, "float32"),
                            TensorType(values.shape, "int64")])


def test_max_pool_indices_ties_pick_the_first_and_count_planes():
    data = np.array([[[[1, 5], [5, 0]]], [[[2, 2], [2, 2]]]], "int8")  # (2, 1, 2, 2)
    values, indices = run("onnx.max_pool_with_indices", data, kernel_shape=(2, 2))
    assert values.reshape(-1).tolist() == [5, 2] and values.dtype == np.int8
    # plane 0: first 5 at (0, 1) -> 1; plane 1 starts at 4 and its first 2 is at (0, 0)
    assert indices.reshape(-1).tolist() == [1, 4]
    _, column_major = run("onnx.max_pool_with_indices", data, kernel_shape=(2, 2),
                          storage_order=1)
    assert column_major.reshape(-1).tolist() == [2, 4]  # (0, 1) column-major is 0 + 1 * 2


def test_max_pool_indices_symbolic_batch():
    ty = relation("onnx.max_pool_with_indices", [TensorType((size_var("n"), 3, 8), "float32")],
                  kernel_shape=(2,), strides=(2,))
    assert ty.fields[1] == TensorType((size_var("n"), 3, 4), "int64")


# -- MaxUnpool ----------------------------------------------------------------------------------

def test_max_unpool_inverts_max_pool_like_onnxruntime():
    data = f32(2, 3, 6, 5)
    values, indices = run("onnx.max_pool_with_indices", data, kernel_shape=(2, 2),
                          strides=(2, 2), pads=(0, 0, 0, 1))
    attrs = {"kernel_shape": (2, 2), "strides": (2, 2), "pads": (0, 0, 0, 1)}
    expected = run_node("MaxUnpool", [values, indices], {k: list(v) for k, v in attrs.items()},
                        opset=11)[0]
    got = run("onnx.max_unpool", values, indices, **attrs)[0]
    np.testing.assert_array_equal(got, expected)
    assert relation("onnx.max_unpool", [TensorType(values.shape, "float32"),
                                        TensorType(indices.shape, "int64")], **attrs) == \
        TensorType(expected.shape, "float32")


def test_max_unpool_output_shape_matches_onnx_reference():
    # onnxruntime reads the indices against output_shape; the spec's reference and test data
    # read them against the inferred shape and zero-fill the rest: irlib follows the spec.
    from onnx import helper
    from onnx.reference import ReferenceEvaluator
    values = np.array([[[[5, 6], [7, 8]]]], "float32")
    indices = np.array([[[[5, 7], [13, 15]]]], "int64")
    shape = np.array([1, 1, 5, 5], "int64")
    node = helper.make_node("MaxUnpool", ["x", "i", "s"], ["y"], kernel_shape=[2, 2],
                            strides=[2, 2])
    expected = ReferenceEvaluator(node).run(None, {"x": values, "i": indices, "s": shape})[0]
    got = run("onnx.max_unpool_dyn", values, indices, shape, kernel_shape=(2, 2),
              strides=(2, 2))[0]
    np.testing.assert_array_equal(got, expected)
    assert got[0, 0, 1, 1] == 5 and got[0, 0, 3, 3] == 8 and got[0, 0, 4].sum() == 0
    static = run("onnx.max_unpool", values, indices, kernel_shape=(2, 2), strides=(2, 2),
                 output_shape=(1, 1, 5, 5))[0]
    np.testing.assert_array_equal(static, expected)


def test_max_unpool_errors():
    with pytest.raises(OpImplError, match="indices must lie"):
        run("onnx.max_unpool", f32(1, 1, 1, 1), np.array([[[[4]]]]), kernel_shape=(2, 2))
    with pytest.raises(TypeInferenceError, match="indices"):
        relation("onnx.max_unpool", [TensorType((1, 1, 2, 2), "float32"),
                                     TensorType((1, 1, 2, 3), "int64")], kernel_shape=(2, 2))
    assert relation("onnx.max_unpool_dyn", [TensorType((1, 1, 2, 2), "float32"),
                                            TensorType((1, 1, 2, 2), "int64"),
                                            TensorType((4,), "int64")],
                    kernel_shape=(2, 2)) == TensorType((Any,) * 4, "float32")


# -- DeformConv ---------------------------------------------------------------------------------

def _plain_conv(data, weight, bias):
    """A direct (N, C, H, W) x (O, C, KH, KW) convolution, no padding or stride."""
    kh, kw = weight.shape[2:]
    oh, ow = data.shape[2] - kh + 1, data.shape[3] - kw + 1
    out = np.zeros((data.shape[0], weight.shape[0], oh, ow), "float64")
    for i in range(oh):
        for j in range(ow):
            patch = data[:, :, i:i + kh, j:j + kw]
            out[:, :, i, j] = np.einsum("nckl,ockl->no", patch, weight)
    return out + bias.reshape(1, -1, 1, 1)


def test_deform_conv_with_zero_offsets_is_a_plain_convolution():
    data, weight, bias = f32(2, 3, 5, 6), f32(4, 3, 2, 3), f32(4)
    offset = np.zeros((2, 2 * 6, 4, 4), "float32")
    got = run("onnx.deform_conv", data, weight, offset, bias, np.zeros(0, "float32"))[0]
    np.testing.assert_allclose(got, _plain_conv(data, weight, bias), rtol=1e-5, atol=1e-5)


def test_deform_conv_integer_offset_shifts_the_input():
    # a 1x1 kernel sampling one pixel down and right; out-of-image samples read zero
    data = np.arange(9, dtype="float32").reshape(1, 1, 3, 3)
    offset = np.ones((1, 2, 3, 3), "float32")
    got = run("onnx.deform_conv", data, np.ones((1, 1, 1, 1), "float32"), offset,
              np.zeros(0, "float32"), np.zeros(0, "float32"))[0]
    np.testing.assert_array_equal(got[0, 0], [[4, 5, 0], [7, 8, 0], [0, 0, 0]])


@pytest.mark.parametrize("with_mask,with_bias", [(True, True), (False, False)])
def test_deform_conv_matches_onnxruntime(with_mask, with_bias):
    data, weight = f32(2, 4, 6, 5), f32(6, 2, 3, 2)
    offset = f32(2, 2 * 2 * 3 * 2, 3, 3) * 1.5  # offset_group 2, kernel 3x2
    bias = f32(6) if with_bias else None
    mask = RNG.uniform(size=(2, 2 * 3 * 2, 3, 3)).astype("float32") if with_mask else None
    attrs = {"group": 2, "offset_group": 2, "strides": [1, 2], "pads": [1, 1, 0, 0],
             "dilations": [2, 1]}
    expected = run_node("DeformConv", [data, weight, offset, bias, mask], attrs, opset=19)[0]
    empty = np.zeros(0, "float32")
    got = run("onnx.deform_conv", data, weight, offset, empty if bias is None else bias,
              empty if mask is None else mask, group=2, offset_group=2, strides=(1, 2),
              pads=(1, 1, 0, 0), dilations=(2, 1))[0]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_deform_conv_relation():
    n = size_var("n")
    args = [tvar("x", (n, 4, 6, 5)), tvar("w", (6, 2, 3, 2)), tvar("o", (n, 24, 3, 3)),
            tvar("b", (0,)), tvar("m", (0,))]
    assert checked("onnx.deform_conv", args, group=2, offset_group=2, strides=(1, 2),
                   pads=(1, 1, 0, 0), dilations=(2, 1)) == TensorType((n, 6, 3, 3))
    with pytest.raises(TypeInferenceError, match="offset"):
        checked("onnx.deform_conv", args, group=2, offset_group=1, strides=(1, 2),
                pads=(1, 1, 0, 0), dilations=(2, 1))
    with pytest.raises(TypeInferenceError, match="channels"):
        checked("onnx.deform_conv", args, group=1, offset_group=2, strides=(1, 2),
                pads=(1, 1, 0, 0), dilations=(2, 1))


# -- RoiAlign -----------------------------------------------------------------------------------

ROI_CASES = [
    {"mode": "avg", "coordinate_transformation_mode": "half_pixel", "sampling_ratio": 2},
    {"mode": "avg", "coordinate_transformation_mode": "output_half_pixel",
     "spatial_scale": 0.5},
    {"mode": "max", "coordinate_transformation_mode": "half_pixel", "sampling_ratio": 0},
    {"mode": "max", "coordinate_transformation_mode": "output_half_pixel",
     "sampling_ratio": 3},
]


@pytest.mark.parametrize("attrs", ROI_CASES)
def test_roi_align_matches_onnxruntime(attrs):
    data = f32(2, 3, 8, 7)
    # corners in and out of the image, a degenerate box, a box beyond the far edge
    rois = np.array([[0.5, 1.0, 5.2, 6.3], [-2.0, -1.5, 3.0, 2.0], [3.0, 3.0, 3.0, 3.0],
                     [4.0, 5.0, 9.5, 10.0]], "float32")
    batch = np.array([0, 1, 1, 0], "int64")
    attrs = dict(attrs, output_height=3, output_width=2)
    # onnxruntime implements RoiAlign up to opset 16 (the semantics are unchanged since)
    expected = run_node("RoiAlign", [data, rois, batch], attrs, opset=16)[0]
    got = run("onnx.roi_align", data, rois, batch, **attrs)[0]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_roi_align_constant_image_averages_to_the_constant():
    data = np.full((1, 1, 6, 6), 2.5, "float32")
    rois = np.array([[1.0, 1.0, 4.0, 5.0]], "float32")
    got = run("onnx.roi_align", data, rois, np.zeros(1, "int64"), output_height=2,
              output_width=3, sampling_ratio=2)[0]
    np.testing.assert_allclose(got, np.full((1, 1, 2, 3), 2.5), rtol=1e-6)


def test_roi_align_relation_and_bad_batch_index():
    r = size_var("r")
    assert checked("onnx.roi_align", [tvar("x", (2, 3, 8, 8)), tvar("rois", (r, 4)),
                                      tvar("idx", (r,), "int64")],
                   output_height=4, output_width=5) == TensorType((r, 3, 4, 5))
    with pytest.raises(TypeInferenceError, match="rois"):
        checked("onnx.roi_align", [tvar("x", (2, 3, 8, 8)), tvar("rois", (3, 5)),
                                   tvar("idx", (3,), "int64")])
    with pytest.raises(OpImplError, match="batch index 2"):
        run("onnx.roi_align", f32(2, 1, 4, 4), np.zeros((1, 4), "float32"),
            np.array([2], "int64"))


# -- nn.conv3d_transpose ------------------------------------------------------------------------

@pytest.mark.parametrize("attrs", [
    {"strides": (2, 1, 2), "padding": (1, 0, 1, 0, 1, 1), "output_padding": (1, 0, 1)},
    {"dilation": (2, 1, 1), "groups": 2},
])
def test_conv3d_transpose_matches_onnxruntime(attrs):
    data, weight = f32(2, 4, 3, 2, 3), f32(4, 3, 2, 3, 2)
    onnx_attrs = {"strides": list(attrs.get("strides", (1, 1, 1))),
                  "pads": list(attrs.get("padding", (0,) * 6)),
                  "dilations": list(attrs.get("dilation", (1, 1, 1))),
                  "group": attrs.get("groups", 1),
                  "output_padding": list(attrs.get("output_padding", (0, 0, 0)))}
    expected = run_node("ConvTranspose", [data, weight], onnx_attrs)[0]
    call = irlib.nn.conv3d_transpose(tvar("x", data.shape), tvar("w", weight.shape), **attrs)
    assert irlib.infer_type(call).checked_type == TensorType(expected.shape)
    got = evaluate("nn.conv3d_transpose", [data, weight], call.attrs)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_conv3d_transpose_relation_symbolic_and_errors():
    n = size_var("n")
    call = irlib.nn.conv3d_transpose(tvar("x", (n, 4, 3, 3, 3)), tvar("w", (4, 2, 3, 3, 3)),
                                     strides=2)
    assert irlib.infer_type(call).checked_type == TensorType((n, 2, 7, 7, 7))
    with pytest.raises(TypeInferenceError, match="channels"):
        irlib.infer_type(irlib.nn.conv3d_transpose(tvar("x", (1, 3, 3, 3, 3)),
                                                   tvar("w", (4, 2, 3, 3, 3))))
    with pytest.raises(TypeInferenceError, match="5-D"):
        irlib.infer_type(irlib.nn.conv3d_transpose(tvar("x", (1, 4, 3, 3)),
                                                   tvar("w", (4, 2, 3, 3, 3))))


@pytest.mark.parametrize("shapes,attrs", [
    (((1, 2, 3, 2, 3), (2, 2, 2, 2, 2)),
     {"strides": 2, "padding": (1, 0, 1, 0, 1, 0), "output_padding": (1, 0, 1)}),
    (((2, 4, 2, 3, 2), (4, 1, 3, 2, 2)), {"strides": (1, 2, 1), "dilation": (2, 1, 1),
                                          "groups": 2}),
    (((1, 2, 2, 3, 3), (3, 2, 2, 2, 2)), {"padding": (2, 0, 0, 0, 0, 0), "strides": 3,
                                          "data_layout": "NDHWC"}),
])
def test_conv3d_transpose_gradient_matches_finite_differences(shapes, attrs):
    from op_test_helpers import check_gradient
    data, weight = (RNG.standard_normal(s) for s in shapes)
    check_gradient(irlib.nn.conv3d_transpose, [data, weight], rtol=1e-4, atol=1e-6, **attrs)


def test_pool_attribute_lengths_are_checked():
    with pytest.raises(TypeInferenceError, match="spatial axes"):
        relation("onnx.max_pool_with_indices", [TensorType((1, 1, 4, 4), "float32")],
                 kernel_shape=(2, 2), strides=(2,))
    with pytest.raises(TypeInferenceError, match="offset_group"):
        checked("onnx.deform_conv", [tvar("x", (1, 3, 4, 4)), tvar("w", (2, 3, 1, 1)),
                                     tvar("o", (1, 4, 4, 4)), tvar("b", (0,)),
                                     tvar("m", (0,))], offset_group=2)
