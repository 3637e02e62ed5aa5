"""The implicit-GEMM NHWC convolution (jitkernels/cpu/implicit_conv.py) and its segmented
micro-kernels (jitkernels/cpu/broadcast_kernel.py): the kernels against the sum they
define, written here in numpy; the convolution against a numpy convolution in float64
(hypothesis over channels, output channels on every panel width (16, 32, 48, 64) and past
a panel, kernel sizes, strides, asymmetric padding, height dilation, odd sizes and row
tails, batch, every fused epilogue kind, on the caller alone and shared with helper
threads, row- and panel-major task orders; stride-1 1x1 layers as one run of pixels with
tails); the weight cache; the cost rule, the ``IRLIB_IMPLICIT_CONV`` switch and the hook in
the conv kernel; the errors."""

from __future__ import annotations

import gc
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

import jitkernels
from irlib.errors import IRError
from irlib.op import get_def
from irlib.testing.budget import examples
from jitkernels.cpu import implicit_conv, work_sharing
from jitkernels.cpu.broadcast_kernel import SEGMENTED_SHAPES, segmented_micro_kernels
from jitkernels.cpu.epilogue import ADD, MUL, RELU, RESIDUAL, Epilogue
from helpers import apply_epilogue_steps, numpy_conv_nhwc

KERNELS = {cols: segmented_micro_kernels(cols) for cols in SEGMENTED_SHAPES}


def _caller(kernel):
    @njit
    def call(*args):
        kernel(*args)
    return call


CALLERS = {(cols, rows): _caller(k) for cols, ks in KERNELS.items()
           for rows, k in enumerate(ks, start=1)}


@settings(max_examples=examples(40), deadline=None)
@given(cols=st.sampled_from(sorted(SEGMENTED_SHAPES)), data=st.data())
def test_segmented_kernel_matches_its_definition(cols, data):
    """The sum, then each epilogue step in order, stored for the first ``width`` columns
    only (the rest of ``c`` untouched, nothing past ``width`` read)."""
    rows = data.draw(st.integers(1, SEGMENTED_SHAPES[cols]))
    segments = data.draw(st.integers(0, 4))
    steps = data.draw(st.integers(0, 13))
    seg = data.draw(st.integers(0, 40))
    lda = data.draw(st.integers(0, 9))
    width = data.draw(st.integers(1, cols))
    a_off, b_off, c_off = (data.draw(st.integers(0, 5)), data.draw(st.integers(0, 3)) * cols,
                           data.draw(st.integers(0, 7)))
    ldc = width + data.draw(st.integers(0, 40))
    kinds = data.draw(st.lists(st.sampled_from([ADD, MUL, RESIDUAL, RELU]), max_size=5))
    v_off = data.draw(st.integers(0, 3))
    v_stride = width + data.draw(st.integers(0, 3))
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16)))
    a = rng.standard_normal(a_off + rows * lda + segments * seg + steps + 1).astype(np.float32)
    bp = rng.standard_normal(b_off + segments * steps * cols + 1).astype(np.float32)
    size = c_off + (rows - 1) * ldc + width
    c = np.full(size + 3, 7.0, np.float32)
    residual = rng.standard_normal(size).astype(np.float32)      # ends at the last valid one
    vectors = rng.standard_normal(v_off + max(0, len(kinds) - 1) * v_stride + width
                                  ).astype(np.float32)
    CALLERS[(cols, rows)](c, c_off, ldc, width, a, a_off, lda, bp, b_off, segments, steps,
                          seg, np.array(kinds, np.int64), vectors, v_off, v_stride, residual)
    expected = np.zeros((rows, cols))
    for r in range(rows):
        for s in range(segments):
            for k in range(steps):
                expected[r] += (np.float64(a[a_off + r * lda + s * seg + k])
                                * bp[b_off + (s * steps + k) * cols:
                                     b_off + (s * steps + k + 1) * cols])
    expected = expected[:, :width]
    for t, kind in enumerate(kinds):
        operand = vectors[v_off + t * v_stride:v_off + t * v_stride + width]
        if kind == ADD:
            expected = expected + operand
        elif kind == MUL:
            expected = expected * operand
        elif kind == RESIDUAL:
            expected = expected + np.stack([residual[c_off + r * ldc:c_off + r * ldc + width]
                                            for r in range(rows)])
        else:
            expected = np.maximum(expected, 0)
    got = np.stack([c[c_off + r * ldc:c_off + r * ldc + width] for r in range(rows)])
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    untouched = np.ones(c.size, bool)
    for r in range(rows):
        untouched[c_off + r * ldc:c_off + r * ldc + width] = False
    assert (c[untouched] == 7.0).all()


