"""Winograd F(2x2, 3x3) and F(4x4, 3x3): the numba kernels, the registered
``nn.contrib_conv2d_winograd_without_weight_transform`` kernel, the ops' numpy references
and the on-the-fly path of the ``nn.conv2d`` kernel, each against a direct convolution
written here in numpy (float64), on odd sizes and tile edges (H, W not multiples of the
tile), padding 0/1 per side, 1-70 channels, batch 1-2.

Tolerance: float32 Winograd loses one to two digits against a direct convolution, so
results are compared with an absolute error of 1e-3 of the output's largest magnitude
(and the measured errors are far below it: ~1e-6 for F(4x4) on these sizes).
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernels
from irlib.op import evaluate, get_def
from irlib.testing.budget import examples
from jitkernels.cpu import winograd

WINOGRAD_OP = "nn.contrib_conv2d_winograd_without_weight_transform"
TRANSFORM_OP = "nn.contrib_conv2d_winograd_weight_transform"


def direct_conv_nhwc(x, w_oihw, padding):
    """The oracle: ``out[n, i, j, o] = sum_{c, b, e} x_pad[n, i + b, j + e, c] w[o, c, b, e]``
    in float64 (stride 1, dilation 1)."""
    top, left, bottom, right = padding
    padded = np.pad(np.asarray(x, np.float64), ((0, 0), (top, bottom), (left, right), (0, 0)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(1, 2))
    return np.einsum("nijcbe,ocbe->nijo", windows, np.asarray(w_oihw, np.float64))


def assert_close_to_scale(got, expected, rel=1e-3):
    """``|got - expected| <= rel * max|expected|`` everywhere (Winograd's error grows with
    the output's magnitude, not per element)."""
    scale = max(float(np.abs(expected).max()), 1e-30)
    assert got.shape == expected.shape
    error = float(np.abs(np.asarray(got, np.float64) - expected).max())
    assert error <= rel * scale, f"max error {error:.3g} vs scale {scale:.3g}"


@st.composite
def conv_case(draw):
    """``(x NHWC float32, w OIHW float32, padding)`` with a non-empty output."""
    batch = draw(st.integers(1, 2))
    padding = tuple(draw(st.integers(0, 1)) for _ in range(4))
    height = draw(st.integers(max(1, 3 - padding[0] - padding[2]), 13))
    width = draw(st.integers(max(1, 3 - padding[1] - padding[3]), 13))
    channels = draw(st.integers(1, 70))
    out_channels = draw(st.integers(1, 70))
    seed = draw(st.integers(0, 2 ** 16))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, height, width, channels)).astype(np.float32)
    w = rng.standard_normal((out_channels, channels, 3, 3)).astype(np.float32)
    return x, w, padding


@settings(max_examples=examples(25), deadline=None)
@given(case=conv_case(), tile=st.sampled_from([2, 4]))
def test_kernel_matches_direct_convolution(case, tile):
    x, w, padding = case
    expected = direct_conv_nhwc(x, w, padding)
    u = winograd.transform_weight(w, tile, channels_last=True)
    out = np.full(expected.shape, np.nan, np.float32)
    winograd.conv2d_nhwc(x, u, out, tile, padding[0], padding[1])
    assert_close_to_scale(out, expected)


@settings(max_examples=examples(12), deadline=None)
@given(case=conv_case(), tile=st.sampled_from([2, 4]),
       layout=st.sampled_from(["NCHW", "NHWC"]), kernel_layout=st.sampled_from(["OIHW", "HWIO"]))
def test_registered_kernel_and_reference_match_direct_convolution(case, tile, layout,
                                                                  kernel_layout):
    """The op's kernel (and its ``into`` form) and the op's numpy reference, on the
    transformed weight the weight-transform op computes."""
    x, w, padding = case
    expected = direct_conv_nhwc(x, w, padding)
    u = evaluate(TRANSFORM_OP, (w,), get_def(TRANSFORM_OP).make_attrs({"tile_size": tile}))
    assert u.shape == (tile + 2, tile + 2) + w.shape[:2]
    if kernel_layout == "HWIO":
        u = np.ascontiguousarray(np.swapaxes(u, 2, 3))
    data = x if layout == "NHWC" else np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    attrs = get_def(WINOGRAD_OP).make_attrs({"tile_size": tile, "padding": padding,
                                             "data_layout": layout,
                                             "kernel_layout": kernel_layout})
    kernel = jitkernels.get_kernel(WINOGRAD_OP, "cpu")
    got, = kernel(data, u, **dict(attrs))
    reference = evaluate(WINOGRAD_OP, (data, u), attrs)
    into = np.full(got.shape, np.nan, np.float32)
    assert kernel.into(into, data, u, **dict(attrs))
    for value in (got, reference, into):
        if layout == "NCHW":
            value = value.transpose(0, 2, 3, 1)
        assert_close_to_scale(value, expected)
    assert got.dtype == reference.dtype == np.float32


