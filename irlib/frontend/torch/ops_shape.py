"""Shape converters: sizes, view/reshape/flatten, permute/transpose, squeeze/unsqueeze,
expand/repeat, cat/stack/split/chunk/unbind, dtype casts and the identity-like ops."""

from __future__ import annotations

import builtins

import torch

from . import dtypes
from ._args import arg, int_list, norm_axis, sizes_from
from .context import is_dim
from .errors import TorchConversionError, unsupported
from .registry import converter

aten = torch.ops.aten


# -- sizes -----------------------------------------------------------------------------------

@converter("Tensor.size", aten.sym_size.int, aten.sym_size.default)
def _size(ctx, args, kwargs):
    shape = ctx.shape(args[0])
    dim = arg(args, kwargs, 1, "dim", None)
    if dim is None:
        return tuple(shape)
    return shape[norm_axis(dim, len(shape))]


@converter("Tensor.dim", "Tensor.ndimension")
def _dim(ctx, args, kwargs):
    return ctx.ndim(args[0])


@converter("Tensor.numel", aten.sym_numel.default, torch.numel)
def _numel(ctx, args, kwargs):
    total = 1
    for dim in ctx.shape(args[0]):
        total = total * dim
    return total


@converter(builtins.getattr)
def _getattr(ctx, args, kwargs):
    value, name = args[0], args[1]
    if not ctx.is_tensor(value):
        return getattr(value, name)
    if name == "shape":
        return tuple(ctx.shape(value))
    if name == "dtype":
        return dtypes.to_torch(ctx.dtype(value))
    if name == "ndim":
        return ctx.ndim(value)
    if name == "T":
        return ctx.emit("transpose", value, axes=list(range(ctx.ndim(value)))[::-1])
    if name == "device":
        return torch.device("cpu")
    unsupported(f"tensor attribute {name!r}")


@converter(builtins.len)
def _len(ctx, args, kwargs):
    value = args[0]
    if ctx.is_tensor(value):
        return ctx.shape(value)[0]
    return len(value)


# -- reshaping -------------------------------------------------------------------------------

def reshape(ctx, x, sizes):
    """``x`` reshaped to ``sizes`` (one entry may be -1)."""
    sizes = list(sizes)
    if builtins.sum(1 for s in sizes if isinstance(s, int) and s == -1) > 1:
        raise TorchConversionError(f"view/reshape to {sizes}: at most one -1")
    if -1 in [s for s in sizes if isinstance(s, int)]:
        total = 1
        for dim in ctx.shape(x):
            total = total * dim
        known = 1
        for s in sizes:
            if not (isinstance(s, int) and s == -1):
                known = known * s
        from ...ir.dims import floordiv
        rest = total // known if isinstance(total, int) and isinstance(known, int) else \
            floordiv(total, known)
        sizes = [rest if isinstance(s, int) and s == -1 else s for s in sizes]
    if list(ctx.shape(x)) == sizes:
        return x
    return ctx.emit("reshape", x, newshape=sizes)


@converter("Tensor.view", "Tensor.reshape", torch.reshape, aten.view.default,
           aten.reshape.default, aten._unsafe_view.default)
def _view(ctx, args, kwargs):
    if len(args) == 2 and not isinstance(args[1], (list, tuple)) and not is_dim(args[1]):
        unsupported("view(dtype) reinterpretation")
    sizes = sizes_from(args[1:]) if len(args) > 1 else list(kwargs.get("shape", ()))
    return reshape(ctx, args[0], sizes)


@converter("Tensor.view_as", "Tensor.reshape_as")
def _view_as(ctx, args, kwargs):
    return reshape(ctx, args[0], ctx.shape(args[1]))


