"""jitkernels.cpu.packed_gemm: few-row float32 products on a weight packed once, against a
float64 numpy product written here (hypothesis over odd shapes and both weight layouts),
its declines (cost rule, switch), the packed-weight cache, and a graph whose bound weight
takes the path."""

import gc

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import irlib
import interp

pytest.importorskip("numba")
from jitkernels.cpu import packed_blocks, packed_gemm  # noqa: E402

needs_avx512 = pytest.mark.skipif(not packed_gemm.available(),
                                  reason="no AVX-512 (or IRLIB_PACKED_GEMM=0)")


def _weight(rng, shape):
    w = rng.standard_normal(shape).astype("float32")
    w.flags.writeable = False
    return w


def _tolerance(depth):
    return 2e-6 * np.sqrt(depth) * 4


@needs_avx512
@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 64), depth=st.integers(1, 300), units=st.integers(1, 200),
       transposed=st.booleans(), seed=st.integers(0, 3))
def test_product_matches_float64_numpy(rows, depth, units, transposed, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((rows, depth)).astype("float32")
    w = _weight(rng, (units, depth) if transposed else (depth, units))
    out = np.full((rows, units), np.nan, "float32")
    saved = packed_gemm.MIN_WORK
    packed_gemm.MIN_WORK = 1          # every size takes the path here
    try:
        assert packed_gemm.try_product(a, w, transposed, out)
    finally:
        packed_gemm.MIN_WORK = saved
    right = (w.T if transposed else w).astype("float64")
    want = a.astype("float64") @ right
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=_tolerance(depth))


@needs_avx512
@settings(max_examples=6, deadline=None)
@given(rows=st.integers(1, 20), blocks=st.integers(1, 5), extra=st.integers(0, 63))
def test_serial_and_parallel_drivers_agree_with_numpy(rows, blocks, extra):
    rng = np.random.default_rng(rows)
    depth, units = 37, 64 * blocks - extra if 64 * blocks - extra > 0 else 1
    a = rng.standard_normal((rows, depth)).astype("float32")
    w = rng.standard_normal((depth, units)).astype("float32")
    packed = packed_gemm.pack(w)
    assert packed.shape == (-(-units // 64), depth, 64)
    want = a.astype("float64") @ w.astype("float64")
    kinds, vectors, residual = packed_gemm._no_epilogue()
    for driver in (packed_blocks.gemm_serial, packed_blocks.gemm_parallel):
        out = np.zeros((rows, units), "float32")
        driver(a.reshape(-1), depth, packed, out, 6, 2, 16, kinds, vectors, residual)
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=_tolerance(depth))


@needs_avx512
def test_a_strided_data_operand_is_read_through_a_copy():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((40, 300)).astype("float32")[:, ::2]      # (40, 150) strided
    w = _weight(rng, (150, 90))
    out = np.empty((40, 90), "float32")
    assert packed_gemm.try_product(a, w, False, out)
    np.testing.assert_allclose(out, a.astype("float64") @ w, rtol=1e-5, atol=1e-4)


def test_declines_leave_out_untouched(monkeypatch):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((16, 384)).astype("float32")
    w = _weight(rng, (384, 64))
    cases = [
        (a, w.copy(), False),                                   # writable weight
        (a.astype("float64"), w.astype("float64"), False),      # not float32
        (np.ones((65, 384), "float32"), w, False),              # more than MAX_ROWS rows
        (a[:, :8], _weight(rng, (8, 64)), False),               # below MIN_WORK
        (a, w, True),                                           # shapes disagree
    ]
    for data, weight, transposed in cases:
        out = np.full((data.shape[0], 64), 7.0, "float32")
        assert not packed_gemm.try_product(data, weight, transposed, out)
        assert (out == 7.0).all()
    monkeypatch.setenv(packed_gemm.ENV_SWITCH, "0")
    out = np.full((16, 64), 7.0, "float32")
    assert not packed_gemm.try_product(a, w, False, out) and (out == 7.0).all()


@needs_avx512
def test_weights_are_packed_once_and_forgotten_with_their_array():
    rng = np.random.default_rng(3)
    w = _weight(rng, (128, 96))
    before = len(packed_gemm._WEIGHTS)
    first = packed_gemm.packed_weight(w, False)
    assert packed_gemm.packed_weight(w, False) is first
    assert packed_gemm.packed_weight(w, True) is not first       # the other layout
    assert len(packed_gemm._WEIGHTS) == before + 2
    del w, first
    gc.collect()
    assert len(packed_gemm._WEIGHTS) == before


@needs_avx512
@pytest.mark.parametrize("op", ["dense", "matmul"])
def test_a_graph_with_a_bound_weight_takes_the_packed_path(op):
    """A decode-step-like product (16 rows) with its weight bound at build: the graph's
    constant is read-only, so it is packed (the cache has it) and the result is numpy's."""
    rng = np.random.default_rng(4)
    x = irlib.var("x", shape=(16, 384))
    shape = (96, 384) if op == "dense" else (384, 96)
    w = irlib.var("w", shape=shape)
    call = irlib.nn.dense(x, w) if op == "dense" else irlib.nn.matmul(x, w)
    body = irlib.add(call, irlib.const(np.float32(0.5)))
    weight = rng.standard_normal(shape).astype("float32")
    factory = interp.build(irlib.IRModule.from_expr(irlib.Function([x, w], body)),
                           target="cpu", params={"w": weight})
    m = interp.graph_executor.GraphModule(factory["default"](interp.cpu(0)))
    data = rng.standard_normal((16, 384)).astype("float32")
    before = len(packed_gemm._WEIGHTS)
    m.set_input("x", data)
    m.run()
    right = weight.T if op == "dense" else weight
    np.testing.assert_allclose(m.get_output(0).numpy(),
                               data.astype("float64") @ right + 0.5, rtol=1e-5, atol=1e-4)
    assert len(packed_gemm._WEIGHTS) > before


@pytest.mark.parametrize("switch", ["1", "0"])
def test_a_matmul_group_on_3d_data_runs_its_rows_as_one_product(monkeypatch, switch):
    """GPT-2's ``(1, S, K) @ (K, N) + bias + residual`` group: the anchor's rows run as one
    2-D product into the group's buffer (packed path on or off), numpy's answer."""
    monkeypatch.setenv(packed_gemm.ENV_SWITCH, switch)
    rng = np.random.default_rng(5)
    x = irlib.var("x", shape=(2, 8, 384))
    r = irlib.var("r", shape=(2, 8, 96))
    w = irlib.var("w", shape=(384, 96))
    b = irlib.var("b", shape=(96,))
    body = irlib.add(irlib.add(irlib.nn.matmul(x, w), b), r)
    weight = rng.standard_normal((384, 96)).astype("float32")
    bias = rng.standard_normal(96).astype("float32")
    factory = interp.build(irlib.IRModule.from_expr(irlib.Function([x, r, w, b], body)),
                           target="cpu", params={"w": weight, "b": bias})
    m = interp.graph_executor.GraphModule(factory["default"](interp.cpu(0)))
    data = rng.standard_normal((2, 8, 384)).astype("float32")
    residual = rng.standard_normal((2, 8, 96)).astype("float32")
    for _ in range(2):
        m.set_input("x", data)
        m.set_input("r", residual)
        m.run()
        want = data.astype("float64") @ weight + bias + residual
        np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-5, atol=1e-4)
        data = data * 0.5
