"""Every path of the CPU convolution (implicit per-tap GEMM, channels-first im2col, NHWC
im2col, NHWC with few channels through channels-first columns) and the strided BLAS GEMM,
each forced in turn and checked against a direct convolution written here in numpy
(hypothesis, small fixed budgets)."""

from __future__ import annotations

import contextlib
import os

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import jitkernels
from irlib.testing.budget import examples
from jitkernels.cpu import blas, conv_core, winograd
from jitkernels.cpu import direct_conv as direct_kernel

PATHS = ("taps", "im2col", "default")


@contextlib.contextmanager
def forced(path: str):
    """Make the kernels take ``path`` wherever it applies (tiny shapes included); Winograd
    (tests/jitkernels/test_winograd.py) and the direct kernel (test_direct_conv.py) are kept
    off so that the GEMM paths run."""
    switch = os.environ.get(direct_kernel.ENV_SWITCH)
    os.environ[direct_kernel.ENV_SWITCH] = "0"
    names = ("COPY_FLOPS", "COPY_FLOPS_NHWC", "MIN_TAP_FLOPS", "MIN_TAP_CHANNELS",
             "MIN_NHWC_RUN")
    saved = [getattr(conv_core, name) for name in names]
    saved_winograd = winograd.MIN_CHANNELS
    winograd.MIN_CHANNELS = 1 << 30
    if path != "default":       # default, few channels: NHWC through channels-first columns
        conv_core.COPY_FLOPS = conv_core.COPY_FLOPS_NHWC = 1e12 if path == "taps" else 0
        conv_core.MIN_TAP_FLOPS = 0
        conv_core.MIN_TAP_CHANNELS = conv_core.MIN_NHWC_RUN = 1
    try:
        yield
    finally:
        for name, value in zip(names, saved):
            setattr(conv_core, name, value)
        winograd.MIN_CHANNELS = saved_winograd
        if switch is None:
            os.environ.pop(direct_kernel.ENV_SWITCH, None)
        else:
            os.environ[direct_kernel.ENV_SWITCH] = switch


def direct_conv(x, w, strides, dilation, before, after, groups):
    """Channels-first n-D convolution by a sum over kernel taps of strided slices.

    Args:
        x: ``(N, C, *S)``; w: ``(O, C/groups, *K)``; the rest per spatial axis.
    """
    n = x.ndim - 2
    padded = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + list(zip(before, after)))
    kernel = w.shape[2:]
    out_size = [(padded.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // strides[i] + 1
                for i in range(n)]
    per_in, per_out = x.shape[1] // groups, w.shape[0] // groups
    out = np.zeros((x.shape[0], w.shape[0], *out_size))
    for tap in np.ndindex(*kernel):
        window = tuple(slice(tap[i] * dilation[i],
                             tap[i] * dilation[i] + strides[i] * (out_size[i] - 1) + 1,
                             strides[i]) for i in range(n))
        for g in range(groups):
            part = padded[(slice(None), slice(g * per_in, (g + 1) * per_in)) + window]
            weight = w[(slice(g * per_out, (g + 1) * per_out), slice(None)) + tap]
            out[:, g * per_out:(g + 1) * per_out] += np.einsum("oc,nc...->no...", weight, part)
    return out


@st.composite
def conv_geometry(draw, n, grouped=True):
    """(data, weight, strides, dilation, before, after, groups), channels-first."""
    groups = draw(st.integers(1, 3)) if grouped else 1
    per_in, per_out = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    kernel = tuple(draw(st.integers(1, 4)) for _ in range(n))
    unit = draw(st.booleans())                      # stride 1: the implicit GEMM's case
    strides = (1,) * n if unit else tuple(draw(st.integers(1, 3)) for _ in range(n))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(n))
    before = tuple(draw(st.integers(0, 2)) for _ in range(n))
    after = tuple(draw(st.integers(0, 2)) for _ in range(n))
    spatial = tuple(draw(st.integers(max(1, dilation[i] * (kernel[i] - 1) + 1 - before[i]
                                         - after[i]), 9)) for i in range(n))
    dtype = draw(st.sampled_from(["float32", "float64"]))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    x = rng.standard_normal((draw(st.integers(1, 2)), groups * per_in) + spatial).astype(dtype)
    w = rng.standard_normal((groups * per_out, per_in) + kernel).astype(dtype)
    return x, w, strides, dilation, before, after, groups


