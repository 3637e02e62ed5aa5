"""The channels-last depthwise and pooling kernels built on 16-channel vector blocks
(jitkernels/cpu/depthwise_nhwc.py, pool_nhwc.py, simd.py) against numpy written here.

Shapes are drawn so that every code path runs: channels below, at and past a multiple of 16
(the scalar remainder), both depthwise strategies (rows, planes) forced, strides 1-3,
dilation, asymmetric and over-sized padding (windows wholly in the padding), ceil-mode
outputs reaching past the padded input, count_include_pad, fused epilogues (composable
chains and ones with a residual or an inner ReLU), one and two threads, float32/float64.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irlib.testing.budget import examples

pytest.importorskip("numba")

from numba import njit  # noqa: E402

from jitkernels.cpu import depthwise_nhwc, pool_nhwc, simd  # noqa: E402
from jitkernels.cpu.epilogue import ADD, MUL, RELU, RESIDUAL  # noqa: E402

seeds = st.integers(0, 2 ** 16)
channel_counts = st.sampled_from([1, 5, 15, 16, 17, 31, 32, 40, 48, 67])


def numpy_depthwise_nhwc(x, w, strides, dilation, top_left, out_hw):
    """``out[n, i, j, c] = sum_{b,e} w[b, e, c] * x[n, i*sh + b*dh - top, j*sw + e*dw -
    left, c]`` with zeros outside the image, in float64."""
    batch, height, width, channels = x.shape
    kh, kw = w.shape[:2]
    (sh, sw), (dh, dw), (top, left), (oh, ow) = strides, dilation, top_left, out_hw
    rows = max(height + top, (oh - 1) * sh + (kh - 1) * dh + 1)
    cols = max(width + left, (ow - 1) * sw + (kw - 1) * dw + 1)
    padded = np.zeros((batch, rows, cols, channels))
    padded[:, top:top + height, left:left + width] = x
    out = np.zeros((batch, oh, ow, channels))
    for b in range(kh):
        for e in range(kw):
            window = padded[:, b * dh:b * dh + (oh - 1) * sh + 1:sh,
                            e * dw:e * dw + (ow - 1) * sw + 1:sw]
            out += w[b, e].astype(np.float64) * window
    return out


def numpy_steps(value, kinds, vectors, residual):
    """The epilogue steps applied in order to ``value`` (float64)."""
    for kind, vector in zip(kinds, vectors):
        if kind == ADD:
            value = value + vector
        elif kind == MUL:
            value = value * vector
        elif kind == RESIDUAL:
            value = value + residual
        else:
            value = np.maximum(value, 0)
    return value


@st.composite
def depthwise_cases(draw):
    channels = draw(channel_counts)
    kernel = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    if draw(st.booleans()):
        kernel = (3, 3)                               # the vector fast path, more often
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    top_left = (draw(st.integers(0, 3)), draw(st.integers(0, 3)))
    after = (draw(st.integers(0, 3)), draw(st.integers(0, 3)))
    size = (draw(st.integers(1, 13)), draw(st.integers(1, 13)))
    out_hw = tuple((size[a] + top_left[a] + after[a] - dilation[a] * (kernel[a] - 1) - 1)
                   // strides[a] + 1 for a in range(2))
    if min(out_hw) < 1:
        size = tuple(max(size[a], dilation[a] * (kernel[a] - 1) + 1) for a in range(2))
        out_hw = tuple((size[a] + top_left[a] + after[a] - dilation[a] * (kernel[a] - 1)
                        - 1) // strides[a] + 1 for a in range(2))
    return (channels, kernel, strides, dilation, top_left, size, out_hw,
            draw(st.integers(1, 2)), draw(st.sampled_from(["float32", "float64"])))


@settings(max_examples=examples(60), deadline=None)
@given(depthwise_cases(), seeds, st.sampled_from([None, False, True]), st.integers(1, 2),
       st.lists(st.sampled_from([ADD, MUL, RELU, RESIDUAL]), max_size=4))
def test_depthwise_nhwc_matches_numpy(case, seed, planes, threads, kinds):
    channels, kernel, strides, dilation, top_left, size, out_hw, batch, dtype = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch,) + size + (channels,)).astype(dtype)
    w = rng.standard_normal(kernel + (channels,)).astype(dtype)
    out_shape = (batch,) + out_hw + (channels,)
    if kinds.count(RESIDUAL) > 1:
        kinds = [k for k in kinds if k != RESIDUAL] + [RESIDUAL]
    vectors = rng.standard_normal((len(kinds), channels)).astype(dtype)
    residual = rng.standard_normal(out_shape).astype(dtype)
    out = np.full(out_shape, np.nan, dtype)
    depthwise_nhwc.depthwise_nhwc_blocked(
        x, w, out, strides, dilation, top_left, np.array(kinds, np.int64),
        vectors if kinds else np.zeros((0, 1), dtype),
        residual if RESIDUAL in kinds else np.zeros((1, 1, 1, 1), dtype),
        threads=threads, planes=planes)
    expected = numpy_steps(numpy_depthwise_nhwc(x, w, strides, dilation, top_left, out_hw),
                           kinds, vectors, residual)
    tolerance = 2e-4 if dtype == "float32" else 1e-9
    np.testing.assert_allclose(out, expected, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("size,channels,stride", [
    (112, 32, 1), (112, 64, 2), (56, 128, 1), (28, 256, 2), (14, 512, 1), (7, 1024, 1)])
@pytest.mark.parametrize("planes", [False, True])
def test_depthwise_mobilenet_shapes(size, channels, stride, planes):
    """MobileNet's layers (3x3, padding 1, bias + ReLU composed into the epilogue) on both
    strategies and two threads."""
    rng = np.random.default_rng(size + channels)
    x = rng.standard_normal((1, size, size, channels)).astype(np.float32)
    w = rng.standard_normal((3, 3, channels)).astype(np.float32)
    bias = rng.standard_normal((1, channels)).astype(np.float32)
    out_hw = ((size - 1) // stride + 1,) * 2
    out = np.full((1,) + out_hw + (channels,), np.nan, np.float32)
    depthwise_nhwc.depthwise_nhwc_blocked(
        x, w, out, (stride, stride), (1, 1), (1, 1), np.array([ADD, RELU], np.int64),
        np.vstack([bias, np.zeros_like(bias)]), np.zeros((1, 1, 1, 1), np.float32),
        threads=2, planes=planes)
    expected = np.maximum(numpy_depthwise_nhwc(x, w, (stride,) * 2, (1, 1), (1, 1), out_hw)
                          + bias[0], 0)
    np.testing.assert_allclose(out, expected, rtol=2e-4, atol=2e-4)


def test_depthwise_padding_only_windows_take_the_epilogue_of_zero():
    """A window wholly in the padding sums to zero; the epilogue still applies."""
    x = np.ones((1, 2, 2, 16), np.float32)
    w = np.ones((3, 3, 16), np.float32)
    out = np.full((1, 3, 3, 16), np.nan, np.float32)
    shift = np.full((1, 16), -2.0, np.float32)
    depthwise_nhwc.depthwise_nhwc_blocked(x, w, out, (2, 2), (1, 1), (3, 3),
                                          np.array([ADD], np.int64), shift,
                                          np.zeros((1, 1, 1, 1), np.float32), threads=1)
    np.testing.assert_array_equal(out[0, 0, 0], -2.0)        # rows/cols -3..-1: all padding
    np.testing.assert_array_equal(out[0, 1, 1], 2.0)         # taps (-1..1)^2: 4 inside


def test_depthwise_strategy_rule():
    """Planes for stride-1 layers whose padded block plane is small, rows otherwise."""
    def geometry(size, channels, stride):
        out = (size - 1) // stride + 1
        return (size, size, channels, out, out, 3, 3, stride, stride, 1, 1, 1, 1)
    assert depthwise_nhwc.use_planes(geometry(7, 1024, 1), 4)
    assert depthwise_nhwc.use_planes(geometry(14, 512, 1), 4)
    assert not depthwise_nhwc.use_planes(geometry(112, 32, 1), 4)
    assert not depthwise_nhwc.use_planes(geometry(14, 512, 2), 4)
    assert not depthwise_nhwc.use_planes(geometry(7, 8, 1), 4)
    assert depthwise_nhwc.plane_shape(geometry(7, 1024, 1)) == (9, 9)


def numpy_pool_nhwc(x, pool, strides, dilation, before, after, out_size, is_max,
                    include_pad):
    """Channels-last pooling of ``(N, D, H, W, C)``: the max over the window's positions
    inside the image (a NaN never winning, -inf when none is inside), or their sum divided by
    the positions inside the image (inside the explicitly padded image with
    ``include_pad``)."""
    spatial = x.shape[1:4]
    reach = [(out_size[a] - 1) * strides[a] + (pool[a] - 1) * dilation[a] + 1
             for a in range(3)]
    extent = [max(before[a] + spatial[a], reach[a]) for a in range(3)]
    fill = -np.inf if is_max else 0.0
    padded = np.full((x.shape[0],) + tuple(extent) + (x.shape[4],), fill)
    inside = np.zeros(tuple(extent))
    padded[:, before[0]:before[0] + spatial[0], before[1]:before[1] + spatial[1],
           before[2]:before[2] + spatial[2]] = x
    if include_pad:
        inside[:before[0] + spatial[0] + after[0], :before[1] + spatial[1] + after[1],
               :before[2] + spatial[2] + after[2]] = 1
    else:
        inside[before[0]:before[0] + spatial[0], before[1]:before[1] + spatial[1],
               before[2]:before[2] + spatial[2]] = 1
    result = np.full((x.shape[0],) + tuple(out_size) + (x.shape[4],), fill)
    counts = np.zeros(tuple(out_size))
    for a in range(pool[0]):
        for b in range(pool[1]):
            for e in range(pool[2]):
                index = tuple(slice(t * dilation[k], t * dilation[k]
                                    + (out_size[k] - 1) * strides[k] + 1, strides[k])
                              for k, t in enumerate((a, b, e)))
                window = padded[(slice(None),) + index]
                if is_max:
                    result = np.fmax(result, window)
                else:
                    result = result + window
                    counts += inside[index]
    if not is_max:
        result = result / np.maximum(counts, 1)[None, ..., None]
    return result


@st.composite
def pool_cases(draw):
    three_d = draw(st.integers(0, 4)) == 0
    pool = (draw(st.integers(1, 2)) if three_d else 1,) + tuple(
        draw(st.sampled_from([2, 3, 3, 1, 4])) for _ in range(2))
    strides = (draw(st.integers(1, 2)),) + tuple(draw(st.integers(1, 3)) for _ in range(2))
    dilation = (1,) + tuple(draw(st.sampled_from([1, 1, 2])) for _ in range(2))
    before = tuple(draw(st.integers(0, (pool[a] - 1) // 2 + 1)) for a in range(3))
    after = tuple(draw(st.integers(0, (pool[a] - 1) // 2 + 1)) for a in range(3))
    spatial = tuple(draw(st.integers(dilation[a] * (pool[a] - 1) + 1, 12)) if a else
                    (draw(st.integers(pool[0], 3)) if three_d else 1) for a in range(3))
    ceil_mode = draw(st.booleans())
    out_size = tuple((spatial[a] + before[a] + after[a] - dilation[a] * (pool[a] - 1) - 1
                      + (strides[a] - 1 if ceil_mode else 0)) // strides[a] + 1
                     for a in range(3))
    return (pool, strides, dilation, before, after, spatial, out_size,
            draw(st.integers(1, 2)), draw(channel_counts),
            draw(st.sampled_from(["float32", "float64"])))


@settings(max_examples=examples(60), deadline=None)
@given(pool_cases(), seeds, st.booleans(), st.booleans(), st.integers(1, 2), st.booleans())
def test_pool_ndhwc_matches_numpy(case, seed, is_max, include_pad, threads, with_nan):
    pool, strides, dilation, before, after, spatial, out_size, batch, channels, dtype = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch,) + spatial + (channels,)).astype(dtype)
    if with_nan and is_max:
        x.reshape(-1)[rng.integers(0, x.size, size=3)] = np.nan
    out = np.full((batch,) + out_size + (channels,), 7.0, dtype)
    pool_nhwc.pool_ndhwc_blocked(x, out, pool, strides, dilation, before, after, is_max,
                                 include_pad, threads=threads)
    expected = numpy_pool_nhwc(x.astype(np.float64), pool, strides, dilation, before, after,
                               out_size, is_max, include_pad)
    tolerance = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(out, expected, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("size,channels,kernel,stride,pad,out_size,is_max,include", [
    (112, 64, 3, 2, 0, 55, True, False), (112, 64, 3, 2, 1, 56, True, False),
    (56, 128, 2, 2, 0, 28, False, False), (35, 256, 3, 1, 1, 35, False, True),
    (17, 768, 3, 2, 0, 8, True, False), (8, 1280, 3, 1, 1, 8, False, True),
    (7, 512, 7, 1, 0, 1, False, False), (27, 256, 3, 2, 0, 14, True, False)])
def test_pool_zoo_shapes(size, channels, kernel, stride, pad, out_size, is_max, include,
                         threads):
    """The zoo's pools (the last one in ceil mode) on one and two threads."""
    rng = np.random.default_rng(size * channels)
    x = rng.standard_normal((1, 1, size, size, channels)).astype(np.float32)
    out = np.full((1, 1, out_size, out_size, channels), np.nan, np.float32)
    after = max(0, (out_size - 1) * stride + kernel - size - pad)
    args = ((1, kernel, kernel), (1, stride, stride), (1, 1, 1), (0, pad, pad),
            (0, after, after))
    pool_nhwc.pool_ndhwc_blocked(x, out, *args, is_max, include, threads=threads)
    expected = numpy_pool_nhwc(x.astype(np.float64), *args, (1, out_size, out_size), is_max,
                               include)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


