"""The nn builder's neural ops (activations, norms, convolutions, resizing, timestep
embedding, scaled dot-product attention) against torch.nn.functional (or formulas written
here), exported in tiny modules and run on the interpreter and the graph executor; symbolic
dims exported once and run at several sizes; errors naming the module path."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irlib.frontend import nn
from irlib.frontend.nn import OpError, op

from ._run_nn import Apply, export, export_run, run

torch = pytest.importorskip("torch")
F = torch.nn.functional
pytest.importorskip("interp")

SETTINGS = settings(max_examples=12, deadline=None)
FEW = settings(max_examples=4, deadline=None)


def rand(shape, seed, dtype="float32"):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def close(ours, theirs, tol=1e-5):
    theirs = theirs.detach().numpy() if hasattr(theirs, "detach") else np.asarray(theirs)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    np.testing.assert_allclose(ours, theirs, rtol=10 * tol, atol=tol)


def t(array):
    return torch.from_numpy(np.ascontiguousarray(array))


# -- activations ----------------------------------------------------------------------------------

ACTIVATIONS = {
    "relu": (op.relu, F.relu),
    "silu": (op.silu, F.silu),
    "gelu": (op.gelu, F.gelu),
    "gelu_tanh": (lambda x: op.gelu(x, approximate="tanh"),
                  lambda x: F.gelu(x, approximate="tanh")),
    "softmax": (op.softmax, lambda x: F.softmax(x, dim=-1)),
    "softmax_0": (lambda x: op.softmax(x, axis=0), lambda x: F.softmax(x, dim=0)),
}


@SETTINGS
@given(kind=st.sampled_from(sorted(ACTIVATIONS)),
       shape=st.lists(st.integers(1, 5), min_size=1, max_size=4), seed=st.integers(0, 99))
def test_activations_match_torch(kind, shape, seed):
    ours, theirs = ACTIVATIONS[kind]
    x = 3 * rand(shape, seed)
    close(export_run(Apply(ours), [x]), theirs(t(x)))


@pytest.mark.parametrize("kind", sorted(ACTIVATIONS))
def test_activations_on_the_graph_executor_with_a_symbolic_dim(kind):
    ours, theirs = ACTIVATIONS[kind]
    mod, params = export(Apply(ours), (["n", 6], "float32"))
    for n in (1, 4):
        x = 3 * rand((n, 6), n)
        close(run(mod, params, x, executor="graph"), theirs(t(x)))


# -- normalisation --------------------------------------------------------------------------------

@SETTINGS
@given(shape=st.lists(st.integers(1, 5), min_size=2, max_size=4), trailing=st.integers(1, 2),
       affine=st.booleans(), eps=st.sampled_from([1e-5, 1e-3]), seed=st.integers(0, 99))
def test_layer_norm_matches_torch(shape, trailing, affine, eps, seed):
    normalized = shape[-trailing:]
    x = rand(shape, seed)
    w, b = rand(normalized, seed + 1), rand(normalized, seed + 2)
    if affine:
        fn = lambda x, w, b: op.layer_norm(x, normalized, w, b, eps=eps)  # noqa: E731
        out = export_run(Apply(fn), [x, w, b])
        close(out, F.layer_norm(t(x), normalized, t(w), t(b), eps=eps))
    else:
        arg = normalized[0] if trailing == 1 else normalized
        out = export_run(Apply(lambda x: op.layer_norm(x, arg, eps=eps)), [x])
        close(out, F.layer_norm(t(x), normalized, eps=eps))


@SETTINGS
@given(shape=st.lists(st.integers(1, 5), min_size=2, max_size=4), data=st.data(),
       seed=st.integers(0, 99))
def test_rms_norm_matches_formula(shape, data, seed):
    axes = sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1)))
    x, w = rand(shape, seed), rand([shape[a] for a in axes], seed + 1)
    out = export_run(Apply(lambda x, w: op.rms_norm(x, w, axes, epsilon=1e-5)), [x, w])
    expected = x / np.sqrt(np.mean(x.astype("float64") ** 2, axis=tuple(axes), keepdims=True)
                           + 1e-5)
    weight_shape = [s if i in axes else 1 for i, s in enumerate(shape)]
    close(out, expected * w.reshape(weight_shape))


def test_rms_norm_last_axis_matches_torch():
    x, w = rand((2, 3, 8), 0), rand((8,), 1)
    out = export_run(Apply(lambda x, w: op.rms_norm(x, w, -1)), [x, w])
    close(out, F.rms_norm(t(x), [8], t(w), eps=1e-5))


@SETTINGS
@given(groups=st.sampled_from([1, 2, 3]), per_group=st.integers(1, 3),
       spatial=st.lists(st.integers(1, 4), min_size=0, max_size=2), affine=st.booleans(),
       seed=st.integers(0, 99))
def test_group_norm_matches_torch(groups, per_group, spatial, affine, seed):
    channels = groups * per_group
    x = rand([2, channels] + spatial, seed)
    w, b = rand([channels], seed + 1), rand([channels], seed + 2)
    if affine:
        out = export_run(Apply(lambda x, w, b: op.group_norm(x, groups, w, b)), [x, w, b])
        close(out, F.group_norm(t(x), groups, t(w), t(b), eps=1e-5))
    else:
        out = export_run(Apply(lambda x: op.group_norm(x, groups, None, None)), [x])
        close(out, F.group_norm(t(x), groups, eps=1e-5))


def _group_norm_numpy(x, groups, w, b, channel_axis, axes, eps=1e-5):
    """Group norm by its definition: channels split into groups on channel_axis, statistics
    over each group's channels and ``axes``."""
    shape = list(x.shape)
    grouped = x.astype("float64").reshape(shape[:channel_axis] + [groups, -1]
                                          + shape[channel_axis + 1:])
    reduce = tuple([channel_axis + 1] + [a + 1 if a > channel_axis else a for a in axes])
    mean = grouped.mean(axis=reduce, keepdims=True)
    var = ((grouped - mean) ** 2).mean(axis=reduce, keepdims=True)
    out = ((grouped - mean) / np.sqrt(var + eps)).reshape(shape)
    along = [1] * x.ndim
    along[channel_axis] = -1
    return out * w.reshape(along) + b.reshape(along)