def run_conv(op_name, x, w, strides, dilation, before, after, groups, layout=None):
    """The CPU kernel's output in channels-first form."""
    attrs = dict(strides=strides, dilation=dilation, padding=before + after, groups=groups)
    if layout is not None:                          # channels-last data, *IO weight
        n = x.ndim - 2
        x = np.ascontiguousarray(np.moveaxis(x, 1, -1))
        w = np.ascontiguousarray(w.transpose(tuple(range(2, 2 + n)) + (1, 0)))
        attrs.update(data_layout=layout[0], kernel_layout=layout[1])
    out, = jitkernels.get_kernel(op_name)(x, w, **attrs)
    return out if layout is None else np.moveaxis(out, -1, 1)


def check(got, expected, dtype):
    tolerance = 1e-4 if dtype == np.float32 else 1e-10
    assert got.dtype == dtype and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=examples(15), deadline=None)
@given(case=conv_geometry(2))
def test_conv2d_nchw_paths(path, case):
    x, w, *geometry = case
    with forced(path):
        got = run_conv("nn.conv2d", x, w, *geometry)
    check(got, direct_conv(x, w, *geometry), x.dtype)


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=examples(15), deadline=None)
@given(case=conv_geometry(2, grouped=False))
def test_conv2d_nhwc_paths(path, case):
    x, w, *geometry = case
    with forced(path):
        got = run_conv("nn.conv2d", x, w, *geometry, layout=("NHWC", "HWIO"))
    check(got, direct_conv(x, w, *geometry), x.dtype)


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=examples(8), deadline=None)
@given(case=conv_geometry(1))
def test_conv1d_paths(path, case):
    x, w, *geometry = case
    with forced(path):
        got = run_conv("nn.conv1d", x, w, *geometry)
    check(got, direct_conv(x, w, *geometry), x.dtype)


@settings(max_examples=examples(15), deadline=None)
@given(conv_geometry(3))
def test_conv3d_im2col(case):
    x, w, *geometry = case
    check(run_conv("nn.conv3d", x, w, *geometry), direct_conv(x, w, *geometry), x.dtype)


@pytest.mark.parametrize("path", PATHS)
def test_conv3d_with_one_plane_padded_in_depth(path):
    """A single input plane padded in depth is not a 2-D convolution (OD = 1 + padding)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 3, 1, 5, 6)).astype(np.float64)
    w = rng.standard_normal((2, 3, 1, 2, 3)).astype(np.float64)
    geometry = ((1, 1, 1), (1, 1, 1), (1, 0, 1), (2, 1, 0), 1)
    with forced(path):
        got = run_conv("nn.conv3d", x, w, *geometry)
    check(got, direct_conv(x, w, *geometry), np.float64)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("layout", [None, ("NHWC", "HWIO")])
def test_resnet_like_shapes(path, layout):
    """Shapes where the default choice is the implicit GEMM (wide rows, 16+ channels)."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 32, 20, 20)).astype(np.float32)
    w = rng.standard_normal((24, 32, 3, 3)).astype(np.float32)
    for strides in ((1, 1), (2, 2)):
        geometry = (strides, (1, 1), (1, 1), (1, 1), 1)
        with forced(path):
            got = run_conv("nn.conv2d", x, w, *geometry, layout=layout)
        check(got, direct_conv(x, w, *geometry), np.float32)


@settings(max_examples=examples(20), deadline=None)
@given(st.data())
def test_pad_image(data):
    draw = data.draw
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    image = rng.standard_normal(tuple(draw(st.integers(1, 5)) for _ in range(3)))
    before = tuple(draw(st.integers(0, 2)) for _ in range(2))
    after = tuple(draw(st.integers(0, 2)) for _ in range(2))
    expected = np.pad(image, [(0, 0)] + list(zip(before, after)))
    np.testing.assert_array_equal(conv_core.pad_image(image, before, after), expected)