LANES = simd.LANES


@njit(cache=True)
def _window_runs(out, x, w, scale, shift, count, step, mask):
    """row_dot over taps 0, 1, 3 then row_sum over taps 0, 2 into interleaved blocks."""
    simd.row_dot(out, 0, 2 * LANES, x, (0, LANES, 3 * LANES), step, w,
                 (0, LANES, 2 * LANES), count, scale, shift, 0, 0.0, mask)
    simd.row_sum(out, LANES, 2 * LANES, x, (0, 2 * LANES), step, count, 0.5, mask)


@njit(cache=True)
def _update_runs(out, x, w, scale, shift, count, step):
    """row_max, row_fma, row_affine and the in-place updates, one after the other."""
    simd.row_max(out, 0, LANES, x, (0, LANES), step, count)
    simd.row_fma(out, 0, LANES, x, 0, step, w, LANES, count)
    simd.row_affine(out, 0, LANES, scale, shift, 0, -np.inf, count)
    simd.row_add_into(out, 0, LANES, w, 0, 0, count)
    simd.row_mul_into(out, 0, LANES, w, LANES, 0, count)
    simd.row_max_into(out, 0, LANES, x, LANES, step, count)


@settings(max_examples=examples(20), deadline=None)
@given(seeds, st.integers(1, 5), st.integers(1, 3), st.integers(0, 3))
def test_row_intrinsics_match_numpy(seed, count, step_blocks, mask_seed):
    """The run intrinsics themselves: a 3-tap row_dot with a partial mask, row_sum, row_max
    (NaN never wins), row_fma/row_affine and the in-place updates, on float32 and float64."""
    lanes = simd.LANES
    rng = np.random.default_rng(seed)
    step = step_blocks * lanes
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal(count * step + 4 * lanes).astype(dtype)
        x[rng.integers(0, x.size)] = np.nan
        w = rng.standard_normal(3 * lanes).astype(dtype)
        scale, shift = (rng.standard_normal(lanes).astype(dtype) for _ in range(2))
        mask = (0b111, 0b101, 0b010, 0b000)[mask_seed]
        out = np.full(2 * lanes * count, np.nan, dtype)
        _window_runs(out, x, w, scale, shift, count, step, mask)
        blocks = [x[p * step + k * lanes:][:lanes].astype(np.float64)
                  for p in range(count) for k in range(4)]
        for p in range(count):
            taps = [blocks[4 * p], blocks[4 * p + 1], blocks[4 * p + 3]]
            total = sum(w[t * lanes:(t + 1) * lanes] * taps[t] if (mask >> t) & 1
                        else np.zeros(lanes) for t in range(3))
            expected = np.maximum(total * scale + shift, 0)
            np.testing.assert_allclose(out[2 * lanes * p:][:lanes], expected, rtol=1e-5,
                                       atol=1e-5)
            pair = sum(taps2 if (mask >> t) & 1 else np.zeros(lanes)
                       for t, taps2 in enumerate([blocks[4 * p], blocks[4 * p + 2]]))
            np.testing.assert_allclose(out[2 * lanes * p + lanes:][:lanes], 0.5 * pair,
                                       rtol=1e-5, atol=1e-5)
        out2 = np.empty(lanes * count, dtype)
        _update_runs(out2, x, w, scale, shift, count, step)
        for p in range(count):
            a, b = blocks[4 * p], blocks[4 * p + 1]
            value = np.fmax(np.fmax(np.full(lanes, -np.inf), a), b)
            value = value + w[lanes:2 * lanes] * a
            value = value * scale + shift
            value = (value + w[:lanes]) * w[lanes:2 * lanes]
            value = np.where(b > value, b, value)
            np.testing.assert_allclose(out2[lanes * p:][:lanes], value, rtol=1e-5, atol=1e-5)


