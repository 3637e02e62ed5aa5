"""Tensor converters against torch eager: elementwise and promotion, in-place variants, shape
ops, indexing, joining/splitting, creation and reductions (hypothesis over shapes), imported
with from_fx (and, for a module using all of them, from_exported_program) on both executors."""

import operator

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from torch import nn

from ._running import Fn, check_module

SETTINGS = settings(max_examples=10, deadline=None)
shapes = st.lists(st.integers(1, 4), min_size=1, max_size=4)


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@SETTINGS
@given(shape=shapes, op=st.sampled_from(["add", "sub", "mul", "div", "pow", "maximum",
                                          "minimum", "rsub", "floordiv", "remainder"]),
       broadcast=st.booleans(), scalar=st.sampled_from([None, 2, 0.5, -1.5]))
def test_binary(shape, op, broadcast, scalar):
    functions = {"add": lambda a, b: torch.add(a, b, alpha=2), "sub": operator.sub,
                 "mul": torch.mul, "div": operator.truediv,
                 "pow": lambda a, b: torch.pow(a.abs() + 0.5, b),
                 "maximum": torch.maximum, "minimum": torch.minimum,
                 "rsub": lambda a, b: torch.rsub(a, b), "floordiv": lambda a, b: a // b,
                 "remainder": lambda a, b: torch.remainder(a, b)}
    fn = functions[op]
    x = _randn(*shape)
    if scalar is not None:
        if op in ("maximum", "minimum"):
            return  # tensor-only ops
        check_module(Fn(lambda a: fn(a, scalar)), [x], export_path=False)
        return
    other_shape = [1] * len(shape) if broadcast else shape
    y = _randn(*other_shape, seed=1)
    if op in ("floordiv", "remainder", "div"):
        y = y.abs() + 0.5
    check_module(Fn(fn, 2), [x, y], export_path=False)


@SETTINGS
@given(shape=shapes, op=st.sampled_from(["eq", "ne", "lt", "le", "gt", "ge"]))
def test_comparisons_and_where(shape, op):
    compare = getattr(operator, op)
    fn = Fn(lambda a, b: (compare(a, b), torch.where(compare(a, b), a, b),
                          a.masked_fill(compare(a, b), -3.0)))
    check_module(fn, [_randn(*shape), _randn(*shape, seed=1).round()], export_path=False)


@SETTINGS
@given(shape=shapes, op=st.sampled_from(["exp", "log", "sqrt", "rsqrt", "abs", "neg",
                                          "sin", "cos", "erf", "floor", "ceil", "sign",
                                          "tanh", "sigmoid"]))
def test_unary(shape, op):
    fn = getattr(torch, op)
    positive = op in ("log", "sqrt", "rsqrt")
    x = _randn(*shape)
    check_module(Fn(lambda a: fn(a.abs() + 0.1) if positive else fn(a)), [x],
                 export_path=False)


def test_type_promotion():
    fn = Fn(lambda i, f: (i + 1, i * 0.5, i / 2, f + i, (i > 1).to(torch.float32) * f,
                          i.float(), f.long(), i.sum(), i.cumsum(0)), 2)
    check_module(fn, [torch.arange(6, dtype=torch.int32), _randn(6)])


def test_inplace_variants():
    class Model(nn.Module):
        def forward(self, x, y):
            h = x * 1.0
            h.add_(y)
            h.mul_(2)
            h.relu_()
            z = y.clone()
            z += h
            z.sub_(1.0).div_(3.0)
            return h, z

    check_module(Model(), [_randn(3, 4), _randn(3, 4, seed=1)])


@SETTINGS
@given(shape=st.lists(st.integers(1, 4), min_size=2, max_size=4), data=st.data())
def test_reshape_permute_transpose(shape, data):
    ndim = len(shape)
    perm = data.draw(st.permutations(list(range(ndim))))
    a, b = data.draw(st.integers(-ndim, ndim - 1)), data.draw(st.integers(-ndim, ndim - 1))
    start = data.draw(st.integers(0, ndim - 1))

    def fn(x):
        total = x.numel()
        return (x.permute(*perm).contiguous().view(-1, shape[-1]),
                x.transpose(a, b).reshape(total), torch.flatten(x, start),
                x.unsqueeze(-1).squeeze(-1), x.unsqueeze(0).squeeze(), x.t() if ndim == 2 else x,
                x.view(x.size(0), -1), x.reshape(shape[::-1]))

    check_module(Fn(fn), [_randn(*shape)], export_path=False)


@SETTINGS
@given(shape=st.lists(st.integers(2, 5), min_size=2, max_size=3), data=st.data())
def test_getitem(shape, data):
    ndim = len(shape)
    start = data.draw(st.integers(-shape[0], shape[0] - 1))
    stop = data.draw(st.sampled_from([None, -1, 1, shape[0], 100]))
    step = data.draw(st.integers(1, 3))
    index = data.draw(st.integers(-shape[-1], shape[-1] - 1))

    def fn(x):
        return (x[start:stop:step], x[..., index], x[:, None, 1:], x[None, index % shape[0]],
                x[-1], x[..., ::2, None], x[1:, ..., -1:])

    check_module(Fn(fn), [_randn(*shape)], export_path=False)


