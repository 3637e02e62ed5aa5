"""nn.conv1d / nn.conv3d / nn.conv1d_transpose relations over symbolic and ``Any`` lengths.

A symbolic input length gives a symbolic output length (a ``floordiv`` expression); binding
the size variable to a concrete size must give the number of windows a convolution written
here in numpy produces, and the op's reference on that size must produce that shape and
those values. ``Any`` in, ``Any`` out.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import irlib
from irlib import TensorType, size_var
from irlib.ir.dims import Any, DimExpr, substitute_dim
from irlib.op import registry
from irlib.testing.budget import examples

from op_test_helpers import type_of
from helpers import tvar


def np_conv1d(x, w, stride, dilation, before, after):
    """Direct 1-D convolution: one output per window that fits in the padded input."""
    padded = np.pad(x, ((0, 0), (0, 0), (before, after)))
    kernel = w.shape[2]
    outputs, position = [], 0
    while position * stride + dilation * (kernel - 1) < padded.shape[2]:
        taps = padded[:, :, position * stride + dilation * np.arange(kernel)]  # (N, C, K)
        outputs.append(np.einsum("nck,ock->no", taps, w))
        position += 1
    return np.stack(outputs, axis=-1)


def window_count(size, kernel, stride, dilation, before, after):
    """How many windows of the dilated kernel start at multiples of stride and fit."""
    return sum(1 for p in range(size + before + after)
               if p * stride + dilation * (kernel - 1) < size + before + after)


def np_conv1d_transpose(x, w, stride, dilation, before, after, extra):
    """Transposed 1-D convolution by scattering each input sample's kernel; IOW weight."""
    batch, _, width = x.shape
    out_channels, kernel = w.shape[1], w.shape[2]
    full = (width - 1) * stride + dilation * (kernel - 1) + 1
    y = np.zeros((batch, out_channels, full + extra), np.float64)
    for i in range(width):
        for t in range(kernel):
            y[:, :, i * stride + t * dilation] += np.einsum("nc,co->no", x[:, :, i], w[:, :, t])
    return y[:, :, before:full + extra - after]


def _evaluate(name, inputs, call):
    return registry.evaluate(name, inputs, call.attrs)


conv_params = st.fixed_dictionaries({
    "kernel": st.integers(1, 4), "stride": st.integers(1, 3), "dilation": st.integers(1, 2),
    "before": st.integers(0, 2), "after": st.integers(0, 2), "extra_size": st.integers(0, 9)})


@settings(max_examples=examples(40), deadline=None)
@given(conv_params)
def test_conv1d_symbolic_length_matches_numpy(p):
    n = size_var("n")
    k, s, d, b, a = p["kernel"], p["stride"], p["dilation"], p["before"], p["after"]
    call = irlib.nn.conv1d(tvar("x", (1, 2, n)), tvar("w", (3, 2, k)), strides=s, dilation=d,
                           padding=(b, a))
    out = type_of(call)
    assert out.shape[:2] == (1, 3) and isinstance(out.shape[2], DimExpr)
    size = max(d * (k - 1) + 1 - b - a, 1) + p["extra_size"]  # at least one window
    rng = np.random.default_rng(size)
    x = rng.standard_normal((1, 2, size)).astype("float32")
    w = rng.standard_normal((3, 2, k)).astype("float32")
    want = np_conv1d(x.astype(np.float64), w.astype(np.float64), s, d, b, a)
    assert substitute_dim(out.shape[2], {"n": size}) == want.shape[2] \
        == window_count(size, k, s, d, b, a)
    got = _evaluate("nn.conv1d", [x, w], call)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@settings(max_examples=examples(25), deadline=None)