@njit(cache=True)
def _carried_and_plain(out, x, w, scale, shift, count, stride, dilation, width):
    """One 3x3 run of ``count`` output pixels along rows ``width`` blocks long, by
    row_dot3x3 into the first half of ``out`` and by row_dot into the second."""
    col = dilation * LANES
    taps = (0, col, 2 * col, width * LANES, width * LANES + col, width * LANES + 2 * col,
            2 * width * LANES, 2 * width * LANES + col, 2 * width * LANES + 2 * col)
    weights = (0, LANES, 2 * LANES, 3 * LANES, 4 * LANES, 5 * LANES, 6 * LANES, 7 * LANES,
               8 * LANES)
    half = out.size // 2
    depthwise_nhwc.row_dot3x3(out, 0, LANES, x, taps, stride * LANES, w, weights, count,
                              scale, shift, 0, 0.0, depthwise_nhwc.carried_columns(stride,
                                                                                   dilation))
    simd.row_dot(out, half, LANES, x, taps, stride * LANES, w, weights, count, scale, shift,
                 0, 0.0, 511)


@settings(max_examples=examples(20), deadline=None)
@given(seeds, st.integers(1, 9), st.sampled_from([(1, 1), (2, 2), (2, 1)]))
def test_row_dot3x3_carries_columns(seed, count, stride_dilation):
    """row_dot3x3 (columns kept in registers from pixel to pixel) gives row_dot's results
    (same tap order; LLVM may contract other products into fused multiply-adds, so to the
    last bit or so) and matches a float64 sum, for strides equal to and twice the
    dilation."""
    stride, dilation = stride_dilation
    rng = np.random.default_rng(seed)
    width = (count - 1) * stride + 2 * dilation + 1
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal(3 * width * LANES).astype(dtype)
        w = rng.standard_normal(9 * LANES).astype(dtype)
        scale, shift = (rng.standard_normal(LANES).astype(dtype) for _ in range(2))
        out = np.full(2 * count * LANES, np.nan, dtype)
        _carried_and_plain(out, x, w, scale, shift, count, stride, dilation, width)
        close = 1e-6 if dtype == np.float32 else 1e-14
        np.testing.assert_allclose(out[:count * LANES], out[count * LANES:], rtol=close,
                                   atol=close)
        grid = x.astype(np.float64).reshape(3, width, LANES)
        taps = w.astype(np.float64).reshape(3, 3, LANES)
        for p in range(count):
            window = grid[:, p * stride:p * stride + 2 * dilation + 1:dilation]
            expected = np.maximum((taps * window).sum(axis=(0, 1)) * scale + shift, 0)
            np.testing.assert_allclose(out[p * LANES:(p + 1) * LANES], expected, rtol=1e-5,
                                       atol=1e-5)


