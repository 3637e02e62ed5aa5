"""The nn builder's layers against torch.nn with the same weights (loaded with
``load_state_dict(torch_layer.state_dict())``): hypothesis over sizes and attributes, run on
the interpreter (and the graph executor for a few); symbolic dims exported once and run at
several lengths; Linear's out_dtype and to(); errors naming the module path."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from irlib.frontend import nn
from irlib.frontend.nn import OpError, op, spec

from ._run_nn import export, export_run, run

torch = pytest.importorskip("torch")
pytest.importorskip("interp")

SETTINGS = settings(max_examples=12, deadline=None)


def rand(shape, seed, dtype="float32"):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def randomize(torch_layer, seed):
    """Fill a torch layer's parameters with seeded normal values (not its init defaults, so
    that e.g. a LayerNorm's weight is not all ones)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in torch_layer.parameters():
            param.copy_(torch.randn(param.shape, generator=gen))
    return torch_layer


def check(ours, theirs, x, tol=1e-5, executor="debug"):
    """Load ``theirs``' state_dict into ``ours``, run both on ``x`` and compare."""
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict(theirs.state_dict())
    out = export_run(ours, [x], executor=executor)
    with torch.no_grad():
        expected = theirs(torch.from_numpy(x)).numpy()
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=10 * tol, atol=tol)


@SETTINGS
@given(n_in=st.integers(1, 9), n_out=st.integers(1, 9), bias=st.booleans(),
       batch=st.lists(st.integers(1, 3), min_size=0, max_size=2), seed=st.integers(0, 99))
def test_linear_matches_torch(n_in, n_out, bias, batch, seed):
    check(nn.Linear(n_in, n_out, bias=bias),
          randomize(torch.nn.Linear(n_in, n_out, bias=bias), seed), rand(batch + [n_in], seed))


@SETTINGS
@given(groups=st.sampled_from([1, 2]), cin=st.integers(1, 2), cout=st.integers(1, 2),
       kernel=st.integers(1, 3), stride=st.integers(1, 2), padding=st.integers(0, 2),
       dilation=st.integers(1, 2), bias=st.booleans(), width=st.integers(5, 8),
       seed=st.integers(0, 99))
def test_conv1d_layer_matches_torch(groups, cin, cout, kernel, stride, padding, dilation, bias,
                                    width, seed):
    args = (groups * cin, groups * cout, kernel, stride, padding, dilation, groups, bias)
    check(nn.Conv1D(*args), randomize(torch.nn.Conv1d(*args), seed),
          rand((2, groups * cin, width), seed), tol=1e-4)


@SETTINGS
@given(groups=st.sampled_from([1, 2]), cin=st.integers(1, 2), cout=st.integers(1, 2),
       kernel=st.integers(1, 3), stride=st.integers(1, 2), padding=st.integers(0, 1),
       dilation=st.integers(1, 2), bias=st.booleans(), size=st.integers(5, 7),
       seed=st.integers(0, 99))
def test_conv2d_layer_matches_torch(groups, cin, cout, kernel, stride, padding, dilation, bias,
                                    size, seed):
    args = (groups * cin, groups * cout, kernel, stride, padding, dilation, groups, bias)
    check(nn.Conv2D(*args), randomize(torch.nn.Conv2d(*args), seed),
          rand((2, groups * cin, size, size + 1), seed), tol=1e-4)


@SETTINGS
@given(groups=st.sampled_from([1, 2]), cin=st.integers(1, 2), cout=st.integers(1, 2),
       kernel=st.integers(1, 4), stride=st.integers(1, 3), padding=st.integers(0, 1),
       extra=st.integers(0, 2), dilation=st.integers(1, 2), bias=st.booleans(),
       width=st.integers(2, 6), seed=st.integers(0, 99))
def test_conv_transpose1d_layer_matches_torch(groups, cin, cout, kernel, stride, padding, extra,
                                              dilation, bias, width, seed):
    output_padding = extra % max(stride, dilation)
    if (width - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1 < 1:
        return
    args = (groups * cin, groups * cout, kernel, stride, padding, output_padding, groups, bias,
            dilation)
    ours = nn.ConvTranspose1D(groups * cin, groups * cout, kernel, stride, padding,
                              output_padding, dilation, groups, bias)
    check(ours, randomize(torch.nn.ConvTranspose1d(*args), seed),
          rand((2, groups * cin, width), seed), tol=1e-4)


@SETTINGS
@given(num=st.integers(1, 12), dim=st.integers(1, 6),
       shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), seed=st.integers(0, 99))