@FEW
@given(seed=st.integers(0, 99), seq=st.integers(1, 5))
def test_group_norm_channels_last_over_chosen_axes(seed, seq):
    # Relax's diffusers Attention: [batch, seq, channels], channel_axis=2, axes=[1]
    x, w, b = rand((2, seq, 6), seed), rand((6,), seed + 1), rand((6,), seed + 2)
    out = export_run(Apply(lambda x, w, b: op.group_norm(x, 3, w, b, channel_axis=2,
                                                         axes=[1])), [x, w, b])
    close(out, _group_norm_numpy(x, 3, w, b, 2, [1]))
    # statistics over a subset of the spatial axes (not the op's standard case)
    x4 = rand((2, 4, 3, seq), seed)
    w4, b4 = rand((4,), seed + 3), rand((4,), seed + 4)
    out = export_run(Apply(lambda x, w, b: op.group_norm(x, 2, w, b, axes=[3])), [x4, w4, b4])
    close(out, _group_norm_numpy(x4, 2, w4, b4, 1, [3]))


def test_norms_with_a_symbolic_length_on_both_executors():
    def fn(x, w, b):
        return op.layer_norm(x, 8, w, b) + op.group_norm(op.permute_dims(x, [0, 2, 1]), 2, w, b,
                                                         channel_axis=1, axes=[2]).permute_dims(
                                                             0, 2, 1)
    mod, params = export(Apply(fn), ([2, "n", 8], "float32"), ([8], "float32"), ([8], "float32"))
    for n in (1, 3, 7):
        x, w, b = rand((2, n, 8), n), rand((8,), 1), rand((8,), 2)
        expected = F.layer_norm(t(x), [8], t(w), t(b)) + F.group_norm(
            t(x).permute(0, 2, 1), 2, t(w), t(b)).permute(0, 2, 1)
        for executor in ("debug", "graph"):
            close(run(mod, params, x, w, b, executor=executor), expected)


# -- convolution ----------------------------------------------------------------------------------

@st.composite
def conv_cases(draw, dims):
    groups = draw(st.sampled_from([1, 2]))
    cin, cout = groups * draw(st.integers(1, 3)), groups * draw(st.integers(1, 3))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    dilation = draw(st.integers(1, 2))
    padding = draw(st.one_of(st.integers(0, 2), st.sampled_from(["same", "valid"])))
    stride = 1 if padding == "same" else draw(st.integers(1, 2))
    spatial = [draw(st.integers(dilation * (k - 1) + 1, 8)) for k in kernel]
    return dict(groups=groups, cin=cin, cout=cout, kernel=kernel, dilation=dilation,
                padding=padding, stride=stride, spatial=spatial, bias=draw(st.booleans()),
                seed=draw(st.integers(0, 99)))


