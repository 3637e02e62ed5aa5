"""Reduction converters: sum, mean, prod, max/min (also with indices), amax/amin,
argmax/argmin, var/std, any/all, norm."""

from __future__ import annotations

import torch

from . import dtypes
from ._args import arg, int_list, norm_axis
from .errors import unsupported
from .registry import converter
from .ops_elementwise import binary

aten = torch.ops.aten


def _axes(ctx, x, dim):
    if dim is None or (isinstance(dim, (list, tuple)) and not dim):
        return None
    return [norm_axis(d, ctx.ndim(x)) for d in int_list(dim)]


def reduce(ctx, op_name, x, dim=None, keepdim=False):
    """Reduction ``op_name`` of ``x`` over ``dim`` (None: all axes).

    Args:
        op_name: the irlib reduction op.
        x: the input.
        dim: the axes (None: all).
        keepdim: keep the reduced axes with size 1.
    """
    return ctx.emit(op_name, x, axis=_axes(ctx, x, dim), keepdims=bool(keepdim))


def _sum_like(op_name, int_result):
    def convert(ctx, args, kwargs):
        x = args[0]
        dtype = kwargs.get("dtype")
        dim = arg(args, kwargs, 1, "dim", None)
        if isinstance(dim, torch.dtype):
            dtype, dim = dim, None
        if dtype is not None:
            x = ctx.cast(x, dtypes.to_irlib(dtype))
        elif int_result and not ctx.dtype(x).startswith(("float", "bfloat", "complex")):
            x = ctx.cast(x, "int64")
        elif not int_result and not ctx.dtype(x).startswith(("float", "bfloat", "complex")):
            unsupported("mean of an integer tensor (torch requires a float dtype)")
        return reduce(ctx, op_name, x, dim, arg(args, kwargs, 2, "keepdim", False))
    return convert


converter(torch.sum, "Tensor.sum", aten.sum.default, aten.sum.dim_IntList)(
    _sum_like("sum", True))
converter(torch.prod, "Tensor.prod", aten.prod.default, aten.prod.dim_int)(
    _sum_like("prod", True))
converter(torch.mean, "Tensor.mean", aten.mean.default, aten.mean.dim)(
    _sum_like("mean", False))


def _extremum(op_name, elementwise, arg_op):
    def convert(ctx, args, kwargs):
        x = args[0]
        other = arg(args, kwargs, 1, "dim", None)
        if ctx.is_tensor(other):
            return binary(ctx, elementwise, x, other)
        if other is None:
            return reduce(ctx, op_name, x)
        keepdim = arg(args, kwargs, 2, "keepdim", False)
        values = reduce(ctx, op_name, x, other, keepdim)
        indices = ctx.emit(arg_op, x, axis=[norm_axis(other, ctx.ndim(x))],
                           keepdims=bool(keepdim))
        return (values, ctx.cast(indices, "int64"))
    return convert


converter(torch.max, "Tensor.max", aten.max.default, aten.max.dim)(
    _extremum("max", "maximum", "argmax"))
converter(torch.min, "Tensor.min", aten.min.default, aten.min.dim)(
    _extremum("min", "minimum", "argmin"))
converter(aten.maximum.default)(lambda ctx, args, kwargs: binary(ctx, "maximum", *args[:2]))


def _amax(op_name):
    def convert(ctx, args, kwargs):
        return reduce(ctx, op_name, args[0], arg(args, kwargs, 1, "dim", None),
                      arg(args, kwargs, 2, "keepdim", False))
    return convert


converter(torch.amax, "Tensor.amax", aten.amax.default)(_amax("max"))
converter(torch.amin, "Tensor.amin", aten.amin.default)(_amax("min"))


def _arg_extremum(op_name):
    def convert(ctx, args, kwargs):
        x = args[0]
        dim = arg(args, kwargs, 1, "dim", None)
        keepdim = arg(args, kwargs, 2, "keepdim", False)
        if dim is None:
            flat = ctx.emit("reshape", x, newshape=[-1])
            out = ctx.emit(op_name, flat, axis=[0], keepdims=False)
            if keepdim:
                out = ctx.emit("reshape", out, newshape=[1] * ctx.ndim(x))
        else:
            out = ctx.emit(op_name, x, axis=[norm_axis(dim, ctx.ndim(x))],
                           keepdims=bool(keepdim))
        return ctx.cast(out, "int64")
    return convert


converter(torch.argmax, "Tensor.argmax", aten.argmax.default)(_arg_extremum("argmax"))
converter(torch.argmin, "Tensor.argmin", aten.argmin.default)(_arg_extremum("argmin"))


def _logical(op_name):
    def convert(ctx, args, kwargs):
        x = args[0]
        if ctx.dtype(x) != "bool":
            x = ctx.emit("not_equal", x, ctx.scalar(0, ctx.dtype(x)))
        return reduce(ctx, op_name, x, arg(args, kwargs, 1, "dim", None),
                      arg(args, kwargs, 2, "keepdim", False))
    return convert


converter(torch.any, "Tensor.any", aten.any.default, aten.any.dim, aten.any.dims)(
    _logical("any"))
converter(torch.all, "Tensor.all", aten.all.default, aten.all.dim, aten.all.dims)(
    _logical("all"))


def variance(ctx, x, dim, correction, keepdim, sqrt=False):
    """Variance (or standard deviation) with torch's ``correction`` (1: unbiased).

    Args:
        x: the input.
        dim: the axes (None: all).
        correction: the divisor's correction (``N - correction``).
        keepdim: keep the reduced axes with size 1.
        sqrt: return the standard deviation instead.
    """
    axes = _axes(ctx, x, dim)
    mean = ctx.emit("mean", x, axis=axes, keepdims=True)
    out = ctx.emit("variance", x, mean, axis=axes, keepdims=bool(keepdim),
                   unbiased=bool(correction))
    if correction not in (0, 1, True, False):
        unsupported(f"var/std with correction={correction}")
    return ctx.emit("sqrt", out) if sqrt else out


def _var(sqrt):
    def convert(ctx, args, kwargs):
        x = args[0]
        dim = arg(args, kwargs, 1, "dim", None)
        correction = kwargs.get("correction")
        if isinstance(dim, bool):  # var(x, unbiased)
            correction, dim = int(dim), None
        if correction is None:
            correction = int(kwargs.get("unbiased", args[2] if len(args) > 2 and
                                        isinstance(args[2], bool) else True))
        keepdim = kwargs.get("keepdim", args[3] if len(args) > 3 else False)
        return variance(ctx, x, dim, correction, keepdim, sqrt)
    return convert


converter(torch.var, "Tensor.var", aten.var.correction, aten.var.dim)(_var(False))
converter(torch.std, "Tensor.std", aten.std.correction, aten.std.dim)(_var(True))


@converter(torch.norm, "Tensor.norm", torch.linalg.vector_norm,
           aten.linalg_vector_norm.default)
def _norm(ctx, args, kwargs):
    x = args[0]
    p = arg(args, kwargs, 1, "p", kwargs.get("ord", 2))
    dim = arg(args, kwargs, 2, "dim", None)
    keepdim = arg(args, kwargs, 3, "keepdim", False)
    if p not in (2, 2.0, "fro"):
        unsupported(f"norm with p={p!r}")
    squares = ctx.emit("multiply", x, x)
    return ctx.emit("sqrt", reduce(ctx, "sum", squares, dim, keepdim))
