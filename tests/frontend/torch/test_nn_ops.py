"""Neural-network converters against torch eager (hypothesis over shapes and attributes),
imported with from_fx and run on the interpreter and the graph executor."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings, strategies as st
from torch import nn

from ._running import Fn, check_module

SETTINGS = settings(max_examples=10, deadline=None)


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@SETTINGS
@given(batch=st.integers(1, 2), cin=st.integers(1, 4), cout=st.integers(1, 4),
       size=st.integers(5, 9), kernel=st.integers(1, 3), stride=st.integers(1, 2),
       padding=st.integers(0, 1), dilation=st.integers(1, 2), bias=st.booleans(),
       depthwise=st.booleans())
def test_conv2d_module(batch, cin, cout, size, kernel, stride, padding, dilation, bias,
                       depthwise):
    groups = cin if depthwise else 1
    cout = cin * cout if depthwise else cout
    torch.manual_seed(0)
    conv = nn.Conv2d(cin, cout, kernel, stride, padding, dilation, groups, bias)
    check_module(conv, [_randn(batch, cin, size, size + 1)], export_path=False)


@SETTINGS
@given(cin=st.integers(1, 3), cout=st.integers(1, 3), length=st.integers(4, 9),
       kernel=st.integers(1, 3), stride=st.integers(1, 2), padding=st.sampled_from([0, 1,
                                                                                     "same"]))
def test_conv1d_functional(cin, cout, length, kernel, stride, padding):
    if padding == "same":
        stride = 1
    weight, bias = _randn(cout, cin, kernel, seed=1), _randn(cout, seed=2)
    fn = Fn(lambda x: F.conv1d(x, weight, bias, stride=stride, padding=padding))
    check_module(fn, [_randn(2, cin, length)], export_path=False)


@SETTINGS
@given(cin=st.integers(1, 3), cout=st.integers(1, 3), size=st.integers(3, 6),
       kernel=st.integers(1, 3), stride=st.integers(1, 2), padding=st.integers(0, 1),
       output_padding=st.integers(0, 1), groups=st.sampled_from([1, 2]))
def test_conv_transpose2d(cin, cout, size, kernel, stride, padding, output_padding, groups):
    output_padding = min(output_padding, stride - 1)
    cin, cout = cin * groups, cout * groups
    torch.manual_seed(0)
    conv = nn.ConvTranspose2d(cin, cout, kernel, stride, padding, output_padding, groups)
    check_module(conv, [_randn(1, cin, size, size)], export_path=False)


@SETTINGS
@given(channels=st.integers(1, 5), size=st.integers(2, 6), affine=st.booleans())
def test_batch_norm_eval(channels, size, affine):
    bn = nn.BatchNorm2d(channels, affine=affine, eps=1e-3).eval()
    bn.running_mean.copy_(_randn(channels, seed=1))
    bn.running_var.copy_(_randn(channels, seed=2).abs() + 0.5)
    if affine:
        bn.weight.data.copy_(_randn(channels, seed=3))
        bn.bias.data.copy_(_randn(channels, seed=4))
    check_module(bn, [_randn(2, channels, size, size)], export_path=False)


@SETTINGS
@given(kernel=st.integers(1, 3), stride=st.integers(1, 3), padding=st.integers(0, 1),
       ceil_mode=st.booleans(), kind=st.sampled_from(["max", "avg"]),
       count_include_pad=st.booleans(), size=st.integers(4, 8))
def test_pool2d(kernel, stride, padding, ceil_mode, kind, count_include_pad, size):
    padding = min(padding, kernel // 2)
    if kind == "max":
        layer = nn.MaxPool2d(kernel, stride, padding, ceil_mode=ceil_mode)
    else:
        layer = nn.AvgPool2d(kernel, stride, padding, ceil_mode=ceil_mode,
                             count_include_pad=count_include_pad)
    check_module(layer, [_randn(1, 2, size, size + 1)], export_path=False)


@SETTINGS
@given(out_h=st.integers(1, 4), out_w=st.sampled_from([1, 2, 3, None]), size=st.integers(4, 8))
def test_adaptive_avg_pool2d(out_h, out_w, size):
    fn = Fn(lambda x: F.adaptive_avg_pool2d(x, (out_h, out_w)))
    check_module(fn, [_randn(2, 3, size, size)], export_path=False)


@SETTINGS
@given(lead=st.lists(st.integers(1, 3), min_size=0, max_size=2), fin=st.integers(1, 6),
       fout=st.integers(1, 6), bias=st.booleans())
def test_linear(lead, fin, fout, bias):
    torch.manual_seed(0)
    check_module(nn.Linear(fin, fout, bias=bias), [_randn(*lead, fin)], export_path=False)


@SETTINGS
@given(a_shape=st.sampled_from([(3,), (2, 3), (4, 2, 3), (2, 1, 2, 3), (1, 2, 3)]),
       b_shape=st.sampled_from([(3,), (3, 4), (4, 3, 2), (2, 3, 2), (1, 3, 5)]))
def test_matmul_broadcasting(a_shape, b_shape):
    try:
        torch.matmul(torch.zeros(a_shape), torch.zeros(b_shape))
    except RuntimeError:
        return  # shapes torch refuses
    check_module(Fn(torch.matmul, 2), [_randn(*a_shape), _randn(*b_shape, seed=1)],
                 export_path=False)


def test_bmm_einsum():
    fn = Fn(lambda a, b: torch.bmm(a, b) + torch.einsum("bij,bjk->bik", a, b))
    check_module(fn, [_randn(2, 3, 4), _randn(2, 4, 5, seed=1)])


@SETTINGS
@given(shape=st.lists(st.integers(1, 5), min_size=2, max_size=3), dim=st.integers(-1, 1),
       log=st.booleans())
def test_softmax(shape, dim, log):
    fn = Fn(lambda x: (F.log_softmax if log else F.softmax)(x, dim=dim))
    check_module(fn, [_randn(*shape)], export_path=False)


@SETTINGS
@given(lead=st.lists(st.integers(1, 3), min_size=1, max_size=2), features=st.integers(2, 6),
       two_dims=st.booleans(), affine=st.booleans())
def test_layer_norm(lead, features, two_dims, affine):
    shape = lead + [features]
    normalized = tuple(shape[-2:]) if two_dims else (features,)
    torch.manual_seed(0)
    norm = nn.LayerNorm(normalized, elementwise_affine=affine)
    if affine:
        norm.weight.data.normal_()
        norm.bias.data.normal_()
    check_module(norm, [_randn(*shape)], export_path=False)


def test_group_norm():
    torch.manual_seed(0)
    norm = nn.GroupNorm(2, 4)
    norm.weight.data.normal_()
    check_module(norm, [_randn(2, 4, 3, 3)])


@SETTINGS
@given(act=st.sampled_from(["relu", "relu6", "hardtanh", "gelu", "gelu_tanh", "silu",
                            "sigmoid", "tanh", "leaky_relu", "elu", "hardswish",
                            "hardsigmoid", "softplus"]),
       module=st.booleans())
def test_activations(act, module):
    functional = {"relu": F.relu, "relu6": F.relu6, "hardtanh": lambda x: F.hardtanh(x, -0.5, 2),
                  "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
                  "silu": F.silu, "sigmoid": torch.sigmoid, "tanh": torch.tanh,
                  "leaky_relu": lambda x: F.leaky_relu(x, 0.2), "elu": F.elu,
                  "hardswish": F.hardswish, "hardsigmoid": F.hardsigmoid,
                  "softplus": F.softplus}
    modules = {"relu": nn.ReLU(), "relu6": nn.ReLU6(), "hardtanh": nn.Hardtanh(-0.5, 2),
               "gelu": nn.GELU(), "gelu_tanh": nn.GELU("tanh"), "silu": nn.SiLU(),
               "sigmoid": nn.Sigmoid(), "tanh": nn.Tanh(), "leaky_relu": nn.LeakyReLU(0.2),
               "elu": nn.ELU(), "hardswish": nn.Hardswish(), "hardsigmoid": nn.Hardsigmoid(),
               "softplus": nn.Softplus()}
    layer = modules[act] if module else Fn(functional[act], 1)
    check_module(layer, [_randn(2, 3, 4) * 4], export_path=False)


@SETTINGS
@given(batch=st.integers(1, 2), heads=st.integers(1, 3), q_len=st.integers(1, 5),
       k_len=st.integers(1, 5), head_dim=st.integers(1, 4),
       mask=st.sampled_from([None, "bool", "float", "causal"]), scale=st.sampled_from([None, 0.3]))
def test_scaled_dot_product_attention(batch, heads, q_len, k_len, head_dim, mask, scale):
    q = _randn(batch, heads, q_len, head_dim)
    k = _randn(batch, heads, k_len, head_dim, seed=1)
    v = _randn(batch, heads, k_len, head_dim + 1, seed=2)
    if mask == "bool":
        keep = torch.rand(q_len, k_len, generator=torch.Generator().manual_seed(3)) > 0.3
        keep[:, 0] = True  # no fully masked row (torch gives NaN there)
        fn = Fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=keep,
                                                                scale=scale))
    elif mask == "float":
        bias = _randn(batch, 1, q_len, k_len, seed=4)
        fn = Fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=bias,
                                                                scale=scale))
    else:
        causal = mask == "causal"
        fn = Fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                                scale=scale))
    check_module(fn, [q, k, v], export_path=False)


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("masks", [None, "padding", "attn"])
def test_multihead_attention(batch_first, masks):
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, batch_first=batch_first).eval()
    x = _randn(2, 5, 8) if batch_first else _randn(5, 2, 8)
    padding = torch.tensor([[False] * 5, [False, False, False, True, True]])
    attn = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)

    def forward(x):
        kwargs = {"need_weights": False}
        if masks == "padding":
            kwargs["key_padding_mask"] = padding
        elif masks == "attn":
            kwargs["attn_mask"] = attn
        return mha(x, x, x, **kwargs)[0]

    class Wrapper(nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = mha

        def forward(self, x):
            kwargs = {"need_weights": False}
            if masks == "padding":
                kwargs["key_padding_mask"] = padding
            elif masks == "attn":
                kwargs["attn_mask"] = attn
            return self.mha(x, x, x, **kwargs)[0]

    check_module(Wrapper(), [x])


@SETTINGS
@given(vocab=st.integers(2, 9), dim=st.integers(1, 5),
       shape=st.lists(st.integers(1, 4), min_size=1, max_size=2))
def test_embedding(vocab, dim, shape):
    torch.manual_seed(0)
    emb = nn.Embedding(vocab, dim)
    ids = torch.randint(0, vocab, shape, generator=torch.Generator().manual_seed(1))
    check_module(emb, [ids], export_path=False)


@SETTINGS
@given(mode=st.sampled_from(["nearest", "bilinear"]), align=st.booleans(),
       by_size=st.booleans(), scale=st.integers(1, 3), size=st.integers(2, 5))
def test_interpolate(mode, align, by_size, scale, size):
    align = align if mode == "bilinear" else None
    if by_size:
        fn = Fn(lambda x: F.interpolate(x, size=(size * scale + 1, size + 2), mode=mode,
                                        align_corners=align))
    else:
        fn = Fn(lambda x: F.interpolate(x, scale_factor=scale, mode=mode, align_corners=align))
    check_module(fn, [_randn(1, 2, size, size + 1)], export_path=False)


@SETTINGS
@given(pads=st.lists(st.integers(0, 2), min_size=4, max_size=4), last_only=st.booleans(),
       mode=st.sampled_from(["constant", "reflect", "replicate"]), value=st.floats(-2, 2))
def test_pad(pads, last_only, mode, value):
    if last_only and mode == "constant":
        pads = pads[:2]
    kwargs = {"value": value} if mode == "constant" else {}
    fn = Fn(lambda x: F.pad(x, pads, mode=mode, **kwargs))
    check_module(fn, [_randn(1, 2, 4, 5)], export_path=False)


def test_dropout_is_identity_in_eval():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.ReLU())

        def forward(self, x):
            return F.dropout(self.body(x), 0.3, training=False)

    check_module(Model().eval(), [_randn(3, 4)])


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("layers,bidirectional,batch_first", [(1, False, True), (2, True, False)])
def test_recurrent(kind, layers, bidirectional, batch_first):
    torch.manual_seed(0)
    cls = nn.LSTM if kind == "lstm" else nn.GRU
    rnn = cls(3, 4, num_layers=layers, bidirectional=bidirectional,
              batch_first=batch_first).eval()
    x = _randn(2, 5, 3)
    check_module(rnn, [x])


def test_unbatched_conv_and_pool():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.MaxPool2d(2),
                          nn.AdaptiveAvgPool2d((2, 1)))
    check_module(model, [_randn(2, 6, 6)])