def _conv_check(case, ours, theirs, executor="debug"):
    x = rand([2, case["cin"]] + case["spatial"], case["seed"])
    w = rand([case["cout"], case["cin"] // case["groups"], *case["kernel"]], case["seed"] + 1)
    b = rand([case["cout"]], case["seed"] + 2)
    kw = dict(stride=case["stride"], padding=case["padding"], dilation=case["dilation"],
              groups=case["groups"])
    if case["bias"]:
        out = export_run(Apply(lambda x, w, b: ours(x, w, b, **kw)), [x, w, b],
                         executor=executor)
    else:
        out = export_run(Apply(lambda x, w: ours(x, w, None, **kw)), [x, w], executor=executor)
    close(out, theirs(t(x), t(w), t(b) if case["bias"] else None, **kw), tol=1e-4)


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@SETTINGS
@given(case=conv_cases(1))
def test_conv1d_matches_torch(case):
    _conv_check(case, op.conv1d, F.conv1d)


@SETTINGS
@given(case=conv_cases(2))
def test_conv2d_matches_torch(case):
    _conv_check(case, op.conv2d, F.conv2d)


@FEW
@given(case=conv_cases(2))
def test_conv2d_on_the_graph_executor(case):
    _conv_check(case, op.conv2d, F.conv2d, executor="graph")


@SETTINGS
@given(groups=st.sampled_from([1, 2]), cin=st.integers(1, 2), cout=st.integers(1, 3),
       kernel=st.integers(1, 4), stride=st.integers(1, 3), padding=st.integers(0, 2),
       dilation=st.integers(1, 2), extra=st.integers(0, 2), width=st.integers(1, 6),
       bias=st.booleans(), seed=st.integers(0, 99))
def test_conv1d_transpose_matches_torch(groups, cin, cout, kernel, stride, padding, dilation,
                                        extra, width, bias, seed):
    output_padding = extra % max(stride, dilation)       # torch: < stride or < dilation
    out_width = (width - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1
    if out_width < 1:
        return
    cin, cout = groups * cin, groups * cout
    x, w, b = rand((2, cin, width), seed), rand((cin, cout // groups, kernel), seed + 1), \
        rand((cout,), seed + 2)
    kw = dict(stride=stride, padding=padding, output_padding=output_padding, groups=groups,
              dilation=dilation)
    fn = lambda x, w, b: op.conv1d_transpose(x, w, b if bias else None, **kw)  # noqa: E731
    close(export_run(Apply(fn), [x, w, b]),
          F.conv_transpose1d(t(x), t(w), t(b) if bias else None, **kw), tol=1e-4)


def test_conv1d_with_a_symbolic_width_on_both_executors():
    fn = lambda x, w, b: op.conv1d(x, w, b, padding="same", dilation=2)  # noqa: E731
    mod, params = export(Apply(fn), ([1, 3, "w"], "float32"), ([4, 3, 3], "float32"),
                         ([4], "float32"))
    w, b = rand((4, 3, 3), 1), rand((4,), 2)
    for width in (1, 5, 9):
        x = rand((1, 3, width), width)
        expected = F.conv1d(t(x), t(w), t(b), padding="same", dilation=2)
        for executor in ("debug", "graph"):
            close(run(mod, params, x, w, b, executor=executor), expected, tol=1e-4)


# -- interpolate ----------------------------------------------------------------------------------

@SETTINGS
@given(mode=st.sampled_from(["nearest", "bilinear", "bicubic"]), align=st.booleans(),
       height=st.integers(1, 6), width=st.integers(1, 6), use_size=st.booleans(),
       out_h=st.integers(1, 9), out_w=st.integers(1, 9),
       factor=st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0]), seed=st.integers(0, 99))
def test_interpolate_matches_torch(mode, align, height, width, use_size, out_h, out_w, factor,
                                   seed):
    align = align if mode != "nearest" else None
    x = rand((2, 3, height, width), seed)
    if use_size:
        kw, torch_kw = {"size": (out_h, out_w)}, {"size": (out_h, out_w)}
    else:
        if int(height * factor) < 1 or int(width * factor) < 1:
            return
        kw = {"scale_factor": factor}
        torch_kw = {"scale_factor": factor, "recompute_scale_factor": True}
    out = export_run(Apply(lambda x: op.interpolate(x, mode=mode, align_corners=align, **kw)),
                     [x])
    close(out, F.interpolate(t(x), mode=mode, align_corners=align, **torch_kw), tol=1e-4)


def test_interpolate_linear_on_3d_input_and_on_the_graph_executor():
    x = rand((1, 2, 5), 0)
    out = export_run(Apply(lambda x: op.interpolate(x, size=8, mode="linear")), [x])
    close(out, F.interpolate(t(x), size=8, mode="linear"))
    x = rand((1, 2, 4, 5), 1)
    fn = lambda x: op.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)  # noqa
    close(export_run(Apply(fn), [x], executor="graph"),
          F.interpolate(t(x), scale_factor=2, mode="bilinear", align_corners=True), tol=1e-4)


# -- timestep embedding ---------------------------------------------------------------------------

def _diffusers_timestep_embedding(timesteps, embedding_dim, flip_sin_to_cos,
                                  downscale_freq_shift, scale, max_period):
    """diffusers' get_timestep_embedding, written out in torch."""
    half_dim = embedding_dim // 2
    exponent = -math.log(max_period) * torch.arange(0, half_dim, dtype=torch.float32)
    exponent = exponent / (half_dim - downscale_freq_shift)
    emb = torch.exp(exponent)
    emb = timesteps[:, None].float() * emb[None, :]
    emb = scale * emb
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)
    if flip_sin_to_cos:
        emb = torch.cat([emb[:, half_dim:], emb[:, :half_dim]], dim=-1)
    if embedding_dim % 2 == 1:
        emb = F.pad(emb, (0, 1, 0, 0))
    return emb


@SETTINGS
@given(n=st.integers(1, 5), dim=st.integers(2, 17), flip=st.booleans(),
       shift=st.sampled_from([0, 1, 0.5]), scale=st.sampled_from([1, 2.5]),
       max_period=st.sampled_from([10000, 100]), int_steps=st.booleans(), seed=st.integers(0, 9))
def test_get_timestep_embedding_matches_diffusers(n, dim, flip, shift, scale, max_period,
                                                  int_steps, seed):
    if dim // 2 - shift == 0:
        return
    rng = np.random.default_rng(seed)
    steps = rng.integers(0, 1000, n).astype("int64") if int_steps \
        else (rng.random(n) * 1000).astype("float32")

    def fn(x):
        return op.get_timestep_embedding(x, dim, flip_sin_to_cos=flip,
                                         downscale_freq_shift=shift, scale=scale,
                                         max_period=max_period)
    out = export_run(Apply(fn), [steps])
    expected = _diffusers_timestep_embedding(t(steps), dim, flip, shift, scale, max_period)
    # arguments up to ~2500 rad: float32 rounding of the argument dominates
    close(out, expected, tol=2e-3)


# -- scaled dot-product attention -----------------------------------------------------------------

def _torch_sdpa(q, k, v, mask=None, causal=False, scale=None):
    """torch's sdpa on Relax-layout ([b, s, h, d]) arrays; the result in Relax layout."""
    tq, tk, tv = (t(a).transpose(1, 2) for a in (q, k, v))
    if causal == "BottomRight":
        sq, skv = q.shape[1], k.shape[1]
        mask, causal = torch.ones(sq, skv, dtype=torch.bool).tril(skv - sq), False
    elif mask is not None:
        mask = t(mask)
    out = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=mask, is_causal=bool(causal),
                                         scale=scale, enable_gqa=tk.shape[1] != tq.shape[1])
    return out.transpose(1, 2)