@given(st.lists(conv_params, min_size=3, max_size=3))
def test_conv3d_symbolic_sizes_match_window_counts(axes):
    names = ("d", "h", "w")
    shape = (1, 2) + tuple(size_var(v) for v in names)
    kernel = tuple(p["kernel"] for p in axes)
    call = irlib.nn.conv3d(tvar("x", shape), tvar("k", (4, 2) + kernel),
                           strides=[p["stride"] for p in axes],
                           dilation=[p["dilation"] for p in axes],
                           padding=[p["before"] for p in axes] + [p["after"] for p in axes])
    out = type_of(call)
    sizes = {v: max(p["dilation"] * (p["kernel"] - 1) + 1 - p["before"] - p["after"], 1)
             + p["extra_size"] // 3 for v, p in zip(names, axes)}
    want = tuple(window_count(sizes[v], p["kernel"], p["stride"], p["dilation"], p["before"],
                              p["after"]) for v, p in zip(names, axes))
    assert tuple(substitute_dim(dim, sizes) for dim in out.shape[2:]) == want
    x = np.ones((1, 2) + tuple(sizes[v] for v in names), "float32")
    assert _evaluate("nn.conv3d", [x, np.ones((4, 2) + kernel, "float32")], call).shape == \
        (1, 4) + want


@settings(max_examples=examples(30), deadline=None)
@given(conv_params, st.integers(1, 6))
def test_conv1d_transpose_symbolic_length_matches_numpy(p, width):
    n = size_var("n")
    k, s, d = p["kernel"], p["stride"], p["dilation"]
    extra = p["extra_size"] % s  # output_padding must be smaller than the stride
    full = (width - 1) * s + d * (k - 1) + 1
    b, a = min(p["before"], full - 1), 0  # keep at least one output
    a = min(p["after"], full - 1 - b)
    call = irlib.nn.conv1d_transpose(tvar("x", (1, 2, n)), tvar("w", (2, 3, k)), strides=s,
                                     dilation=d, padding=(b, a), output_padding=extra)
    out = type_of(call)
    rng = np.random.default_rng(width)
    x = rng.standard_normal((1, 2, width)).astype("float32")
    w = rng.standard_normal((2, 3, k)).astype("float32")
    want = np_conv1d_transpose(x.astype(np.float64), w.astype(np.float64), s, d, b, a, extra)
    assert substitute_dim(out.shape[2], {"n": width}) == want.shape[2]
    got = _evaluate("nn.conv1d_transpose", [x, w], call)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_any_lengths_give_any():
    assert type_of(irlib.nn.conv1d(tvar("x", (1, 2, Any)), tvar("w", (3, 2, 5)), strides=2)) \
        == TensorType((1, 3, Any))
    assert type_of(irlib.nn.conv1d(tvar("x", (1, 2, 9)), tvar("w", (3, 2, Any)))) == \
        TensorType((1, 3, Any))
    assert type_of(irlib.nn.conv3d(tvar("x", (1, 2, Any, 6, Any)), tvar("w", (3, 2, 1, 3, 1)),
                                   padding=1)) == TensorType((1, 3, Any, 6, Any))
    assert type_of(irlib.nn.conv1d_transpose(tvar("x", (1, 2, Any)), tvar("w", (2, 3, 4)),
                                             strides=2)) == TensorType((1, 3, Any))
    assert type_of(irlib.nn.conv3d_transpose(tvar("x", (1, 2, Any, 4, 5)),
                                             tvar("w", (2, 3, 3, 3, 3)), strides=2)) == \
        TensorType((1, 3, Any, 9, 11))


def test_chain_of_strided_convs_stays_symbolic():
    """An STFT-like front end (kernel 256, stride 128) then two stride-2 convs, as in
    silero-vad's encoder: one symbolic length through the chain, whose value at a concrete
    size is the window count of each layer in turn."""
    n = size_var("n")
    x = tvar("x", (1, 1, n + 64))
    y = irlib.nn.conv1d(x, tvar("w0", (8, 1, 256)), strides=128)
    y = irlib.nn.conv1d(y, tvar("w1", (8, 8, 3)), strides=2, padding=1)
    y = irlib.nn.conv1d(y, tvar("w2", (8, 8, 3)), strides=2, padding=1)
    length = type_of(y).shape[2]
    for size in (256, 512, 1024, 1536):
        want = window_count(size + 64, 256, 128, 1, 0, 0)
        want = window_count(want, 3, 2, 1, 1, 1)
        want = window_count(want, 3, 2, 1, 1, 1)
        assert substitute_dim(length, {"n": size}) == want
