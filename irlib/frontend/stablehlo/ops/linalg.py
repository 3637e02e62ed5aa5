"""Contractions: ``dot``, ``dot_general`` and ``convolution``.

``dot_general`` becomes one BLAS-backed op: operands are transposed to ``(batch, free,
contracting)`` / ``(batch, contracting, free)`` order and flattened to 2-d (``nn.matmul``) or
3-d (``nn.batch_matmul``); an rhs already laid out ``(batch, free, contracting)`` is read
transposed instead (``nn.dense``, ``nn.batch_matmul(transpose_b=True)``). The product is
reshaped to StableHLO's result order (batch dims, then the lhs free dims, then the rhs free
dims).

``convolution`` becomes ``nn.conv1d``/``nn.conv2d``/``nn.conv3d``: the operands are
transposed to ``NC...``/``OI...`` order (a 2-d ``NHWC``/``HWIO`` convolution, JAX's usual
layout, is passed through in that layout), lhs dilation becomes interior padding, negative
padding a crop, ``feature_group_count`` the ``groups`` attribute, and ``batch_group_count``
one convolution per batch group whose outputs are concatenated along the features.
"""

from __future__ import annotations

from ..errors import StableHLOOpNotImplemented
from ..mlir import attributes, dim_numbers, int_list, int_value, padding_pairs
from ..registry import converter
from .shape import pad, reshape, slice_axes, transpose


def _product(dims):
    total = 1
    for dim in dims:
        total = total * dim
    return total


def dot_general(ctx, lhs, rhs, lhs_batch, rhs_batch, lhs_contract, rhs_contract, dtype):
    """The StableHLO ``dot_general`` of ``lhs`` and ``rhs`` with result dtype ``dtype``
    (16-bit floats accumulate in float32, as XLA's CPU backend does).

    Args:
        lhs: the left operand.
        rhs: the right operand.
        lhs_batch: the left operand's batch axes.
        rhs_batch: the right operand's batch axes.
        lhs_contract: the left operand's contracted axes.
        rhs_contract: the right operand's contracted axes.
        dtype: the result dtype.
    """
    compute = "float32" if dtype in ("float16", "bfloat16") else dtype
    lhs, rhs = ctx.cast(lhs, compute), ctx.cast(rhs, compute)
    lshape, rshape = ctx.shape(lhs), ctx.shape(rhs)
    lhs_free = [a for a in range(len(lshape)) if a not in lhs_batch and a not in lhs_contract]
    rhs_free = [a for a in range(len(rshape)) if a not in rhs_batch and a not in rhs_contract]
    batch_dims = [lshape[a] for a in lhs_batch]
    m_dims = [lshape[a] for a in lhs_free]
    n_dims = [rshape[a] for a in rhs_free]
    k = _product([lshape[a] for a in lhs_contract])
    m, n = _product(m_dims), _product(n_dims)
    lhs = transpose(ctx, lhs, list(lhs_batch) + lhs_free + list(lhs_contract))
    # the rhs as (batch, N, K) when it is laid out so (attention's q.k^T, torch-style weights):
    # the kernels read it transposed, no transpose op needed
    rhs_nk = list(rhs_batch) + rhs_free + list(rhs_contract)
    transposed = rhs_nk == list(range(len(rshape))) and \
        list(rhs_batch) + list(rhs_contract) + rhs_free != rhs_nk
    if transposed:
        rhs = transpose(ctx, rhs, rhs_nk)
    else:
        rhs = transpose(ctx, rhs, list(rhs_batch) + list(rhs_contract) + rhs_free)
    if batch_dims:
        b = _product(batch_dims)
        lhs = reshape(ctx, lhs, [b, m, k])
        rhs = reshape(ctx, rhs, [b, n, k] if transposed else [b, k, n])
        out = ctx.emit("nn.batch_matmul", lhs, rhs, transpose_a=False, transpose_b=transposed)
    elif transposed:
        out = ctx.emit("nn.dense", reshape(ctx, lhs, [m, k]), reshape(ctx, rhs, [n, k]))
    else:
        lhs = reshape(ctx, lhs, [m, k])
        rhs = reshape(ctx, rhs, [k, n])
        out = ctx.emit("nn.matmul", lhs, rhs)
    return ctx.cast(reshape(ctx, out, batch_dims + m_dims + n_dims), dtype)


@converter("stablehlo.dot_general", maps_to="nn.matmul / nn.dense / nn.batch_matmul (+ "
           "transpose, reshape)",
           note="any batch and contracting dims; preferred result type via cast")
def _dot_general(ctx, op, inputs, attrs):
    numbers = dim_numbers(attrs["dot_dimension_numbers"], "DotDimensionNumbers")
    _, dtype = ctx.result_info(op)
    return dot_general(ctx, inputs[0], inputs[1], list(numbers.lhs_batching_dimensions),
                       list(numbers.rhs_batching_dimensions),
                       list(numbers.lhs_contracting_dimensions),
                       list(numbers.rhs_contracting_dimensions), dtype)


@converter("stablehlo.dot", maps_to="nn.matmul / nn.dense", note="vector/matrix operands")
def _dot(ctx, op, inputs, attrs):
    _, dtype = ctx.result_info(op)
    lhs, rhs = inputs
    return dot_general(ctx, lhs, rhs, [], [], [ctx.ndim(lhs) - 1], [0], dtype)


