"""Windowed pools (both layouts, the ``into`` form) and the depthwise kernels vs numpy here."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irlib.testing.budget import examples

pytest.importorskip("numba")

import jitkernels  # noqa: E402
from jitkernels.cpu import depthwise  # noqa: E402

seeds = st.integers(0, 2 ** 16)


def numpy_pool(x, pool, strides, dilation, before, after, ceil_mode, is_max, include_pad):
    """Channels-first pooling by enumerating every window (the oracle)."""
    n = len(pool)
    spatial = x.shape[2:]
    out_size = [(spatial[i] + before[i] + after[i] - dilation[i] * (pool[i] - 1) - 1
                 + (strides[i] - 1 if ceil_mode else 0)) // strides[i] + 1 for i in range(n)]
    out = np.empty(x.shape[:2] + tuple(out_size), np.float64)
    for index in itertools.product(*[range(s) for s in out_size]):
        taps = [[index[i] * strides[i] - before[i] + a * dilation[i] for a in range(pool[i])]
                for i in range(n)]
        real = [[z for z in t if 0 <= z < spatial[i]] for i, t in enumerate(taps)]
        values = x[(slice(None), slice(None)) + np.ix_(*real)] if all(real) else None
        if is_max:
            result = (values.reshape(x.shape[:2] + (-1,)).max(axis=2) if values is not None
                      else np.full(x.shape[:2], -np.inf))
        else:
            low = [-before[i] if include_pad else 0 for i in range(n)]
            high = [spatial[i] + after[i] if include_pad else spatial[i] for i in range(n)]
            count = int(np.prod([sum(1 for z in t if low[i] <= z < high[i])
                                 for i, t in enumerate(taps)]))
            total = (values.reshape(x.shape[:2] + (-1,)).sum(axis=2) if values is not None
                     else np.zeros(x.shape[:2]))
            result = total / max(count, 1)
        out[(slice(None), slice(None)) + index] = result
    return out.astype(x.dtype)


@st.composite
def pool_cases(draw):
    n = draw(st.sampled_from([1, 2, 3]))
    pool = tuple(draw(st.integers(1, 4)) for _ in range(n))
    strides = tuple(draw(st.integers(1, 3)) for _ in range(n))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(n))
    before = tuple(draw(st.integers(0, (pool[i] - 1) // 2 + 1)) for i in range(n))
    after = tuple(draw(st.integers(0, (pool[i] - 1) // 2 + 1)) for i in range(n))
    spatial = tuple(draw(st.integers(dilation[i] * (pool[i] - 1) + 1, 9)) for i in range(n))
    rng = np.random.default_rng(draw(seeds))
    dtype = draw(st.sampled_from(["float32", "float64"]))
    x = rng.standard_normal((draw(st.integers(1, 2)), draw(st.integers(1, 5))) + spatial)
    return (x.astype(dtype), pool, strides, dilation, before, after, draw(st.booleans()),
            draw(st.booleans()))


@settings(max_examples=examples(40), deadline=None)
@given(pool_cases(), st.booleans())
def test_pools_match_numpy_windows(case, channels_last):
    x, pool, strides, dilation, before, after, ceil_mode, include_pad = case
    n = len(pool)
    layout = "NC" + "DHW"[3 - n:]
    data = x
    if channels_last:
        layout = "N" + layout[2:] + "C"
        data = np.ascontiguousarray(np.moveaxis(x, 1, -1))
    attrs = dict(pool_size=pool, strides=strides, dilation=dilation, padding=before + after,
                 ceil_mode=ceil_mode, layout=layout)
    for kind in ("max", "avg"):
        extra = dict(count_include_pad=include_pad) if kind == "avg" else {}
        expected = numpy_pool(x, pool, strides, dilation, before, after, ceil_mode,
                              kind == "max", include_pad)
        if channels_last:
            expected = np.moveaxis(expected, 1, -1)
        kernel = jitkernels.get_kernel(f"nn.{kind}_pool{n}d", "cpu")
        (got,) = kernel(data, **attrs, **extra)
        assert got.shape == expected.shape and got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
        into_out = np.full(expected.shape, np.nan, x.dtype)
        assert kernel.into(into_out, data, **attrs, **extra)
        np.testing.assert_allclose(into_out, expected, rtol=1e-5, atol=1e-5)


def test_pool_into_declines_what_it_cannot_write():
    kernel = jitkernels.get_kernel("nn.max_pool2d", "cpu")
    x = np.ones((1, 2, 4, 4), np.float32)
    assert not kernel.into(np.empty((1, 2, 2, 2), np.float32), x, pool_size=(2, 2))
    assert not kernel.into(np.empty((1, 2, 3, 3), np.float64), x, pool_size=(2, 2))
    assert not kernel.into(np.empty((1, 2, 3, 6), np.float32)[..., ::2], x, pool_size=(2, 2))
    assert not kernel.into(np.empty((1, 2, 4, 4), np.int32), x.astype(np.int32),
                           pool_size=(1, 1))
    out = np.empty((1, 2, 3, 3), np.float32)
    assert kernel.into(out, x, pool_size=(2, 2), strides=(1, 1))
    assert np.all(out == 1)


def test_pool_windows_follow_each_calls_attrs():
    """The kernels keep one prepared window per (shape, attrs): calls of one shape with other
    strides, padding, ceil mode or kind, and list-valued (unhashable) attrs, each get their
    own result."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 2, 7, 7)).astype(np.float32)
    nhwc = np.ascontiguousarray(np.moveaxis(x, 1, -1))
    cases = [((3, 3), (2, 2), (0, 0, 0, 0), False), ((3, 3), (1, 1), (1, 1, 1, 1), False),
             ((3, 3), (2, 2), (0, 0, 0, 0), True), ((2, 2), (2, 2), (0, 1, 0, 1), True)]
    for _ in range(2):
        for (pool, strides, padding, ceil), kind in itertools.product(cases, ("max", "avg")):
            kernel = jitkernels.get_kernel(f"nn.{kind}_pool2d", "cpu")
            expected = numpy_pool(x, pool, strides, (1, 1), padding[:2], padding[2:], ceil,
                                  kind == "max", False)
            (got,) = kernel(nhwc, pool_size=pool, strides=strides, padding=padding,
                            ceil_mode=ceil, layout="NHWC")
            np.testing.assert_allclose(got, np.moveaxis(expected, 1, -1), rtol=1e-5,
                                       atol=1e-6)
            (listed,) = kernel(x, pool_size=list(pool), strides=list(strides),
                               padding=list(padding), ceil_mode=ceil)
            np.testing.assert_allclose(listed, expected, rtol=1e-5, atol=1e-6)


