"""Convolution kernels vs the numpy reference: random shapes, both layouts, strides, padding,
dilation, groups and depthwise (hypothesis, small fixed budgets)."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from irlib.testing.budget import examples
from jit_helpers import check_kernel, randn


@st.composite
def conv_cases(draw, n):
    """(data, weight, attrs) of a random valid n-D convolution in channels-first form."""
    kind = draw(st.sampled_from(["plain", "grouped", "depthwise", "pointwise"]))
    groups = {"plain": 1, "pointwise": 1}.get(kind) or draw(st.integers(2, 3))
    per_group_in = 1 if kind == "depthwise" else draw(st.integers(1, 3))
    per_group_out = draw(st.integers(1, 2)) if kind == "depthwise" else draw(st.integers(1, 3))
    kernel = (1,) * n if kind == "pointwise" else tuple(draw(st.integers(1, 3))
                                                         for _ in range(n))
    strides = (1,) * n if kind == "pointwise" else tuple(draw(st.integers(1, 2))
                                                          for _ in range(n))
    dilation = (1,) * n if kind == "pointwise" else tuple(draw(st.integers(1, 2))
                                                           for _ in range(n))
    padding = (0,) * (2 * n) if kind == "pointwise" else tuple(draw(st.integers(0, 2))
                                                               for _ in range(2 * n))
    spatial = tuple(draw(st.integers(max(1, dilation[i] * (kernel[i] - 1) + 1
                                         - padding[i] - padding[n + i]), 7))
                    for i in range(n))
    batch = draw(st.integers(1, 2))
    seed = draw(st.integers(0, 2 ** 16))
    rng = np.random.default_rng(seed)
    data = randn(rng, batch, groups * per_group_in, *spatial)
    weight = randn(rng, groups * per_group_out, per_group_in, *kernel)
    attrs = dict(strides=strides, padding=padding, dilation=dilation, groups=groups)
    return data, weight, attrs


@settings(max_examples=examples(40), deadline=None)
@given(conv_cases(2), st.sampled_from(["NCHW", "NHWC"]))
def test_conv2d_matches_reference(case, layout):
    data, weight, attrs = case
    if layout == "NHWC":
        data = np.ascontiguousarray(data.transpose(0, 2, 3, 1))
        weight = np.ascontiguousarray(weight.transpose(2, 3, 1, 0))
        attrs.update(data_layout="NHWC", kernel_layout="HWIO")
    check_kernel("nn.conv2d", (data, weight), attrs)


@settings(max_examples=examples(15), deadline=None)
@given(conv_cases(1), st.sampled_from(["NCW", "NWC"]))
def test_conv1d_matches_reference(case, layout):
    data, weight, attrs = case
    if layout == "NWC":
        data = np.ascontiguousarray(data.transpose(0, 2, 1))
        weight = np.ascontiguousarray(weight.transpose(2, 1, 0))
        attrs.update(data_layout="NWC", kernel_layout="WIO")
    check_kernel("nn.conv1d", (data, weight), attrs)


@settings(max_examples=examples(15), deadline=None)
@given(conv_cases(3), st.sampled_from(["NCDHW", "NDHWC"]))
def test_conv3d_matches_reference(case, layout):
    data, weight, attrs = case
    if layout == "NDHWC":
        data = np.ascontiguousarray(data.transpose(0, 2, 3, 4, 1))
        weight = np.ascontiguousarray(weight.transpose(2, 3, 4, 1, 0))
        attrs.update(data_layout="NDHWC", kernel_layout="DHWIO")
    check_kernel("nn.conv3d", (data, weight), attrs)


@settings(max_examples=examples(25), deadline=None)
@given(st.data())
def test_conv2d_transpose_matches_reference(data):
    draw = data.draw
    groups = draw(st.integers(1, 2))
    kernel = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = tuple(draw(st.integers(0, 1)) for _ in range(4))
    extra = tuple(draw(st.integers(0, s - 1)) for s in strides)
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    x = randn(rng, draw(st.integers(1, 2)), groups * draw(st.integers(1, 2)),
              draw(st.integers(2, 5)), draw(st.integers(2, 5)))
    w = randn(rng, x.shape[1], draw(st.integers(1, 3)), *kernel)
    for i in range(2):
        assume((x.shape[2 + i] - 1) * strides[i] - padding[i] - padding[2 + i]
               + dilation[i] * (kernel[i] - 1) + 1 + extra[i] >= 1)
    attrs = dict(strides=strides, padding=padding, dilation=dilation, groups=groups,
                 output_padding=extra)
    if draw(st.booleans()):
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
        attrs["data_layout"] = "NHWC"
    check_kernel("nn.conv2d_transpose", (x, w), attrs)


def test_float64_and_out_dtype():
    rng = np.random.default_rng(1)
    x, w = randn(rng, 1, 4, 6, 6, dtype="float64"), randn(rng, 2, 4, 3, 3, dtype="float64")
    check_kernel("nn.conv2d", (x, w), dict(padding=(1, 1, 1, 1)), rtol=1e-10, atol=1e-10)
    out, = check_kernel("nn.conv2d", (x.astype("float32"), w.astype("float32")),
                        dict(out_dtype="float64"))
    assert out.dtype == np.float64


def test_integer_data_falls_back_to_the_reference():
    rng = np.random.default_rng(2)
    x = rng.integers(-5, 5, (1, 2, 5, 5)).astype("int32")
    w = rng.integers(-5, 5, (3, 2, 3, 3)).astype("int32")
    check_kernel("nn.conv2d", (x, w), dict(padding=(1, 1, 1, 1)), rtol=0, atol=0)


def test_other_layouts_and_out_layout():
    rng = np.random.default_rng(3)
    x = randn(rng, 1, 5, 6, 3)                      # NHWC
    w = randn(rng, 4, 3, 3, 3)                      # OIHW weight with NHWC data
    check_kernel("nn.conv2d", (x, w), dict(data_layout="NHWC", kernel_layout="OIHW",
                                           out_layout="NCHW", padding=(1, 0, 1, 2)))
    check_kernel("nn.conv2d", (x, np.ascontiguousarray(w.transpose(0, 2, 3, 1))),
                 dict(data_layout="NHWC", kernel_layout="OHWI", strides=(2, 1)))
