"""Non-generated node calls run inside graph chains (jitkernels.codegen.chain_steps): tiny
conv nets (direct-kernel conv2d/conv1d with their bias and ReLU, mean, softmax) give the
results of a numpy oracle written here (and kws those of onnxruntime) once chained, every
conv layer runs as a prepared direct-kernel call and the rest as chains, and the switch,
writable weights and big layers keep the node calls; wider layers run as prepared
implicit-GEMM calls (jitkernels.cpu.layer_calls) with the oracle's results."""

import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import irlib
from interp import graph_chains
from jitkernels.codegen import chain_steps
from jitkernels.codegen.chain import Literal, chain_source
from jitkernels.cpu import implicit_conv

from graph_helpers import graph_function


def _conv_ref(x, w, stride, pad):
    """NCHW x OIHW -> NCHW, zero padding ``pad`` on every side, float64."""
    x, w = x.astype("float64"), w.astype("float64")
    kh, kw = w.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    oh = (xp.shape[2] - kh) // stride[0] + 1
    ow = (xp.shape[3] - kw) // stride[1] + 1
    out = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for b in range(kh):
        for e in range(kw):
            patch = xp[:, :, b:b + stride[0] * oh:stride[0], e:e + stride[1] * ow:stride[1]]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, b, e])
    return out


