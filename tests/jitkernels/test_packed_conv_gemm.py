"""The packed GEMM for any number of rows with a fused epilogue (jitkernels.cpu.packed_blocks,
packed_gemm.conv_product) and the NHWC convolutions routed to it (conv_core): against a
float64 numpy product and the epilogue's steps written in numpy (hypothesis over M/K/N with
odd sizes, depth-chunk and row-chunk edges, both drivers, every step and the residual), the
cost rule's declines, the weight cache seen through fresh views, and a built graph."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import interp
import irlib

pytest.importorskip("numba")
from jitkernels.cpu import conv_core, packed_gemm  # noqa: E402
from jitkernels.cpu.epilogue import ADD, MUL, RELU, RESIDUAL, Epilogue  # noqa: E402
from helpers import apply_epilogue_steps  # noqa: E402

needs_avx512 = pytest.mark.skipif(not packed_gemm.available(),
                                  reason="no AVX-512 (or IRLIB_PACKED_GEMM=0)")


def _read_only(array):
    array.flags.writeable = False
    return array


def _epilogue(rng, kinds, rows, units):
    """An Epilogue of ``kinds`` with random vectors and a random ``(rows, units)`` residual."""
    vectors = rng.standard_normal((len(kinds), units)).astype(np.float32)
    residual = rng.standard_normal((rows, units)).astype(np.float32)
    return Epilogue(np.array(kinds, np.int64), vectors, residual), vectors, residual


def _oracle(a, w, kinds, vectors, residual):
    """float64 product, then the steps in float64 numpy."""
    want = a.astype(np.float64) @ w.astype(np.float64)
    return apply_epilogue_steps(want, kinds, vectors.astype(np.float64),
                                residual.astype(np.float64))


def _close(got, want, depth):
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=4e-6 * np.sqrt(depth) * scale)


steps = st.lists(st.sampled_from([ADD, MUL, RESIDUAL, RELU]), max_size=5).map(
    lambda kinds: [k for i, k in enumerate(kinds) if k != RESIDUAL or kinds.index(k) == i])


@needs_avx512
@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 230), depth=st.integers(1, 140), units=st.integers(1, 200),
       kinds=steps, depth_block=st.sampled_from([1, 5, 16, 64, 1024]),
       chunk=st.sampled_from([6, 12, 96, 240]), group=st.sampled_from([1, 2, 1000]),
       parallel=st.booleans(), seed=st.integers(0, 99))
def test_conv_product_matches_numpy(rows, depth, units, kinds, depth_block, chunk, group,
                                    parallel, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((rows, depth)).astype(np.float32)
    w = _read_only(rng.standard_normal((depth, units)).astype(np.float32))
    epilogue, vectors, residual = _epilogue(rng, kinds, rows, units)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(packed_gemm, "MIN_WORK", 1)
        m.setattr(packed_gemm, "conv_pays", lambda *args: True)
        m.setattr(packed_gemm, "DEPTH_BLOCK", depth_block)
        m.setattr(packed_gemm, "task_shape", lambda *args: (chunk, group))
        m.setattr(packed_gemm, "PARALLEL_MIN_WORK", 0 if parallel else 1 << 62)
        out = np.full((rows, units), np.nan, np.float32)
        assert packed_gemm.conv_product(a, w, out, epilogue if kinds else None,
                                        residual if RESIDUAL in kinds else None)
    _close(out, _oracle(a, w, kinds, vectors, residual), depth)


@needs_avx512
@settings(max_examples=10, deadline=None)
@given(rows=st.integers(1, 40), depth=st.integers(1, 70), units=st.integers(1, 130),
       lead=st.integers(0, 9), seed=st.integers(0, 99))
def test_row_strided_operand_is_read_in_place(rows, depth, units, lead, seed):
    """Rows ``lda > K`` apart (a column slice of a wider matrix) are read without a copy."""
    rng = np.random.default_rng(seed)
    wide = rng.standard_normal((rows, depth + lead)).astype(np.float32)
    a = wide[:, lead:]
    w = _read_only(rng.standard_normal((depth, units)).astype(np.float32))
    out = np.empty((rows, units), np.float32)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(packed_gemm, "MIN_WORK", 1)
        m.setattr(packed_gemm, "conv_pays", lambda *args: True)
        m.setattr(packed_gemm, "DEPTH_BLOCK", 7)
        assert packed_gemm.conv_product(a, w, out)
    _close(out, a.astype(np.float64) @ w, depth)


def test_task_shape_by_hand(monkeypatch):
    """Hand-derived task shapes: a group's panel chunks fit PANEL_BYTES (halved while there
    are fewer groups than threads); the rows form as few chunks (multiples of 6) as give
    each thread two tasks."""
    monkeypatch.setattr(packed_gemm, "DEPTH_BLOCK", 1024)
    monkeypatch.setattr(packed_gemm, "PANEL_BYTES", 512 << 10)
    shape = packed_gemm.task_shape
    assert shape(3136, 64, 4, 1) == (3138, 4)       # 4 x 16 KB of panels, one chunk
    assert shape(3136, 64, 4, 2) == (1572, 2)       # 2 groups x 2 chunks
    assert shape(49, 4608, 8, 1) == (54, 2)         # 2 x 256 KB panel chunks
    assert shape(49, 4608, 8, 2) == (54, 2)         # 4 tasks
    assert shape(169, 512, 16, 2) == (174, 4)       # 4 x 128 KB, 4 groups
    assert shape(12, 64, 1, 2) == (6, 1)            # 2 chunks of 6 rows
    # few rows: equal column groups, one per thread, and the rows in one chunk
    assert shape(16, 384, 6, 2) == (18, 3)          # 3 + 3 blocks, not 5 + 1
    assert shape(16, 1536, 6, 2) == (18, 1)         # 2 blocks fit: 6 groups of 1
    assert shape(16, 384, 16, 2) == (18, 4)         # 4 groups of 4
    assert shape(128, 384, 6, 2) == (66, 3)         # enough rows: 2 chunks x 2 groups


def test_cost_rule_by_hand():
    """Hand-derived cases of conv_pays (docs/kernels.md): padded columns at most a quarter
    more, not shallow and wide, depth >= CONV_MIN_DEPTH unless an epilogue is fused, at
    least MIN_WORK."""
    pays = packed_gemm.conv_pays
    assert pays(3136, 64, 128, True) and not pays(3136, 64, 128, False)
    assert not pays(3136, 64, 256, True) and not pays(3136, 128, 256, True)   # shallow, wide
    assert pays(3136, 256, 256, True) and pays(196, 256, 1024, False)
    assert pays(49, 4608, 512, False) and pays(169, 512, 1000, False)
    assert not pays(3025, 64, 16, True)              # 16 of 64 columns used
    assert not pays(3136, 576, 48, True)             # 48 of 64
    assert pays(3136, 576, 160, True)                # 160 of 192: 1.2x
    assert not pays(3136, 576, 96, True)             # 96 of 128: 1.33x
    assert not pays(2, 2, 2, True)                   # below MIN_WORK


def test_declines_leave_out_untouched(monkeypatch):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((300, 200)).astype(np.float32)
    w = _read_only(rng.standard_normal((200, 128)).astype(np.float32))
    epilogue, _, _ = _epilogue(rng, [RESIDUAL, RELU], 300, 128)
    w16 = _read_only(rng.standard_normal((200, 16)).astype(np.float32))
    cases = [
        (a, w.copy(), None, None),                      # writable weight
        (a, w16, None, None),                           # 16 columns: the rule says no
        (a[:, :64], w[:64], None, None),                # shallow, no epilogue
        (a, w, epilogue, None),                         # RESIDUAL step without its rows
        (a.astype(np.float64), w.astype(np.float64), None, None),
    ]
    for data, weight, epi, residual in cases:
        out = np.full((data.shape[0], weight.shape[1]), 7.0, data.dtype)
        assert not packed_gemm.conv_product(data, weight, out, epi, residual)
        assert (out == 7.0).all()
    if packed_gemm.available():                         # the switches decline what runs
        assert packed_gemm.conv_product(a, w, np.empty((300, 128), np.float32))
    for switch in (packed_gemm.ENV_SWITCH, packed_gemm.CONV_SWITCH):
        with monkeypatch.context() as m:
            m.setenv(switch, "0")
            out = np.full((300, 128), 7.0, np.float32)
            assert not packed_gemm.conv_product(a, w, out) and (out == 7.0).all()


@needs_avx512
def test_fresh_views_of_one_weight_share_one_packed_copy(monkeypatch):
    """conv_core reshapes the constant HWIO weight on every call: the cache is keyed by the
    memory the view covers, so the weight is packed once."""
    rng = np.random.default_rng(2)
    hwio = _read_only(rng.standard_normal((1, 1, 256, 128)).astype(np.float32))
    calls = []
    real = packed_gemm.pack
    monkeypatch.setattr(packed_gemm, "pack", lambda b: calls.append(1) or real(b))
    first = packed_gemm.packed_weight(hwio.reshape(256, 128), False)
    second = packed_gemm.packed_weight(hwio.reshape(256, 128), False)
    assert first is second and len(calls) == 1
    other = packed_gemm.packed_weight(hwio.reshape(256, 128)[:, :64], False)   # another view
    assert other is not first and other.shape == (1, 256, 64) and len(calls) == 2


def _conv_nhwc_numpy(x, w, stride, pad):
    """NHWC x HWIO convolution in float64 numpy (the oracle)."""
    kh, kw = w.shape[:2]
    xp = np.pad(x.astype(np.float64), ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    oh = (xp.shape[1] - kh) // stride + 1
    ow = (xp.shape[2] - kw) // stride + 1
    out = np.zeros((x.shape[0], oh, ow, w.shape[3]))
    for b in range(kh):
        for e in range(kw):
            window = xp[:, b:b + stride * (oh - 1) + 1:stride, e:e + stride * (ow - 1) + 1:stride]
            out += window @ w[b, e].astype(np.float64)
    return out


@needs_avx512
@settings(max_examples=12, deadline=None)
@given(kernel=st.sampled_from([1, 3]), stride=st.integers(1, 2), batch=st.integers(1, 2),
       size=st.integers(3, 12), channels=st.integers(16, 150), out_channels=st.integers(50, 200),
       kinds=steps, seed=st.integers(0, 99))
def test_conv_core_paths_take_the_packed_product(kernel, stride, batch, size,
                                                 channels, out_channels, kinds, seed):
    """conv_nhwc_pointwise (1x1) and conv_nhwc's im2col GEMM on the packed path (forced by the
    rule) give the numpy convolution followed by the steps; the product ran there."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, size, size, channels)).astype(np.float32)
    w = _read_only(rng.standard_normal((kernel, kernel, channels, out_channels))
                   .astype(np.float32))
    pad = kernel // 2
    stride = 1 if kernel == 1 else stride
    want = _conv_nhwc_numpy(x, w, stride, pad)
    vectors = rng.standard_normal((len(kinds), out_channels)).astype(np.float32)
    residual = rng.standard_normal(want.shape).astype(np.float32)
    epilogue = Epilogue(np.array(kinds, np.int64), vectors,
                        residual if RESIDUAL in kinds else np.zeros((1, 1, 1, 1), np.float32))
    used = []
    real = conv_core.conv_product
    _, oh, ow, _ = want.shape
    out = np.full((batch, oh * ow, out_channels), np.nan, np.float32)
    epi = epilogue if kinds else None
    with pytest.MonkeyPatch.context() as m:
        m.setattr(conv_core, "conv_product",
                  lambda *args: used.append(real(*args)) or used[-1])
        m.setattr(packed_gemm, "MIN_WORK", 1)
        m.setattr(packed_gemm, "conv_pays", lambda *args: True)
        m.setattr(conv_core, "COPY_FLOPS_NHWC", 0)          # no per-tap GEMMs
        if kernel == 1:
            conv_core.conv_nhwc_pointwise(x.reshape(batch, -1, channels),
                                          w.reshape(channels, out_channels), out, epi)
        else:
            conv_core.conv_nhwc(x, w, out, (3, 3), (stride, stride), (1, 1), (1, 1),
                                (1, 1), (oh, ow), epi)
    assert used and all(used)
    expected = apply_epilogue_steps(want, kinds, vectors.astype(np.float64),
                                    residual.astype(np.float64))
    _close(out.reshape(want.shape), expected, channels * kernel * kernel)


