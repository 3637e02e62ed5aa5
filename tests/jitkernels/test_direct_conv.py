"""The direct convolution kernel (jitkernels/cpu/direct_conv.py): channels-last and
channels-first 2-D and 1-D convolutions against a convolution written here in numpy
(hypothesis over strides, asymmetric padding, dilation, 1-5 and 16+ channels, odd sizes,
both float dtypes), every fused epilogue kind against numpy steps, the serial and parallel
forms, the conv kernels' dispatch (cost rule, ``IRLIB_DIRECT_CONV`` switch) and a built
graph whose small conv groups run direct."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import interp
import irlib
import jitkernels
from irlib.op import get_def
from irlib.testing.budget import examples
from irlib.transform import PassContext
from jitkernels.cpu import direct_conv
from jitkernels.cpu.epilogue import ADD, MUL, RELU, RESIDUAL, Epilogue
from helpers import apply_epilogue_steps, numpy_conv_nhwc


def apply_steps(out, kinds, vectors, residual):
    """The epilogue's steps in numpy, in order (in ``out``'s dtype: float64 here)."""
    return apply_epilogue_steps(out, kinds, vectors, residual)


@st.composite
def geometry(draw):
    """(x shape NHWC, weight shape HWIO, strides, dilation, before, after, dtype, seed)."""
    channels = draw(st.one_of(st.integers(1, 5), st.integers(16, 20)))
    out_channels = draw(st.one_of(st.integers(1, 9), st.integers(14, 33)))
    kernel = (draw(st.integers(1, 7)), draw(st.integers(1, 7)))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    before = (draw(st.integers(0, 3)), draw(st.integers(0, 3)))
    after = (draw(st.integers(0, 3)), draw(st.integers(0, 3)))
    size = tuple(draw(st.integers(max(1, dilation[i] * (kernel[i] - 1) + 1 - before[i]
                                       - after[i]), 23)) for i in range(2))
    batch = draw(st.integers(1, 2))
    dtype = draw(st.sampled_from(["float32", "float64"]))
    return ((batch,) + size + (channels,), kernel + (channels, out_channels), strides,
            dilation, before, after, dtype, draw(st.integers(0, 2 ** 16)))


def _data(shape, wshape, dtype, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape).astype(dtype),
            rng.standard_normal(wshape).astype(dtype))


def _tolerance(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)


@settings(max_examples=examples(40), deadline=None)
@given(case=geometry(), threads=st.sampled_from([1, 2]))
def test_channels_last_matches_numpy(case, threads):
    """NHWC/HWIO, serial and parallel forms, against the numpy convolution."""
    shape, wshape, strides, dilation, before, after, dtype, seed = case
    x, w = _data(shape, wshape, dtype, seed)
    expected = numpy_conv_nhwc(x, w, strides, dilation, before, after)
    out = np.full(expected.shape, np.nan, dtype)
    with pytest.MonkeyPatch.context() as monkeypatch:
        if threads > 1:
            monkeypatch.setattr(direct_conv, "PARALLEL_MIN_FLOPS", 0)
        direct_conv.conv2d_direct(x, w, out, wshape[:2],
                                  strides, dilation, before, True, threads=threads)
    np.testing.assert_allclose(out, expected, **_tolerance(dtype))


@settings(max_examples=examples(25), deadline=None)
@given(case=geometry(), one_d=st.booleans())
def test_channels_first_kernels_match_numpy(case, one_d):
    """``nn.conv2d`` NCHW/OIHW and ``nn.conv1d`` NCW/OIW kernels with the direct path
    forced (cost rule: always), against the numpy convolution."""
    shape, wshape, strides, dilation, before, after, dtype, seed = case
    if one_d:                       # height 1, a 1-row kernel, no vertical padding
        shape, wshape = (shape[0], 1) + shape[2:], (1,) + wshape[1:]
        strides, dilation, before, after = ((1, strides[1]), (1, dilation[1]),
                                            (0, before[1]), (0, after[1]))
    x, w = _data(shape, wshape, dtype, seed)
    expected = numpy_conv_nhwc(x, w, strides, dilation, before, after).transpose(0, 3, 1, 2)
    x_first, w_first = np.ascontiguousarray(x.transpose(0, 3, 1, 2)), \
        np.ascontiguousarray(w.transpose(3, 2, 0, 1))
    if one_d:
        op, x_first, w_first, expected = ("nn.conv1d", x_first[:, :, 0], w_first[:, :, 0],
                                          expected[:, :, 0])
        attrs = {"strides": strides[1:], "dilation": dilation[1:],
                 "padding": (before[1], after[1])}
    else:
        op = "nn.conv2d"
        attrs = {"strides": strides, "dilation": dilation,
                 "padding": (before[0], before[1], after[0], after[1])}
    attrs = dict(get_def(op).make_attrs(attrs))
    kernel = jitkernels.get_kernel(op, "cpu")
    into = np.full(expected.shape, np.nan, dtype)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(direct_conv, "SMALL_OUT_CHANNELS", 1 << 30)
        got, = kernel(x_first, w_first, **attrs)
        assert kernel.into(into, x_first, w_first, **attrs)
    np.testing.assert_allclose(got, expected, **_tolerance(dtype))
    np.testing.assert_allclose(into, expected, **_tolerance(dtype))


@settings(max_examples=examples(30), deadline=None)
@given(case=geometry(), data=st.data())
def test_fused_epilogue_every_kind(case, data):
    """Random chains of per-channel add/multiply, one residual add and ReLU, applied by the
    kernel per pixel: the numpy convolution followed by the same steps in numpy."""
    shape, wshape, strides, dilation, before, after, dtype, seed = case
    x, w = _data(shape, wshape, dtype, seed)
    kinds = data.draw(st.lists(st.sampled_from([ADD, MUL, RELU]), min_size=0, max_size=4))
    if data.draw(st.booleans()):
        kinds.insert(data.draw(st.integers(0, len(kinds))), RESIDUAL)
    plain = numpy_conv_nhwc(x, w, strides, dilation, before, after)
    rng = np.random.default_rng(seed + 1)
    vectors = rng.standard_normal((max(1, len(kinds)), wshape[3])).astype(dtype)
    residual = rng.standard_normal(plain.shape).astype(dtype)
    epilogue = Epilogue(np.array(kinds, np.int64), vectors,
                        residual if RESIDUAL in kinds else np.zeros((1, 1, 1, 1), dtype))
    out = np.full(plain.shape, np.nan, dtype)
    direct_conv.conv2d_direct(x, w, out, wshape[:2],
                              strides, dilation, before, True, epilogue)
    expected = apply_steps(plain, kinds, vectors.astype(np.float64), residual)
    np.testing.assert_allclose(out, expected, **_tolerance(dtype))


def test_nhwc_kernel_dispatch_and_switch(monkeypatch):
    """The ``nn.conv2d`` kernel's NHWC path runs direct where the cost rule says so (kws'
    layers), not on a squeezenet-sized first layer nor a 1x1 convolution (a plain GEMM),
    and never with the switch off; the result is right either way (hand-checked case: a
    padded 3x3 kernel that is one at its centre copies the input)."""
    assert direct_conv.direct_pays(1, 8, (3, 3), 40 * 100)          # kws conv 1
    assert direct_conv.direct_pays(8, 8, (3, 3), 20 * 50)           # kws conv 2
    assert direct_conv.direct_pays(160, 16, (1, 3), 50)             # kws conv1d
    assert not direct_conv.direct_pays(3, 64, (3, 3), 111 * 111)    # squeezenet conv1
    assert direct_conv.direct_pays(16, 16, (3, 3), 56 * 56)
    assert direct_conv.direct_pays(8, 32, (3, 3), 28 * 28)
    assert not direct_conv.direct_pays(3, 32, (3, 3), 112 * 112)    # mobilenet conv1
    assert not direct_conv.direct_pays(64, 64, (3, 3), 56 * 56)
    assert not direct_conv.direct_pays(128, 32, (3, 3), 7 * 7)      # densenet121, block 4
    assert not direct_conv.direct_pays(4, 8, (3, 3), 100, groups=2)
    calls = []
    original = direct_conv.conv2d_direct
    monkeypatch.setattr(direct_conv, "conv2d_direct",
                        lambda *args, **kwargs: calls.append(1) or original(*args, **kwargs))
    x = np.arange(2 * 5 * 7, dtype=np.float32).reshape(2, 5, 7, 1)
    centre = np.zeros((3, 3, 1, 1), np.float32)
    centre[1, 1] = 1
    kernel = jitkernels.get_kernel("nn.conv2d", "cpu")
    padded = dict(get_def("nn.conv2d").make_attrs({"data_layout": "NHWC", "padding": 1,
                                                   "kernel_layout": "HWIO"}))
    plain = dict(get_def("nn.conv2d").make_attrs({"data_layout": "NHWC",
                                                  "kernel_layout": "HWIO"}))
    got, = kernel(x, centre, **padded)
    np.testing.assert_array_equal(got, x)
    assert calls == [1]
    got, = kernel(x, np.ones((1, 1, 1, 1), np.float32), **plain)     # 1x1: a GEMM
    np.testing.assert_array_equal(got, x)
    assert calls == [1]
    monkeypatch.setenv(direct_conv.ENV_SWITCH, "0")
    assert not direct_conv.direct_pays(1, 8, (3, 3), 40 * 100)
    got, = kernel(x, centre, **padded)
    np.testing.assert_array_equal(got, x)
    assert calls == [1]


def test_epilogue_needs_channels_last():
    x = np.ones((1, 2, 4, 4), np.float32)
    out = np.empty((1, 3, 2, 2), np.float32)
    epilogue = Epilogue(np.array([RELU], np.int64), np.zeros((1, 3), np.float32),
                        np.zeros((1, 1, 1, 1), np.float32))
    with pytest.raises(ValueError, match="channels-last"):
        direct_conv.conv2d_direct(x, np.ones((3, 2, 3, 3), np.float32), out, (3, 3), (1, 1),
                                  (1, 1), (0, 0), False, epilogue)


def test_built_small_conv_net_matches_numpy():
    """A kws-like net (conv 1->8 3x3 + bias + relu, conv 8->8 3x3/2 + bias + relu) built at
    opt_level 3 (NHWC, epilogues fused into the direct kernel) against numpy."""
    rng = np.random.default_rng(5)
    x = irlib.var("x", shape=(1, 1, 12, 17))
    w1, b1 = irlib.var("w1", shape=(8, 1, 3, 3)), irlib.var("b1", shape=(8,))
    w2, b2 = irlib.var("w2", shape=(8, 8, 3, 3)), irlib.var("b2", shape=(8,))
    y = irlib.nn.relu(irlib.nn.bias_add(irlib.nn.conv2d(x, w1, padding=(1, 1)), b1))
    y = irlib.nn.relu(irlib.nn.bias_add(irlib.nn.conv2d(y, w2, strides=(2, 2),
                                                        padding=(1, 1)), b2))
    mod = irlib.IRModule.from_expr(irlib.Function([x, w1, b1, w2, b2], y))
    params = {"w1": rng.standard_normal((8, 1, 3, 3)).astype(np.float32),
              "b1": rng.standard_normal(8).astype(np.float32),
              "w2": rng.standard_normal((8, 8, 3, 3)).astype(np.float32),
              "b2": rng.standard_normal(8).astype(np.float32)}
    data = rng.standard_normal((1, 1, 12, 17)).astype(np.float32)
    with PassContext(opt_level=3):
        factory = interp.build(mod, "cpu", params=params)
    gmod = interp.graph_executor.GraphModule(factory["default"](interp.cpu(0)))
    gmod.set_input("x", data)
    gmod.run()
    hidden = np.maximum(numpy_conv_nhwc(data.transpose(0, 2, 3, 1),
                                        params["w1"].transpose(2, 3, 1, 0), (1, 1), (1, 1),
                                        (1, 1), (1, 1)) + params["b1"], 0)
    expected = np.maximum(numpy_conv_nhwc(hidden, params["w2"].transpose(2, 3, 1, 0),
                                          (2, 2), (1, 1), (1, 1), (1, 1)) + params["b2"], 0)
    np.testing.assert_allclose(gmod.get_output(0).numpy(), expected.transpose(0, 3, 1, 2),
                               rtol=1e-4, atol=1e-4)


def test_packed_weight_cached_for_read_only_weights():
    """A read-only weight is packed once (the same array comes back, and convolving with
    it matches numpy); a writable one is not cached (None); the packed layout holds the
    HWIO rows, zero columns up to a multiple of four and a zero last row."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)        # OIHW, O=2 -> O4=4
    writable = w.copy()
    assert direct_conv.packed_weight(writable, True) is None
    w.flags.writeable = False
    first = direct_conv.packed_weight(w, True)
    assert direct_conv.packed_weight(w, True) is first
    assert first.shape == (3 * 5 * 6 + 1, 4)
    np.testing.assert_array_equal(first[:-1, :2], w.transpose(2, 3, 1, 0).reshape(-1, 2))
    assert not first[:, 2:].any() and not first[-1].any()
    x = rng.standard_normal((1, 3, 9, 11)).astype(np.float32)
    out = np.full((1, 2, 4, 8), np.nan, np.float32)
    direct_conv.conv2d_direct(x, w, out, (5, 6), (2, 1), (1, 1), (1, 1), False, wpack=first)
    expected = numpy_conv_nhwc(x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0), (2, 1),
                               (1, 1), (1, 1), (1, 1)).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