@settings(max_examples=examples(40), deadline=None)
@given(st.data())
def test_im2col_chw_matches_windows_of_the_padded_image(data):
    """Row ``(c, b, e)`` of the columns holds tap ``(b, e)``'s strided window of the
    zero-padded image (built here with np.pad and slicing); the buffer's old contents
    (NaN) never survive."""
    draw = data.draw
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    kernel = tuple(draw(st.integers(1, 4)) for _ in range(2))
    strides = tuple(draw(st.integers(1, 4)) for _ in range(2))
    dilation = tuple(draw(st.integers(1, 3)) for _ in range(2))
    before = tuple(draw(st.integers(0, 3)) for _ in range(2))
    after = tuple(draw(st.integers(0, 3)) for _ in range(2))
    reach = [dilation[i] * (kernel[i] - 1) + 1 for i in range(2)]
    size = tuple(draw(st.integers(max(1, reach[i] - before[i] - after[i]), 12))
                 for i in range(2))
    dtype = draw(st.sampled_from(["float32", "float64"]))
    image = rng.standard_normal((draw(st.integers(1, 3)),) + size).astype(dtype)
    out_size = tuple((size[i] + before[i] + after[i] - reach[i]) // strides[i] + 1
                     for i in range(2))
    padded = np.pad(image, [(0, 0)] + list(zip(before, after)))
    expected = np.stack([
        padded[c, b * dilation[0]::strides[0], e * dilation[1]::strides[1]]
        [:out_size[0], :out_size[1]].reshape(-1)
        for c in range(image.shape[0]) for b in range(kernel[0]) for e in range(kernel[1])])
    cols = np.full(expected.shape, np.nan, dtype)
    conv_core.im2col_chw(image, cols, kernel, strides, dilation, before, out_size)
    np.testing.assert_array_equal(cols, expected)


@contextlib.contextmanager
def without_cblas():
    saved = blas._CBLAS
    blas._CBLAS = {}
    try:
        yield
    finally:
        blas._CBLAS = saved


@settings(max_examples=examples(40), deadline=None)
@given(st.data())
def test_gemm_strided(data):
    draw = data.draw
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    dtype = draw(st.sampled_from(["float32", "float64"]))
    m, k, n = (draw(st.integers(1, 6)) for _ in range(3))

    def operand(rows, cols):
        """A (rows, cols) view: row-strided inside a bigger buffer, or transposed."""
        pad = draw(st.integers(0, 3))
        if draw(st.booleans()):
            return rng.standard_normal((cols, rows + pad)).astype(dtype)[:, :rows].T
        return rng.standard_normal((rows, cols + pad)).astype(dtype)[:, :cols]

    a, b = operand(m, k), operand(k, n)
    start = rng.standard_normal((m, n + draw(st.integers(0, 2)))).astype(dtype)
    accumulate = draw(st.booleans())
    expected = a.astype(np.float64) @ b + (start[:, :n] if accumulate else 0)
    with contextlib.ExitStack() as stack:
        if draw(st.booleans()):
            stack.enter_context(without_cblas())
        out = start.copy()
        blas.gemm_strided(a, b, out[:, :n], accumulate)
    tolerance = 1e-4 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(out[:, :n], expected, rtol=tolerance, atol=tolerance)
    np.testing.assert_array_equal(out[:, n:], start[:, n:])   # outside the view: untouched


def test_cblas_found_with_numpy_openblas():
    """numpy's wheels bundle OpenBLAS; the strided GEMM should have found its cblas."""
    config = np.show_config(mode="dicts") if hasattr(np, "show_config") else {}
    blas_name = str(config.get("Build Dependencies", {}).get("blas", {}).get("name", ""))
    if "openblas" not in blas_name:
        pytest.skip(f"numpy's BLAS is {blas_name or 'unknown'}")
    assert blas.HAVE_CBLAS


@settings(max_examples=examples(25), deadline=None)
@given(seed=st.integers(0, 2**16), n=st.sampled_from([1, 2, 3]),
       layout=st.sampled_from(["channels_first", "NHWC", "depthwise", "depthwise_nhwc"]),
       stride=st.integers(1, 2), pad=st.integers(0, 2), k=st.integers(1, 3),
       strided=st.booleans())