def _softmax(v):
    e = np.exp(v - v.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _conv2d_net(channels, size, kernel, stride, rng):
    """conv2d + bias + relu twice, mean over the image, softmax: module, params, oracle."""
    c0, c1, c2 = channels
    x = irlib.var("x", shape=(1, c0) + size)
    w1, b1 = irlib.var("w1", shape=(c1, c0, kernel, kernel)), irlib.var("b1", shape=(c1,))
    w2, b2 = irlib.var("w2", shape=(c2, c1, 3, 3)), irlib.var("b2", shape=(c2,))
    pad = kernel // 2
    y = irlib.nn.relu(irlib.nn.bias_add(irlib.nn.conv2d(x, w1, strides=(stride, stride),
                                                        padding=(pad, pad)), b1))
    y = irlib.nn.relu(irlib.nn.bias_add(irlib.nn.conv2d(y, w2, padding=(1, 1)), b2))
    y = irlib.nn.softmax(irlib.mean(y, axis=[2, 3]))
    mod = irlib.IRModule.from_expr(irlib.Function([x, w1, b1, w2, b2], y))
    params = {"w1": rng.standard_normal((c1, c0, kernel, kernel)).astype("float32") * 0.3,
              "b1": rng.standard_normal(c1).astype("float32") * 0.1,
              "w2": rng.standard_normal((c2, c1, 3, 3)).astype("float32") * 0.3,
              "b2": rng.standard_normal(c2).astype("float32") * 0.1}

    def oracle(value):
        h = _conv_ref(value, params["w1"], (stride, stride), (pad, pad))
        h = np.maximum(h + params["b1"].reshape(1, -1, 1, 1), 0)
        h = _conv_ref(h, params["w2"], (1, 1), (1, 1))
        h = np.maximum(h + params["b2"].reshape(1, -1, 1, 1), 0)
        return _softmax(h.mean(axis=(2, 3)))
    return mod, params, oracle


def _runtime(func):
    return func.module.module.runtime


def _prepared_convs(runtime) -> int:
    """How many of the runtime's run-loop calls are prepared direct-kernel conv calls."""
    from jitkernels.cpu.direct_conv import _direct_serial
    return sum(1 for fn, _ in runtime._chained if fn is _direct_serial)


def _steps_calling(runtime, callee) -> int:
    """How many of the runtime's node calls become steps calling ``callee``."""
    count = 0
    for fn, args in runtime.calls:
        steps = chain_steps.steps_of(fn, args) or []
        count += sum(1 for step, _ in steps if step == callee)
    return count


def _direct_steps(runtime) -> int:
    """How many of the runtime's node calls become direct-kernel conv steps."""
    return _steps_calling(runtime, chain_steps._DIRECT)


@settings(max_examples=5, deadline=None)
@given(c0=st.integers(1, 3), c1=st.sampled_from([4, 5, 8]), c2=st.integers(3, 9),
       height=st.integers(3, 13), width=st.integers(3, 21), kernel=st.sampled_from([1, 3, 5]),
       stride=st.integers(1, 2))
def test_chained_conv_nets_match_numpy(c0, c1, c2, height, width, kernel, stride):
    rng = np.random.default_rng(c0 * 100 + c1 * 10 + c2)
    mod, params, oracle = _conv2d_net((c0, c1, c2), (height, width), kernel, stride, rng)
    func = graph_function(mod, params)
    runtime = _runtime(func)
    for run in range(3):
        value = rng.standard_normal((1, c0, height, width)).astype("float32")
        got = func(value).numpy()
        np.testing.assert_allclose(got, oracle(value), rtol=2e-4, atol=1e-6)
    # 3x3 and 5x5 layers (and strided 1x1 ones) run direct, inside the chain
    direct = _direct_steps(runtime)
    assert direct == (1 if kernel == 1 and stride == 1 else 2)
    assert _prepared_convs(runtime) == direct


@settings(max_examples=4, deadline=None)
@given(channels=st.integers(1, 40), out_channels=st.integers(1, 17), width=st.integers(3, 70),
       kernel=st.sampled_from([2, 3, 5]), stride=st.integers(1, 2))
def test_chained_conv1d_bias_relu_mean(channels, out_channels, width, kernel, stride):
    rng = np.random.default_rng(channels + 7 * width)
    if width < kernel:
        width = kernel
    x = irlib.var("x", shape=(1, channels, width))
    w, b = irlib.var("w", shape=(out_channels, channels, kernel)), \
        irlib.var("b", shape=(out_channels, 1))
    y = irlib.nn.relu(irlib.add(irlib.nn.conv1d(x, w, strides=(stride,), padding=(1,)), b))
    y = irlib.nn.log_softmax(irlib.mean(y, axis=[2]))
    mod = irlib.IRModule.from_expr(irlib.Function([x, w, b], y))
    params = {"w": rng.standard_normal((out_channels, channels, kernel)).astype("float32"),
              "b": rng.standard_normal((out_channels, 1)).astype("float32")}
    func = graph_function(mod, params)
    for _ in range(3):
        value = rng.standard_normal((1, channels, width)).astype("float32")
        h = _conv_ref(value[:, :, None, :], params["w"][:, :, None, :], (1, stride), (0, 1))
        h = np.maximum(h[:, :, 0, :] + params["b"], 0).mean(axis=2)
        expected = h - h.max(axis=-1, keepdims=True)
        expected -= np.log(np.exp(expected).sum(axis=-1, keepdims=True))
        np.testing.assert_allclose(func(value).numpy(), expected, rtol=2e-4, atol=2e-5)
    runtime = _runtime(func)
    assert _direct_steps(runtime) == 1 and _prepared_convs(runtime) == 1
    # the conv with its bias and ReLU, then the mean and the log-softmax: prepared calls
    assert len(runtime._chained) == 3


def test_writable_weights_follow_their_values_and_the_switch_keeps_calls(monkeypatch):
    rng = np.random.default_rng(3)
    mod, params, oracle = _conv2d_net((2, 8, 4), (9, 11), 3, 2, rng)
    func = graph_function(mod)                  # weights are inputs: writable arrays
    names = ["w1", "b1", "w2", "b2"]
    for run in range(3):
        values = {k: (v * (1 + run)).astype("float32") for k, v in params.items()}
        x = rng.standard_normal((1, 2, 9, 11)).astype("float32")
        got = func(x, *[values[k] for k in names]).numpy()
        params_now = dict(params)
        params.update(values)
        np.testing.assert_allclose(got, oracle(x), rtol=2e-4, atol=1e-6)
        params.clear()
        params.update(params_now)
    monkeypatch.setenv(chain_steps.ENV_SWITCH, "0")
    mod, params, oracle = _conv2d_net((1, 8, 8), (10, 10), 3, 1, rng)
    func = graph_function(mod, params)
    runtime = _runtime(func)
    x = rng.standard_normal((1, 1, 10, 10)).astype("float32")
    for _ in range(3):
        np.testing.assert_allclose(func(x).numpy(), oracle(x), rtol=2e-4, atol=1e-6)
    assert _direct_steps(runtime) == 0


def test_a_big_conv_layer_keeps_its_own_call():
    rng = np.random.default_rng(5)
    mod, params, oracle = _conv2d_net((16, 16, 16), (64, 64), 3, 1, rng)   # ~19 MFLOP layers
    func = graph_function(mod, params)
    x = rng.standard_normal((1, 16, 64, 64)).astype("float32")
    for _ in range(2):
        np.testing.assert_allclose(func(x).numpy(), oracle(x), rtol=2e-4, atol=1e-6)
    assert _direct_steps(_runtime(func)) == 0


def test_chain_source_imports_named_functions_and_writes_literals():
    source = chain_source(["abc", ("jitkernels.cpu.norm", "softmax_arb")],
                          [(0, 1), (1, 2, Literal(True))])
    assert "from jitkernels.cpu.norm import softmax_arb as k1\n" in source
    assert "    k0(t[0], t[1])\n    k1(t[1], t[2], True)\n" in source
    with pytest.raises(ValueError):
        chain_source([("os; import sys", "x")], [()])
    with pytest.raises(TypeError):
        Literal(1.5)


def test_reduce_serial_matches_numpy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 7, 5)).astype("float32")
    out = np.empty((3, 5), "float32")
    chain_steps.reduce_serial(x, out, 0)
    np.testing.assert_allclose(out, x.astype("float64").sum(axis=1), rtol=1e-5, atol=1e-6)
    chain_steps.reduce_serial(x, out, 1)
    np.testing.assert_allclose(out, x.astype("float64").mean(axis=1), rtol=1e-5, atol=1e-6)
    rows = np.empty((3, 1), "float32")               # the one-sum-a-row form
    for kind, reduce in ((0, np.sum), (1, np.mean)):
        chain_steps.reduce_serial(x[:, :, :1].copy(), rows, kind)
        np.testing.assert_allclose(rows[:, 0], reduce(x[:, :, 0].astype("float64"), axis=1),
                                   rtol=1e-5, atol=1e-6)


