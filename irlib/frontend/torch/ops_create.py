"""Tensor-creation converters: arange, full/zeros/ones/empty (and ``*_like``, ``new_*``),
``scalar_tensor``, ``tril``/``triu`` masks."""

from __future__ import annotations

import numpy as np
import torch

from . import dtypes
from ._args import arg, sizes_from
from .context import is_dim
from .errors import unsupported
from .registry import converter

aten = torch.ops.aten


def _dtype(value, default):
    return dtypes.to_irlib(value) if value is not None else default


def full(ctx, sizes, value, dtype):
    """A tensor of ``sizes`` filled with ``value`` (a constant when the sizes are static).

    Args:
        sizes: the shape.
        value: the fill value.
        dtype: the result dtype.
    """
    sizes = list(sizes)
    if all(isinstance(s, int) for s in sizes):
        return ctx.const(np.full(sizes, value, dtype=dtype))
    return ctx.emit("full", ctx.scalar(value, dtype), shape=sizes, dtype=dtype)


def _fill_dtype(value):
    if isinstance(value, bool):
        return "bool"
    return "float32" if isinstance(value, float) else "int64"


@converter(torch.arange, aten.arange.default, aten.arange.start, aten.arange.start_step)
def _arange(ctx, args, kwargs):
    numbers = [a for a in args if not isinstance(a, torch.dtype)]
    if "end" in kwargs:
        numbers = numbers + [kwargs["end"]] if numbers else [kwargs.get("start", 0),
                                                             kwargs["end"]]
    if len(numbers) == 1:
        start, end, step = 0, numbers[0], 1
    else:
        start, end = numbers[0], numbers[1]
        step = numbers[2] if len(numbers) > 2 else kwargs.get("step", 1)
    default = "float32" if any(isinstance(v, float) for v in (start, end, step)) else "int64"
    dtype = _dtype(kwargs.get("dtype"), default)
    if all(isinstance(v, (int, float)) and not isinstance(v, bool)
           for v in (start, end, step)):
        return ctx.const(np.arange(start, end, step).astype(dtype))
    for value in (start, end, step):
        if ctx.is_tensor(value) or not (isinstance(value, (int, float)) or is_dim(value)):
            unsupported("arange with tensor bounds")
    bounds = [ctx.dim_value(v, dtype) if is_dim(v) else ctx.scalar(v, dtype)
              for v in (start, end, step)]
    return ctx.emit("arange", *bounds, dtype=dtype)


@converter(torch.full, aten.full.default)
def _full(ctx, args, kwargs):
    value = arg(args, kwargs, 1, "fill_value")
    return full(ctx, arg(args, kwargs, 0, "size"), value,
                _dtype(kwargs.get("dtype"), _fill_dtype(value)))


def _filled(value):
    def convert(ctx, args, kwargs):
        sizes = sizes_from(args) if args else list(kwargs.get("size", ()))
        return full(ctx, sizes, value, _dtype(kwargs.get("dtype"), "float32"))
    return convert


converter(torch.zeros, aten.zeros.default, torch.empty, aten.empty.memory_format)(_filled(0))
converter(torch.ones, aten.ones.default)(_filled(1))


def full_like(ctx, x, value, dtype=None):
    """A tensor shaped like ``x`` filled with ``value`` (``full_like`` of ``x`` when its
    shape is symbolic).

    Args:
        x: the tensor whose shape is taken.
        value: the fill value.
        dtype: the result dtype (default: ``x``'s).
    """
    dtype = _dtype(dtype, ctx.dtype(x))
    if all(isinstance(d, int) for d in ctx.shape(x)):
        return full(ctx, ctx.shape(x), value, dtype)
    return ctx.emit("full_like", ctx.cast(x, dtype), ctx.scalar(value, dtype))


converter(torch.zeros_like, aten.zeros_like.default, torch.empty_like,
          aten.empty_like.default)(
    lambda ctx, args, kwargs: full_like(ctx, args[0], 0, kwargs.get("dtype")))
converter(torch.ones_like, aten.ones_like.default)(
    lambda ctx, args, kwargs: full_like(ctx, args[0], 1, kwargs.get("dtype")))


@converter(torch.full_like, aten.full_like.default)
def _full_like(ctx, args, kwargs):
    return full_like(ctx, args[0], arg(args, kwargs, 1, "fill_value"), kwargs.get("dtype"))


def _new(value):
    def convert(ctx, args, kwargs):
        x = args[0]
        sizes = sizes_from(args[1:]) if len(args) > 1 else list(kwargs.get("size", ()))
        return full(ctx, sizes, value, _dtype(kwargs.get("dtype"), ctx.dtype(x)))
    return convert


converter("Tensor.new_zeros", aten.new_zeros.default, "Tensor.new_empty",
          aten.new_empty.default)(_new(0))
converter("Tensor.new_ones", aten.new_ones.default)(_new(1))


@converter("Tensor.new_full", aten.new_full.default)
def _new_full(ctx, args, kwargs):
    x = args[0]
    return full(ctx, arg(args, kwargs, 1, "size"), arg(args, kwargs, 2, "fill_value"),
                _dtype(kwargs.get("dtype"), ctx.dtype(x)))


@converter(torch.scalar_tensor, aten.scalar_tensor.default)
def _scalar_tensor(ctx, args, kwargs):
    value = args[0]
    dtype = _dtype(kwargs.get("dtype"), "float32")
    if is_dim(value) and not isinstance(value, int):
        return ctx.dim_value(value, dtype)
    return ctx.scalar(value, dtype)


@converter(torch.tensor)
def _tensor(ctx, args, kwargs):
    data = args[0]
    default = None
    array = np.asarray(data)
    if array.dtype == np.float64:
        default = "float32"
    return ctx.const(array.astype(_dtype(kwargs.get("dtype"), default or str(array.dtype))))


def _triangle(upper: bool):
    def convert(ctx, args, kwargs):
        x = args[0]
        diagonal = int(arg(args, kwargs, 1, "diagonal", 0))
        rows, cols = ctx.shape(x)[-2:]
        if not (isinstance(rows, int) and isinstance(cols, int)):
            unsupported("tril/triu of a matrix with symbolic size")
        mask = np.triu(np.ones((rows, cols), bool), diagonal) if upper else \
            np.tril(np.ones((rows, cols), bool), diagonal)
        return ctx.emit("where", ctx.const(mask), x, ctx.scalar(0, ctx.dtype(x)))
    return convert


converter(torch.tril, "Tensor.tril", aten.tril.default)(_triangle(False))
converter(torch.triu, "Tensor.triu", aten.triu.default)(_triangle(True))


@converter("Tensor.fill_", aten.fill_.Scalar, aten.fill.Scalar)
def _fill(ctx, args, kwargs):
    return full_like(ctx, args[0], args[1])
