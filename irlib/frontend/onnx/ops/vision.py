"""Image-window ONNX ops mapped onto the ops of :mod:`irlib.op.frontend.sliding_windows`
and :mod:`irlib.op.frontend.bilinear_sampling`: Col2Im, DeformConv, RoiAlign, MaxUnpool, and
MaxPool's Indices output (:func:`max_pool_with_indices`, called by the MaxPool converter)."""

from __future__ import annotations

import numpy as np

from ..registry import converter
from .common import constant_ints, unsupported


def _ints(attrs, name):
    return tuple(int(v) for v in attrs.get(name, ()))


@converter("Col2Im", since=18)
def _col2im(ctx, inputs, attrs):
    data, image_shape, block_shape = inputs[:3]
    common = dict(dilations=_ints(attrs, "dilations"), pads=_ints(attrs, "pads"),
                  strides=_ints(attrs, "strides"))
    image = constant_ints(ctx, image_shape)
    block = constant_ints(ctx, block_shape)
    if image is not None and block is not None:
        return ctx.emit("onnx.col2im", data, image_shape=tuple(image),
                        block_shape=tuple(block), **common)
    return ctx.emit("onnx.col2im_dyn", data, ctx.emit("cast", image_shape, dtype="int64"),
                    ctx.emit("cast", block_shape, dtype="int64"), **common)


@converter("DeformConv", since=19)
def _deform_conv(ctx, inputs, attrs):
    padded = list(inputs) + [None] * (5 - len(inputs))
    data, weight, offset, bias, mask = padded[:5]
    if ctx.ndim(data) != 4:
        unsupported(f"DeformConv over {ctx.ndim(data) - 2} spatial dims is not supported "
                    "(2-D only)")
    dtype = ctx.dtype(data)
    empty = ctx.const(np.zeros(0, dtype))
    kernel = _ints(attrs, "kernel_shape")
    weight_kernel = ctx.shape(weight)[2:]
    if kernel and all(isinstance(k, (int, np.integer)) for k in weight_kernel) \
            and tuple(int(k) for k in weight_kernel) != kernel:
        unsupported(f"DeformConv kernel_shape {kernel} differs from the weight's")
    return ctx.emit("onnx.deform_conv", data, weight, offset,
                    empty if bias is None else bias, empty if mask is None else mask,
                    group=int(attrs.get("group", 1)),
                    offset_group=int(attrs.get("offset_group", 1)),
                    strides=_ints(attrs, "strides"), pads=_ints(attrs, "pads"),
                    dilations=_ints(attrs, "dilations"))


def _roi_align(default_mode: str):
    def convert(ctx, inputs, attrs):
        data, rois, batch_indices = inputs[:3]
        return ctx.emit("onnx.roi_align", data, rois, batch_indices,
                        mode=str(attrs.get("mode", "avg")).lower(),
                        output_height=int(attrs.get("output_height", 1)),
                        output_width=int(attrs.get("output_width", 1)),
                        sampling_ratio=int(attrs.get("sampling_ratio", 0)),
                        spatial_scale=float(attrs.get("spatial_scale", 1.0)),
                        coordinate_transformation_mode=str(attrs.get(
                            "coordinate_transformation_mode", default_mode)))
    return convert


# opset 16 added coordinate_transformation_mode, defaulting to half_pixel; before it the
# behaviour was output_half_pixel
converter("RoiAlign", since=10)(_roi_align("output_half_pixel"))
converter("RoiAlign", since=16)(_roi_align("half_pixel"))


@converter("MaxUnpool", since=9)
def _max_unpool(ctx, inputs, attrs):
    data, indices = inputs[0], inputs[1]
    output_shape = inputs[2] if len(inputs) > 2 else None
    common = dict(kernel_shape=_ints(attrs, "kernel_shape"), pads=_ints(attrs, "pads"),
                  strides=_ints(attrs, "strides"))
    indices = ctx.emit("cast", indices, dtype="int64")
    if output_shape is None:
        return ctx.emit("onnx.max_unpool", data, indices, **common)
    wanted = constant_ints(ctx, output_shape)
    if wanted is not None:
        return ctx.emit("onnx.max_unpool", data, indices, output_shape=tuple(wanted),
                        **common)
    return ctx.emit("onnx.max_unpool_dyn", data, indices,
                    ctx.emit("cast", output_shape, dtype="int64"), **common)


def max_pool_with_indices(ctx, data, attrs, pads):
    """MaxPool with its Indices output: ``[values, indices]`` (or fewer, per the node).

    Args:
        ctx: the converter context.
        data: the input expression.
        attrs: the node's decoded attributes.
        pads: the explicit ``[begin..., end...]`` pads (``auto_pad`` already resolved).

    Returns:
        The node's outputs, as a list.
    """
    kernel = _ints(attrs, "kernel_shape")
    pooled = ctx.emit("onnx.max_pool_with_indices", data, kernel_shape=kernel,
                      strides=_ints(attrs, "strides"), pads=tuple(int(p) for p in pads),
                      dilations=_ints(attrs, "dilations"),
                      ceil_mode=bool(attrs.get("ceil_mode", 0)),
                      storage_order=int(attrs.get("storage_order", 0)))
    return [ctx.tuple_get(pooled, i) for i in range(2)][:ctx.num_outputs]