def test_kws_runs_prepared_and_matches_onnxruntime():
    pytest.importorskip("torch")
    onnxruntime = pytest.importorskip("onnxruntime")
    import onnx
    from irlib.frontend.onnx import from_onnx
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.join(root, "benchmarks"))
    try:
        import small_models
    finally:
        sys.path.pop(0)
    model = small_models.kws_model(0)
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    mod, params = from_onnx(model)
    func = graph_function(mod, params)
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.standard_normal((1, 1, 40, 100)).astype("float32")
        expected = session.run(None, {"features": x})[0]
        np.testing.assert_allclose(func(x).numpy(), expected, rtol=1e-4, atol=1e-6)
    runtime = _runtime(func)
    assert _direct_steps(runtime) == 3          # both conv2d and the conv1d
    assert _prepared_convs(runtime) == 3
    # three prepared convs (bias and ReLU applied by the kernel), then one chain of the
    # mean, the classifier and the softmax: four calls from Python per inference
    assert len(runtime._chained) == 4 and type(runtime._chained[-1][1][0]) is tuple
    assert graph_chains.enabled()


def test_tiny_layers_keep_channels_first(monkeypatch):
    from jitkernels.cpu import direct_conv
    keep = direct_conv.keeps_channels_first
    assert keep(1, 8, (3, 3), (1, 1), 40 * 100)             # kws' first layer
    assert keep(8, 8, (3, 3), (2, 2), 20 * 50)              # and its second
    assert not keep(8, 8, (1, 1), (1, 1), 20 * 50)          # a 1x1 layer: a plain GEMM
    assert not keep(8, 32, (3, 3), (1, 1), 20 * 50)         # too many output channels
    assert not keep(16, 16, (3, 3), (1, 1), 56 * 56)        # over TINY_LAYER_FLOPS
    assert not keep(8, 8, (3, 3), (1, 1), 100, groups=2)
    monkeypatch.setenv(direct_conv.LAYOUT_SWITCH, "0")
    assert not keep(1, 8, (3, 3), (1, 1), 40 * 100)


@settings(max_examples=25, deadline=None)
@given(channels=st.integers(1, 4), height=st.integers(1, 9), width=st.integers(1, 23),
       kernel=st.integers(1, 5), stride=st.integers(1, 3), top=st.integers(0, 3),
       left=st.integers(0, 3), channels_last=st.booleans(), batch=st.integers(1, 2))
def test_direct_conv_planes_match_a_numpy_arrangement(channels, height, width, kernel, stride,
                                                      top, left, channels_last, batch):
    """direct_conv.arrange (its unit-step and paired stride-2 copies included) against the
    planes built here: plane (n, c, py, px) row yq column t is padded pixel
    (yq*sh + py, t*sw + px), zero outside the image."""
    from jitkernels.cpu import direct_conv
    oh = (height + 2 * top - kernel) // stride + 1
    ow = (width + 2 * left - kernel) // stride + 1
    if oh < 1 or ow < 1:
        return
    rng = np.random.default_rng(height * 31 + width)
    image = rng.standard_normal((batch, channels, height, width)).astype("float32")
    x = image.transpose(0, 2, 3, 1).copy() if channels_last else image
    out_shape = (batch, oh, ow, 3) if channels_last else (batch, 3, oh, ow)
    geometry, layout, size, spare = direct_conv.plan(
        x.shape, out_shape, (kernel, kernel), (stride, stride), (1, 1), (top, left),
        channels_last)
    rows_q, length = int(geometry[15]), int(geometry[16])
    planes = np.full(size + spare, np.nan, "float32")
    direct_conv.arrange(x, planes, geometry, layout)
    big = np.zeros((batch, channels, rows_q * stride + stride + top + height,
                    length * stride + stride + left + width), "float32")
    big[:, :, top:top + height, left:left + width] = image
    expected = np.empty((batch, channels, stride, stride, rows_q, length), "float32")
    for py in range(stride):
        for px in range(stride):
            expected[:, :, py, px] = big[:, :, py:py + rows_q * stride:stride,
                                         px:px + length * stride:stride]
    np.testing.assert_array_equal(planes[:size].reshape(expected.shape), expected)
    assert not planes[size:].any()


