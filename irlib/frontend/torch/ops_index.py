"""Indexing converters: ``x[...]`` (ints, slices, None, Ellipsis, one index tensor), getitem
on Python tuples, ``select``/``slice``/``narrow``/``index_select``/``gather``/``index``."""

from __future__ import annotations

import operator

import torch

from ._args import arg, norm_axis
from .errors import TorchConversionError, unsupported
from .registry import converter

aten = torch.ops.aten

_BIG = 2 ** 62


def _clamp_bound(value, dim, default):
    """A slice bound made explicit in ``[0, dim]`` (symbolic dims kept symbolic)."""
    if value is None:
        return default
    if isinstance(value, int):
        if value >= _BIG:
            return dim
        if value < 0:
            if isinstance(dim, int):
                return max(value + dim, 0)
            return dim + value
        if isinstance(dim, int):
            return min(value, dim)
        return value
    return value  # a symbolic size


def slice_axis(ctx, x, axis, start=None, end=None, step=1):
    """``x`` sliced along ``axis`` (``start:end:step``, step > 0)."""
    step = 1 if step is None else int(step)
    if step <= 0:
        unsupported("slices with a non-positive step (torch does not allow them on tensors)")
    dim = ctx.shape(x)[axis]
    begin = _clamp_bound(start, dim, 0)
    stop = _clamp_bound(end, dim, dim)
    if isinstance(begin, int) and isinstance(stop, int) and stop < begin:
        stop = begin
    if isinstance(begin, int) and begin == 0 and stop is dim and step == 1:
        return x
    if isinstance(begin, int) and isinstance(stop, int) and isinstance(dim, int) and \
            begin == 0 and stop == dim and step == 1:
        return x
    return ctx.emit("strided_slice", x, begin=[begin], end=[stop], strides=[step],
                    axes=[axis])


def select(ctx, x, axis, index):
    """``x`` at position ``index`` of ``axis`` (the axis dropped)."""
    if ctx.is_tensor(index):
        return ctx.emit("take", x, index, axis=axis)
    dim = ctx.shape(x)[axis]
    index = int(index) if not hasattr(index, "terms") else index
    if isinstance(index, int) and index < 0:
        index = index + dim
    if isinstance(index, int) and isinstance(dim, int) and not 0 <= index < dim:
        raise TorchConversionError(f"index {index} is out of range for dim {axis} of size {dim}")
    part = ctx.emit("strided_slice", x, begin=[index], end=[index + 1], strides=[1],
                    axes=[axis])
    return ctx.emit("squeeze", part, axis=[axis])


def index_tensor(ctx, x, items):
    """``x[items]`` for a tuple of ints, slices, None, Ellipsis and at most one tensor."""
    if not isinstance(items, tuple):
        items = (items,)
    ndim = ctx.ndim(x)
    used = sum(1 for item in items if item is not None and item is not Ellipsis and
               not (ctx.is_tensor(item) and ctx.dtype(item) == "bool"))
    if sum(1 for item in items if item is Ellipsis) > 1:
        raise TorchConversionError("an index can only have a single ellipsis")
    expanded = []
    for item in items:
        if item is Ellipsis:
            expanded.extend([slice(None)] * (ndim - used))
        else:
            expanded.append(item)
    if sum(1 for item in expanded if ctx.is_tensor(item)) > 1:
        unsupported("indexing with more than one index tensor")
    result, axis = x, 0
    pending_none = []
    for item in expanded:
        if item is None:
            pending_none.append(axis)
            axis += 1
            continue
        if isinstance(item, slice):
            result = _insert_nones(ctx, result, pending_none)
            pending_none = []
            result = slice_axis(ctx, result, axis, item.start, item.stop, item.step)
            axis += 1
        elif ctx.is_tensor(item):
            if ctx.dtype(item) == "bool":
                unsupported("boolean mask indexing (data-dependent shape)")
            result = _insert_nones(ctx, result, pending_none)
            pending_none = []
            result = ctx.emit("take", result, ctx.cast(item, "int64") if
                              ctx.dtype(item) not in ("int32", "int64") else item, axis=axis)
            axis += ctx.ndim(item)
        else:
            result = _insert_nones(ctx, result, pending_none)
            pending_none = []
            if axis >= ctx.ndim(result):
                raise TorchConversionError(f"too many indices for a rank-{ndim} tensor")
            result = select(ctx, result, axis, item)
    return _insert_nones(ctx, result, pending_none)


def _insert_nones(ctx, x, axes):
    for axis in axes:
        x = ctx.emit("expand_dims", x, axis=axis)
    return x


@converter(operator.getitem)
def _getitem(ctx, args, kwargs):
    container, index = args[0], args[1]
    if ctx.is_tensor(container):
        if hasattr(ctx.type_of(container), "fields"):
            return ctx.tuple_get(container, int(index))
        return index_tensor(ctx, container, index)
    if container is None:
        return None
    try:
        return container[index]
    except (IndexError, TypeError, KeyError) as error:
        raise TorchConversionError(f"getitem {index!r} on {type(container).__name__}: "
                                   f"{error}") from error


@converter(torch.select, "Tensor.select", aten.select.int)
def _select(ctx, args, kwargs):
    x = args[0]
    return select(ctx, x, norm_axis(arg(args, kwargs, 1, "dim"), ctx.ndim(x)),
                  arg(args, kwargs, 2, "index"))


@converter(aten.slice.Tensor)
def _slice(ctx, args, kwargs):
    x = args[0]
    return slice_axis(ctx, x, norm_axis(arg(args, kwargs, 1, "dim", 0), ctx.ndim(x)),
                      arg(args, kwargs, 2, "start", None), arg(args, kwargs, 3, "end", None),
                      arg(args, kwargs, 4, "step", 1))


@converter(torch.narrow, "Tensor.narrow", aten.narrow.default)
def _narrow(ctx, args, kwargs):
    x = args[0]
    axis = norm_axis(arg(args, kwargs, 1, "dim"), ctx.ndim(x))
    start = arg(args, kwargs, 2, "start")
    if isinstance(start, int) and start < 0:
        start += ctx.shape(x)[axis]
    return slice_axis(ctx, x, axis, start, start + arg(args, kwargs, 3, "length"))


@converter(torch.index_select, "Tensor.index_select", aten.index_select.default)
def _index_select(ctx, args, kwargs):
    x = args[0]
    axis = norm_axis(arg(args, kwargs, 1, "dim"), ctx.ndim(x))
    return ctx.emit("take", x, arg(args, kwargs, 2, "index"), axis=axis)


@converter(torch.gather, "Tensor.gather", aten.gather.default)
def _gather(ctx, args, kwargs):
    x = args[0]
    axis = norm_axis(arg(args, kwargs, 1, "dim"), ctx.ndim(x))
    return ctx.emit("gather", x, arg(args, kwargs, 2, "index"), axis=axis)


@converter(aten.index.Tensor)
def _aten_index(ctx, args, kwargs):
    x, indices = args[0], list(args[1])
    items = tuple(slice(None) if item is None else item for item in indices)
    return index_tensor(ctx, x, items)


@converter(torch.flip, "Tensor.flip", aten.flip.default)
def _flip(ctx, args, kwargs):
    x = args[0]
    dims = arg(args, kwargs, 1, "dims")
    dims = [dims] if isinstance(dims, int) else list(dims)
    for axis in dims:
        x = ctx.emit("reverse", x, axis=norm_axis(axis, ctx.ndim(x)))
    return x