def test_embedding_matches_torch(num, dim, shape, seed):
    ids = np.random.default_rng(seed).integers(0, num, shape).astype("int64")
    check(nn.Embedding(num, dim), randomize(torch.nn.Embedding(num, dim), seed), ids)


@SETTINGS
@given(n=st.integers(1, 9), affine=st.booleans(), eps=st.sampled_from([1e-5, 1e-2]),
       batch=st.lists(st.integers(1, 3), min_size=1, max_size=2), seed=st.integers(0, 99))
def test_layer_norm_layer_matches_torch(n, affine, eps, batch, seed):
    check(nn.LayerNorm(n, eps=eps, elementwise_affine=affine),
          randomize(torch.nn.LayerNorm(n, eps=eps, elementwise_affine=affine), seed),
          rand(batch + [n], seed))


@SETTINGS
@given(n=st.integers(1, 9), batch=st.lists(st.integers(1, 3), min_size=1, max_size=2),
       seed=st.integers(0, 99))
def test_rms_norm_layer_without_bias_matches_torch(n, batch, seed):
    check(nn.RMSNorm(n, axes=-1, epsilon=1e-5, bias=False),
          randomize(torch.nn.RMSNorm(n, eps=1e-5), seed), rand(batch + [n], seed))


def test_rms_norm_layer_bias_is_added_after_scaling():
    layer = nn.RMSNorm(4, axes=[-1], epsilon=1e-6)
    assert [name for name, _ in layer.named_parameters()] == ["weight", "bias"]
    w, b, x = rand((4,), 1), rand((4,), 2), rand((3, 4), 3)
    layer.load_state_dict({"weight": w, "bias": b})
    expected = x / np.sqrt(np.mean(x.astype("float64") ** 2, -1, keepdims=True) + 1e-6) * w + b
    np.testing.assert_allclose(export_run(layer, [x]), expected, rtol=1e-5, atol=1e-6)


@SETTINGS
@given(groups=st.sampled_from([1, 2, 4]), per_group=st.integers(1, 2), affine=st.booleans(),
       spatial=st.lists(st.integers(1, 4), min_size=1, max_size=2), seed=st.integers(0, 99))
def test_group_norm_layer_matches_torch(groups, per_group, affine, spatial, seed):
    # torch folds the statistics into x * rstd + (b - mean * rstd): for groups of one or two
    # elements (variance ~0, rstd ~1/sqrt(eps)) its float32 rounding dominates the result
    assume(per_group * int(np.prod(spatial)) >= 4)
    channels = groups * per_group
    check(nn.GroupNorm(groups, channels, affine=affine),
          randomize(torch.nn.GroupNorm(groups, channels, affine=affine), seed),
          rand([2, channels] + spatial, seed))


@pytest.mark.parametrize("ours, theirs", [(nn.ReLU(), torch.nn.ReLU()),
                                          (nn.SiLU(), torch.nn.SiLU()),
                                          (nn.GELU(), torch.nn.GELU()),
                                          (nn.Identity(), torch.nn.Identity())])
def test_activation_layers_match_torch(ours, theirs):
    check(ours, theirs, 3 * rand((2, 5), 0))


# -- whole models ---------------------------------------------------------------------------------

class TorchTextBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(11, 8)
        self.ln = torch.nn.LayerNorm(8)
        self.up = torch.nn.Linear(8, 16)
        self.act = torch.nn.GELU()
        self.down = torch.nn.Linear(16, 8, bias=False)
        self.norm = torch.nn.RMSNorm(8)

    def forward(self, ids):
        h = self.wte(ids)
        return self.norm(h + self.down(self.act(self.up(self.ln(h)))))


class TextBlock(nn.Module):
    def __init__(self):
        self.wte = nn.Embedding(11, 8)
        self.ln = nn.LayerNorm(8)
        self.up = nn.Linear(8, 16)
        self.act = nn.GELU()
        self.down = nn.Linear(16, 8, bias=False)
        self.norm = nn.RMSNorm(8, axes=-1, bias=False)

    def forward(self, ids):
        h = self.wte(ids)
        return self.norm(h + self.down(self.act(self.up(self.ln(h)))))


