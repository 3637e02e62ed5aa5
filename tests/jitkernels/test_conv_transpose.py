"""The channels-first ``nn.conv2d_transpose`` kernel (jitkernels/cpu/conv_transpose.py): the
pixel-row product (packed and BLAS, permuted and as-stored weights), the gather col2im (serial
and parallel) and its fused epilogue, against a float64 numpy scatter written here and
torch's ``conv_transpose2d``; the destination forms' refusals; built graphs whose
deconvolution + multiply/add/relu group runs the fused form."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import interp
import irlib
import jitkernels
from irlib.op import get_def
from irlib.testing.budget import examples
from irlib.transform import PassContext
from jitkernels.cpu import conv_transpose, packed_gemm, work_sharing
from jitkernels.cpu.epilogue import ADD, MUL, RELU, RESIDUAL, Epilogue

OP = "nn.conv2d_transpose"


def scatter_oracle(x, w, strides, padding, dilation, groups, output_padding):
    """The definition, in float64: every input pixel adds ``x * w`` into the output window
    it reaches. ``x`` NCHW, ``w`` IOHW, ``padding`` (top, left, bottom, right)."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    batch, channels, height, width = x.shape
    _, per_group_out, kh, kw = w.shape
    top, left, bottom, right = padding
    oh = (height - 1) * strides[0] - top - bottom + dilation[0] * (kh - 1) + 1 \
        + output_padding[0]
    ow = (width - 1) * strides[1] - left - right + dilation[1] * (kw - 1) + 1 \
        + output_padding[1]
    # the full (unpadded) output, cropped at the end
    full = np.zeros((batch, per_group_out * groups,
                     max(oh + top, (height - 1) * strides[0] + dilation[0] * (kh - 1) + 1),
                     max(ow + left, (width - 1) * strides[1] + dilation[1] * (kw - 1) + 1)))
    per_group_in = channels // groups
    for g in range(groups):
        xs = x[:, g * per_group_in:(g + 1) * per_group_in]
        ws = w[g * per_group_in:(g + 1) * per_group_in]
        outs = slice(g * per_group_out, (g + 1) * per_group_out)
        for b in range(kh):
            for e in range(kw):
                contribution = np.einsum("nchw,co->nohw", xs, ws[:, :, b, e])
                full[:, outs, b * dilation[0]:b * dilation[0] + (height - 1) * strides[0] + 1:
                     strides[0],
                     e * dilation[1]:e * dilation[1] + (width - 1) * strides[1] + 1:
                     strides[1]] += contribution
    return full[:, :, top:top + oh, left:left + ow]


def apply_steps_nchw(out, kinds, vectors, residual):
    """The fused epilogue's steps in numpy, per channel along axis 1."""
    out = out.copy()
    for s, kind in enumerate(kinds):
        if kind == ADD:
            out += vectors[s][:, None, None]
        elif kind == MUL:
            out *= vectors[s][:, None, None]
        elif kind == RESIDUAL:
            out += residual
        else:
            out = np.maximum(out, 0)
    return out


