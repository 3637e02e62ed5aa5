"""The AVX-512 VNNI product of integer-valued float32 operands (jitkernels.cpu.int8_vnni)
against numpy's int64 product (hypothesis over shapes with odd sizes, the activation's
offset and span, int8 weight edges), the cases it must decline, its weight cache, the
gemm kernels that call it, and a graph whose weight is replaced after a run (no stale
packed weight). The kernel tests are skipped on CPUs without VNNI; the packing and the
eligibility rules are checked everywhere."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import interp
import irlib
from irlib.testing.budget import examples
from jitkernels.cpu import int8_vnni
from jitkernels.cpu.gemm import dense, matmul

needs_vnni = pytest.mark.skipif(not int8_vnni.available(), reason="no AVX-512 VNNI")


def _read_only(array):
    array = np.array(array)
    array.flags.writeable = False
    return array


def _oracle(a, w):
    return (a.astype(np.int64) @ w.astype(np.int64)).astype(np.float32)


def test_pack_layout_and_eligibility():
    rng = np.random.default_rng(0)
    w = rng.integers(-128, 128, size=(10, 70))
    packed = int8_vnni.pack(w.astype(np.float32))
    assert packed.packed.shape == (2, 3, 256) and packed.depth == 10 and packed.units == 70
    # packed[jb, g, v*64 + c*4 + t] = w[4g + t, jb*64 + v*16 + c] (zero padded)
    assert packed.packed[0, 1, 2 * 64 + 5 * 4 + 3] == w[7, 37]
    assert packed.packed[1, 2, 0 * 64 + 3 * 4 + 1] == w[9, 67]
    assert packed.packed[1, 2, 0 * 64 + 3 * 4 + 2] == 0          # k = 10 is padding
    np.testing.assert_array_equal(packed.colsum, w.sum(axis=0))
    assert int8_vnni.pack(np.full((3, 3), 0.5, np.float32)) is None          # not integers
    assert int8_vnni.pack(np.full((3, 3), 128.0, np.float32)) is None        # not int8
    assert int8_vnni.pack(np.full((70000, 2), -128.0, np.float32)) is None   # int32 overflow
    assert int8_vnni.packed_weight(np.ones((4, 4), np.float32), False) is None  # writable


@needs_vnni
@settings(max_examples=examples(40), deadline=None)
@given(rows=st.sampled_from([1, 2, 5, 6, 7, 13, 128]),
       depth=st.sampled_from([1, 3, 4, 5, 64, 385, 1536]),
       units=st.sampled_from([1, 15, 16, 64, 65, 200]),
       low=st.integers(-255, 200), span=st.integers(0, 255), edges=st.booleans(),
       transposed=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_product_is_numpys_exact_integer_product(rows, depth, units, low, span, edges,
                                                 transposed, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(low, low + span + 1, size=(rows, depth)).astype(np.float32)
    w = rng.choice([-128, 127], size=(depth, units)) if edges else \
        rng.integers(-128, 128, size=(depth, units))
    stored = _read_only((w.T if transposed else w).astype(np.float32))
    out = np.full((rows, units), np.nan, np.float32)
    if rows * depth * units < int8_vnni.MIN_FLOPS:
        assert not int8_vnni.try_product(a, stored, transposed, out)
        return
    assert int8_vnni.try_product(a, stored, transposed, out)
    np.testing.assert_array_equal(out, _oracle(a, w))


@needs_vnni
def test_declines_what_it_cannot_do_exactly():
    rng = np.random.default_rng(1)
    w = _read_only(rng.integers(-128, 128, size=(64, 64)).astype(np.float32))
    out = np.full((32, 64), 7.0, np.float32)
    fractional = rng.integers(0, 10, size=(32, 64)).astype(np.float32)
    fractional[31, 63] = 0.5                                 # the last element
    wide = rng.integers(0, 10, size=(32, 64)).astype(np.float32)
    wide[0, 0], wide[0, 1] = -100, 156                       # spans 256
    nan = np.zeros((32, 64), np.float32)
    nan[3, 3] = np.nan
    for a in (fractional, wide, nan, fractional.astype(np.float64)):
        assert not int8_vnni.try_product(a, w, False, out)
    assert not int8_vnni.try_product(wide[:, :32], w, False, out)     # depth mismatch
    assert not int8_vnni.try_product(np.ones((32, 64), np.float32), np.array(w), False, out)
    assert np.all(out == 7.0)                                # untouched


@needs_vnni
def test_weight_cache_follows_the_array(monkeypatch):
    rng = np.random.default_rng(2)
    a = rng.integers(0, 256, size=(16, 64)).astype(np.float32)
    out = np.empty((16, 64), np.float32)
    for _ in range(3):              # new arrays (maybe at a freed one's address): no stale pack
        w = rng.integers(-128, 128, size=(64, 64))
        assert int8_vnni.try_product(a, _read_only(w.astype(np.float32)), False, out)
        np.testing.assert_array_equal(out, _oracle(a, w))
    monkeypatch.setenv("IRLIB_INT8_GEMM", "0")
    assert not int8_vnni.available()
    assert not int8_vnni.try_product(a, _read_only(w.astype(np.float32)), False, out)


@needs_vnni
def test_gemm_kernels_take_the_path_and_agree_with_the_float_gemm(monkeypatch):
    rng = np.random.default_rng(3)
    a = rng.integers(-20, 200, size=(2, 9, 96)).astype(np.float32)
    w = rng.integers(-128, 128, size=(40, 96))
    weight = _read_only(w.astype(np.float32))
    calls = []
    original = int8_vnni.try_product

    def counting(*args):
        calls.append(original(*args))
        return calls[-1]
    import jitkernels.cpu.gemm as gemm_module
    monkeypatch.setattr(gemm_module, "try_int8_product", counting)
    want = _oracle(a.reshape(-1, 96), w.T).reshape(2, 9, 40)
    np.testing.assert_array_equal(dense(a, weight)[0], want)
    np.testing.assert_array_equal(matmul(a, weight, transpose_b=True)[0], want)
    out = np.empty((18, 40), np.float32)
    assert matmul.into(out, a.reshape(18, 96), weight, transpose_b=True)
    np.testing.assert_array_equal(out, want.reshape(18, 40))
    assert calls == [True, True, True]


def _quantized_linear_module(depth, units):
    """``(x_u8 - zp) @ W`` as LowerIntegerMatMul leaves it, the weight a parameter."""
    x = irlib.var("x", shape=(8, depth), dtype="uint8")
    w = irlib.var("w", shape=(depth, units), dtype="int8")
    a = irlib.subtract(irlib.cast(x, "int32"), irlib.const(np.int32(7)))
    out = irlib.cast(irlib.nn.matmul(a, irlib.cast(w, "int32")), "float32")
    return irlib.IRModule.from_expr(irlib.Function([x, w], out))


def test_a_weight_replaced_after_a_run_is_used():
    rng = np.random.default_rng(4)
    depth, units = 96, 48
    w1, w2 = (rng.integers(-128, 128, size=(depth, units)).astype(np.int8) for _ in range(2))
    x = rng.integers(0, 256, size=(8, depth)).astype(np.uint8)
    with irlib.transform.PassContext(opt_level=3):
        factory = interp.build(_quantized_linear_module(depth, units), target="cpu",
                               params={"w": w1})
    module = interp.graph_executor.GraphModule(factory["default"](interp.cpu(0)))
    want = [_oracle(x.astype(np.int64) - 7, w) for w in (w1, w2)]
    module.set_input("x", x)
    module.run()
    np.testing.assert_array_equal(module.get_output(0).numpy(), want[0])
    names = list(factory.get_params())
    module.set_input(names[0], w2.astype(factory.get_params()[names[0]].numpy().dtype))
    module.run()
    np.testing.assert_array_equal(module.get_output(0).numpy(), want[1])