def test_reference_is_exact_in_float64():
    """The op's reference in float64 equals the direct convolution to rounding (the
    transform matrices are exact interpolation formulas, not approximations)."""
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((1, 9, 10, 5)), rng.standard_normal((6, 5, 3, 3))
    for tile in (2, 4):
        u = evaluate(TRANSFORM_OP, (w,), get_def(TRANSFORM_OP).make_attrs({"tile_size": tile}))
        attrs = get_def(WINOGRAD_OP).make_attrs({"tile_size": tile, "padding": (1, 0, 1, 1),
                                                 "data_layout": "NHWC"})
        got = evaluate(WINOGRAD_OP, (x, u), attrs)
        np.testing.assert_allclose(got, direct_conv_nhwc(x, w, (1, 0, 1, 1)), atol=1e-10)


def test_conv2d_kernel_uses_winograd_on_the_fly_and_matches():
    """A layer the cost model gives to Winograd even with a per-call weight transform runs
    through the plain nn.conv2d kernel and still matches the direct convolution."""
    assert winograd.choose_tile(64, 64, 40, 40, 1, weight_transform=True) in (2, 4)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 40, 40, 64)).astype(np.float32)
    w = rng.standard_normal((64, 64, 3, 3)).astype(np.float32)
    attrs = get_def("nn.conv2d").make_attrs({"padding": (1, 1, 1, 1), "data_layout": "NHWC",
                                             "kernel_layout": "HWIO"})
    got, = jitkernels.get_kernel("nn.conv2d", "cpu")(
        x, np.ascontiguousarray(w.transpose(2, 3, 1, 0)), **dict(attrs))
    assert_close_to_scale(got, direct_conv_nhwc(x, w, (1, 1, 1, 1)))


def test_cost_rule_and_switch(monkeypatch):
    """Large images with many channels take F(4x4); a 7x7 map with 512 channels (whose
    16-element products would stream 4x the weight) and tiny channel counts keep the GEMM;
    IRLIB_WINOGRAD=0 turns Winograd off."""
    assert winograd.choose_tile(64, 64, 56, 56) == 4
    assert winograd.choose_tile(512, 512, 7, 7) == 0
    assert winograd.choose_tile(3, 64, 224, 224) == 0
    assert not winograd.eligible((3, 3), (2, 2), (1, 1), 1)
    assert not winograd.eligible((3, 3), (1, 1), (1, 1), 2)
    monkeypatch.setenv(winograd.ENV_SWITCH, "0")
    assert not winograd.enabled()
    assert winograd.choose_tile(64, 64, 56, 56) == 0


def test_few_channel_layers_go_to_the_implicit_kernel(monkeypatch):
    """Layers with channels * out_channels <= IMPLICIT_MAX_CHANNEL_PRODUCT (Inception's
    32-channel stem) or at most IMPLICIT_MAX_OUT_CHANNELS outputs (DenseNet) are left to the implicit-GEMM kernel where it runs, and taken by
    Winograd again when that kernel is switched off; larger products keep Winograd."""
    from jitkernels.cpu import implicit_conv
    if not implicit_conv.available():
        pytest.skip("the implicit-GEMM kernel needs AVX-512")
    assert winograd.choose_tile(32, 32, 147, 147) == 0
    assert winograd.choose_tile(32, 64, 147, 147) == 0
    assert winograd.choose_tile(32, 128, 27, 27) != 0
    assert winograd.choose_tile(128, 32, 56, 56) == 0          # 32 output channels
    monkeypatch.setenv(implicit_conv.ENV_SWITCH, "0")
    assert winograd.choose_tile(32, 32, 147, 147) != 0


@pytest.mark.parametrize("attrs, message", [
    ({"tile_size": 3}, "tile_size"),
    ({"tile_size": 4, "strides": (2, 2)}, "stride"),
    ({"tile_size": 2}, "(4, 4, ...)"),
])
def test_relation_rejects_what_winograd_cannot_compute(attrs, message):
    import irlib
    from irlib.errors import TypeInferenceError
    x = irlib.var("x", shape=(1, 4, 8, 8))
    u = irlib.var("u", shape=(6, 6, 5, 4))
    call = irlib.nn.contrib_conv2d_winograd_without_weight_transform(x, u, **attrs)
    with pytest.raises(TypeInferenceError, match=message.replace("(", r"\(").replace(
            ")", r"\)").replace(".", r"\.")):
        irlib.transform.InferType()(irlib.IRModule.from_expr(irlib.Function([x, u], call)))
