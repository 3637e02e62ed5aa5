"""Image ONNX ops: Resize (opsets 10-19) and Upsample, through ``onnx.resize``."""

from __future__ import annotations

import numpy as np

from ....op.frontend import resampling
from ..registry import converter


def _resize(ctx, data, roi, scales, sizes, attrs, method, transform, nearest_mode):
    axes = [int(a) for a in attrs.get("axes", [])]
    empty = ctx.const(np.zeros(0, "float32"))
    roi = empty if roi is None else ctx.emit("cast", roi, dtype="float32")
    scales_value = ctx.const_value(scales) if scales is not None else None
    sizes_value = ctx.const_value(sizes) if sizes is not None else None
    if sizes is not None and ctx.shape(sizes)[0] != 0:
        scales = empty
    else:
        sizes = None
    out_shape = ()
    static = ctx.static_shape(data)
    policy = attrs.get("keep_aspect_ratio_policy", "stretch")
    if static is not None and (sizes is not None and sizes_value is not None or
                               sizes is None and scales_value is not None):
        _, shape = resampling.resize_scales_and_sizes(
            static, scales_value, sizes_value if sizes is not None else None, axes, policy)
        out_shape = tuple(shape)
    scales = empty if scales is None or sizes is not None else \
        ctx.emit("cast", scales, dtype="float32")
    sizes = ctx.const(np.zeros(0, "int64")) if sizes is None else \
        ctx.emit("cast", sizes, dtype="int64")
    method = {"nearest": "nearest", "linear": "linear", "bilinear": "linear",
              "trilinear": "linear", "cubic": "cubic", "bicubic": "cubic"}[method]
    return ctx.emit("onnx.resize", data, roi, scales, sizes, axes=axes, method=method,
                    coordinate_transformation_mode=transform, nearest_mode=nearest_mode,
                    cubic_coeff_a=float(attrs.get("cubic_coeff_a", -0.75)),
                    exclude_outside=bool(attrs.get("exclude_outside", 0)),
                    extrapolation_value=float(attrs.get("extrapolation_value", 0.0)),
                    antialias=bool(attrs.get("antialias", 0)),
                    keep_aspect_ratio_policy=policy, out_shape=out_shape)


@converter("Resize", since=10)
def _resize_v10(ctx, inputs, attrs):
    return _resize(ctx, inputs[0], None, inputs[1], None, attrs, attrs.get("mode", "nearest"),
                   "asymmetric", "floor")


@converter("Resize", since=11)
def _resize_v11(ctx, inputs, attrs):
    padded = list(inputs) + [None] * (4 - len(inputs))
    return _resize(ctx, padded[0], padded[1], padded[2], padded[3], attrs,
                   attrs.get("mode", "nearest"),
                   attrs.get("coordinate_transformation_mode", "half_pixel"),
                   attrs.get("nearest_mode", "round_prefer_floor"))


@converter("Upsample", since=7)
def _upsample_v7(ctx, inputs, attrs):
    scales = ctx.const(np.asarray(attrs["scales"], "float32"))
    return _resize(ctx, inputs[0], None, scales, None, attrs, attrs.get("mode", "nearest"),
                   "asymmetric", "floor")


@converter("Upsample", since=9)
def _upsample_v9(ctx, inputs, attrs):
    return _resize(ctx, inputs[0], None, inputs[1], None, attrs, attrs.get("mode", "nearest"),
                   "asymmetric", "floor")


@converter("GridSample", since=16)
def _grid_sample(ctx, inputs, attrs):
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(attrs.get("mode", "linear"),
                                                          attrs.get("mode", "linear"))
    return ctx.emit("onnx.grid_sample", inputs[0], inputs[1], mode=mode,
                    padding_mode=attrs.get("padding_mode", "zeros"),
                    align_corners=bool(attrs.get("align_corners", 0)))
