"""Fused conv epilogues (jitkernels/cpu/epilogue.py, jitkernels/codegen/epilogue.py): the
``into_fused`` forms of the NHWC conv2d kernel (each path forced: per-tap GEMM, im2col,
few-channel columns, 1x1, Winograd on the fly) and of the Winograd op kernel, with random
chains of per-channel add/multiply, a residual add and ReLU, against the unfused kernel
followed by the same steps in numpy; and built graphs with the fusion on and off."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import interp
import irlib
import jitkernels
from irlib.op import get_def
from irlib.testing.budget import examples
from irlib.transform import PassContext
from jitkernels.cpu import conv_core, direct_conv, winograd
from jitkernels.cpu.epilogue import ADD, MUL, RELU, RESIDUAL, Epilogue
from helpers import apply_epilogue_steps

PATHS = ("taps", "im2col", "few_channels", "pointwise", "winograd", "winograd_op")


def force(path, monkeypatch):
    """Make the NHWC conv2d kernel take ``path`` (tiny shapes included; the direct kernel,
    tested in test_direct_conv.py, off)."""
    monkeypatch.setenv(direct_conv.ENV_SWITCH, "0")
    monkeypatch.setattr(winograd, "MIN_CHANNELS", 0 if path == "winograd" else 1 << 30)
    if path == "winograd":
        monkeypatch.setattr(winograd, "choose_tile", lambda *args, **kwargs: 2)
    monkeypatch.setattr(conv_core, "MIN_TAP_FLOPS", 0)
    monkeypatch.setattr(conv_core, "MIN_TAP_CHANNELS", 1)
    big = 1e12 if path == "taps" else 0
    monkeypatch.setattr(conv_core, "COPY_FLOPS_NHWC", big)
    monkeypatch.setattr(conv_core, "MIN_NHWC_RUN", 1 << 30 if path == "few_channels" else 1)


def apply_numpy(out, steps, vectors, residual):
    """The oracle: the epilogue's steps in numpy, in order, in float32."""
    return apply_epilogue_steps(out.astype(np.float32), steps, vectors, residual)


@st.composite
def case(draw):
    path = draw(st.sampled_from(PATHS))
    batch = draw(st.integers(1, 2))
    channels, out_channels = draw(st.integers(1, 40)), draw(st.integers(1, 40))
    size = (draw(st.integers(3, 11)), draw(st.integers(3, 11)))
    kernel = 1 if path == "pointwise" else 3
    padding = 0 if path == "pointwise" else draw(st.integers(0, 1))
    kinds = draw(st.lists(st.sampled_from([ADD, MUL, RESIDUAL, RELU]), min_size=1,
                          max_size=5))
    if kinds.count(RESIDUAL) > 1:
        first = kinds.index(RESIDUAL)
        kinds = [k for i, k in enumerate(kinds) if k != RESIDUAL or i == first]
    seed = draw(st.integers(0, 2 ** 16))
    return path, batch, channels, out_channels, size, kernel, padding, kinds, seed


@settings(max_examples=examples(30), deadline=None)
@given(case=case())
def test_into_fused_matches_unfused_kernel_then_numpy(case):
    path, batch, channels, out_channels, size, kernel, padding, kinds, seed = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch,) + size + (channels,)).astype(np.float32)
    w = rng.standard_normal((kernel, kernel, channels, out_channels)).astype(np.float32)
    out_size = tuple(s + 2 * padding - kernel + 1 for s in size)
    out_shape = (batch,) + out_size + (out_channels,)
    vectors = rng.standard_normal((len(kinds), out_channels)).astype(np.float32)
    residual = rng.standard_normal(out_shape).astype(np.float32)
    epilogue = Epilogue(np.array(kinds, np.int64), vectors,
                        residual if RESIDUAL in kinds else np.zeros((1, 1, 1, 1), np.float32))
    with pytest.MonkeyPatch.context() as monkeypatch:
        if path == "winograd_op":
            op = "nn.contrib_conv2d_winograd_without_weight_transform"
            weight = winograd.transform_weight(np.ascontiguousarray(w.transpose(3, 2, 0, 1)),
                                               4, channels_last=True)
            attrs = dict(get_def(op).make_attrs({"tile_size": 4, "padding": (padding,) * 4,
                                                 "data_layout": "NHWC",
                                                 "kernel_layout": "HWIO"}))
        else:
            force(path, monkeypatch)
            op, weight = "nn.conv2d", w
            attrs = dict(get_def(op).make_attrs({"padding": (padding,) * 4,
                                                 "data_layout": "NHWC",
                                                 "kernel_layout": "HWIO"}))
        kernel_fn = jitkernels.get_kernel(op, "cpu")
        plain = np.empty(out_shape, np.float32)
        assert kernel_fn.into(plain, x, weight, **attrs)
        fused = np.full(out_shape, np.nan, np.float32)
        assert kernel_fn.into_fused(fused, x, weight, epilogue=epilogue, **attrs)
    expected = apply_numpy(plain, kinds, vectors, residual)
    np.testing.assert_allclose(fused, expected, rtol=1e-5, atol=1e-5)