def test_segmented_kernels_reject_other_widths():
    with pytest.raises(IRError, match="columns must be one of"):
        segmented_micro_kernels(24)


@st.composite
def layers(draw):
    """(x shape, weight shape, strides, dilation, before, after, seed)."""
    channels = draw(st.one_of(st.integers(1, 4), st.integers(5, 40)))
    out_channels = draw(st.one_of(st.integers(8, 17), st.integers(17, 33),
                                  st.integers(33, 49), st.integers(60, 70),
                                  st.integers(120, 135)))
    kernel = (draw(st.integers(1, 7)), draw(st.integers(1, 7)))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), 1)
    before = (draw(st.integers(0, 3)), draw(st.integers(0, 3)))
    after = (draw(st.integers(0, 3)), draw(st.integers(0, 3)))
    size = tuple(draw(st.integers(max(1, dilation[i] * (kernel[i] - 1) + 1 - before[i]
                                       - after[i]), 25)) for i in range(2))
    batch = draw(st.integers(1, 2))
    return ((batch,) + size + (channels,), kernel + (channels, out_channels), strides,
            dilation, before, after, draw(st.integers(0, 2 ** 16)))


def _epilogue(draw, rng, out_shape):
    kinds = draw(st.lists(st.sampled_from([ADD, MUL, RESIDUAL, RELU]), max_size=4))
    if kinds.count(RESIDUAL) > 1:
        kinds = [k for k in kinds if k != RESIDUAL] + [RESIDUAL]
    vectors = rng.standard_normal((max(1, len(kinds)), out_shape[-1])).astype(np.float32)
    residual = (rng.standard_normal(out_shape).astype(np.float32) if RESIDUAL in kinds
                else np.zeros((1, 1, 1, 1), np.float32))
    return kinds, vectors, residual


def _force_helpers(patch):
    """Every layer takes the shared form and posts its job to the helper threads."""
    patch.setattr(implicit_conv, "PARALLEL_MIN_FLOPS", 0)
    patch.setattr(work_sharing, "others_busy", lambda: 0.0)
    if hasattr(work_sharing, "_STALLS"):        # the helper-thread form's back-off
        patch.setitem(work_sharing._STALLS, "until", 0.0)


@settings(max_examples=examples(40), deadline=None)
@given(case=layers(), threads=st.sampled_from([1, 2]), data=st.data())
def test_conv_matches_numpy(case, threads, data):
    shape, wshape, strides, dilation, before, after, seed = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(wshape).astype(np.float32)
    w.flags.writeable = data.draw(st.booleans())
    expected = numpy_conv_nhwc(x, w, strides, dilation, before, after)
    kinds, vectors, residual = _epilogue(data.draw, rng, expected.shape)
    expected = apply_epilogue_steps(expected, kinds, vectors, residual)
    epilogue = (Epilogue(np.array(kinds, np.int64), vectors, residual)
                if kinds or data.draw(st.booleans()) else None)
    out = np.full(expected.shape, np.nan, np.float32)
    with pytest.MonkeyPatch.context() as patch:
        if threads > 1:         # small layers: shared with a helper thread, even when
            _force_helpers(patch)   # other processes keep the cores busy
        implicit_conv.conv2d_nhwc(x, w, out, strides, dilation, before, after, epilogue,
                                  threads=threads)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


