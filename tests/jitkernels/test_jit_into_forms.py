"""The destination-passing ``into`` forms of the GEMM and reduction kernels, and the
``variance`` kernel, against numpy written here and the op's reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitkernels
from jit_helpers import check_kernel, randn

seeds = st.integers(0, 2 ** 16)
dims = st.integers(1, 6)


def _kernel(name):
    kernel = jitkernels.get_kernel(name, "cpu")
    assert kernel is not None and hasattr(kernel, "into")
    return kernel


@settings(max_examples=20, deadline=None)
@given(seeds, st.integers(1, 3), dims, dims, dims, st.booleans(), st.booleans())
def test_gemm_into_matches_numpy(seed, batch, m, k, n, trans_a, trans_b):
    rng = np.random.default_rng(seed)
    x, w = randn(rng, batch, m, k), randn(rng, n, k)
    out = np.full((batch, m, n), np.nan, np.float32)
    assert _kernel("nn.dense").into(out, x, w)
    np.testing.assert_allclose(out, x @ w.T, rtol=1e-5, atol=1e-5)
    a = randn(rng, k, m) if trans_a else randn(rng, m, k)
    b = randn(rng, n, k) if trans_b else randn(rng, k, n)
    out = np.full((m, n), np.nan, np.float32)
    assert _kernel("nn.matmul").into(out, a, b, transpose_a=trans_a, transpose_b=trans_b)
    np.testing.assert_allclose(out, (a.T if trans_a else a) @ (b.T if trans_b else b),
                               rtol=1e-5, atol=1e-5)
    a3 = np.stack([a] * batch)
    b3 = np.stack([b] * (1 if seed % 2 else batch))
    out = np.full((batch, m, n), np.nan, np.float32)
    assert _kernel("nn.batch_matmul").into(out, a3, b3, transpose_a=trans_a,
                                           transpose_b=trans_b)
    want = (np.swapaxes(a3, 1, 2) if trans_a else a3) @ (np.swapaxes(b3, 1, 2) if trans_b
                                                          else b3)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_gemm_into_declines_what_it_cannot_write():
    x, w = np.ones((2, 3), np.float32), np.ones((4, 3), np.float32)
    dense = _kernel("nn.dense")
    assert not dense.into(np.empty((2, 4), np.float64), x, w)              # dtype
    assert not dense.into(np.empty((2, 5), np.float32), x, w)              # shape
    assert not dense.into(np.empty((4, 2), np.float32).T, x, w)            # layout
    assert not dense.into(np.empty((2, 4), np.float64), x, w, out_dtype="float64")
    assert not dense.into(np.empty((2, 4), np.int32), x.astype(np.int32), w.astype(np.int32))
    batch = _kernel("nn.batch_matmul")
    assert not batch.into(np.empty((2, 2, 2), np.float32), np.ones((2, 2, 3), np.float32),
                          np.ones((3, 2, 3), np.float32))                 # batches 2 vs 3


@settings(max_examples=25, deadline=None)
@given(seeds, st.lists(st.integers(1, 5), min_size=1, max_size=4), st.data())
def test_reduction_into_matches_the_kernel(seed, shape, data):
    x = randn(np.random.default_rng(seed), *shape)
    axis = data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=1,
                              max_size=len(shape), unique=True))
    keepdims = data.draw(st.booleans())
    for op, fn in (("sum", np.sum), ("mean", np.mean), ("prod", np.prod)):
        want = fn(x.astype(np.float64), axis=tuple(axis), keepdims=keepdims).astype(x.dtype)
        out = np.full(np.shape(want), np.nan, x.dtype)
        assert _kernel(op).into(out, x, axis=axis, keepdims=keepdims)
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)


def test_large_and_small_rows_reduce_alike():
    rng = np.random.default_rng(3)
    for shape in ((1, 768), (4, 1 << 15)):          # serial and parallel paths
        x = randn(rng, *shape)
        out = np.empty((shape[0], 1), np.float32)
        assert _kernel("mean").into(out, x, axis=[1], keepdims=True)
        np.testing.assert_allclose(out, x.mean(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


@settings(max_examples=25, deadline=None)
@given(seeds, st.lists(st.integers(1, 5), min_size=1, max_size=4), st.data())
def test_variance_kernel_against_the_reference(seed, shape, data):
    rng = np.random.default_rng(seed)
    x = randn(rng, *shape) * 2 + 1
    start = data.draw(st.integers(0, len(shape) - 1))
    axes = tuple(range(start, len(shape)))
    if data.draw(st.booleans()):                                # scattered axes: reference
        axes = tuple(sorted(set(data.draw(st.lists(st.integers(0, len(shape) - 1),
                                                   min_size=1, unique=True)))))
    keepdims = data.draw(st.booleans())
    unbiased = data.draw(st.booleans())
    if unbiased and int(np.prod([shape[a] for a in axes])) < 2:
        unbiased = False
    mean = x.mean(axis=axes, keepdims=True)
    attrs = dict(axis=list(axes), keepdims=keepdims, unbiased=unbiased)
    got, = check_kernel("variance", (x, mean), attrs, rtol=1e-4, atol=1e-5)
    want = x.astype(np.float64).var(axis=axes, keepdims=keepdims, ddof=int(unbiased))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    out = np.full(want.shape, np.nan, np.float32)
    if _kernel("variance").into(out, x, mean, **attrs):
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    else:
        assert axes != tuple(range(len(shape) - len(axes), len(shape)))


def test_variance_with_a_mean_that_is_not_one_per_row_follows_the_reference():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    scalar_mean = np.array(5.5, np.float32)                     # broadcasts over everything
    got, = check_kernel("variance", (x, scalar_mean), dict(axis=[1], keepdims=True))
    np.testing.assert_allclose(got, ((x - 5.5) ** 2).mean(axis=1, keepdims=True))
    assert not _kernel("variance").into(np.empty((3, 1), np.float32), x, scalar_mean,
                                        axis=[1], keepdims=True)


@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_variance_other_dtypes(dtype):
    x = (np.arange(12).reshape(3, 4) * 1.5).astype(dtype)
    mean = x.mean(axis=1, keepdims=True).astype(dtype)
    check_kernel("variance", (x, mean), dict(axis=[1], keepdims=True))


@settings(max_examples=25, deadline=None)
@given(seeds, st.lists(st.integers(1, 5), min_size=1, max_size=3), st.data())
def test_take_kernel_and_into(seed, shape, data):
    rng = np.random.default_rng(seed)
    x = randn(rng, *shape)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    mode = data.draw(st.sampled_from(["clip", "wrap", "fast"]))
    extent = shape[axis]
    low, high = (-extent, extent - 1) if mode == "fast" else (-2 * extent, 2 * extent)
    index_shape = tuple(data.draw(st.lists(st.integers(1, 3), max_size=2)))
    indices = rng.integers(low, high + 1, size=index_shape).astype(
        data.draw(st.sampled_from(["int32", "int64"])))
    got, = check_kernel("take", (x, indices), dict(axis=axis, mode=mode))
    fixed = {"clip": np.clip(indices, 0, extent - 1), "wrap": np.mod(indices, extent),
             "fast": indices}[mode]
    want = np.take(x, fixed, axis=axis)
    np.testing.assert_array_equal(got, want)
    out = np.full(want.shape, np.nan, np.float32)
    assert _kernel("take").into(out, x, indices, axis=axis, mode=mode)
    np.testing.assert_array_equal(out, want)


def test_take_forms_numpy_lacks_go_to_the_reference():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    check_kernel("take", (x, np.array([5, 30])), dict(axis=None))          # flattened
    check_kernel("take", (x, np.array([[1, 0], [2, 2]])), dict(axis=2, batch_dims=1))
    assert not _kernel("take").into(np.empty((2,), np.float32), x, np.array([5, 30]))


@settings(max_examples=25, deadline=None)
@given(seeds, st.lists(st.integers(1, 6), min_size=1, max_size=3), st.data())
def test_strided_slice_kernel_and_into(seed, shape, data):
    x = randn(np.random.default_rng(seed), *shape)
    begin, end, strides = [], [], []
    for extent in shape:
        step = data.draw(st.sampled_from([1, 2, -1]))
        begin.append(data.draw(st.integers(-extent, extent - 1)))
        end.append(data.draw(st.integers(-extent - 1, extent)))
        strides.append(step)
    attrs = dict(begin=begin, end=end, strides=strides)
    got, = check_kernel("strided_slice", (x,), attrs)
    want = x[tuple(slice(b, e, s) for b, e, s in zip(begin, end, strides))]
    np.testing.assert_array_equal(got, want)
    out = np.full(want.shape, np.nan, np.float32)
    assert _kernel("strided_slice").into(out, x, **attrs)
    np.testing.assert_array_equal(out, want)
    assert not _kernel("strided_slice").into(np.empty(want.shape + (2,), np.float32), x, **attrs)


@pytest.mark.parametrize("rows, depth, units, small",
                         [(1, 256, 2048, True), (4, 512, 1024, False), (3, 7, 1, True)])
def test_dense_on_one_thread_and_on_blas_agree_with_numpy(rows, depth, units, small):
    from jitkernels.cpu.gemm import SINGLE_THREAD_MAX_FLOPS
    rng = np.random.default_rng(rows)
    x, w = randn(rng, rows, depth), randn(rng, units, depth)
    assert (rows * depth * units <= SINGLE_THREAD_MAX_FLOPS) == small
    out = np.empty((rows, units), np.float32)
    assert _kernel("nn.dense").into(out, x, w)
    np.testing.assert_allclose(out, x @ w.T, rtol=1e-4, atol=1e-4)
    got, = _kernel("nn.dense")(x, w)
    np.testing.assert_allclose(got, x @ w.T, rtol=1e-4, atol=1e-4)