@st.composite
def attention_cases(draw):
    heads_kv = draw(st.integers(1, 2))
    case = dict(batch=draw(st.integers(1, 2)), heads_kv=heads_kv,
                heads=heads_kv * draw(st.integers(1, 2)), seq_q=draw(st.integers(1, 5)),
                head_dim=draw(st.integers(1, 8)), value_dim=draw(st.integers(1, 6)),
                causal=draw(st.sampled_from([False, True, "BottomRight"])),
                mask=draw(st.sampled_from([None, "bool", "float"])),
                scale=draw(st.sampled_from([None, 0.3])), seed=draw(st.integers(0, 99)))
    case["seq_kv"] = draw(st.integers(case["seq_q"], 7))   # no fully masked causal rows
    return case


def _attention_inputs(c):
    q = rand((c["batch"], c["seq_q"], c["heads"], c["head_dim"]), c["seed"])
    k = rand((c["batch"], c["seq_kv"], c["heads_kv"], c["head_dim"]), c["seed"] + 1)
    v = rand((c["batch"], c["seq_kv"], c["heads_kv"], c["value_dim"]), c["seed"] + 2)
    return q, k, v


def _mask(c):
    shape = (c["batch"], 1, c["seq_q"], c["seq_kv"])
    if c["mask"] == "bool":
        mask = np.random.default_rng(c["seed"]).random(shape) < 0.7
        mask[..., -1] = True                                  # every row sees some key
        if c["causal"]:
            mask[..., 0] = True
        return mask
    return rand(shape, c["seed"] + 3) if c["mask"] == "float" else None


