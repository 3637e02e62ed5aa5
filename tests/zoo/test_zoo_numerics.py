"""Numerical cross-checks of resnet18 and the LSTM against numpy forward passes written here.

The numpy convolution is the direct formula (a sum over kernel offsets of shifted input
windows contracted over channels), independent of irlib's reference implementation. Batch
norm parameters are randomised first so that every term of the formula matters.
"""

import numpy as np
import pytest

import zoo
from zoo_helpers import run_main

EPS = 2e-5


def conv2d(x, w, stride, pad):
    """NCHW x OIHW direct convolution."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, _, height, width = x.shape
    out_c, _, kh, kw = w.shape
    oh, ow = (height - kh) // stride + 1, (width - kw) // stride + 1
    out = np.zeros((n, out_c, oh, ow), dtype=np.float64)
    for dy in range(kh):
        for dx in range(kw):
            window = x[:, :, dy:dy + stride * oh:stride, dx:dx + stride * ow:stride]
            out += np.einsum("nchw,oc->nohw", window, w[:, :, dy, dx])
    return out


def max_pool(x, size, stride, pad):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=-np.inf)
    oh = (x.shape[2] - size) // stride + 1
    ow = (x.shape[3] - size) // stride + 1
    out = np.full(x.shape[:2] + (oh, ow), -np.inf)
    for dy in range(size):
        for dx in range(size):
            out = np.maximum(out, x[:, :, dy:dy + stride * oh:stride, dx:dx + stride * ow:stride])
    return out


def _randomise_batch_norms(params, rng):
    for name in params:
        shape = params[name].shape
        if name.endswith(("_gamma", "_moving_var")):
            params[name] = rng.uniform(0.5, 1.5, shape).astype("float32")
        elif name.endswith(("_beta", "_moving_mean", "_bias")):
            params[name] = rng.uniform(-0.2, 0.2, shape).astype("float32")
        else:
            params[name] = params[name].numpy()
    return params


def numpy_resnet18(x, p):
    def bn(v, name, scale=True):
        shape = (1, -1, 1, 1)
        out = (v - p[name + "_moving_mean"].reshape(shape)) / np.sqrt(
            p[name + "_moving_var"].reshape(shape) + EPS)
        if scale:
            out = out * p[name + "_gamma"].reshape(shape)
        return out + p[name + "_beta"].reshape(shape)

    relu = lambda v: np.maximum(v, 0)  # noqa: E731
    body = bn(x.astype(np.float64), "bn_data", scale=False)
    body = conv2d(body, p["conv0_weight"], 2, 3)
    body = max_pool(relu(bn(body, "bn0")), 3, 2, 1)
    for stage in range(1, 5):
        for unit in (1, 2):
            name = f"stage{stage}_unit{unit}"
            stride = 2 if stage > 1 and unit == 1 else 1
            act1 = relu(bn(body, name + "_bn1"))
            out = conv2d(act1, p[name + "_conv1_weight"], stride, 1)
            out = conv2d(relu(bn(out, name + "_bn2")), p[name + "_conv2_weight"], 1, 1)
            shortcut = conv2d(act1, p[name + "_sc_weight"], stride, 0) if unit == 1 else body
            body = out + shortcut
    pooled = relu(bn(body, "bn1")).mean(axis=(2, 3))
    logits = pooled @ p["fc1_weight"].T + p["fc1_bias"]
    exp = np.exp(logits - logits.max(axis=1, keepdims=True))
    return exp / exp.sum(axis=1, keepdims=True)


def test_resnet18_matches_a_numpy_forward_pass():
    # 40 px: the ImageNet stem (7x7/2 conv, bn0, 3x3/2 max pool) is taken
    mod, params = zoo.resnet.get_workload(batch_size=2, num_classes=10, image_shape=(3, 40, 40))
    rng = np.random.default_rng(0)
    p = _randomise_batch_norms(dict(params), rng)
    x = rng.standard_normal((2, 3, 40, 40)).astype("float32")
    got = run_main(mod, p, {"data": x})
    expected = numpy_resnet18(x, p)
    np.testing.assert_allclose(got, expected, rtol=2e-4, atol=2e-6)
    assert not np.allclose(expected[0], expected[1])  # the inputs matter


def test_resnet18_nhwc_agrees_with_nchw():
    mod, params = zoo.resnet.get_workload(num_classes=10, image_shape=(3, 32, 32))
    nhwc, nhwc_params = zoo.resnet.get_workload(num_classes=10, image_shape=(32, 32, 3),
                                                layout="NHWC")
    rng = np.random.default_rng(1)
    p = _randomise_batch_norms(dict(params), rng)
    q = {k: (v.transpose(2, 3, 1, 0) if v.ndim == 4 else v) for k, v in p.items()}  # OIHW->HWIO
    assert {k: v.shape for k, v in q.items()} == {k: v.shape for k, v in nhwc_params.items()}
    x = rng.standard_normal((1, 3, 32, 32)).astype("float32")
    np.testing.assert_allclose(run_main(nhwc, q, {"data": x.transpose(0, 2, 3, 1)}),
                               run_main(mod, p, {"data": x}), rtol=1e-4, atol=1e-6)


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


@pytest.mark.parametrize("iterations, hidden, batch", [(1, 3, 1), (4, 5, 2)])
def test_lstm_matches_a_numpy_forward_pass(iterations, hidden, batch):
    mod, params = zoo.lstm.get_workload(iterations, hidden, batch_size=batch)
    rng = np.random.default_rng(2)
    p = {k: (v.numpy() if k.endswith("weight") else
             rng.uniform(-0.5, 0.5, v.shape).astype("float32")) for k, v in params.items()}
    inputs = [rng.standard_normal((batch, hidden)).astype("float32") for _ in range(iterations)]
    # every step has its own parameter named data; they are bound in order
    assert [v.name_hint for v in mod["main"].params].count("data") == iterations
    h = np.zeros((batch, hidden))
    c = np.zeros((batch, hidden))
    for i, x in enumerate(inputs):
        gates = (x @ p[f"i2h_{i}_weight"].T + p[f"i2h_{i}_bias"]
                 + h @ p[f"h2h_{i}_weight"].T + p[f"h2h_{i}_bias"])
        in_gate, forget_gate, transform, out_gate = np.split(gates, 4, axis=1)
        c = _sigmoid(forget_gate) * c + _sigmoid(in_gate) * np.tanh(transform)
        h = _sigmoid(out_gate) * np.tanh(c)
    got = run_main(mod, p, {"data": inputs})
    np.testing.assert_allclose(got, h, rtol=1e-5, atol=1e-6)