def test_index_tensor_and_select():
    idx = torch.tensor([2, 0, 1, 2])

    class Model(nn.Module):
        def forward(self, x, ids):
            return (x[ids], x[:, idx], torch.index_select(x, 1, ids), x.select(1, -1),
                    x.narrow(0, 1, 2), torch.gather(x, 1, ids.view(1, 4).expand(3, 4) % 3))

    check_module(Model(), [_randn(3, 3), torch.tensor([1, 2, 0, 0])])


@settings(max_examples=6, deadline=None)
@given(sizes=st.lists(st.integers(1, 3), min_size=1, max_size=4), dim=st.integers(0, 1),
       chunks=st.integers(1, 4), split=st.integers(1, 3))
def test_cat_stack_split_chunk(sizes, dim, chunks, split):
    total = sum(sizes)

    def fn(x):
        parts = torch.split(x, sizes, dim=dim)
        rejoined = torch.cat(parts[::-1], dim=dim)
        stacked = torch.stack([x, x * 2], dim=-1)
        return (rejoined, stacked, x.chunk(chunks, dim), torch.split(x, split, dim),
                torch.unbind(x, 1 - dim))

    shape = [total, 3] if dim == 0 else [3, total]
    check_module(Fn(fn), [_randn(*shape)], export_path=False)


def test_expand_repeat():
    fn = Fn(lambda x: (x.expand(2, 3, 4), x.expand(-1, 4).repeat(2, 1),
                       x.repeat(1, 2, 2), x.expand_as(torch.zeros(3, 5)),
                       torch.repeat_interleave(x, 2, dim=0), x.flip(0),
                       torch.flip(x.expand(3, 4), [0, -1])))
    check_module(fn, [_randn(3, 1)])


def test_creation():
    class Model(nn.Module):
        def forward(self, x):
            n = x.shape[1]
            return (torch.arange(n), torch.arange(1, 7, 2, dtype=torch.float32),
                    torch.arange(0.0, 1.0, 0.25), torch.zeros(2, n), torch.ones(n),
                    torch.full((2, 2), 3.5), torch.zeros_like(x), torch.ones_like(x) + x,
                    torch.full_like(x, 7), x.new_zeros(3), x.new_ones((2, 1)),
                    torch.triu(x), torch.tril(x, -1), torch.zeros(2).fill_(5))

    check_module(Model(), [_randn(3, 4)])


@SETTINGS
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data(),
       keepdim=st.booleans())
def test_reductions(shape, data, keepdim):
    ndim = len(shape)
    dim = data.draw(st.integers(-ndim, ndim - 1))

    def fn(x):
        values, indices = torch.max(x, dim, keepdim=keepdim)
        return (x.sum(), x.sum(dim, keepdim=keepdim), x.mean(dim=[dim], keepdim=keepdim),
                torch.amax(x, dim, keepdim), torch.amin(x, dim), x.max(), x.min(),
                values, indices, torch.min(x, dim)[0], x.argmax(dim), x.argmin(),
                x.var(dim, unbiased=False), x.std(dim), x.prod(dim), (x > 0).any(dim),
                (x > -5).all(), torch.cumsum(x, dim), x.norm(dim=dim))

    check_module(Fn(fn), [_randn(*shape)], export_path=False)


def test_clamp():
    fn = Fn(lambda x: (x.clamp(-0.5, 0.5), torch.clamp(x, min=0), x.clamp(max=0.1),
                       torch.clamp(x, torch.zeros(3), torch.ones(3))))
    check_module(fn, [_randn(2, 3)])


class _EverythingModel(nn.Module):
    """One model touching many converters, for the ATen path (exported once)."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 6)
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4).eval()

    def forward(self, x, img, ids):
        h = self.proj(x)
        a, b = h.chunk(2, dim=-1)
        y = torch.cat([a * torch.sigmoid(b), a.softmax(-1)], dim=0)
        y = y[1:, None, :2].squeeze(1).permute(1, 0).reshape(-1)
        m = torch.where(y > 0, y, torch.zeros_like(y)).cumsum(0)
        c = torch.relu(self.bn(self.conv(img)))
        c = torch.nn.functional.max_pool2d(c, 2) + torch.nn.functional.avg_pool2d(c, 2)
        c = torch.nn.functional.interpolate(c, scale_factor=2, mode="nearest")
        e = torch.nn.functional.embedding(ids, self.proj.weight)
        e = e.masked_fill(ids[..., None] > 2, 0.0).mean(dim=1)
        t = torch.arange(ids.shape[1]).unsqueeze(0).expand(ids.shape[0], -1) + ids
        return m, c.flatten(1).sum(-1), e, t, y.max(), torch.stack([y, y], 1).amax(0)


@pytest.mark.parametrize("decompose", [False, True])
def test_exported_program_many_ops(decompose):
    torch.manual_seed(0)
    model = _EverythingModel().eval()
    model.bn.running_var.uniform_(0.5, 1.5)
    inputs = [_randn(3, 4), _randn(2, 2, 4, 4, seed=1),
              torch.tensor([[0, 3, 5], [1, 2, 4]])]
    check_module(model, inputs, decompose=decompose)