@settings(max_examples=20, deadline=None)
@given(c=attention_cases())
def test_scaled_dot_product_attention_matches_torch(c):
    q, k, v = _attention_inputs(c)
    mask = _mask(c)
    if mask is not None and c["causal"]:
        c["causal"] = False                                   # torch refuses both at once
    kw = dict(is_causal=c["causal"], scale=c["scale"])
    if mask is None:
        fn = lambda q, k, v: op.scaled_dot_product_attention(q, k, v, **kw)  # noqa: E731
        out = export_run(Apply(fn), [q, k, v])
    else:
        fn = lambda q, k, v, m: op.scaled_dot_product_attention(q, k, v, m, **kw)  # noqa
        out = export_run(Apply(fn), [q, k, v, mask])
    close(out, _torch_sdpa(q, k, v, mask, c["causal"], c["scale"]), tol=1e-5)


@pytest.mark.parametrize("causal", [False, True, "BottomRight"])
def test_attention_with_symbolic_lengths_exported_once(causal):
    """Prefill and decode shapes of one export; the causal mask follows the runtime lengths
    (BottomRight: the queries are the last seq_q positions, as when decoding with a cache)."""
    fn = lambda q, k, v: op.scaled_dot_product_attention(q, k, v, is_causal=causal)  # noqa
    mod, params = export(Apply(fn), ([1, "n", 4, 8], "float32"), ([1, "m", 2, 8], "float32"),
                         ([1, "m", 2, 8], "float32"))
    for seq_q, seq_kv in ((4, 4), (1, 6), (3, 7)):
        c = dict(batch=1, heads=4, heads_kv=2, seq_q=seq_q, seq_kv=seq_kv, head_dim=8,
                 value_dim=8, seed=seq_kv)
        q, k, v = _attention_inputs(c)
        expected = _torch_sdpa(q, k, v, causal=causal)
        for executor in ("debug", "graph"):
            close(run(mod, params, q, k, v, executor=executor), expected)


def test_is_causal_true_is_top_left_as_in_relax_and_torch():
    q, k, v = _attention_inputs(dict(batch=1, heads=1, heads_kv=1, seq_q=1, seq_kv=3,
                                     head_dim=2, value_dim=2, seed=0))
    fn = lambda q, k, v: op.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa
    out = export_run(Apply(fn), [q, k, v])
    np.testing.assert_allclose(out[0, 0, 0], v[0, 0, 0], rtol=1e-6)  # sees key 0 only
    fn = lambda q, k, v: op.scaled_dot_product_attention(q, k, v, is_causal="BottomRight")  # noqa
    scores = (q[0, 0, 0] @ k[0, :, 0].T) / math.sqrt(2)
    weights = np.exp(scores - scores.max())
    np.testing.assert_allclose(export_run(Apply(fn), [q, k, v])[0, 0, 0],
                               weights / weights.sum() @ v[0, :, 0], rtol=1e-5)


# -- errors ---------------------------------------------------------------------------------------

class Block(nn.Module):
    def __init__(self, fn):
        self.inner = Apply(fn)

    def forward(self, a, b=None, c=None):
        return self.inner(*[x for x in (a, b, c) if x is not None])