@st.composite
def geometry(draw, max_channels=24):
    groups = draw(st.integers(1, 3))
    kernel = (draw(st.integers(1, 5)), draw(st.integers(1, 5)))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = tuple(draw(st.integers(0, 2)) for _ in range(4))
    extra = tuple(draw(st.integers(0, max(strides[i], dilation[i]) - 1)) for i in range(2))
    per_group_in = draw(st.integers(1, max_channels // groups))
    per_group_out = draw(st.integers(1, max_channels // groups))
    batch = draw(st.integers(1, 3))
    size = (draw(st.integers(1, 6)), draw(st.integers(1, 6)))
    out = [(size[i] - 1) * strides[i] - padding[i] - padding[2 + i]
           + dilation[i] * (kernel[i] - 1) + 1 + extra[i] for i in range(2)]
    if min(out) < 1:
        padding = (0, 0, 0, 0)
    return dict(groups=groups, kernel=kernel, strides=strides, dilation=dilation,
                padding=padding, extra=extra, per_group_in=per_group_in,
                per_group_out=per_group_out, batch=batch, size=size,
                seed=draw(st.integers(0, 2 ** 16)))


def make_case(g, dtype=np.float32):
    rng = np.random.default_rng(g["seed"])
    x = rng.standard_normal((g["batch"], g["per_group_in"] * g["groups"]) + g["size"])
    w = rng.standard_normal((g["per_group_in"] * g["groups"], g["per_group_out"])
                            + g["kernel"])
    attrs = dict(get_def(OP).make_attrs({
        "strides": g["strides"], "padding": g["padding"], "dilation": g["dilation"],
        "groups": g["groups"], "output_padding": g["extra"]}))
    expected = scatter_oracle(x, w, g["strides"], g["padding"], g["dilation"], g["groups"],
                              g["extra"])
    return x.astype(dtype), w.astype(dtype), attrs, expected


def kernel():
    return jitkernels.get_kernel(OP, "cpu")


ORIENTATIONS = {"pixel_major": dict(CHANNEL_MAJOR_UNITS=0),
                "channel_major": dict(CHANNEL_MAJOR_UNITS=1 << 30),
                "banded": dict(CHANNEL_MAJOR_UNITS=0, BAND_MIN_WORK=0, BAND_MIN_SAVING=0),
                "by_rule": {}}
"""How the product runs: pixel rows (in kernel-row bands where batch 1 and the columns
are (tap, channel)-ordered), channel-major, or as the cost rules choose."""


def orient(monkeypatch, orientation):
    for name, value in ORIENTATIONS[orientation].items():
        monkeypatch.setattr(conv_transpose, name, value)


@settings(max_examples=examples(40), deadline=None)
@given(g=geometry(), read_only=st.booleans(), parallel=st.booleans(),
       orientation=st.sampled_from(sorted(ORIENTATIONS)))
def test_matches_the_scatter_oracle(g, read_only, parallel, orientation):
    x, w, attrs, expected = make_case(g)
    w.flags.writeable = not read_only
    with pytest.MonkeyPatch.context() as monkeypatch:
        orient(monkeypatch, orientation)
        monkeypatch.setattr(conv_transpose, "PARALLEL_MIN_OUTPUTS", 0 if parallel else 1 << 40)
        if parallel:        # shared even on a busy machine, two threads at least
            monkeypatch.setattr(work_sharing, "others_busy", lambda: 0.0)
            monkeypatch.setattr(conv_transpose, "_threads", lambda: 2)
        got, = kernel()(x, w, **attrs)
    assert got.dtype == np.float32 and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@settings(max_examples=examples(15), deadline=None)
@given(g=geometry(), layouts=st.sampled_from([("NCHW", "OIHW"), ("NHWC", "HWOI"),
                                               ("NCHW", "HWIO"), ("NHWC", "IOHW")]))
def test_other_layouts(g, layouts):
    x, w, attrs, expected = make_case(g, np.float64)
    data_layout, kernel_layout = layouts
    attrs.update(data_layout=data_layout, kernel_layout=kernel_layout)
    x = np.ascontiguousarray(np.transpose(x, ["NCHW".index(c) for c in data_layout]))
    w = np.ascontiguousarray(np.transpose(w, ["IOHW".index(c) for c in kernel_layout]))
    got, = kernel()(x, w, **attrs)
    back = np.transpose(got, [data_layout.index(c) for c in "NCHW"])
    np.testing.assert_allclose(back, expected, rtol=1e-10, atol=1e-10)


@settings(max_examples=examples(15), deadline=None)
@given(g=geometry(max_channels=12))
def test_matches_torch(g):
    """torch's conv_transpose2d (symmetric padding only there)."""
    top, left = g["padding"][:2]
    g = dict(g, padding=(top, left, top, left))
    x, w, attrs, _ = make_case(g)
    got, = kernel()(x, w, **attrs)
    want = torch.nn.functional.conv_transpose2d(
        torch.from_numpy(x), torch.from_numpy(w), stride=g["strides"], padding=(top, left),
        output_padding=g["extra"], groups=g["groups"], dilation=g["dilation"]).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@settings(max_examples=examples(30), deadline=None)
@given(g=geometry(max_channels=40), data=st.data(),
       orientation=st.sampled_from(sorted(ORIENTATIONS)))
def test_into_fused_applies_the_epilogue(g, data, orientation):
    with pytest.MonkeyPatch.context() as monkeypatch:
        orient(monkeypatch, orientation)
        fused_case(g, data)


def fused_case(g, data):
    draw = data.draw
    kinds = draw(st.lists(st.sampled_from([ADD, MUL, RELU]), min_size=0, max_size=4))
    if draw(st.booleans()):
        kinds.insert(draw(st.integers(0, len(kinds))), RESIDUAL)
    x, w, attrs, expected = make_case(g)
    w.flags.writeable = draw(st.booleans())
    rng = np.random.default_rng(g["seed"] + 1)
    vectors = rng.standard_normal((len(kinds), expected.shape[1])).astype(np.float32)
    residual = rng.standard_normal(expected.shape).astype(np.float32)
    epilogue = Epilogue(np.array(kinds, np.int64), vectors,
                        residual if RESIDUAL in kinds else np.zeros((1, 1, 1, 1), np.float32))
    out = np.full(expected.shape, np.nan, np.float32)
    assert kernel().into_fused(out, x, w, epilogue=epilogue, **attrs)
    want = apply_steps_nchw(expected, kinds, vectors.astype(np.float64), residual)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_packed_product_and_weight_cache(monkeypatch):
    """A read-only float32 weight with a few-row product runs on the packed micro-kernel
    (where the CPU has it); a new weight at a reused address is not served stale."""
    calls = []
    real = packed_gemm.try_product

    def spy(a, b, transposed, out):
        taken = real(a, b, transposed, out)
        calls.append(taken)
        return taken
    monkeypatch.setattr(packed_gemm, "try_product", spy)
    g = dict(groups=1, kernel=(4, 4), strides=(2, 2), dilation=(1, 1), padding=(1, 1, 1, 1),
             extra=(0, 0), per_group_in=64, per_group_out=64, batch=1, size=(4, 4), seed=0)
    for seed in range(3):
        x, w, attrs, expected = make_case(dict(g, seed=seed))
        w.flags.writeable = False
        for _ in range(2):
            got, = kernel()(x, w, **attrs)
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
        del w
    assert calls and all(taken == packed_gemm.available() for taken in calls)


def test_float64_and_out_dtype():
    g = dict(groups=2, kernel=(3, 2), strides=(2, 1), dilation=(1, 2), padding=(1, 0, 0, 1),
             extra=(1, 0), per_group_in=3, per_group_out=5, batch=2, size=(4, 5), seed=4)
    x, w, attrs, expected = make_case(g, np.float64)
    got, = kernel()(x, w, **attrs)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    x, w = x.astype(np.float32), w.astype(np.float32)
    got, = kernel()(x, w, **dict(attrs, out_dtype="float64"))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_switched_off_runs_the_earlier_kernel(monkeypatch):
    g = dict(groups=2, kernel=(4, 4), strides=(2, 2), dilation=(1, 1), padding=(1, 1, 1, 1),
             extra=(0, 0), per_group_in=6, per_group_out=4, batch=2, size=(3, 4), seed=5)
    x, w, attrs, expected = make_case(g)
    monkeypatch.setenv(conv_transpose.ENV_SWITCH, "0")
    ran = []
    monkeypatch.setattr(conv_transpose, "conv2d_transpose_nchw",
                        lambda *args, **kwargs: ran.append(1))
    got, = kernel()(x, w, **attrs)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    out = np.empty(expected.shape, np.float32)
    assert kernel().into(out, x, w, **attrs)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
    epilogue = Epilogue(np.array([RELU], np.int64), np.zeros((1, 8), np.float32),
                        np.zeros((1, 1, 1, 1), np.float32))
    assert not kernel().into_fused(out, x, w, epilogue=epilogue, **attrs)
    assert not ran


def test_destination_forms_decline_what_they_do_not_handle():
    g = dict(groups=1, kernel=(3, 3), strides=(2, 2), dilation=(1, 1), padding=(1, 1, 1, 1),
             extra=(1, 1), per_group_in=4, per_group_out=6, batch=1, size=(3, 3), seed=6)
    x, w, attrs, expected = make_case(g)
    relu = Epilogue(np.array([RELU], np.int64), np.zeros((1, 6), np.float32),
                    np.zeros((1, 1, 1, 1), np.float32))
    k = kernel()
    wrong_shape = np.zeros((1, 6, 5, 5), np.float32)
    assert not k.into(wrong_shape, x, w, **attrs)
    assert not k.into_fused(wrong_shape, x, w, epilogue=relu, **attrs)
    assert not wrong_shape.any()
    out = np.zeros(expected.shape, np.float32)
    assert not k.into(out.astype(np.float64), x, w, **attrs)          # dtype of out
    assert not k.into(out, x, w, **dict(attrs, out_dtype="float64"))
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    assert not k.into(np.zeros((1, 6, 6, 6), np.float32), nhwc, w,
                      **dict(attrs, data_layout="NHWC"))
    unknown = Epilogue(np.array([RELU, 7], np.int64), np.zeros((2, 6), np.float32),
                       np.zeros((1, 1, 1, 1), np.float32))
    assert not k.into_fused(out, x, w, epilogue=unknown, **attrs)
    short = Epilogue(np.array([ADD], np.int64), np.zeros((1, 5), np.float32),
                     np.zeros((1, 1, 1, 1), np.float32))
    assert not k.into_fused(out, x, w, epilogue=short, **attrs)
    no_residual = Epilogue(np.array([RESIDUAL], np.int64), np.zeros((1, 6), np.float32),
                           np.zeros((1, 1, 1, 1), np.float32))
    assert not k.into_fused(out, x, w, epilogue=no_residual, **attrs)
    assert not out.any()
    ints = np.ones((1, 4, 3, 3), np.int32), np.ones((4, 6, 3, 3), np.int32)
    assert not k.into(np.zeros(expected.shape, np.int32), *ints, **attrs)
    got, = k(*ints, **attrs)                                    # the numpy reference
    np.testing.assert_array_equal(got, np.rint(scatter_oracle(
        *ints, (2, 2), (1, 1, 1, 1), (1, 1), 1, (1, 1))).astype(np.int32))


def test_empty_input_gives_the_epilogue_of_zero():
    x = np.zeros((1, 0, 3, 3), np.float32)
    w = np.zeros((0, 4, 2, 2), np.float32)
    attrs = dict(get_def(OP).make_attrs({"strides": (2, 2)}))
    vectors = np.arange(8, dtype=np.float32).reshape(2, 4) - 3
    epilogue = Epilogue(np.array([ADD, RELU], np.int64), vectors,
                        np.zeros((1, 1, 1, 1), np.float32))
    out = np.full((1, 4, 6, 6), np.nan, np.float32)
    assert kernel().into_fused(out, x, w, epilogue=epilogue, **attrs)
    np.testing.assert_array_equal(out, np.broadcast_to(
        np.maximum(vectors[0], 0)[None, :, None, None], out.shape))


def deconv_module(channels, out_channels, size, tail):
    """``tail(conv2d_transpose(x, w, 4x4/2, pad 1))`` with per-channel constants bound."""
    x = irlib.var("x", shape=(1, channels, size, size))
    w = irlib.var("w", shape=(channels, out_channels, 4, 4))
    y = irlib.nn.conv2d_transpose(x, w, channels=out_channels, kernel_size=(4, 4),
                                  strides=(2, 2), padding=(1, 1))
    s = irlib.var("s", shape=(out_channels, 1, 1))
    b = irlib.var("b", shape=(out_channels,))
    r = irlib.var("r", shape=(1, out_channels, 2 * size, 2 * size))
    body = tail(y, s, b, r)
    return irlib.IRModule.from_expr(irlib.Function([x, w, s, b, r], body))


TAILS = {
    "bn_relu": (lambda y, s, b, r: irlib.nn.relu(irlib.add(irlib.multiply(y, s),
                                                           irlib.reshape(b, (-1, 1, 1)))),
                lambda y, s, b, r: np.maximum(y * s + b[:, None, None], 0), True),
    "bias_residual": (lambda y, s, b, r: irlib.nn.relu(irlib.add(irlib.nn.bias_add(y, b), r)),
                      lambda y, s, b, r: np.maximum(y + b[:, None, None] + r, 0), True),
    "tanh": (lambda y, s, b, r: irlib.tanh(irlib.multiply(y, s)),
             lambda y, s, b, r: np.tanh(y * s), False),
}


@pytest.mark.parametrize("tail", sorted(TAILS))
def test_built_deconv_groups(tail, monkeypatch):
    """A built NCHW deconvolution + per-channel steps group: the fused form runs where the
    chain is one it knows (with the epilogue handed to the kernel), the result matches the
    oracle, and with the fusion switched off too."""
    make, numpy_tail, fusable = TAILS[tail]
    rng = np.random.default_rng(7)
    channels, out_channels, size = 24, 20, 5
    params = {"w": rng.standard_normal((channels, out_channels, 4, 4)).astype(np.float32),
              "s": rng.standard_normal((out_channels, 1, 1)).astype(np.float32),
              "b": rng.standard_normal(out_channels).astype(np.float32)}
    x = rng.standard_normal((1, channels, size, size)).astype(np.float32)
    r = rng.standard_normal((1, out_channels, 2 * size, 2 * size)).astype(np.float32)
    y = scatter_oracle(x, params["w"], (2, 2), (1, 1, 1, 1), (1, 1), 1, (0, 0))
    want = numpy_tail(y, params["s"], params["b"], r)
    seen = []
    real = conv_transpose.conv2d_transpose_nchw

    def spy(*args, **kwargs):
        seen.append(len(args) > 8 and args[8] is not None or "epilogue" in kwargs)
        return real(*args, **kwargs)
    monkeypatch.setattr(conv_transpose, "conv2d_transpose_nchw", spy)
    for setting in ("1", "0"):
        monkeypatch.setenv("IRLIB_FUSED_EPILOGUE", setting)
        seen.clear()
        with PassContext(opt_level=3):
            factory = interp.build(deconv_module(channels, out_channels, size, make), "cpu",
                                   params=params)
        gmod = interp.graph_executor.GraphModule(factory["default"](interp.cpu(0)))
        gmod.set_input("x", x)
        gmod.set_input("r", r)
        gmod.run()
        np.testing.assert_allclose(gmod.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)
        assert seen == [fusable and setting == "1"]


def test_kernel_row_bands_skip_the_padding_rows(monkeypatch):
    """DCGAN's 4x4/2 pad-1 geometry on a 4x4 input: kernel row 0 reaches the output from
    input rows 1-3 only, rows 1-2 from all, row 3 from rows 0-2, so the product runs as
    three bands of 12, 16 and 12 pixel rows; same result as the oracle."""
    rows_seen = []
    real = conv_transpose._product

    def spy(rows, matrix, out):
        rows_seen.append((rows.shape[0], matrix.shape[1]))
        return real(rows, matrix, out)
    monkeypatch.setattr(conv_transpose, "_product", spy)
    g = dict(groups=1, kernel=(4, 4), strides=(2, 2), dilation=(1, 1), padding=(1, 1, 1, 1),
             extra=(0, 0), per_group_in=256, per_group_out=64, batch=1, size=(4, 4), seed=9)
    x, w, attrs, expected = make_case(g)
    w.flags.writeable = False
    got, = kernel()(x, w, **attrs)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    assert rows_seen == [(12, 4 * 64), (16, 8 * 64), (12, 4 * 64)]
    assert conv_transpose._row_bands(4, 4, 4, 2, 1, 1, 8, 256 * 1024) == [
        (0, 1, 1, 4), (1, 3, 0, 4), (3, 4, 0, 3)]
    assert conv_transpose._row_bands(3, 5, 5, 1, 1, 1, 5, 1 << 20) == [
        (0, 1, 1, 5), (1, 2, 0, 5), (2, 3, 0, 4)]
    assert conv_transpose._row_bands(3, 5, 5, 1, 1, 0, 7, 1 << 20) is None    # no padding


def test_permuted_weight_cached_by_the_memory_it_views(monkeypatch):
    """Fresh read-only views of one constant share one permuted copy; another view of the
    same memory (a different layout) gets its own."""
    permuted = []
    real = conv_transpose._permute

    def spy(iohw, groups):
        permuted.append(iohw.shape)
        return real(iohw, groups)
    monkeypatch.setattr(conv_transpose, "_permute", spy)
    g = dict(groups=1, kernel=(3, 3), strides=(2, 2), dilation=(1, 1), padding=(1, 1, 1, 1),
             extra=(1, 1), per_group_in=8, per_group_out=8, batch=1, size=(5, 5), seed=11)
    x, w, attrs, expected = make_case(g)
    storage = w.reshape(-1).copy()
    storage.flags.writeable = False
    for _ in range(3):
        got, = kernel()(x, storage.reshape(w.shape), **attrs)     # a new view each call
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    assert len(permuted) == 1
    hwoi = np.ascontiguousarray(w.transpose(2, 3, 1, 0))
    hwoi.flags.writeable = False
    got, = kernel()(x, hwoi, **dict(attrs, kernel_layout="HWOI"))
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    assert len(permuted) == 2


@pytest.mark.parametrize("orientation", sorted(ORIENTATIONS))
@pytest.mark.parametrize("limit", [1, 1 << 40])
def test_batches_in_chunks_of_images(orientation, limit, monkeypatch):
    """A batch whose columns exceed COLUMNS_LIMIT runs a few images at a time (here one):
    the outputs and the residual are addressed by the chunk's first image."""
    orient(monkeypatch, orientation)
    monkeypatch.setattr(conv_transpose, "COLUMNS_LIMIT", limit)
    g = dict(groups=2, kernel=(3, 4), strides=(2, 1), dilation=(1, 2), padding=(1, 2, 0, 1),
             extra=(1, 0), per_group_in=5, per_group_out=20, batch=3, size=(4, 6), seed=12)
    x, w, attrs, expected = make_case(g)
    w.flags.writeable = False
    rng = np.random.default_rng(13)
    kinds = [MUL, RESIDUAL, ADD, RELU]
    vectors = rng.standard_normal((4, expected.shape[1])).astype(np.float32)
    residual = rng.standard_normal(expected.shape).astype(np.float32)
    out = np.full(expected.shape, np.nan, np.float32)
    assert kernel().into_fused(out, x, w, epilogue=Epilogue(np.array(kinds, np.int64),
                                                            vectors, residual), **attrs)
    want = apply_steps_nchw(expected, kinds, vectors.astype(np.float64), residual)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