@settings(max_examples=4, deadline=None)
@given(channels=st.integers(1, 8), size=st.integers(3, 12), one_d=st.booleans(),
       order=st.permutations(["scale", "bias", "residual", "relu"]))
def test_channels_first_epilogue_in_the_direct_kernel(channels, size, one_d, order):
    """A tiny channels-first conv followed by per-channel scale (a constant), bias (an
    input), residual and ReLU in any order: one prepared direct-kernel call, no second
    pass (chain_steps.match_channels_first), the numpy result."""
    rng = np.random.default_rng(channels * 13 + size)
    spatial = (size,) if one_d else (size, size)
    x = irlib.var("x", shape=(1, channels) + spatial)
    w = irlib.var("w", shape=(channels, channels) + (3,) * len(spatial))
    b = irlib.var("b", shape=(channels,) + (1,) * len(spatial))
    conv = irlib.nn.conv1d if one_d else irlib.nn.conv2d
    y = conv(x, w, padding=(1,) * len(spatial))
    scale = (rng.standard_normal(channels) + 1.5).astype("float32")
    for step in order:
        if step == "scale":
            y = irlib.multiply(y, irlib.const(scale.reshape((channels,) + (1,) * len(spatial))))
        elif step == "bias":
            y = irlib.add(y, b)
        elif step == "residual":
            y = irlib.add(y, x)
        else:
            y = irlib.nn.relu(y)
    mod = irlib.IRModule.from_expr(irlib.Function([x, w, b], y))
    params = {"w": rng.standard_normal((channels, channels) + (3,) * len(spatial))
              .astype("float32") * 0.5,
              "b": rng.standard_normal((channels,) + (1,) * len(spatial)).astype("float32")}
    func = graph_function(mod, params)
    for _ in range(3):
        value = rng.standard_normal((1, channels) + spatial).astype("float32")
        lead = (lambda a: a[:, :, None, :]) if one_d else (lambda a: a)
        h = _conv_ref(lead(value), lead(params["w"]), (1, 1), (0, 1) if one_d else (1, 1))
        h = h[:, :, 0, :] if one_d else h
        for step in order:
            if step == "scale":
                h = h * scale.reshape((channels,) + (1,) * len(spatial))
            elif step == "bias":
                h = h + params["b"]
            elif step == "residual":
                h = h + value
            else:
                h = np.maximum(h, 0)
        np.testing.assert_allclose(func(value).numpy(), h, rtol=2e-4, atol=2e-5)
    runtime = _runtime(func)
    # (the fusion pass may leave a step after a residual in a group of its own)
    from jitkernels.codegen import FusedKernel
    assert _prepared_convs(runtime) == 1
    assert not any(isinstance(fn, FusedKernel) for fn, _ in runtime._chained)
    if len(runtime.calls) == 1:
        assert len(runtime._chained) == 1


# -- implicit-GEMM layers as prepared calls (jitkernels.cpu.layer_calls) ------------------

def _implicit_steps(runtime) -> int:
    """How many of the runtime's node calls become prepared implicit-GEMM conv steps."""
    return _steps_calling(runtime, chain_steps._IMPLICIT)