def test_a_block_with_a_symbolic_length_runs_at_several_lengths_on_both_executors():
    theirs = randomize(TorchTextBlock(), 0)
    ours = TextBlock()
    ours.load_state_dict(theirs.state_dict())
    mod, params = export(ours, ([2, "seq"], "int64"))
    for seq in (1, 4, 9):
        ids = np.random.default_rng(seq).integers(0, 11, (2, seq)).astype("int64")
        with torch.no_grad():
            expected = theirs(torch.from_numpy(ids)).numpy()
        for executor in ("debug", "graph"):
            np.testing.assert_allclose(run(mod, params, ids, executor=executor), expected,
                                       rtol=1e-4, atol=1e-5)


class TorchConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.norm = torch.nn.GroupNorm(4, 8)
        self.act = torch.nn.SiLU()
        self.conv2 = torch.nn.Conv2d(8, 4, 3, stride=2, groups=4)

    def forward(self, x):
        return self.conv2(self.act(self.norm(self.conv(x))))


class ConvNet(nn.Module):
    def __init__(self):
        self.conv = nn.Conv2D(3, 8, 3, padding=1)
        self.norm = nn.GroupNorm(4, 8)
        self.act = nn.SiLU()
        self.conv2 = nn.Conv2D(8, 4, 3, stride=2, groups=4)

    def forward(self, x):
        return self.conv2(self.act(self.norm(self.conv(x))))


def test_a_conv_net_on_the_graph_executor():
    check(ConvNet(), randomize(TorchConvNet(), 1), rand((2, 3, 9, 9), 2), tol=1e-4,
          executor="graph")


class TorchSelfAttention(torch.nn.Module):
    def __init__(self, width=12, heads=3, kv_heads=1):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, width // heads
        self.q = torch.nn.Linear(width, width)
        self.kv = torch.nn.Linear(width, 2 * kv_heads * self.head_dim)
        self.out = torch.nn.Linear(width, width, bias=False)

    def forward(self, x):
        b, s, _ = x.shape
        q = self.q(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k, v = self.kv(x).view(b, s, 2, self.kv_heads, self.head_dim).unbind(2)
        y = torch.nn.functional.scaled_dot_product_attention(
            q, k.transpose(1, 2), v.transpose(1, 2), is_causal=True, enable_gqa=True)
        return self.out(y.transpose(1, 2).reshape(b, s, -1))


class SelfAttention(nn.Module):
    def __init__(self, width=12, heads=3, kv_heads=1):
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, width // heads
        self.q = nn.Linear(width, width)
        self.kv = nn.Linear(width, 2 * kv_heads * self.head_dim)
        self.out = nn.Linear(width, width, bias=False)

    def forward(self, x):
        batch, seq, width = x.shape
        q = op.reshape(self.q(x), (batch, seq, self.heads, self.head_dim))
        k, v = op.split(op.reshape(self.kv(x), (batch, seq, 2, self.kv_heads, self.head_dim)),
                        2, axis=2)
        k, v = op.squeeze(k, axis=2), op.squeeze(v, axis=2)
        y = op.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(op.reshape(y, (batch, seq, width)))


@pytest.mark.parametrize("device", ["cpu", "python"])
def test_jitted_attention_layer_with_a_symbolic_length(device):
    theirs = randomize(TorchSelfAttention(), 3)
    ours = SelfAttention()
    ours.load_state_dict(theirs.state_dict())
    runner = ours.jit({"forward": {"x": spec.Tensor([2, "seq", 12], "float32")}}, device=device)
    for seq in (1, 6):
        x = torch.randn(2, seq, 12, generator=torch.Generator().manual_seed(seq))
        with torch.no_grad():
            expected = theirs(x)
        torch.testing.assert_close(runner.forward(x), expected, rtol=1e-4, atol=1e-5)


# -- dtypes ---------------------------------------------------------------------------------------

def test_linear_out_dtype_and_to_keep_the_bias_dtype():
    layer = nn.Linear(6, 3, dtype="float16", out_dtype="float32")
    assert (layer.weight.dtype, layer.bias.dtype) == ("float16", "float32")
    w, b, x = rand((3, 6), 1, "float16"), rand((3,), 2), rand((2, 6), 3, "float16")
    layer.load_state_dict({"weight": w, "bias": b})
    out = export_run(layer, [x])
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, x.astype("float32") @ w.astype("float32").T + b,
                               rtol=1e-3, atol=1e-3)
    unbound = nn.Linear(6, 3, out_dtype="float32")
    unbound.to("float16")
    assert (unbound.weight.dtype, unbound.bias.dtype) == ("float16", "float32")
    plain = nn.Linear(6, 3)
    plain.to("float16")
    assert (plain.weight.dtype, plain.bias.dtype) == ("float16", "float16")