@settings(max_examples=examples(30), deadline=None)
@given(batch=st.integers(1, 3), height=st.integers(1, 23), width=st.integers(1, 23),
       channels=st.one_of(st.integers(1, 20), st.integers(40, 90)),
       out_channels=st.one_of(st.integers(8, 20), st.integers(28, 52), st.integers(60, 140)),
       flat=st.sampled_from([implicit_conv.FLAT_ROW_BLOCKS, 1, 0]),
       threads=st.sampled_from([1, 2, 3]), data=st.data())
def test_pointwise_matches_numpy(batch, height, width, channels, out_channels, flat, threads,
                                 data):
    """Stride-1 1x1 layers (all pixels of all images one run, cut into rows of ``flat``
    kernel blocks; 0: one task per output row): pixel counts that are not a multiple of any
    kernel's rows, channels that are not a multiple of 16, every panel width, every
    epilogue kind, on one thread and shared."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16)))
    x = rng.standard_normal((batch, height, width, channels)).astype(np.float32)
    w = rng.standard_normal((1, 1, channels, out_channels)).astype(np.float32)
    w.flags.writeable = False
    expected = numpy_conv_nhwc(x, w, (1, 1), (1, 1), (0, 0), (0, 0))
    kinds, vectors, residual = _epilogue(data.draw, rng, expected.shape)
    expected = apply_epilogue_steps(expected, kinds, vectors, residual)
    out = np.full(expected.shape, np.nan, np.float32)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(implicit_conv, "FLAT_ROW_BLOCKS", flat)
        if threads > 1:
            _force_helpers(patch)
        implicit_conv.conv2d_nhwc(x, w, out, (1, 1), (1, 1), (0, 0), (0, 0),
                                  Epilogue(np.array(kinds, np.int64), vectors, residual),
                                  threads=threads)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


@settings(max_examples=examples(200), deadline=None)
@given(pixels=st.integers(1, 5000), channels=st.integers(1, 600),
       out_channels=st.integers(8, 300), threads=st.integers(1, 4))
def test_plan_gives_each_thread_equal_chunks(pixels, channels, out_channels, threads):
    """Shared layers have the same chunk count per thread; a 1x1 layer's run is cut into
    rows of at most FLAT_ROW_BLOCKS blocks, differing by at most one block, whose task
    count is a multiple of the chunks wherever the run has blocks enough."""
    plan = implicit_conv._plan((1, 1, pixels, channels), (1, 1, channels, out_channels),
                               (1, 1), (1, 1), (0, 0), (0, 0),
                               implicit_conv.FLAT_ROW_BLOCKS, threads)
    geometry = plan.geometry
    rows, block, blocks = int(geometry[15]), int(geometry[17]), int(geometry[18])
    panels = -(-out_channels // plan.cols)
    assert blocks == -(-pixels // block) and rows <= blocks
    per_row = [(r + 1) * blocks // rows - r * blocks // rows for r in range(rows)]
    assert sum(per_row) == blocks
    assert max(per_row) - min(per_row) <= 1 and max(per_row) <= implicit_conv.FLAT_ROW_BLOCKS
    assert plan.chunks == 1 or (plan.chunks % threads == 0 and plan.threads == threads)
    if plan.chunks > 1 and -(-rows // plan.chunks) * plan.chunks <= blocks:
        assert rows * panels % plan.chunks == 0
    if 2.0 * pixels * channels * out_channels < implicit_conv.PARALLEL_MIN_FLOPS:
        assert plan.chunks == 1


def test_panel_columns_count_the_vector_multiply_adds():
    """The width with the fewest padded 16-lane vectors times block rows (a one-row tail
    block costing two), the widest within 3%; worked out by hand."""
    columns = implicit_conv.panel_columns
    # a long run: only the padding past the output channels counts
    assert [columns(o) for o in (8, 16, 17, 32, 33, 48, 49, 64, 65, 80, 96, 192, 200, 1000)] \
        == [16, 16, 32, 32, 48, 48, 64, 64, 16, 16, 48, 64, 16, 64]
    # rows of 13 pixels: 64 columns cut them 6 + 6 + 1 (14 row-steps a vector), 48 columns
    # 8 + 5, 32 columns 10 + 3, 16 columns 13 (13 each)
    assert columns(256, 13) == 32           # 16 vectors: 224 against 208
    assert columns(192, 13) == 48           # 12 vectors: 168 against 156 (48 first)
    assert columns(128, 7) == 32            # 6 + 1: 8 row-steps a vector against 7
    assert columns(64, 56) == 64            # 9 x 6 + 2: no tail to save
    assert columns(128, 14) == 64           # 6 + 6 + 2 = 10 + 4 = 14
    assert columns(16, 56) == 16


@pytest.mark.parametrize("threads", [1, 2])
def test_panel_major_order_and_many_panels(threads, monkeypatch):
    """A weight larger than the input (tasks panel by panel), three 64-column panels with a
    partial last one, a 6-pixel block tail, batch 2."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 9, 11, 20)).astype(np.float32)
    w = rng.standard_normal((3, 3, 20, 150)).astype(np.float32)
    w.flags.writeable = False
    _force_helpers(monkeypatch)
    assert implicit_conv.packed_weight(w, 64).size > x.size
    out = np.empty((2, 9, 11, 150), np.float32)
    implicit_conv.conv2d_nhwc(x, w, out, (1, 1), (1, 1), (1, 1), (1, 1), threads=threads)
    np.testing.assert_allclose(out, numpy_conv_nhwc(x, w, (1, 1), (1, 1), (1, 1), (1, 1)),
                               rtol=1e-4, atol=1e-4)