@converter(torch.flatten, "Tensor.flatten", aten.flatten.using_ints)
def _flatten(ctx, args, kwargs):
    x = args[0]
    shape = list(ctx.shape(x))
    if not shape:
        return reshape(ctx, x, [1])
    start = norm_axis(arg(args, kwargs, 1, "start_dim", 0), len(shape))
    end = norm_axis(arg(args, kwargs, 2, "end_dim", -1), len(shape))
    inner = 1
    for dim in shape[start:end + 1]:
        inner = inner * dim
    return reshape(ctx, x, shape[:start] + [inner] + shape[end + 1:])


@converter(torch.unflatten, "Tensor.unflatten", aten.unflatten.int)
def _unflatten(ctx, args, kwargs):
    x = args[0]
    shape = list(ctx.shape(x))
    axis = norm_axis(arg(args, kwargs, 1, "dim"), len(shape))
    sizes = list(arg(args, kwargs, 2, "sizes"))
    if -1 in sizes:
        known = 1
        for s in sizes:
            if s != -1:
                known = known * s
        sizes = [shape[axis] // known if s == -1 else s for s in sizes]
    return reshape(ctx, x, shape[:axis] + sizes + shape[axis + 1:])


def permute(ctx, x, axes):
    """``x`` with its axes reordered (identity permutations are dropped)."""
    ndim = ctx.ndim(x)
    axes = [norm_axis(a, ndim) for a in axes]
    if axes == list(range(ndim)):
        return x
    return ctx.emit("transpose", x, axes=axes)


@converter(torch.permute, "Tensor.permute", aten.permute.default)
def _permute(ctx, args, kwargs):
    return permute(ctx, args[0], sizes_from(args[1:]) if len(args) > 1 else kwargs["dims"])


@converter(torch.transpose, "Tensor.transpose", torch.swapaxes, "Tensor.swapaxes",
           aten.transpose.int)
def _transpose(ctx, args, kwargs):
    x = args[0]
    ndim = ctx.ndim(x)
    a = norm_axis(arg(args, kwargs, 1, "dim0"), ndim)
    b = norm_axis(arg(args, kwargs, 2, "dim1"), ndim)
    axes = list(range(ndim))
    axes[a], axes[b] = axes[b], axes[a]
    return permute(ctx, x, axes)


@converter(torch.t, "Tensor.t", aten.t.default, aten.numpy_T.default)
def _t(ctx, args, kwargs):
    return permute(ctx, args[0], list(range(ctx.ndim(args[0])))[::-1])


@converter(torch.squeeze, "Tensor.squeeze", aten.squeeze.default, aten.squeeze.dim,
           aten.squeeze.dims)
def _squeeze(ctx, args, kwargs):
    x = args[0]
    shape = ctx.shape(x)
    dims = arg(args, kwargs, 1, "dim", None)
    if dims is None:
        axes = [i for i, d in enumerate(shape) if isinstance(d, int) and d == 1]
    else:
        axes = [norm_axis(d, len(shape)) for d in int_list(dims)]
        axes = [a for a in axes if isinstance(shape[a], int) and shape[a] == 1]
    if not axes:
        return x
    return ctx.emit("squeeze", x, axis=axes)


@converter(torch.unsqueeze, "Tensor.unsqueeze", aten.unsqueeze.default)
def _unsqueeze(ctx, args, kwargs):
    x = args[0]
    axis = norm_axis(arg(args, kwargs, 1, "dim"), ctx.ndim(x) + 1)
    return ctx.emit("expand_dims", x, axis=axis)


def broadcast_to(ctx, x, sizes):
    """``x.expand(*sizes)`` (-1 keeps a dim)."""
    shape = list(ctx.shape(x))
    sizes = list(sizes)
    lead = len(sizes) - len(shape)
    if lead < 0:
        raise TorchConversionError(f"expand to {sizes}: fewer dims than the tensor {shape}")
    target = [shape[i - lead] if isinstance(s, int) and s == -1 else s
              for i, s in enumerate(sizes)]
    if target == shape:
        return x
    return ctx.emit("broadcast_to", x, shape=target)


@converter("Tensor.expand", aten.expand.default)
def _expand(ctx, args, kwargs):
    return broadcast_to(ctx, args[0], sizes_from(args[1:]) if len(args) > 1 else kwargs["size"])


@converter("Tensor.expand_as", torch.broadcast_to, aten.expand_as.default)
def _expand_as(ctx, args, kwargs):
    other = args[1]
    sizes = ctx.shape(other) if ctx.is_tensor(other) else other
    return broadcast_to(ctx, args[0], sizes)


@converter("Tensor.repeat", aten.repeat.default)
def _repeat(ctx, args, kwargs):
    x = args[0]
    reps = [int(r) for r in sizes_from(args[1:])]
    ndim = ctx.ndim(x)
    if len(reps) > ndim:
        x = reshape(ctx, x, [1] * (len(reps) - ndim) + list(ctx.shape(x)))
    return ctx.emit("tile", x, reps=reps)


@converter(torch.repeat_interleave, "Tensor.repeat_interleave",
           aten.repeat_interleave.self_int)
def _repeat_interleave(ctx, args, kwargs):
    x, repeats = args[0], arg(args, kwargs, 1, "repeats")
    dim = arg(args, kwargs, 2, "dim", None)
    if ctx.is_tensor(repeats):
        unsupported("repeat_interleave with tensor repeats")
    if dim is None:
        x = reshape(ctx, x, [-1])
        dim = 0
    return ctx.emit("repeat", x, repeats=int(repeats), axis=norm_axis(dim, ctx.ndim(x)))


# -- joining and splitting ---------------------------------------------------------------------

def _common_dtype(ctx, tensors):
    common = ctx.dtype(tensors[0])
    for t in tensors[1:]:
        common = dtypes.promote(common, ctx.dtype(t))
    return [ctx.cast(t, common) for t in tensors]


@converter(torch.cat, torch.concat, torch.concatenate, aten.cat.default, aten.concat.default)
def _cat(ctx, args, kwargs):
    tensors = [t for t in arg(args, kwargs, 0, "tensors")
               if not (ctx.is_tensor(t) and ctx.shape(t) == (0,))]
    axis = norm_axis(arg(args, kwargs, 1, "dim", 0), ctx.ndim(tensors[0]))
    if len(tensors) == 1:
        return tensors[0]
    return ctx.emit_tuple_op("concatenate", _common_dtype(ctx, tensors), axis=axis)


@converter(torch.stack, aten.stack.default)
def _stack(ctx, args, kwargs):
    tensors = list(arg(args, kwargs, 0, "tensors"))
    axis = norm_axis(arg(args, kwargs, 1, "dim", 0), ctx.ndim(tensors[0]) + 1)
    return ctx.emit_tuple_op("stack", _common_dtype(ctx, tensors), axis=axis)


def split_sizes(ctx, x, sizes, axis):
    """``x`` cut along ``axis`` into pieces of ``sizes``: a tuple of expressions."""
    if len(sizes) == 1:
        return (x,)
    indices, total = [], 0
    for size in sizes[:-1]:
        total += int(size)
        indices.append(total)
    parts = ctx.emit("split", x, indices_or_sections=indices, axis=axis)
    return tuple(ctx.tuple_get(parts, i) for i in range(len(sizes)))


def _static_dim(ctx, x, axis):
    dim = ctx.shape(x)[axis]
    if not isinstance(dim, int):
        unsupported(f"splitting the symbolic dim {dim}")
    return dim


@converter(torch.split, "Tensor.split", aten.split.Tensor, aten.split_with_sizes.default,
           "Tensor.split_with_sizes", aten.split.sizes)
def _split(ctx, args, kwargs):
    x = args[0]
    size = arg(args, kwargs, 1, "split_size_or_sections", None)
    if size is None:
        size = kwargs.get("split_size", kwargs.get("split_sizes"))
    axis = norm_axis(arg(args, kwargs, 2, "dim", 0), ctx.ndim(x))
    length = _static_dim(ctx, x, axis)
    if isinstance(size, (list, tuple)):
        sizes = [int(s) for s in size]
    else:
        size = int(size)
        sizes = [size] * (length // size) + ([length % size] if length % size else [])
    return split_sizes(ctx, x, sizes, axis)


@converter(torch.chunk, "Tensor.chunk", aten.chunk.default)
def _chunk(ctx, args, kwargs):
    x = args[0]
    chunks = int(arg(args, kwargs, 1, "chunks"))
    axis = norm_axis(arg(args, kwargs, 2, "dim", 0), ctx.ndim(x))
    length = _static_dim(ctx, x, axis)
    size = -(-length // chunks)
    sizes = [size] * (length // size) + ([length % size] if length % size else [])
    return split_sizes(ctx, x, sizes, axis)


@converter(torch.unbind, "Tensor.unbind", aten.unbind.int)
def _unbind(ctx, args, kwargs):
    x = args[0]
    axis = norm_axis(arg(args, kwargs, 1, "dim", 0), ctx.ndim(x))
    length = _static_dim(ctx, x, axis)
    parts = split_sizes(ctx, x, [1] * length, axis)
    return tuple(ctx.emit("squeeze", part, axis=[axis]) for part in parts)


# -- dtype casts and identities ----------------------------------------------------------------

def _to(ctx, x, rest, kwargs):
    dtype = kwargs.get("dtype")
    for value in rest:
        if isinstance(value, torch.dtype):
            dtype = value
        elif ctx.is_tensor(value):
            dtype = dtypes.to_torch(ctx.dtype(value))
    return x if dtype is None else ctx.cast(x, dtypes.to_irlib(dtype))


@converter("Tensor.to", "Tensor.type", aten.to.dtype, aten.to.dtype_layout, aten._to_copy.default,
           aten.to.device, aten.to.other)
def _to_converter(ctx, args, kwargs):
    if len(args) > 1 and isinstance(args[1], str) and not kwargs.get("dtype"):
        name = args[1].replace("torch.", "")
        if name in ("float32", "float", "FloatTensor"):
            return ctx.cast(args[0], "float32")
    return _to(ctx, args[0], args[1:], kwargs)


@converter("Tensor.type_as")
def _type_as(ctx, args, kwargs):
    return ctx.cast(args[0], ctx.dtype(args[1]))


for _method, _dtype in [("float", "float32"), ("double", "float64"), ("half", "float16"),
                        ("int", "int32"), ("long", "int64"), ("bool", "bool"),
                        ("bfloat16", "bfloat16"), ("short", "int16"), ("byte", "uint8")]:
    converter(f"Tensor.{_method}")(
        (lambda dtype: lambda ctx, args, kwargs: ctx.cast(args[0], dtype))(_dtype))


@converter("Tensor.contiguous", "Tensor.clone", "Tensor.detach", torch.clone, torch.detach,
           aten.contiguous.default, aten.clone.default, aten.detach.default, aten.alias.default,
           aten.lift_fresh_copy.default, "Tensor.cpu", aten.detach_.default,
           "Tensor.requires_grad_")
def _identity(ctx, args, kwargs):
    return args[0]


@converter(torch._assert, getattr(torch, "_assert_async", None))
def _assert(ctx, args, kwargs):
    condition = args[0]
    if not ctx.is_tensor(condition) and not condition:
        raise TorchConversionError(f"torch._assert fails at import time: {args[1] if len(args) > 1 else ''}")
    return None


@converter(torch.nn.Identity, torch.nn.Dropout, torch.nn.Dropout1d, torch.nn.Dropout2d,
           torch.nn.AlphaDropout)
def _identity_module(ctx, module, args, kwargs):
    return args[0]


@converter(torch.nn.Flatten)
def _flatten_module(ctx, module, args, kwargs):
    return _flatten(ctx, [args[0], module.start_dim, module.end_dim], {})


@converter(torch.nn.Unflatten)
def _unflatten_module(ctx, module, args, kwargs):
    return _unflatten(ctx, [args[0], module.dim, list(module.unflattened_size)], {})