@pytest.mark.parametrize("fn, specs, match", [
    (lambda x, w: op.conv1d(x, w), [([1, 3, 5], "float32"), ([4, 2, 3], "float32")],
     "input channels"),
    (lambda x, w: op.conv2d(x, w), [([1, 3, 5, 5], "float32"), ([4, 3, 3, 3], "float64")],
     "dtype"),
    (lambda x, w: op.conv1d(x, w, stride=2, padding="same"),
     [([1, 3, 5], "float32"), ([4, 3, 3], "float32")], "stride 1"),
    (lambda x, w: op.conv1d(x, w, padding="full"),
     [([1, 3, 5], "float32"), ([4, 3, 3], "float32")], "padding"),
    (lambda x: op.gelu(x, approximate="erf"), [([3], "float32")], "approximate"),
    (lambda x: op.silu(x), [([3], "int32")], "float dtype"),
    (lambda x: op.layer_norm(x, 5), [([2, 4], "float32")], "normalized_shape"),
    (lambda x: op.group_norm(x, 3, None, None), [([2, 4, 3], "float32")], "num_groups"),
    (lambda x: op.interpolate(x, size=4, mode="area"), [([1, 1, 2, 2], "float32")], "mode"),
    (lambda x: op.interpolate(x), [([1, 1, 2, 2], "float32")], "exactly one"),
    (lambda x: op.get_timestep_embedding(x, 4), [([2, 2], "float32")], "1-D"),
    (lambda q, k, v: op.scaled_dot_product_attention(q, k, v),
     [([1, 2, 3, 4], "float32"), ([1, 2, 2, 4], "float32"), ([1, 2, 2, 4], "float32")],
     "divide"),
    (lambda q, k, v: op.scaled_dot_product_attention(q, k, v, is_causal="left"),
     [([1, 2, 2, 4], "float32")] * 3, "is_causal"),
    (lambda q, k: op.scaled_dot_product_attention(q, k, k),
     [([1, 2, 2, 4], "float32"), ([1, 2, 2, 4], "float16")], "dtype"),
])
def test_errors_name_the_module_path(fn, specs, match):
    names = ["a", "b", "c"]
    spec_dict = {names[i]: nn.spec.Tensor(shape, dtype) for i, (shape, dtype) in enumerate(specs)}
    with pytest.raises(OpError, match=match) as info:
        Block(fn).export_tvm({"forward": spec_dict})
    assert "model.inner" in str(info.value)


# -- signatures -----------------------------------------------------------------------------------

R = "required"
REFERENCE_SIGNATURES = {     # from relax-frontend-api.txt: (parameter, default or R)
    "relu": [("x", R), ("name", "relu")],
    "silu": [("x", R), ("name", "silu")],
    "gelu": [("x", R), ("approximate", None), ("name", "gelu")],
    "softmax": [("x", R), ("axis", -1), ("name", "softmax")],
    "layer_norm": [("x", R), ("normalized_shape", R), ("weight", None), ("bias", None),
                   ("eps", 1e-05), ("name", "layer_norm")],
    "rms_norm": [("x", R), ("weight", R), ("axes", R), ("epsilon", 1e-05), ("name", "rms_norm")],
    "group_norm": [("x", R), ("num_groups", R), ("weight", R), ("bias", R), ("eps", 1e-05),
                   ("channel_axis", 1), ("axes", None), ("name", "group_norm")],
    "conv1d": [("x", R), ("weight", R), ("bias", None), ("stride", 1), ("padding", 0),
               ("dilation", 1), ("groups", 1), ("name", "conv1d")],
    "conv1d_transpose": [("x", R), ("weight", R), ("bias", None), ("stride", 1), ("padding", 0),
                         ("output_padding", 0), ("dilation", 1), ("groups", 1),
                         ("name", "conv1d_transpose")],
    "conv2d": [("x", R), ("weight", R), ("bias", None), ("stride", 1), ("padding", 0),
               ("dilation", 1), ("groups", 1), ("name", "conv2d")],
    "interpolate": [("x", R), ("size", None), ("scale_factor", None), ("mode", "nearest"),
                    ("align_corners", None), ("recompute_scale_factor", None),
                    ("antialias", None), ("name", "interpolate")],
    "get_timestep_embedding": [("x", R), ("embedding_dim", R), ("flip_sin_to_cos", False),
                               ("downscale_freq_shift", 1), ("scale", 1), ("max_period", 10000),
                               ("name", "get_timestep_embedding")],
    "scaled_dot_product_attention": [("query", R), ("key", R), ("value", R), ("attn_mask", None),
                                     ("is_causal", False), ("scale", None),
                                     ("name", "scaled_dot_product_attention")],
}


@pytest.mark.parametrize("name", sorted(REFERENCE_SIGNATURES))
def test_signatures_match_the_reference(name):
    import inspect
    for func in (getattr(op, name), getattr(nn, name)):
        params = inspect.signature(func).parameters.values()
        got = [(p.name, R if p.default is inspect.Parameter.empty else p.default) for p in params]
        assert got == REFERENCE_SIGNATURES[name]