@example(seed=0, n=2, layout="channels_first", stride=2, pad=1, k=3, strided=True)
@example(seed=0, n=2, layout="NHWC", stride=1, pad=1, k=3, strided=True)
@example(seed=0, n=2, layout="depthwise", stride=2, pad=1, k=3, strided=True)
@example(seed=0, n=2, layout="depthwise_nhwc", stride=2, pad=1, k=3, strided=True)
def test_conv_into_writes_the_kernels_result_in_place(seed, n, layout, stride, pad, k,
                                                      strided):
    rng = np.random.default_rng(seed)
    if layout != "channels_first":
        n = 2
    depthwise = layout.startswith("depthwise")
    channels = 4 if depthwise else 3
    out_channels = 4 if depthwise else 5
    groups = 4 if depthwise else 1
    x = rng.standard_normal((2, channels) + (6,) * n).astype(np.float32)
    w = rng.standard_normal((out_channels, channels // groups) + (k,) * n).astype(np.float32)
    attrs = dict(strides=(stride,) * n, padding=(pad,) * (2 * n), dilation=(1,) * n,
                 groups=groups)
    want = direct_conv(x, w, (stride,) * n, (1,) * n, (pad,) * n, (pad,) * n, groups)
    op = {1: "nn.conv1d", 2: "nn.conv2d", 3: "nn.conv3d"}[n]
    kernel = jitkernels.get_kernel(op)
    if layout in ("NHWC", "depthwise_nhwc"):
        x, w = x.transpose(0, 2, 3, 1).copy(), w.transpose(2, 3, 1, 0).copy()
        attrs.update(data_layout="NHWC", kernel_layout="HWIO")
        want = want.transpose(0, 2, 3, 1)
    if strided:     # the same values as a negatively strided view
        x = np.flip(np.flip(x, -1).copy(), -1)
    out = np.full(want.shape, np.nan, np.float32)
    assert kernel.into(out, x, w, **attrs)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(out, kernel(x, w, **attrs)[0])


def test_conv_into_declines_what_only_the_kernel_handles():
    kernel = jitkernels.get_kernel("nn.conv2d")
    x = np.ones((1, 3, 5, 5), np.float32)
    w = np.ones((2, 3, 3, 3), np.float32)
    out = np.zeros((1, 2, 3, 3), np.float32)
    assert not kernel.into(np.zeros((1, 2, 4, 4), np.float32), x, w)         # wrong shape
    assert not kernel.into(out.astype(np.float64), x, w)                     # wrong dtype
    assert not kernel.into(out, x, w, out_dtype="float64")
    assert not kernel.into(np.zeros((1, 3, 3, 2), np.float32), x.transpose(0, 2, 3, 1), w,
                           data_layout="NHWC")                               # OIHW weight
    assert not kernel.into(out, x.astype(np.int32), w.astype(np.int32))
    assert (out == 0).all()
    assert kernel.into(out, x, w)
    np.testing.assert_array_equal(out, np.full((1, 2, 3, 3), 27, np.float32))


@pytest.mark.parametrize("kernel_layout", ["HWOI", "OIHW"])
@pytest.mark.parametrize("stride,pad", [(1, 1), (2, 0), (2, 1)])
def test_nhwc_depthwise_runs_channels_last(kernel_layout, stride, pad):
    rng = np.random.default_rng(stride * 10 + pad)
    x = rng.standard_normal((2, 6, 7, 5)).astype(np.float32)            # NHWC, 5 channels
    w = rng.standard_normal((5, 1, 3, 3)).astype(np.float32)            # OIHW
    want = direct_conv(x.transpose(0, 3, 1, 2), w, (stride,) * 2, (1, 1), (pad,) * 2,
                       (pad,) * 2, 5).transpose(0, 2, 3, 1)
    weight = w if kernel_layout == "OIHW" else np.ascontiguousarray(w.transpose(2, 3, 0, 1))
    out, = jitkernels.get_kernel("nn.conv2d")(
        x, weight, strides=(stride, stride), padding=(pad,) * 4, dilation=(1, 1), groups=5,
        data_layout="NHWC", kernel_layout=kernel_layout)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