@njit(cache=True)
def _pixel_runs(out, x, count, step, blocks, factor, mask):
    """pixels_max over taps 0, 1, 3 then pixels_sum over taps 0, 2 into the two halves."""
    half = out.size // 2
    pool_nhwc.pixels_max(out, 0, blocks * LANES, x, (0, blocks * LANES, 3 * blocks * LANES),
                         step, count, blocks, 1.0, 0)
    pool_nhwc.pixels_sum(out, half, blocks * LANES, x, (0, 2 * blocks * LANES), step, count,
                         blocks, factor, mask)


@settings(max_examples=examples(20), deadline=None)
@given(seeds, st.integers(1, 5), st.integers(1, 3), st.integers(1, 3), st.integers(0, 3))
def test_pixel_intrinsics_match_numpy(seed, count, blocks, step_pixels, mask_seed):
    """pixels_max (NaN never wins) and pixels_sum (masked taps count as zeros) over runs of
    pixels of several channel blocks each, on float32 and float64."""
    rng = np.random.default_rng(seed)
    width = blocks * LANES
    step = step_pixels * width
    mask = (0b11, 0b01, 0b10, 0b00)[mask_seed]
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal(count * step + 4 * width).astype(dtype)
        x[rng.integers(0, x.size, size=2)] = np.nan
        out = np.full(2 * count * width, 7.0, dtype)
        _pixel_runs(out, x, count, step, blocks, 0.25, mask)
        wide = x.astype(np.float64)
        for p in range(count):
            taps = [wide[p * step + t * width:][:width] for t in range(4)]
            best = np.full(width, -np.inf)
            for tap in (taps[0], taps[1], taps[3]):
                best = np.fmax(best, tap)
            np.testing.assert_array_equal(out[p * width:][:width], best.astype(dtype))
            total = sum(tap if (mask >> t) & 1 else np.zeros(width)
                        for t, tap in enumerate((taps[0], taps[2])))
            np.testing.assert_allclose(out[count * width + p * width:][:width], 0.25 * total,
                                       rtol=1e-6, atol=1e-6)