def test_module_to_converts_layer_parameters():
    block = TextBlock()
    block.to("float64")
    assert {p.dtype for p in block.parameters()} == {"float64"}
    mod, _ = export(block, ([1, 3], "int64"))
    assert mod["forward"].ret_type.dtype == "float64"


# -- errors ---------------------------------------------------------------------------------------

class Encoder(nn.Module):
    def __init__(self):
        self.blocks = nn.ModuleList([nn.Conv1D(4, 4, 3, padding=1), nn.Conv1D(4, 2, 1)])
        self.proj = nn.Linear(2, 3)

    def forward(self, x):
        return self.proj(op.permute_dims(self.blocks(x), [0, 2, 1]))


@pytest.mark.parametrize("shape, dtype, where, match", [
    ([1, 3, 5], "float32", "model.blocks.0", "input channels"),
    ([1, 4, 5], "float16", "model.blocks.0", "dtype"),
])
def test_layer_errors_name_the_module_path(shape, dtype, where, match):
    with pytest.raises(OpError, match=match) as info:
        Encoder().export_tvm({"forward": {"x": spec.Tensor(shape, dtype)}})
    assert where in str(info.value)


def test_linear_and_embedding_input_errors():
    class Model(nn.Module):
        def __init__(self):
            self.emb = nn.Embedding(5, 4)
            self.head = nn.Linear(3, 2)

        def forward(self, ids, h):
            return self.emb(ids), self.head(h)

    def export_with(ids, h):
        Model().export_tvm({"forward": {"ids": spec.Tensor(*ids), "h": spec.Tensor(*h)}})

    with pytest.raises(OpError, match="model.emb.*integer"):
        export_with(([2], "float32"), ([2, 3], "float32"))
    with pytest.raises(OpError, match="model.head.*dtype"):
        export_with(([2], "int64"), ([2, 3], "float16"))
    with pytest.raises(OpError, match="model.head"):
        export_with(([2], "int64"), ([2, 4], "float32"))
    with pytest.raises(OpError, match="groups"):
        nn.Conv2D(3, 4, 3, groups=2)


# -- signatures -----------------------------------------------------------------------------------

R = "required"
LAYER_SIGNATURES = {   # relax-frontend-api.txt (Conv2D, GroupNorm: Relax's modules.py)
    "Linear": [("in_features", R), ("out_features", R), ("bias", True), ("dtype", None),
               ("out_dtype", None)],
    "Conv1D": [("in_channels", R), ("out_channels", R), ("kernel_size", R), ("stride", 1),
               ("padding", 0), ("dilation", 1), ("groups", 1), ("bias", True), ("dtype", None)],
    "Conv2D": [("in_channels", R), ("out_channels", R), ("kernel_size", R), ("stride", 1),
               ("padding", 0), ("dilation", 1), ("groups", 1), ("bias", True), ("dtype", None)],
    "ConvTranspose1D": [("in_channels", R), ("out_channels", R), ("kernel_size", R),
                        ("stride", 1), ("padding", 0), ("output_padding", 0), ("dilation", 1),
                        ("groups", 1), ("bias", True), ("dtype", None)],
    "Embedding": [("num", R), ("dim", R), ("dtype", None)],
    "LayerNorm": [("normalized_shape", R), ("eps", 1e-05), ("elementwise_affine", True),
                  ("dtype", None)],
    "RMSNorm": [("hidden_size", R), ("axes", R), ("epsilon", 1e-05), ("bias", True),
                ("dtype", None)],
    "GroupNorm": [("num_groups", R), ("num_channels", R), ("eps", 1e-05), ("affine", True),
                  ("dtype", None)],
    "ReLU": [], "SiLU": [], "GELU": [],
}


@pytest.mark.parametrize("name", sorted(LAYER_SIGNATURES))
def test_layer_constructors_match_the_reference(name):
    import inspect
    params = inspect.signature(getattr(nn, name)).parameters.values()
    got = [(p.name, R if p.default is inspect.Parameter.empty else p.default) for p in params]
    assert got == LAYER_SIGNATURES[name]