def test_first_layer_shape_with_bias_relu():
    """ResNet's 7x7/2 3->64 first layer at a reduced size, bias + ReLU fused."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 38, 38, 3)).astype(np.float32)
    w = rng.standard_normal((7, 7, 3, 64)).astype(np.float32)
    bias = rng.standard_normal((1, 64)).astype(np.float32)
    out = np.empty((1, 19, 19, 64), np.float32)
    implicit_conv.conv2d_nhwc(x, w, out, (2, 2), (1, 1), (3, 3), (3, 3),
                              Epilogue(np.array([ADD, RELU], np.int64),
                                       np.concatenate([bias, bias]),
                                       np.zeros((1, 1, 1, 1), np.float32)))
    expected = np.maximum(numpy_conv_nhwc(x, w, (2, 2), (1, 1), (3, 3), (3, 3)) + bias, 0)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


def test_pack_layout():
    w = np.arange(2 * 1 * 3 * 40, dtype=np.float32).reshape(2, 1, 3, 40)
    packed = implicit_conv.pack(w, 32)
    assert packed.shape == (2, 6, 32)
    matrix = w.reshape(6, 40)
    np.testing.assert_array_equal(packed[0], matrix[:, :32])
    np.testing.assert_array_equal(packed[1, :, :8], matrix[:, 32:])
    assert not packed[1, :, 8:].any()


def test_weight_cache_only_for_read_only_weights():
    w = np.ones((3, 3, 4, 40), np.float32)
    assert implicit_conv.packed_weight(w, 32) is not implicit_conv.packed_weight(w, 32)
    w.flags.writeable = False
    before = len(implicit_conv._PACKED)
    first = implicit_conv.packed_weight(w, 32)
    assert implicit_conv.packed_weight(w, 32) is first
    assert implicit_conv.packed_weight(w, 64) is not first
    assert len(implicit_conv._PACKED) == before + 2
    del w, first
    gc.collect()
    assert len(implicit_conv._PACKED) == before


def test_errors_name_the_problem():
    x = np.zeros((1, 8, 8, 3), np.float32)
    w = np.zeros((3, 3, 3, 32), np.float32)
    with pytest.raises(IRError, match="width dilation"):
        implicit_conv.conv2d_nhwc(x, w, np.zeros((1, 4, 4, 32), np.float32), (1, 1), (1, 2),
                                  (0, 0), (0, 0))
    with pytest.raises(IRError, match=r"\(1, 6, 6, 32\) output"):
        implicit_conv.conv2d_nhwc(x, w, np.zeros((1, 5, 6, 32), np.float32), (1, 1), (1, 1),
                                  (0, 0), (0, 0))
    out = np.zeros((1, 6, 6, 32), np.float32)
    with pytest.raises(IRError, match="float64 weight"):
        implicit_conv.conv2d_nhwc(x, w.astype(np.float64), out, (1, 1), (1, 1), (0, 0), (0, 0))
    with pytest.raises(IRError, match="C-contiguous"):
        implicit_conv.conv2d_nhwc(x[:, :, ::-1], w, out, (1, 1), (1, 1), (0, 0), (0, 0))
    with pytest.raises(IRError, match="residual of 1 elements"):
        implicit_conv.conv2d_nhwc(x, w, out, (1, 1), (1, 1), (0, 0), (0, 0),
                                  Epilogue(np.array([RESIDUAL], np.int64),
                                           np.zeros((1, 32), np.float32),
                                           np.zeros((1, 1, 1, 1), np.float32)))


def test_cost_rule(monkeypatch):
    monkeypatch.setattr(implicit_conv, "_AVX512", True)
    pays = implicit_conv.pays
    assert pays(3, 64, (7, 7), (2, 2), (1, 1), 112 * 112)            # ResNet conv1
    assert pays(3, 32, (3, 3), (2, 2), (1, 1), 112 * 112)            # MobileNet conv1
    assert pays(64, 128, (1, 1), (2, 2), (1, 1), 28 * 28)            # a strided 1x1
    assert pays(128, 64, (1, 1), (1, 1), (1, 1), 56 * 56)            # a plain GEMM
    assert pays(1024, 1024, (1, 1), (1, 1), (1, 1), 7 * 7)           # a deep, wide one
    assert pays(128, 32, (1, 1), (1, 1), (1, 1), 27 * 27)            # narrow 1x1
    assert pays(64, 16, (1, 1), (1, 1), (1, 1), 55 * 55)             # 16 columns
    assert pays(16, 16, (3, 3), (1, 1), (1, 1), 56 * 56)
    assert pays(8, 8, (3, 3), (1, 1), (1, 1), 40 * 100)
    assert not pays(8, 7, (3, 3), (1, 1), (1, 1), 40 * 100)          # the direct kernel's
    assert not pays(8192, 64, (1, 1), (1, 1), (1, 1), 49)            # inner > MAX_INNER
    assert not pays(3, 32, (3, 3), (1, 1), (1, 2), 100)              # width dilation
    assert not pays(3, 32, (3, 3), (1, 1), (1, 1), 100, np.float64)
    assert not pays(1024, 64, (3, 3), (1, 1), (1, 1), 100)           # inner > MAX_INNER
    monkeypatch.setenv(implicit_conv.ENV_SWITCH, "0")
    assert not pays(3, 64, (7, 7), (2, 2), (1, 1), 112 * 112)
    monkeypatch.setattr(implicit_conv, "_AVX512", False)
    monkeypatch.delenv(implicit_conv.ENV_SWITCH)
    assert not pays(3, 64, (7, 7), (2, 2), (1, 1), 112 * 112)


@pytest.mark.skipif(not implicit_conv.available(), reason="needs AVX-512")
@pytest.mark.parametrize("switch", ["1", "0"])
def test_conv2d_kernel_hook_and_switch(switch, monkeypatch):
    """``nn.conv2d``'s CPU kernel runs this path (or not, with the switch off) for an NHWC
    layer, plain and with a fused epilogue; the result is the same either way."""
    monkeypatch.setenv(implicit_conv.ENV_SWITCH, switch)
    calls = []
    original = implicit_conv.conv2d_nhwc
    monkeypatch.setattr(implicit_conv, "conv2d_nhwc",
                        lambda *args, **kwargs: calls.append(1) or original(*args, **kwargs))
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 15, 13, 3)).astype(np.float32)
    w = rng.standard_normal((3, 3, 3, 40)).astype(np.float32)
    w.flags.writeable = False
    attrs = dict(get_def("nn.conv2d").make_attrs(
        {"strides": (2, 2), "padding": (1, 0, 1, 2), "data_layout": "NHWC",
         "kernel_layout": "HWIO"}))
    kernel = jitkernels.get_kernel("nn.conv2d", "cpu")
    expected = numpy_conv_nhwc(x, w, (2, 2), (1, 1), (1, 0), (1, 2))
    got, = kernel(x, w, **attrs)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    shift = rng.standard_normal((1, 40)).astype(np.float32)
    out = np.empty(expected.shape, np.float32)
    assert kernel.into_fused(out, x, w, epilogue=Epilogue(np.array([ADD, RELU], np.int64),
                                                          np.concatenate([shift, shift]),
                                                          np.zeros((1, 1, 1, 1), np.float32)),
                             **attrs)
    np.testing.assert_allclose(out, np.maximum(expected + shift, 0), rtol=1e-4, atol=1e-4)
    assert calls == ([1, 1] if switch == "1" else [])


@pytest.mark.skipif(not implicit_conv.available(), reason="needs AVX-512")
def test_built_graph_runs_residual_block_here(monkeypatch):
    """relu(conv5x5(x) * s + b + x), built at opt_level 3 (NHWC): the conv group runs this
    kernel with its epilogue (scale, shift, residual, ReLU) fused; same output as numpy."""
    import interp
    import irlib
    from irlib.transform import PassContext
    channels, size = 24, 11
    x = irlib.var("x", shape=(1, channels, size, size))
    w = irlib.var("w", shape=(channels, channels, 5, 5))
    s = irlib.var("s", shape=(channels, 1, 1))
    b = irlib.var("b", shape=(channels, 1, 1))
    y = irlib.add(irlib.multiply(irlib.nn.conv2d(x, w, padding=(2, 2)), s), b)
    mod = irlib.IRModule.from_expr(irlib.Function([x, w, s, b],
                                                  irlib.nn.relu(irlib.add(y, x))))
    rng = np.random.default_rng(4)
    params = {"w": rng.standard_normal((channels, channels, 5, 5)).astype(np.float32) * 0.1,
              "s": rng.standard_normal((channels, 1, 1)).astype(np.float32),
              "b": rng.standard_normal((channels, 1, 1)).astype(np.float32)}
    data = rng.standard_normal((1, channels, size, size)).astype(np.float32)
    calls = []
    original = implicit_conv.conv2d_nhwc
    monkeypatch.setattr(implicit_conv, "conv2d_nhwc", lambda *args, **kwargs: calls.append(
        args[7] if len(args) > 7 else kwargs.get("epilogue")) or original(*args, **kwargs))
    with PassContext(opt_level=3):
        factory = interp.build(mod, "cpu", params=params)
    gmod = interp.graph_executor.GraphModule(factory["default"](interp.cpu(0)))
    gmod.set_input("x", data)
    gmod.run()
    got = gmod.get_output(0).numpy()
    nhwc = data.transpose(0, 2, 3, 1)
    conv = numpy_conv_nhwc(nhwc, params["w"].transpose(2, 3, 1, 0), (1, 1), (1, 1), (2, 2),
                           (2, 2))
    expected = np.maximum(conv * params["s"].reshape(-1) + params["b"].reshape(-1) + nhwc, 0)
    np.testing.assert_allclose(got, expected.transpose(0, 3, 1, 2), rtol=1e-4, atol=1e-4)
    assert len(calls) == 1 and calls[0] is not None
    assert RESIDUAL in list(calls[0].kinds) and RELU in list(calls[0].kinds)