def test_into_fused_declines_channels_first():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 4, 6, 6)).astype(np.float32)
    w = rng.standard_normal((5, 4, 3, 3)).astype(np.float32)
    epilogue = Epilogue(np.array([RELU], np.int64), np.zeros((1, 5), np.float32),
                        np.zeros((1, 1, 1, 1), np.float32))
    out = np.zeros((1, 5, 4, 4), np.float32)
    kernel = jitkernels.get_kernel("nn.conv2d", "cpu")
    assert not kernel.into_fused(out, x, w, epilogue=epilogue,
                                 **dict(get_def("nn.conv2d").make_attrs({})))
    assert not out.any()


def block_module(channels, size, scale_shift=True):
    """relu(conv3x3(x) * s + b + x): a residual block with a folded batch norm."""
    x = irlib.var("x", shape=(1, channels, size, size))
    w = irlib.var("w", shape=(channels, channels, 3, 3))
    s = irlib.var("s", shape=(channels, 1, 1))
    b = irlib.var("b", shape=(channels, 1, 1))
    y = irlib.nn.conv2d(x, w, padding=(1, 1))
    if scale_shift:
        y = irlib.add(irlib.multiply(y, s), b)
    body = irlib.nn.relu(irlib.add(y, x))
    return irlib.IRModule.from_expr(irlib.Function([x, w, s, b], body))


@pytest.mark.parametrize("channels, size", [(8, 9), (64, 28)])     # GEMM path, Winograd
def test_built_groups_fused_vs_unfused(channels, size, monkeypatch):
    """The same block built with the fusion on and off gives the same output, and the
    fused build's conv group runs its epilogue in the kernel."""
    rng = np.random.default_rng(2)
    params = {"w": rng.standard_normal((channels, channels, 3, 3)).astype(np.float32) * 0.2,
              "s": rng.standard_normal((channels, 1, 1)).astype(np.float32),
              "b": rng.standard_normal((channels, 1, 1)).astype(np.float32)}
    x = rng.standard_normal((1, channels, size, size)).astype(np.float32)
    monkeypatch.setenv("IRLIB_TINY_CONV_NCHW", "0")     # the 8-channel layer goes NHWC too
    results = {}
    for setting in ("1", "0"):
        monkeypatch.setenv("IRLIB_FUSED_EPILOGUE", setting)
        with PassContext(opt_level=3):
            factory = interp.build(block_module(channels, size), "cpu", params=params)
        fused = [c.kernel.fused_epilogue for c in factory.lib.compiled.values()
                 if c.kernel is not None and c.kernel.fused_epilogue is not None]
        assert len(fused) == (1 if setting == "1" else 0)
        gmod = interp.graph_executor.GraphModule(factory["default"](interp.cpu(0)))
        gmod.set_input("x", x)
        gmod.run()
        results[setting] = gmod.get_output(0).numpy()
    np.testing.assert_allclose(results["1"], results["0"], rtol=1e-5, atol=1e-5)


@settings(max_examples=examples(15), deadline=None)
@given(data=st.data())
def test_depthwise_into_fused_matches_unfused(data):
    """The NHWC depthwise kernel (one output channel per input channel, HWOI weight) applies
    the epilogue row by row; same result as the unfused kernel plus numpy steps."""
    draw = data.draw
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    channels, stride = draw(st.integers(2, 40)), draw(st.integers(1, 2))
    size = (draw(st.integers(3, 12)), draw(st.integers(3, 12)))
    kinds = draw(st.lists(st.sampled_from([ADD, MUL, RELU]), min_size=1, max_size=4))
    if draw(st.booleans()):
        kinds.insert(draw(st.integers(0, len(kinds))), RESIDUAL)
    x = rng.standard_normal((draw(st.integers(1, 2)),) + size + (channels,)).astype(np.float32)
    w = rng.standard_normal((3, 3, channels, 1)).astype(np.float32)
    attrs = dict(get_def("nn.conv2d").make_attrs({
        "padding": (1, 1, 1, 1), "strides": (stride, stride), "groups": channels,
        "data_layout": "NHWC", "kernel_layout": "HWOI"}))
    out_shape = (x.shape[0],) + tuple((s - 1) // stride + 1 for s in size) + (channels,)
    vectors = rng.standard_normal((len(kinds), channels)).astype(np.float32)
    residual = rng.standard_normal(out_shape).astype(np.float32)
    epilogue = Epilogue(np.array(kinds, np.int64), vectors,
                        residual if RESIDUAL in kinds else np.zeros((1, 1, 1, 1), np.float32))
    kernel = jitkernels.get_kernel("nn.conv2d", "cpu")
    plain = np.empty(out_shape, np.float32)
    assert kernel.into(plain, x, w, **attrs)
    fused = np.full(out_shape, np.nan, np.float32)
    assert kernel.into_fused(fused, x, w, epilogue=epilogue, **attrs)
    np.testing.assert_allclose(fused, apply_numpy(plain, kinds, vectors, residual),
                               rtol=1e-5, atol=1e-5)
