"""Shared building blocks of the torch converters: convolution, pooling, normalisation,
matrix products and attention as irlib ops (used by function, ATen and module converters)."""

from __future__ import annotations

import math

import numpy as np

from ._args import int_list, norm_axis
from .errors import TorchConversionError, unsupported


# -- convolution -----------------------------------------------------------------------------

_CONV_LAYOUTS = {1: ("NCW", "OIW", "IOW"), 2: ("NCHW", "OIHW", "IOHW"),
                 3: ("NCDHW", "OIDHW", "IODHW")}


def conv(ctx, x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
         transposed=False, output_padding=0):
    """A torch convolution (1-3 spatial dims, optionally transposed) with its bias.

    Args:
        x: the input, ``(N, C, *spatial)`` or unbatched ``(C, *spatial)``.
        weight: the weight.
        bias: the bias, or None.
        stride: the stride (an int or one per spatial axis).
        padding: the padding (an int, one per spatial axis, or ``"same"``/``"valid"``).
        dilation: the dilation.
        groups: the channel groups.
        transposed: a transposed convolution.
        output_padding: a transposed convolution's extra output size.
    """
    rank = ctx.ndim(weight) - 2
    if rank not in (1, 2, 3):
        unsupported(f"convolution with {rank} spatial dims")
    if ctx.ndim(x) == rank + 1:  # unbatched input
        x = ctx.emit("expand_dims", x, axis=0)
        return ctx.emit("squeeze", conv(ctx, x, weight, bias, stride, padding, dilation,
                                        groups, transposed, output_padding), axis=[0])
    strides = [int(s) for s in int_list(stride, rank)]
    dilation = [int(d) for d in int_list(dilation, rank)]
    kernel = [int(k) for k in ctx.shape(weight)[2:]]
    if isinstance(padding, str):
        if padding == "valid":
            begin = end = [0] * rank
        elif padding == "same":
            totals = [d * (k - 1) for d, k in zip(dilation, kernel)]
            begin = [t // 2 for t in totals]
            end = [t - t // 2 for t in totals]
        else:
            unsupported(f"padding={padding!r}")
    else:
        begin = end = [int(p) for p in int_list(padding, rank)]
    data_layout, kernel_layout, transposed_layout = _CONV_LAYOUTS[rank]
    if transposed:
        op_name = f"nn.conv{rank}d_transpose"
        out_channels = int(ctx.shape(weight)[1]) * int(groups)
        result = ctx.emit(op_name, x, weight, strides=strides, padding=begin + end,
                          dilation=dilation, groups=int(groups), channels=out_channels,
                          kernel_size=kernel,
                          output_padding=[int(p) for p in int_list(output_padding, rank)],
                          data_layout=data_layout, kernel_layout=transposed_layout)
    else:
        result = ctx.emit(f"nn.conv{rank}d", x, weight, strides=strides, padding=begin + end,
                          dilation=dilation, groups=int(groups),
                          channels=int(ctx.shape(weight)[0]), kernel_size=kernel,
                          data_layout=data_layout, kernel_layout=kernel_layout)
    if bias is not None:
        result = ctx.emit("nn.bias_add", result, bias, axis=1)
    return result


# -- pooling ---------------------------------------------------------------------------------

def pool(ctx, kind: str, x, kernel, stride=None, padding=0, dilation=1, ceil_mode=False,
         count_include_pad=True, rank=2):
    """``max``/``avg`` pooling over the last ``rank`` axes (NC... layout).

    Args:
        kind: ``"max"`` or ``"avg"``.
        x: the input.
        kernel: the window size.
        stride: the stride (None: the kernel size).
        padding: the padding on both sides.
        dilation: the dilation (max pooling).
        ceil_mode: round the output size up.
        count_include_pad: average pooling divides by the whole window, padding included.
        rank: the number of spatial axes.
    """
    kernel = [int(k) for k in int_list(kernel, rank)]
    stride = kernel if stride is None or (isinstance(stride, (list, tuple)) and
                                          not stride) else \
        [int(s) for s in int_list(stride, rank)]
    pads = [int(p) for p in int_list(padding, rank)]
    layout = {1: "NCW", 2: "NCHW", 3: "NCDHW"}[rank]
    squeeze = ctx.ndim(x) == rank + 1
    if squeeze:
        x = ctx.emit("expand_dims", x, axis=0)
    attrs = dict(pool_size=kernel, strides=stride, padding=pads + pads, layout=layout,
                 ceil_mode=bool(ceil_mode))
    if kind == "max":
        attrs["dilation"] = [int(d) for d in int_list(dilation, rank)]
    else:
        attrs["count_include_pad"] = bool(count_include_pad)
    result = ctx.emit(f"nn.{kind}_pool{rank}d", x, **attrs)
    return ctx.emit("squeeze", result, axis=[0]) if squeeze else result


def adaptive_pool(ctx, kind: str, x, output_size, rank=2):
    """Adaptive ``avg``/``max`` pooling to ``output_size`` (None entries keep the size).

    Args:
        kind: ``"avg"`` or ``"max"``.
        x: the input.
        output_size: the output's spatial size.
        rank: the number of spatial axes.
    """
    sizes = int_list(output_size, rank)
    spatial = ctx.shape(x)[-rank:]
    sizes = [int(spatial[i]) if s is None else int(s) for i, s in enumerate(sizes)]
    layout = {1: "NCW", 2: "NCHW", 3: "NCDHW"}[rank]
    squeeze = ctx.ndim(x) == rank + 1
    if squeeze:
        x = ctx.emit("expand_dims", x, axis=0)
    if kind == "avg" and rank == 2 and sizes == [1, 1]:
        result = ctx.emit("nn.global_avg_pool2d", x)
    else:
        result = ctx.emit(f"nn.adaptive_{kind}_pool{rank}d", x, output_size=sizes,
                          layout=layout)
    return ctx.emit("squeeze", result, axis=[0]) if squeeze else result


# -- normalisation ---------------------------------------------------------------------------

def _ones(ctx, count, dtype):
    return ctx.const(np.ones(count, dtype))


def _zeros(ctx, count, dtype):
    return ctx.const(np.zeros(count, dtype))


def batch_norm(ctx, x, mean, var, weight=None, bias=None, eps=1e-5):
    """Inference batch norm over axis 1 with running statistics ``mean``/``var``.

    Args:
        x: the input.
        mean: the running mean.
        var: the running variance.
        weight: the per-channel scale, or None.
        bias: the per-channel offset, or None.
        eps: added to the variance.
    """
    if mean is None or var is None:
        unsupported("batch_norm without running statistics (training mode)")
    channels = ctx.shape(x)[1]
    dtype = ctx.dtype(x)
    weight = _ones(ctx, channels, dtype) if weight is None else weight
    bias = _zeros(ctx, channels, dtype) if bias is None else bias
    out = ctx.emit("nn.batch_norm", x, weight, bias, mean, var, axis=1, epsilon=float(eps))
    return ctx.tuple_get(out, 0)


def layer_norm(ctx, x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Layer norm over the last ``len(normalized_shape)`` axes.

    Args:
        x: the input.
        normalized_shape: the shape of the normalised trailing axes.
        weight: the elementwise scale, or None.
        bias: the elementwise offset, or None.
        eps: added to the variance.
    """
    count = len(int_list(normalized_shape))
    dtype = ctx.dtype(x)
    shape = ctx.shape(x)
    if count == 1:
        features = shape[-1]
        weight = _ones(ctx, int(features), dtype) if weight is None else weight
        bias = _zeros(ctx, int(features), dtype) if bias is None else bias
        return ctx.emit("nn.layer_norm", x, weight, bias, axis=-1, epsilon=float(eps))
    inner = 1
    for dim in shape[-count:]:
        inner = inner * dim
    flat = ctx.emit("reshape", x, newshape=list(shape[:-count]) + [inner])
    flat_w = _ones(ctx, int(inner), dtype) if weight is None else \
        ctx.emit("reshape", weight, newshape=[inner])
    flat_b = _zeros(ctx, int(inner), dtype) if bias is None else \
        ctx.emit("reshape", bias, newshape=[inner])
    out = ctx.emit("nn.layer_norm", flat, flat_w, flat_b, axis=-1, epsilon=float(eps))
    return ctx.emit("reshape", out, newshape=list(shape))


def group_norm(ctx, x, groups, weight=None, bias=None, eps=1e-5):
    """Group norm over axis 1 in ``groups`` groups.

    Args:
        x: the input.
        groups: the number of groups.
        weight: the per-channel scale, or None.
        bias: the per-channel offset, or None.
        eps: added to the variance.
    """
    channels = int(ctx.shape(x)[1])
    dtype = ctx.dtype(x)
    weight = _ones(ctx, channels, dtype) if weight is None else weight
    bias = _zeros(ctx, channels, dtype) if bias is None else bias
    return ctx.emit("nn.group_norm", x, weight, bias, num_groups=int(groups), axis=1,
                    epsilon=float(eps))


def softmax(ctx, x, dim, dtype=None, log=False):
    """(Log-)softmax along ``dim`` (after a cast to ``dtype`` when given).

    Args:
        x: the input.
        dim: the axis.
        dtype: the dtype to cast to first, or None.
        log: log-softmax instead.
    """
    from . import dtypes
    if dtype is not None:
        x = ctx.cast(x, dtypes.to_irlib(dtype))
    elif not ctx.dtype(x).startswith(("float", "bfloat")):
        x = ctx.cast(x, "float32")
    axis = norm_axis(-1 if dim is None else dim, ctx.ndim(x))
    return ctx.emit("nn.log_softmax" if log else "nn.softmax", x, axis=axis)


# -- matrix products -----------------------------------------------------------------------

def linear(ctx, x, weight, bias=None):
    """``x @ weight.T + bias`` (nn.dense)."""
    out = ctx.emit("nn.dense", x, weight)
    return out if bias is None else ctx.emit("add", out, bias)


def _broadcast_batch(ctx, a_batch, b_batch):
    rank = max(len(a_batch), len(b_batch))
    a = [1] * (rank - len(a_batch)) + list(a_batch)
    b = [1] * (rank - len(b_batch)) + list(b_batch)
    out = []
    for da, db in zip(a, b):
        if isinstance(da, int) and da == 1:
            out.append(db)
        elif isinstance(db, int) and db == 1 or da == db:
            out.append(da)
        else:
            raise TorchConversionError(f"matmul batch dims {a_batch} and {b_batch} do not "
                                       "broadcast")
    return out


def matmul(ctx, a, b):
    """``torch.matmul`` semantics (1-D operands, broadcast batch dims) on nn.matmul,
    nn.batch_matmul and reshapes.

    Args:
        a: the left operand.
        b: the right operand.
    """
    ra, rb = ctx.ndim(a), ctx.ndim(b)
    if ra == 0 or rb == 0:
        raise TorchConversionError("matmul operands must have rank >= 1")
    if ra == 1 and rb == 1:
        return ctx.emit("sum", ctx.emit("multiply", a, b), axis=[0])
    if rb == 1:
        out = ctx.emit("nn.matmul", a, ctx.emit("expand_dims", b, axis=1))
        return ctx.emit("squeeze", out, axis=[-1 + ctx.ndim(out)])
    if ra == 1:
        out = matmul(ctx, ctx.emit("expand_dims", a, axis=0), b)
        return ctx.emit("squeeze", out, axis=[ctx.ndim(out) - 2])
    if rb == 2:
        return ctx.emit("nn.matmul", a, b)
    a_shape, b_shape = ctx.shape(a), ctx.shape(b)
    batch = _broadcast_batch(ctx, a_shape[:-2], b_shape[:-2])
    flat = 1
    for dim in batch:
        flat = flat * dim
    a3 = _to_batch3(ctx, a, batch, flat)
    b3 = _to_batch3(ctx, b, batch, flat)
    out = ctx.emit("nn.batch_matmul", a3, b3, transpose_b=False)
    return ctx.emit("reshape", out, newshape=list(batch) + [a_shape[-2], b_shape[-1]])


def _to_batch3(ctx, x, batch, flat):
    shape = ctx.shape(x)
    if list(shape[:-2]) != list(batch):
        if len(shape) == 2 and all(isinstance(d, int) for d in batch) and flat == 1:
            return ctx.emit("expand_dims", x, axis=0)
        x = ctx.emit("broadcast_to", x, shape=list(batch) + list(shape[-2:]))
    if len(batch) == 1:
        return x
    return ctx.emit("reshape", x, newshape=[flat] + list(shape[-2:]))


def bmm(ctx, a, b):
    """``torch.bmm``: 3-D batched product.

    Args:
        a: the ``(B, N, K)`` operand.
        b: the ``(B, K, M)`` operand.
    """
    return ctx.emit("nn.batch_matmul", a, b, transpose_b=False)


# -- attention -------------------------------------------------------------------------------

def causal_mask(ctx, queries, keys):
    """A bool ``(queries, keys)`` mask, True where key ``j <= i`` (a constant for static
    lengths, built from ``arange`` for symbolic ones)."""
    if isinstance(queries, int) and isinstance(keys, int):
        return ctx.const(np.tril(np.ones((queries, keys), bool)))
    zero, one = ctx.scalar(0, "int64"), ctx.scalar(1, "int64")
    rows = ctx.emit("arange", zero, ctx.dim_value(queries), one, dtype="int64")
    cols = ctx.emit("arange", zero, ctx.dim_value(keys), one, dtype="int64")
    return ctx.emit("less_equal", ctx.emit("expand_dims", cols, axis=0),
                    ctx.emit("expand_dims", rows, axis=1))


def attention(ctx, query, key, value, attn_mask=None, is_causal=False, scale=None):
    """``F.scaled_dot_product_attention`` (no dropout): batched products and a softmax.

    A bool mask keeps the positions where it is True, a float mask is added to the scores;
    ``is_causal`` masks keys after the query position (top-left aligned).

    Args:
        query: the queries ``(..., L, E)``.
        key: the keys ``(..., S, E)``.
        value: the values ``(..., S, Ev)``.
        attn_mask: the bool or float mask, or None.
        is_causal: apply a causal mask.
        scale: the score scale (default ``1 / sqrt(E)``).
    """
    q_shape, k_shape, v_shape = ctx.shape(query), ctx.shape(key), ctx.shape(value)
    dtype = ctx.dtype(query)
    head = q_shape[-1]
    if scale is None:
        if not isinstance(head, int):
            unsupported("scaled_dot_product_attention with a symbolic head size needs scale")
        scale = 1.0 / math.sqrt(head)
    batch = _broadcast_batch(ctx, q_shape[:-2], k_shape[:-2])
    flat = 1
    for dim in batch:
        flat = flat * dim
    q3 = _to_batch3(ctx, query, batch, flat) if q_shape[:-2] else query
    k3 = _to_batch3(ctx, key, batch, flat) if k_shape[:-2] else key
    v3 = _to_batch3(ctx, value, batch, flat) if v_shape[:-2] else value
    if len(batch) == 0:
        q3, k3, v3 = (ctx.emit("expand_dims", t, axis=0) for t in (q3, k3, v3))
    scores = ctx.emit("nn.batch_matmul", q3, k3, transpose_b=True)
    scores = ctx.emit("multiply", scores, ctx.scalar(scale, dtype))
    queries, keys = q_shape[-2], k_shape[-2]
    scores_shape = list(batch) + [queries, keys]
    if is_causal or attn_mask is not None:
        scores = ctx.emit("reshape", scores, newshape=scores_shape) if batch else \
            ctx.emit("squeeze", scores, axis=[0])
        if is_causal:
            scores = ctx.emit("where", causal_mask(ctx, queries, keys), scores,
                              ctx.scalar(-np.inf, dtype))
        if attn_mask is not None:
            if ctx.dtype(attn_mask) == "bool":
                scores = ctx.emit("where", attn_mask, scores, ctx.scalar(-np.inf, dtype))
            else:
                scores = ctx.emit("add", scores, ctx.cast(attn_mask, dtype))
        scores = ctx.emit("reshape", scores, newshape=[flat, queries, keys])
    probs = ctx.emit("nn.softmax", scores, axis=-1)
    out = ctx.emit("nn.batch_matmul", probs, v3, transpose_b=False)
    return ctx.emit("reshape", out, newshape=list(batch) + [queries, v_shape[-1]])


# -- resampling and padding ---------------------------------------------------------------------

def interpolate(ctx, x, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """``F.interpolate`` over the two spatial axes of an NCHW tensor.

    Args:
        x: the NCHW input.
        size: the output ``(H, W)``, or None.
        scale_factor: the scale of each spatial axis, or None.
        mode: ``"nearest"`` or ``"bilinear"``.
        align_corners: align the corner pixels (linear and cubic modes).
    """
    if ctx.ndim(x) != 4:
        unsupported(f"interpolate of a rank-{ctx.ndim(x)} tensor (only 4-D, NCHW)")
    height, width = ctx.shape(x)[2:]
    if size is not None:
        out = [int(s) for s in int_list(size, 2)]
    elif scale_factor is not None:
        scales = int_list(scale_factor, 2)
        out = [int(math.floor(int(height) * float(scales[0]))),
               int(math.floor(int(width) * float(scales[1])))]
    else:
        raise TorchConversionError("interpolate needs size or scale_factor")
    if mode == "nearest":
        return ctx.emit("image.resize2d", x, size=out, method="nearest_neighbor",
                        coordinate_transformation_mode="asymmetric", rounding_method="floor",
                        roi=[0.0, 0.0, 0.0, 0.0])
    if mode == "bilinear":
        transform = "align_corners" if align_corners else "half_pixel"
        return ctx.emit("image.resize2d", x, size=out, method="linear",
                        coordinate_transformation_mode=transform, roi=[0.0, 0.0, 0.0, 0.0])
    unsupported(f"interpolate mode={mode!r}")


def pad(ctx, x, pads, mode="constant", value=0.0):
    """``F.pad``: ``pads`` lists (before, after) pairs from the last axis backwards.

    Args:
        x: the input.
        pads: the padding amounts.
        mode: ``"constant"``, ``"reflect"`` or ``"replicate"``.
        value: the fill value of constant padding.
    """
    pads = [int(p) for p in pads]
    if len(pads) % 2 or len(pads) // 2 > ctx.ndim(x):
        raise TorchConversionError(f"pad of length {len(pads)} for a rank-{ctx.ndim(x)} tensor")
    if any(p < 0 for p in pads):
        unsupported("negative padding")
    widths = [[0, 0] for _ in range(ctx.ndim(x))]
    for index in range(len(pads) // 2):
        widths[ctx.ndim(x) - 1 - index] = [pads[2 * index], pads[2 * index + 1]]
    modes = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}
    if mode not in modes:
        unsupported(f"pad mode={mode!r}")
    value = 0.0 if value is None else value
    return ctx.emit("nn.pad", x, ctx.scalar(value, ctx.dtype(x)), pad_width=widths,
                    pad_mode=modes[mode])
