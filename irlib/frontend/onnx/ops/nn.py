"""Neural-network ONNX ops: Conv, ConvTranspose, pooling, Gemm, MatMul, Dropout, LRN."""

from __future__ import annotations

import numpy as np

from ..registry import converter
from .common import scalar, unsupported, widened


def _spatial(ctx, data):
    shape = ctx.shape(data)
    return shape[2:]


def _auto_pads(ctx, attrs, in_sizes, kernel, strides, dilations):
    """Explicit ``[begin..., end...]`` pads for an ``auto_pad`` setting."""
    mode = attrs.get("auto_pad", "NOTSET")
    count = len(kernel)
    if mode in ("NOTSET", ""):
        return list(attrs.get("pads", [0] * (2 * count)))
    if mode == "VALID":
        return [0] * (2 * count)
    if mode not in ("SAME_UPPER", "SAME_LOWER"):
        unsupported(f"auto_pad {mode!r} is not supported")
    begin, end = [], []
    for size, k, s, d in zip(in_sizes, kernel, strides, dilations):
        if not isinstance(size, (int, np.integer)):
            unsupported("auto_pad SAME needs static spatial dims")
        out = -(-int(size) // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - int(size), 0)
        small, large = total // 2, total - total // 2
        if mode == "SAME_UPPER":
            begin.append(small)
            end.append(large)
        else:
            begin.append(large)
            end.append(small)
    return begin + end


def _conv_name(rank: int, transpose: bool = False) -> str:
    if rank not in (1, 2, 3):
        unsupported(f"{'ConvTranspose' if transpose else 'Conv'} with {rank} spatial dims "
                    "is not supported")
    return f"nn.conv{rank}d" + ("_transpose" if transpose else "")


_LAYOUTS = {1: ("NCW", "OIW"), 2: ("NCHW", "OIHW"), 3: ("NCDHW", "OIDHW")}


def _add_bias(ctx, result, bias):
    if bias is None:
        return result
    return ctx.emit("nn.bias_add", result, bias, axis=1)


@converter("Conv")
def _conv(ctx, inputs, attrs):
    data, weight = inputs[0], inputs[1]
    bias = inputs[2] if len(inputs) > 2 else None
    kernel = list(ctx.shape(weight)[2:])
    rank = len(kernel)
    kernel = list(attrs.get("kernel_shape", kernel))
    strides = list(attrs.get("strides", [1] * rank))
    dilations = list(attrs.get("dilations", [1] * rank))
    pads = _auto_pads(ctx, attrs, _spatial(ctx, data), kernel, strides, dilations)
    layout, kernel_layout = _LAYOUTS.get(rank, ("", ""))
    result = ctx.emit(_conv_name(rank), data, weight, strides=strides, padding=pads,
                      dilation=dilations, groups=attrs.get("group", 1),
                      kernel_size=[int(k) for k in kernel], data_layout=layout,
                      kernel_layout=kernel_layout)
    return _add_bias(ctx, result, bias)


@converter("ConvTranspose")
def _conv_transpose(ctx, inputs, attrs):
    data, weight = inputs[0], inputs[1]
    bias = inputs[2] if len(inputs) > 2 else None
    kernel = [int(k) for k in attrs.get("kernel_shape", ctx.shape(weight)[2:])]
    rank = len(kernel)
    strides = list(attrs.get("strides", [1] * rank))
    dilations = list(attrs.get("dilations", [1] * rank))
    output_padding = list(attrs.get("output_padding", [0] * rank))
    in_sizes = _spatial(ctx, data)
    mode = attrs.get("auto_pad", "NOTSET")
    extend = [0] * rank
    if "output_shape" in attrs or mode in ("SAME_UPPER", "SAME_LOWER"):
        if not all(isinstance(s, (int, np.integer)) for s in in_sizes):
            unsupported("ConvTranspose output_shape/auto_pad needs static spatial dims")
        wanted = list(attrs["output_shape"])[-rank:] if "output_shape" in attrs else \
            [int(s) * st for s, st in zip(in_sizes, strides)]
        begin, end = [], []
        for size, k, s, d, op, out in zip(in_sizes, kernel, strides, dilations,
                                           output_padding, wanted):
            total = s * (int(size) - 1) + op + (k - 1) * d + 1 - out
            small, large = total // 2, total - total // 2
            if mode == "SAME_UPPER":
                begin.append(small)
                end.append(large)
            else:  # NOTSET with output_shape, SAME_LOWER: the larger half first
                begin.append(large)
                end.append(small)
        # negative padding asks for a larger output: extra end rows come from output_padding,
        # extra begin rows (only bias reaches them) from zero padding after the conv
        output_padding = [op + max(-e, 0) for op, e in zip(output_padding, end)]
        extend = [max(-b, 0) for b in begin]
        pads = [max(b, 0) for b in begin] + [max(e, 0) for e in end]
    elif mode == "VALID":
        pads = [0] * (2 * rank)
    else:
        pads = list(attrs.get("pads", [0] * (2 * rank)))
    layout = _LAYOUTS[rank][0] if rank in _LAYOUTS else ""
    kernel_layout = "IO" + _LAYOUTS[rank][1][2:] if rank in _LAYOUTS else ""
    groups = attrs.get("group", 1)
    result = ctx.emit(_conv_name(rank, transpose=True), data, weight, strides=strides,
                      padding=pads, dilation=dilations, groups=groups,
                      output_padding=output_padding,
                      channels=int(ctx.shape(weight)[1]) * groups, kernel_size=kernel,
                      data_layout=layout, kernel_layout=kernel_layout)
    if any(extend):
        result = ctx.emit("nn.pad", result, scalar(ctx, 0, ctx.dtype(result)),
                          pad_width=[(0, 0), (0, 0)] + [(e, 0) for e in extend])
    return _add_bias(ctx, result, bias)


def _pool(kind: str):
    def convert(ctx, inputs, attrs):
        data = inputs[0]
        kernel = list(attrs["kernel_shape"])
        rank = len(kernel)
        if rank not in (1, 2, 3):
            unsupported(f"{kind} pooling over {rank} spatial dims is not supported")
        strides = list(attrs.get("strides", [1] * rank))
        dilations = list(attrs.get("dilations", [1] * rank))
        pads = _auto_pads(ctx, attrs, _spatial(ctx, data), kernel, strides, dilations)
        ceil = bool(attrs.get("ceil_mode", 0))
        common = dict(pool_size=kernel, strides=strides, padding=pads,
                      layout=_LAYOUTS[rank][0], ceil_mode=ceil)
        if kind == "max":
            if ctx.num_outputs > 1:  # storage_order only changes the Indices output
                from .vision import max_pool_with_indices
                return max_pool_with_indices(ctx, data, attrs, pads)
            result = ctx.emit(f"nn.max_pool{rank}d", data, dilation=dilations, **common)
        elif kind == "avg":
            result = ctx.emit(f"nn.avg_pool{rank}d", data, dilation=dilations,
                              count_include_pad=bool(attrs.get("count_include_pad", 0)),
                              **common)
        else:
            result = ctx.emit(f"nn.lp_pool{rank}d", data, p=float(attrs.get("p", 2)),
                              dilation=dilations, **common)
        return _drop_padding_windows(ctx, result, data, kernel, strides, pads, dilations) \
            if ceil else result
    return convert


def _drop_padding_windows(ctx, result, data, kernel, strides, pads, dilations):
    """ONNX ceil-mode pooling drops a last window that would start in the end padding."""
    sizes = _spatial(ctx, data)
    got = ctx.shape(result)[2:]
    rank = len(kernel)
    ends = []
    for i, (size, k, s, d) in enumerate(zip(sizes, kernel, strides, dilations)):
        if not isinstance(size, (int, np.integer)) or not isinstance(got[i], (int, np.integer)):
            return result
        span = int(size) + pads[i] + pads[i + rank] - d * (k - 1) - 1
        count = -(-span // s) + 1
        if (count - 1) * s >= int(size) + pads[i]:
            count -= 1
        ends.append(min(count, int(got[i])))
    if list(ends) == [int(g) for g in got]:
        return result
    return ctx.emit("strided_slice", result, begin=[0] * rank, end=ends, strides=[1] * rank,
                    axes=list(range(2, 2 + rank)))


converter("MaxPool")(_pool("max"))
converter("AveragePool")(_pool("avg"))
converter("LpPool")(_pool("lp"))


def _global_pool(kind: str):
    def convert(ctx, inputs, attrs):
        data = inputs[0]
        axes = list(range(2, ctx.ndim(data)))
        if kind == "avg":
            return ctx.emit("mean", data, axis=axes, keepdims=True)
        if kind == "max":
            return ctx.emit("max", data, axis=axes, keepdims=True)
        p = float(attrs.get("p", 2))
        powered = ctx.emit("power", ctx.emit("abs", data), scalar(ctx, p, ctx.dtype(data)))
        total = ctx.emit("sum", powered, axis=axes, keepdims=True)
        return ctx.emit("power", total, scalar(ctx, 1.0 / p, ctx.dtype(data)))
    return convert


converter("GlobalAveragePool")(_global_pool("avg"))
converter("GlobalMaxPool")(_global_pool("max"))
converter("GlobalLpPool")(_global_pool("lp"))


@converter("Gemm")
def _gemm(ctx, inputs, attrs):
    a, b = inputs[0], inputs[1]
    c = inputs[2] if len(inputs) > 2 else None
    dtype = ctx.dtype(a)
    result = ctx.emit("nn.matmul", a, b, transpose_a=bool(attrs.get("transA", 0)),
                      transpose_b=bool(attrs.get("transB", 0)))
    alpha = float(attrs.get("alpha", 1.0))
    beta = float(attrs.get("beta", 1.0))
    if alpha != 1.0:
        result = ctx.emit("multiply", result, scalar(ctx, alpha, dtype))
    if c is not None and beta != 0.0:
        if beta != 1.0:
            c = ctx.emit("multiply", c, scalar(ctx, beta, dtype))
        result = ctx.emit("add", result, c)
    return result


@converter("MatMul")
def _matmul(ctx, inputs, attrs):
    return widened(ctx, list(inputs), lambda a, b: _matmul_of(ctx, a, b), float16=True)


def _matmul_of(ctx, a, b):
    rank_a, rank_b = ctx.ndim(a), ctx.ndim(b)
    if rank_b == 2 and rank_a >= 1:
        return ctx.emit("nn.matmul", a, b)
    squeeze = []
    if rank_a == 1:
        a = ctx.emit("expand_dims", a, axis=0)
        squeeze.append(-2)
    if rank_b == 1:
        b = ctx.emit("expand_dims", b, axis=1)
        squeeze.append(-1)
    result = ctx.emit("einsum", ctx.make_tuple([a, b]), equation="...ij,...jk->...ik")
    if squeeze:
        ndim = ctx.ndim(result)
        result = ctx.emit("squeeze", result, axis=sorted(ndim + s for s in squeeze))
    return result


@converter("Dropout")
def _dropout(ctx, inputs, attrs):
    # inference semantics: identity (training_mode inputs that are true are refused)
    data = inputs[0]
    if len(inputs) > 2 and inputs[2] is not None:
        training = ctx.const_value(inputs[2])
        if training is None or bool(training):
            return _training_dropout(ctx, data, inputs[1] if len(inputs) > 1 else None,
                                     inputs[2], training, attrs)
    outputs = [data]
    if ctx.num_outputs > 1:
        shape = ctx.static_shape(data)
        if shape is None:
            unsupported("Dropout's mask output needs a static shape")
        outputs.append(ctx.const(np.ones(shape, dtype=bool)))
    return outputs


def _training_dropout(ctx, data, ratio, flag, training, attrs):
    """Dropout with a training flag: random masks (``onnx.dropout``) when it is set; a
    run-time flag selects between that and the identity with an ``If``."""
    from ....ir import expr as E
    if ratio is None:
        ratio = ctx.const(np.float32(0.5))
    tup = ctx.emit("onnx.dropout", data, ratio, seed=float(attrs.get("seed", -1.0)))
    if training is None:
        shape = ctx.static_shape(data)
        if shape is None:
            unsupported("Dropout with a run-time training flag needs a static shape")
        keep = ctx.make_tuple([data, ctx.const(np.ones(shape, dtype=bool))])
        cond = flag if ctx.ndim(flag) == 0 else ctx.emit("reshape", flag, newshape=[])
        tup = ctx.set_type(E.If(cond, tup, keep), ctx.type_of(tup))
    return [ctx.tuple_get(tup, 0), ctx.tuple_get(tup, 1)][:ctx.num_outputs]


@converter("LRN")
def _lrn(ctx, inputs, attrs):
    return ctx.emit("nn.lrn", inputs[0], size=attrs["size"], axis=1,
                    alpha=float(attrs.get("alpha", 1e-4)), beta=float(attrs.get("beta", 0.75)),
                    bias=float(attrs.get("bias", 1.0)))