def test_max_pool_never_picks_padding_or_nan():
    kernel = jitkernels.get_kernel("nn.max_pool2d", "cpu")
    x = np.full((1, 1, 3, 3), -5.0, np.float32)
    x[0, 0, 1, 1] = np.nan
    (got,) = kernel(x, pool_size=(3, 3), padding=(1, 1, 1, 1))
    assert np.all(got == -5.0)


def test_global_pool_into():
    kernel = jitkernels.get_kernel("nn.global_avg_pool2d", "cpu")
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 5)).astype(np.float32)
    out = np.empty((2, 3, 1, 1), np.float32)
    assert kernel.into(out, x)
    np.testing.assert_allclose(out, x.mean(axis=(2, 3), keepdims=True), rtol=1e-5)
    assert not kernel.into(np.empty((2, 3), np.float32), x)


@pytest.mark.parametrize("shape", [(1, 13, 13, 1000), (2, 7, 7, 40), (1, 3, 5, 17)])
def test_global_pools_channels_last(shape):
    """NHWC global pools (one row of channels per image) at batch 1 and 2, kernel and into,
    then the same shape read as NCHW: each call follows its own layout."""
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    for kind, oracle in (("avg", np.mean), ("max", np.max)):
        kernel = jitkernels.get_kernel(f"nn.global_{kind}_pool2d", "cpu")
        for layout, axes in (("NHWC", (1, 2)), ("NCHW", (2, 3)), ("NHWC", (1, 2))):
            expected = oracle(x.astype(np.float64), axis=axes, keepdims=True)
            (got,) = kernel(x, layout=layout)
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
            out = np.full(expected.shape, np.nan, np.float32)
            assert kernel.into(out, x, layout=layout)
            np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def numpy_depthwise(x, w, strides, dilation, before, out_hw):
    """NCHW depthwise conv, ``w (O, KH, KW)``, by summing shifted strided slices."""
    batch, channels, height, width = x.shape
    out_channels, kh, kw = w.shape
    oh, ow = out_hw
    need_h = (oh - 1) * strides[0] + (kh - 1) * dilation[0] + 1
    need_w = (ow - 1) * strides[1] + (kw - 1) * dilation[1] + 1
    padded = np.zeros((batch, channels, max(need_h, height + before[0]),
                       max(need_w, width + before[1])), np.float64)
    padded[:, :, before[0]:before[0] + height, before[1]:before[1] + width] = x
    source = np.repeat(padded, out_channels // channels, axis=1)
    out = np.zeros((batch, out_channels, oh, ow))
    for b in range(kh):
        for e in range(kw):
            window = source[:, :, b * dilation[0]:, e * dilation[1]:]
            out += (w[None, :, b, e, None, None]
                    * window[:, :, :(oh - 1) * strides[0] + 1:strides[0],
                             :(ow - 1) * strides[1] + 1:strides[1]])
    return out


@settings(max_examples=examples(40), deadline=None)
@given(seeds, st.integers(1, 2), st.integers(1, 4), st.integers(1, 2),
       st.tuples(st.integers(1, 4), st.integers(1, 4)), st.tuples(st.integers(1, 3),
                                                                  st.integers(1, 3)),
       st.tuples(st.integers(1, 2), st.integers(1, 2)), st.data())
def test_depthwise_nchw_matches_numpy(seed, batch, channels, multiplier, kernel, strides,
                                      dilation, data):
    rng = np.random.default_rng(seed)
    before = (data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2)))
    after = (data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2)))
    size = [data.draw(st.integers(dilation[i] * (kernel[i] - 1) + 1, 11)) for i in range(2)]
    x = rng.standard_normal((batch, channels, *size)).astype(np.float32)
    w = rng.standard_normal((channels * multiplier, *kernel)).astype(np.float32)
    out_hw = tuple((size[i] + before[i] + after[i] - dilation[i] * (kernel[i] - 1) - 1)
                   // strides[i] + 1 for i in range(2))
    out = np.full((batch, channels * multiplier) + out_hw, np.nan, np.float32)
    depthwise.depthwise_nchw(x, w, out, strides, dilation, before)
    expected = numpy_depthwise(x, w, strides, dilation, before, out_hw)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
    if multiplier == 1:
        nhwc = np.full((batch,) + out_hw + (channels,), np.nan, np.float32)
        depthwise.depthwise_nhwc(np.ascontiguousarray(x.transpose(0, 2, 3, 1)),
                                 np.ascontiguousarray(w.transpose(1, 2, 0)), nhwc, strides,
                                 dilation, before)
        np.testing.assert_allclose(nhwc, expected.transpose(0, 2, 3, 1), rtol=1e-4,
                                   atol=1e-4)


@pytest.mark.parametrize("channels,size,stride,kernel,dilation", [
    (200, 9, 1, 3, 1), (70, 12, 2, 3, 1), (3, 30, 2, 3, 1),   # small planes, many channels
    (4, 70, 1, 3, 1), (2, 66, 1, 5, 1), (2, 66, 1, 3, 2),     # large stride-1 planes
    (5, 50, 2, 3, 1), (3, 52, 2, 5, 1), (3, 60, 2, 3, 2),     # wide stride-2 rows
])
def test_depthwise_paths_by_shape(channels, size, stride, kernel, dilation):
    rng = np.random.default_rng(channels * size)
    x = rng.standard_normal((1, channels, size, size)).astype(np.float32)
    w = rng.standard_normal((channels, kernel, kernel)).astype(np.float32)
    pad = dilation * (kernel - 1) // 2
    oh = (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1
    out = np.full((1, channels, oh, oh), np.nan, np.float32)
    depthwise.depthwise_nchw(x, w, out, (stride, stride), (dilation, dilation), (pad, pad))
    expected = numpy_depthwise(x, w, (stride, stride), (dilation, dilation), (pad, pad),
                               (oh, oh))
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("layout,out_layout", [("NCHW", "NHWC"), ("NHWC", "NCHW"),
                                               ("NHWC", "NHWC"), ("NCHW", "")])
def test_pool_out_layouts(layout, out_layout):
    x = np.random.default_rng(4).standard_normal((2, 3, 7, 6)).astype(np.float32)
    expected = numpy_pool(x, (3, 2), (2, 1), (1, 1), (1, 0), (1, 1), False, True, False)
    data = x if layout == "NCHW" else np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    target = out_layout or layout
    if target == "NHWC":
        expected = expected.transpose(0, 2, 3, 1)
    kernel = jitkernels.get_kernel("nn.max_pool2d", "cpu")
    attrs = dict(pool_size=(3, 2), strides=(2, 1), padding=(1, 0, 1, 1), layout=layout,
                 out_layout=out_layout)
    (got,) = kernel(data, **attrs)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    out = np.empty(expected.shape, np.float32)
    assert kernel.into(out, data, **attrs)
    np.testing.assert_allclose(out, expected, rtol=1e-6)