@pytest.mark.parametrize("switch", ["1", "0"])
def test_built_nhwc_graph_with_bias_residual_relu(monkeypatch, switch):
    """A built NHWC graph ``relu(conv1x1(x) + b + r)`` with the weight bound (read-only): the
    same numpy answer with the packed path on and off."""
    monkeypatch.setenv(packed_gemm.ENV_SWITCH, switch)
    rng = np.random.default_rng(3)
    x = irlib.var("x", shape=(1, 14, 14, 192))
    r = irlib.var("r", shape=(1, 14, 14, 256))
    w = irlib.var("w", shape=(1, 1, 192, 256))
    b = irlib.var("b", shape=(256,))
    conv = irlib.nn.conv2d(x, w, data_layout="NHWC", kernel_layout="HWIO")
    body = irlib.nn.relu(irlib.add(irlib.add(conv, b), r))
    weight = rng.standard_normal((1, 1, 192, 256)).astype(np.float32)
    bias = rng.standard_normal(256).astype(np.float32)
    factory = interp.build(irlib.IRModule.from_expr(irlib.Function([x, r, w, b], body)),
                           target="cpu", params={"w": weight, "b": bias})
    m = interp.graph_executor.GraphModule(factory["default"](interp.cpu(0)))
    data = rng.standard_normal((1, 14, 14, 192)).astype(np.float32)
    res = rng.standard_normal((1, 14, 14, 256)).astype(np.float32)
    for _ in range(2):
        m.set_input("x", data)
        m.set_input("r", res)
        m.run()
        want = np.maximum(data.astype(np.float64) @ weight[0, 0] + bias + res, 0)
        _close(m.get_output(0).numpy(), want, 192)
        data = data * 0.5