def _residual_net(rng, channels, size):
    """NCHW conv 3x3 (+bias, relu), conv 1x1 (+bias) plus the first output, relu: wide
    enough for the implicit kernel; module, params, float64 oracle."""
    c0, c1 = channels
    x = irlib.var("x", shape=(1, c0) + size)
    w1, b1 = irlib.var("w1", shape=(c1, c0, 3, 3)), irlib.var("b1", shape=(c1,))
    w2, b2 = irlib.var("w2", shape=(c1, c1, 1, 1)), irlib.var("b2", shape=(c1,))
    h = irlib.nn.relu(irlib.nn.bias_add(irlib.nn.conv2d(x, w1, padding=(1, 1)), b1))
    y = irlib.nn.relu(irlib.add(irlib.nn.bias_add(irlib.nn.conv2d(h, w2), b2), h))
    mod = irlib.IRModule.from_expr(irlib.Function([x, w1, b1, w2, b2], y))
    params = {"w1": rng.standard_normal((c1, c0, 3, 3)).astype("float32") * 0.2,
              "b1": rng.standard_normal(c1).astype("float32") * 0.1,
              "w2": rng.standard_normal((c1, c1, 1, 1)).astype("float32") * 0.2,
              "b2": rng.standard_normal(c1).astype("float32") * 0.1}

    def oracle(value):
        h = np.maximum(_conv_ref(value, params["w1"], (1, 1), (1, 1))
                       + params["b1"].reshape(1, -1, 1, 1), 0)
        y = _conv_ref(h, params["w2"], (1, 1), (0, 0)) + params["b2"].reshape(1, -1, 1, 1)
        return np.maximum(y + h, 0)
    return mod, params, oracle


@pytest.mark.skipif(not implicit_conv.available(),
                    reason="the implicit-GEMM kernel needs AVX-512")
@pytest.mark.parametrize("threads", [1, 2])
def test_implicit_layers_run_as_prepared_calls(threads):
    """Layers the implicit kernel takes run as one prepared call each (their epilogue, a
    residual included), on one thread or shared, and give the numpy oracle's results run
    after run; the switch keeps the node calls."""
    import numba
    from jitkernels.cpu.layer_calls import run_layer
    rng = np.random.default_rng(11)
    mod, params, oracle = _residual_net(rng, (24, 48), (14, 13))
    func = graph_function(mod, params)
    runtime = _runtime(func)
    saved = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        for _ in range(3):
            value = rng.standard_normal((1, 24, 14, 13)).astype("float32")
            np.testing.assert_allclose(func(value).numpy(), oracle(value), rtol=2e-4,
                                       atol=2e-4)
    finally:
        numba.set_num_threads(saved)
    if runtime._chained is None or _implicit_steps(runtime) == 0:
        pytest.skip("the graph's layers took another kernel here (layout or cost rule)")
    assert sum(1 for fn, _ in runtime._chained if fn is run_layer) == _implicit_steps(runtime)


def _depthwise_net(rng, channels, size, stride):
    """NCHW depthwise 3x3 (+bias, relu), then a 1x1 conv (+bias): module, params, oracle."""
    x = irlib.var("x", shape=(1, channels) + size)
    wd, bd = irlib.var("wd", shape=(channels, 1, 3, 3)), irlib.var("bd", shape=(channels,))
    wp = irlib.var("wp", shape=(channels, channels, 1, 1))
    h = irlib.nn.relu(irlib.nn.bias_add(irlib.nn.conv2d(
        x, wd, strides=(stride, stride), padding=(1, 1), groups=channels), bd))
    y = irlib.nn.conv2d(h, wp)
    mod = irlib.IRModule.from_expr(irlib.Function([x, wd, bd, wp], y))
    params = {"wd": rng.standard_normal((channels, 1, 3, 3)).astype("float32") * 0.3,
              "bd": rng.standard_normal(channels).astype("float32") * 0.1,
              "wp": rng.standard_normal((channels, channels, 1, 1)).astype("float32") * 0.2}

    def oracle(value):
        h = np.concatenate([_conv_ref(value[:, c:c + 1], params["wd"][c:c + 1],
                                      (stride, stride), (1, 1))
                            for c in range(channels)], axis=1)
        h = np.maximum(h + params["bd"].reshape(1, -1, 1, 1), 0)
        return _conv_ref(h, params["wp"], (1, 1), (0, 0))
    return mod, params, oracle


@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_layers_run_as_prepared_calls(stride):
    """A depthwise layer with its bias and ReLU runs as one prepared call
    (jitkernels.cpu.layer_calls.run_depthwise) and gives the oracle's results run after
    run."""
    from jitkernels.cpu.layer_calls import run_depthwise
    rng = np.random.default_rng(5 + stride)
    mod, params, oracle = _depthwise_net(rng, 40, (17, 15), stride)
    func = graph_function(mod, params)
    runtime = _runtime(func)
    for _ in range(3):
        value = rng.standard_normal((1, 40, 17, 15)).astype("float32")
        np.testing.assert_allclose(func(value).numpy(), oracle(value), rtol=2e-4, atol=2e-4)
    prepared = sum(1 for fn, _ in runtime._chained or () if fn is run_depthwise)
    if prepared == 0:
        pytest.skip("the depthwise layer took another path here (layout rule)")
    assert prepared == 1
