"""max/min CPU kernels (numpy's reductions, in both the returning and the into form)
against numpy written here, NaN included."""

import numpy as np
from hypothesis import given, settings, strategies as st

import jitkernels


@settings(max_examples=12, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=4), data=st.data(),
       keepdims=st.booleans(), op=st.sampled_from(["max", "min"]), nan=st.booleans())
def test_max_min_kernel_and_into(shape, data, keepdims, op, nan):
    ndim = len(shape)
    axes = data.draw(st.one_of(st.none(), st.lists(st.integers(-ndim, ndim - 1), min_size=1,
                                                   max_size=ndim, unique_by=lambda a: a % ndim)))
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype("float32")
    if nan:
        x.reshape(-1)[x.size // 2] = np.nan
    axis = None if axes is None else tuple(a % ndim for a in axes)
    with np.errstate(invalid="ignore"):
        want = (np.max if op == "max" else np.min)(x, axis=axis, keepdims=keepdims)
    kernel = jitkernels.get_kernel(op, "cpu")
    (got,) = kernel(x, axis=axes, keepdims=keepdims)
    np.testing.assert_array_equal(got, want)
    out = np.empty(np.shape(want), "float32")
    assert kernel.into(out, x, axis=axes, keepdims=keepdims)
    np.testing.assert_array_equal(out, want)


def test_into_declines_a_wrong_output_shape():
    kernel = jitkernels.get_kernel("max", "cpu")
    assert not kernel.into(np.empty((3,), "float32"), np.ones((2, 4), "float32"), axis=[1])
    assert not kernel.into(np.empty((2,), "float64"), np.ones((2, 4), "float32"), axis=[1])
