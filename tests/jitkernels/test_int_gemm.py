"""Integer nn.matmul on the float GEMM (jitkernels.cpu.int_gemm): exact against numpy's
int64 product, for int8/uint8 data shifted by zero points (MatMulInteger's form)."""

import numpy as np
from hypothesis import given, settings, strategies as st

from jitkernels.cpu import gemm, int_gemm


@settings(max_examples=12, deadline=None)
@given(m=st.integers(1, 9), k=st.integers(1, 600), n=st.integers(1, 9),
       signed=st.booleans(), za=st.integers(-128, 255), zb=st.integers(-128, 255),
       transpose_b=st.booleans(), seed=st.integers(0, 99))
def test_integer_matmul_is_exact(m, k, n, signed, za, zb, transpose_b, seed):
    rng = np.random.default_rng(seed)
    low, high = (-128, 128) if signed else (0, 256)
    a = (rng.integers(low, high, (m, k)) - za).astype("int32")
    b = (rng.integers(low, high, (k, n)) - zb).astype("int32")
    want = a.astype("int64") @ b.astype("int64")
    operand = np.ascontiguousarray(b.T) if transpose_b else b
    (got,) = gemm.matmul(a, operand, transpose_b=transpose_b)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


def test_float_type_follows_the_bound():
    small = np.full((2, 10), 255, "int32")
    assert int_gemm.exact_float_dtype(small, small.T) == np.float32      # 650,250
    wide = np.full((2, 1000), 255, "int32")
    assert int_gemm.exact_float_dtype(wide, wide.T) == np.float64        # 65,025,000
    huge = np.full((2, 3), 2 ** 20, "int32")
    assert int_gemm.exact_float_dtype(huge, huge.T) is None              # over int32
    a = np.full((1, 3), 2 ** 20, "int32")
    (got,) = gemm.matmul(a, np.full((3, 1), 2 ** 20, "int32"))   # the reference's int32
    assert got.dtype == np.int32 and got[0, 0] == 0                 # product: 3 * 2**40 wraps


def test_n_dimensional_a():
    rng = np.random.default_rng(1)
    a = rng.integers(-255, 256, (2, 3, 40)).astype("int32")
    b = rng.integers(-255, 256, (40, 5)).astype("int32")
    (got,) = gemm.matmul(a, b)
    np.testing.assert_array_equal(got, (a.astype("int64") @ b.astype("int64")))
