"""Softmax kernels (numba loop for small inputs, numpy for large) vs numpy written here."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irlib.testing.budget import examples

pytest.importorskip("numba")

import jitkernels  # noqa: E402
from jitkernels.cpu import norm  # noqa: E402


def numpy_softmax(x, axis, log):
    shifted = x.astype(np.float64) - x.max(axis=axis, keepdims=True)
    total = np.exp(shifted).sum(axis=axis, keepdims=True)
    return (shifted - np.log(total) if log else np.exp(shifted) / total).astype(x.dtype)


@settings(max_examples=examples(30), deadline=None)
@given(st.integers(0, 2 ** 16), st.lists(st.integers(1, 5), min_size=1, max_size=4),
       st.booleans(), st.sampled_from(["float32", "float64"]), st.data())
def test_softmax_matches_numpy(seed, shape, log, dtype, data):
    x = (np.random.default_rng(seed).standard_normal(shape) * 4).astype(dtype)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    name = "nn.log_softmax" if log else "nn.softmax"
    kernel = jitkernels.get_kernel(name, "cpu")
    (got,) = kernel(x, axis=axis)
    expected = numpy_softmax(x, axis, log)
    assert got.dtype == x.dtype and got.shape == x.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    out = np.full(x.shape, np.nan, dtype)
    assert kernel.into(out, x, axis=axis)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_large_inputs_and_nan_rows():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, norm.SMALL_SOFTMAX)).astype(np.float32)
    for log in (False, True):
        kernel = jitkernels.get_kernel("nn.log_softmax" if log else "nn.softmax", "cpu")
        np.testing.assert_allclose(kernel(x, axis=1)[0], numpy_softmax(x, 1, log),
                                   rtol=1e-5, atol=1e-6)
        small = np.array([[1.0, np.nan, 2.0], [0.0, 1.0, 2.0]], np.float32)
        got = kernel(small, axis=1)[0]
        assert np.isnan(got[0]).all()
        np.testing.assert_allclose(got[1], numpy_softmax(small[1:], 1, log)[0], rtol=1e-6)
    kernel = jitkernels.get_kernel("nn.softmax", "cpu")
    assert not kernel.into(np.empty((2, 2), np.float32), np.ones((2, 3), np.float32))
