"""jitkernels.cpu.blas.gemm's direct 2-D path (one cblas call for a row-major ``a``/``out``
and a row- or column-major ``b``, the shape of a graph's dense/matmul products) against a
float64 numpy product written here, and its fall-backs for operands it must not take."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jitkernels.cpu import blas, openblas

needs_own = pytest.mark.skipif(not blas.HAVE_OWN_BLAS,
                               reason="irlib's OpenBLAS not in use (no AVX-512, no "
                                      "scipy-openblas32, or IRLIB_BLAS_CORETYPE=numpy)")


def _expected(a, b):
    return a.astype(np.float64) @ b.astype(np.float64)


def _tolerance(a, b, dtype):
    scale = float(np.abs(a).max(initial=0) * np.abs(b).max(initial=0) * a.shape[1]) + 1.0
    return (1e-5 if dtype == np.float32 else 1e-12) * scale


@needs_own
@settings(max_examples=12, deadline=None)
@given(rows=st.integers(2, 40), inner=st.integers(1, 300), cols=st.integers(2, 300),
       b_major=st.sampled_from(["C", "F"]), dtype=st.sampled_from([np.float32, np.float64]),
       seed=st.integers(0, 2 ** 16))
def test_plain_2d_matches_numpy(rows, inner, cols, b_major, dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((rows, inner)).astype(dtype)
    b = np.array(rng.standard_normal((inner, cols)), dtype=dtype, order=b_major)
    out = np.full((rows, cols), np.nan, dtype)
    assert blas._plain_2d(a, b, out)
    np.testing.assert_allclose(out, _expected(a, b), atol=_tolerance(a, b, dtype), rtol=0)


@needs_own
def test_plain_2d_declines_what_it_cannot_take():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 64)).astype(np.float32)
    b = rng.standard_normal((64, 48)).astype(np.float32)
    out = np.zeros((16, 48), np.float32)
    cases = [
        (a[:, ::2], b[::2], out),                               # strided a
        (a, b, np.zeros((48, 16), np.float32).T),               # column-major out
        (a.astype(np.float64), b, out),                         # mixed dtypes
        (a[:1], b, out[:1]),                                    # one row: a GEMV
        (a, b[:, :1], out[:, :1].copy()),                       # one column
        (a[None], b, out[None]),                                # batched
    ]
    for left, right, target in cases:
        assert not blas._plain_2d(left, right, target)
    square = rng.standard_normal((64, 64)).astype(np.float32)
    assert not blas._plain_2d(square, square, square)          # out overlaps an operand
    # what it declines still comes out right through gemm
    for left, right, target in cases[:2]:
        blas.gemm(left, right, target)
        np.testing.assert_allclose(target, _expected(left, right), rtol=1e-5, atol=1e-4)


@needs_own
@pytest.mark.parametrize("threads", [1, 2])
def test_large_product_is_one_call_on_any_thread_count(threads):
    """A product above the judged size is one cblas call (OpenBLAS's threads share it) on
    one or two threads, and matches numpy."""
    saved = blas.get_num_threads()
    rng = np.random.default_rng(1)
    a = rng.standard_normal((16, 384)).astype(np.float32)
    b = rng.standard_normal((384, 1536)).astype(np.float32)
    try:
        blas.set_num_threads(threads)
        assert len(blas._own_tasks(a, b, np.empty((16, 1536), np.float32), 0.0, [])) == 1
        out = np.empty((16, 1536), np.float32)
        assert blas._plain_2d(a, b, out)
        np.testing.assert_allclose(out, _expected(a, b), atol=_tolerance(a, b, np.float32))
    finally:
        blas.set_num_threads(saved)


def test_zen4_gets_the_avx2_kernels():
    """AMD Zen 4 (family 0x19) runs AVX-512 on 256-bit units: irlib's copy loads OpenBLAS's
    Haswell kernels there, SkylakeX on other AVX-512 CPUs, numpy's BLAS without AVX-512."""
    avx512 = {"avx2", "avx512f", "avx512bw", "avx512vl", "avx512dq"}
    assert openblas.choose_coretype(avx512, "AuthenticAMD", 0x19) == "Haswell"
    assert openblas.choose_coretype(avx512, "AuthenticAMD", 0x1A) == "SkylakeX"   # Zen 5
    assert openblas.choose_coretype(avx512, "GenuineIntel", 6) == "SkylakeX"
    assert openblas.choose_coretype(avx512) == "SkylakeX"                        # unknown
    assert openblas.choose_coretype({"avx2"}, "AuthenticAMD", 0x19) is None
    vendor, family = openblas.cpu_identity()
    assert isinstance(vendor, str) and isinstance(family, int) and family >= 0