def _check_convolution(op):
    attrs = attributes(op)
    numbers = dim_numbers(attrs["dimension_numbers"], "ConvDimensionNumbers")
    spatial = len(list(numbers.input_spatial_dimensions))
    if spatial not in (1, 2, 3):
        return f"{spatial} spatial dims"
    return None


@converter("stablehlo.convolution", maps_to="nn.conv1d / nn.conv2d / nn.conv3d",
           note="any dimension numbers, padding (negative crops), lhs/rhs dilation, window "
                "reversal, feature and batch groups; 1 to 3 spatial dims",
           check=_check_convolution)
def _convolution(ctx, op, inputs, attrs):
    lhs, rhs = inputs
    _, result_dtype = ctx.result_info(op)
    dtype = "float32" if result_dtype in ("float16", "bfloat16") else result_dtype
    lhs, rhs = ctx.cast(lhs, dtype), ctx.cast(rhs, dtype)
    numbers = dim_numbers(attrs["dimension_numbers"], "ConvDimensionNumbers")
    in_spatial = list(numbers.input_spatial_dimensions)
    k_spatial = list(numbers.kernel_spatial_dimensions)
    out_spatial = list(numbers.output_spatial_dimensions)
    nsp = len(in_spatial)
    strides = int_list(attrs.get("window_strides")) or [1] * nsp
    padding = padding_pairs(attrs.get("padding"), nsp)
    lhs_dilation = int_list(attrs.get("lhs_dilation")) or [1] * nsp
    rhs_dilation = int_list(attrs.get("rhs_dilation")) or [1] * nsp
    reversal = int_list(attrs.get("window_reversal")) or [0] * nsp
    groups = int_value(attrs.get("feature_group_count"), 1)
    batch_groups = int_value(attrs.get("batch_group_count"), 1)
    ib, if_ = numbers.input_batch_dimension, numbers.input_feature_dimension
    ko, ki = numbers.kernel_output_feature_dimension, numbers.kernel_input_feature_dimension
    ob, of = numbers.output_batch_dimension, numbers.output_feature_dimension
    for axis, flag in zip(k_spatial, reversal):
        if flag:
            rhs = ctx.emit("reverse", rhs, axis=axis)
    nhwc = (nsp == 2 and batch_groups == 1 and [ib, if_] + in_spatial == [0, 3, 1, 2]
            and [ko, ki] + k_spatial == [3, 2, 0, 1] and [ob, of] + out_spatial == [0, 3, 1, 2])
    if nhwc:
        spatial_axes = [1, 2]
    else:
        lhs = transpose(ctx, lhs, [ib, if_] + in_spatial)
        rhs = transpose(ctx, rhs, [ko, ki] + k_spatial)
        spatial_axes = list(range(2, 2 + nsp))
    # lhs dilation and negative padding are applied to the data; the rest is the conv's.
    if any(d != 1 for d in lhs_dilation) or any(lo < 0 or hi < 0 for lo, hi in padding):
        rank = ctx.ndim(lhs)
        low, high, interior = [0] * rank, [0] * rank, [0] * rank
        for axis, (lo, hi), dil in zip(spatial_axes, padding, lhs_dilation):
            low[axis], high[axis], interior[axis] = min(lo, 0), min(hi, 0), dil - 1
        lhs = pad(ctx, lhs, ctx.scalar(0, dtype), low, high, interior)
        padding = [(max(lo, 0), max(hi, 0)) for lo, hi in padding]
    conv_attrs = dict(strides=strides, dilation=rhs_dilation, groups=groups,
                      padding=[lo for lo, _ in padding] + [hi for _, hi in padding])
    name = f"nn.conv{nsp}d"
    if nhwc:
        out = ctx.emit(name, lhs, rhs, data_layout="NHWC", kernel_layout="HWIO", **conv_attrs)
        return ctx.cast(out, result_dtype)
    if batch_groups == 1:
        out = ctx.emit(name, lhs, rhs, **conv_attrs)
    else:
        out = _batch_grouped(ctx, name, lhs, rhs, batch_groups, conv_attrs)
    order = [ob, of] + out_spatial
    out = transpose(ctx, out, [order.index(axis) for axis in range(len(order))])
    return ctx.cast(out, result_dtype)


def _batch_grouped(ctx, name, lhs, rhs, count, conv_attrs):
    """``batch_group_count``: batch group ``g`` of the data convolves with output-feature
    group ``g`` of the kernel; the results are concatenated along the features."""
    batch, out_features = ctx.shape(lhs)[0], ctx.shape(rhs)[0]
    if not isinstance(batch, int) or batch % count or out_features % count:
        raise StableHLOOpNotImplemented(f"batch_group_count {count} of a batch of {batch}", [])
    step_b, step_o = batch // count, out_features // count
    outs = []
    for g in range(count):
        lshape, rshape = ctx.shape(lhs), ctx.shape(rhs)
        part_l = slice_axes(ctx, lhs, [g * step_b] + [0] * (len(lshape) - 1),
                            [(g + 1) * step_b] + list(lshape[1:]))
        part_r = slice_axes(ctx, rhs, [g * step_o] + [0] * (len(rshape) - 1),
                            [(g + 1) * step_o] + list(rshape[1:]))
        outs.append(ctx.emit(name, part_l, part_r, **conv_attrs))
    return ctx.emit("concatenate", ctx.make_tuple(outs), axis=1)
