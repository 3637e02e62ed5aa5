"""``onnx.*`` ops that sample an image bilinearly at fractional positions, with numpy
references:

* ``onnx.deform_conv(data, weight, offset, bias, mask, ...)``: ONNX DeformConv (2-D): each
  kernel tap of each output position reads the input at its regular position plus a learned
  ``(dy, dx)`` offset (bilinear, zero outside the image), optionally scaled by ``mask``.
  ``bias`` and ``mask`` are empty tensors when absent.
* ``onnx.roi_align(data, rois, batch_indices, ...)``: ONNX RoiAlign: average (or max) of
  bilinear samples on a regular grid in each bin of each region of interest.

Before/after in the text format::

    onnx.roi_align(%x, %rois, %idx, output_height=5, output_width=5)
    /* x: (1, 1, 10, 10), rois: (3, 4), idx: (3,) */ -> Tensor[(3, 1, 5, 5), float32]
"""

from __future__ import annotations

import numpy as np

from ...errors import OpImplError, TypeInferenceError
from ...ir.dims import AnyDim
from ...ir.types import TensorType
from ..registry import register_opaque
from ..type_relations import dims_differ, expect_tensor

__all__ = []



# -- DeformConv -----------------------------------------------------------------------------------

def _conv_geometry(attrs, kernel):
    strides = tuple(attrs["strides"]) or (1, 1)
    pads = tuple(attrs["pads"]) or (0, 0, 0, 0)
    dilations = tuple(attrs["dilations"]) or (1, 1)
    return strides, pads, dilations


def _deform_out(size, kernel, stride, dilation, before, after):
    if isinstance(size, AnyDim) or isinstance(kernel, AnyDim):
        return size
    return (size + before + after - dilation * (kernel - 1) - 1) // stride + 1


def _deform_conv_rel(arg_types, attrs):
    name = "onnx.deform_conv"
    data, weight, offset, bias, mask = (
        expect_tensor(t, f"{name}: {what}") for t, what in
        zip(arg_types, ("data", "weight", "offset", "bias", "mask")))
    if data.ndim != 4 or weight.ndim != 4 or offset.ndim != 4:
        raise TypeInferenceError(f"{name}: data, weight and offset must be 4-D (2-D "
                                 f"DeformConv), got {data}, {weight} and {offset}")
    group, offset_group = attrs["group"], attrs["offset_group"]
    if dims_differ(data.shape[1], weight.shape[1] * group):
        raise TypeInferenceError(f"{name}: data has {data.shape[1]} channels but weight "
                                 f"{weight} with group={group} expects "
                                 f"{weight.shape[1] * group}")
    if isinstance(data.shape[1], int) and data.shape[1] % offset_group:
        raise TypeInferenceError(f"{name}: {data.shape[1]} channels do not split into "
                                 f"offset_group={offset_group}")
    kernel = tuple(weight.shape[2:])
    taps = kernel[0] * kernel[1]
    if dims_differ(offset.shape[1], 2 * offset_group * taps):
        raise TypeInferenceError(f"{name}: offset {offset} must have 2 * offset_group * "
                                 f"kh * kw = {2 * offset_group * taps} channels")
    strides, pads, dilations = _conv_geometry(attrs, kernel)
    out = tuple(_deform_out(data.shape[2 + i], kernel[i], strides[i], dilations[i], pads[i],
                            pads[2 + i]) for i in range(2))
    if any(dims_differ(a, b) for a, b in zip(out, offset.shape[2:])):
        raise TypeInferenceError(f"{name}: offset {offset} must cover the output positions "
                                 f"{out}")
    if bias.ndim != 1 or (bias.shape[0] != 0
                          and dims_differ(bias.shape[0], weight.shape[0])):
        raise TypeInferenceError(f"{name}: bias must be empty or ({weight.shape[0]},), got "
                                 f"{bias}")
    if mask.shape != (0,) and (mask.ndim != 4 or dims_differ(mask.shape[1],
                                                              offset_group * taps)):
        raise TypeInferenceError(f"{name}: mask must be empty or (N, {offset_group * taps}, "
                                 f"oh, ow), got {mask}")
    return TensorType((data.shape[0], weight.shape[0]) + out, data.dtype)


def bilinear_taps(coord, size):
    """Bilinear interpolation taps along one axis with zeros outside ``[0, size)``.

    Args:
        coord: sample positions (float array).
        size: the axis length.

    Returns:
        ``[(index, weight), (index, weight)]``: the lower and upper neighbours, indices
        clipped into range and weights zeroed where the neighbour lies outside.
    """
    low = np.floor(coord)
    frac = coord - low
    low = low.astype("int64")
    taps = []
    for index, weight in ((low, 1.0 - frac), (low + 1, frac)):
        inside = (index >= 0) & (index < size)
        taps.append((np.clip(index, 0, size - 1), np.where(inside, weight, 0.0)))
    return taps


def _deform_columns(image, rows, cols):
    """``image`` ``(C, H, W)`` sampled at ``(rows, cols)`` (same shape ``S``) -> ``(C, *S)``."""
    height, width = image.shape[1:]
    flat = image.reshape(image.shape[0], -1)
    total = 0.0
    for row_index, row_weight in bilinear_taps(rows, height):
        for col_index, col_weight in bilinear_taps(cols, width):
            total = total + flat[:, row_index * width + col_index] * (row_weight * col_weight)
    return total


def _deform_conv_ref(data, weight, offset, bias, mask, group=1, offset_group=1, strides=(),
                     pads=(), dilations=()):
    name = "onnx.deform_conv"
    batch, channels, height, width = data.shape
    out_channels, per_group, kh, kw = weight.shape
    strides, pads, dilations = _conv_geometry({"strides": strides, "pads": pads,
                                               "dilations": dilations}, (kh, kw))
    oh, ow = offset.shape[2:]
    if channels % offset_group or channels != per_group * group:
        raise OpImplError(f"{name}: {channels} channels do not split into group={group} / "
                          f"offset_group={offset_group}", op=name)
    offsets = offset.reshape(batch, offset_group, kh, kw, 2, oh, ow).astype("float64")
    # regular sampling positions (kh, kw, oh, ow) before the learned offsets
    base_rows = (np.arange(kh)[:, None, None, None] * dilations[0]
                 + np.arange(oh)[None, None, :, None] * strides[0] - pads[0])
    base_cols = (np.arange(kw)[None, :, None, None] * dilations[1]
                 + np.arange(ow)[None, None, None, :] * strides[1] - pads[1])
    masks = None if mask.size == 0 else mask.reshape(batch, offset_group, kh, kw, oh, ow)
    per_offset = channels // offset_group
    out = np.empty((batch, out_channels, oh, ow), data.dtype)
    weights = weight.reshape(group, out_channels // group, per_group * kh * kw)
    for n in range(batch):
        columns = np.empty((channels, kh, kw, oh, ow), "float64")
        for g in range(offset_group):
            part = slice(g * per_offset, (g + 1) * per_offset)
            sampled = _deform_columns(data[n, part].astype("float64"),
                                      base_rows + offsets[n, g, :, :, 0],
                                      base_cols + offsets[n, g, :, :, 1])
            columns[part] = sampled if masks is None else sampled * masks[n, g]
        columns = columns.reshape(group, per_group * kh * kw, oh * ow)
        result = np.matmul(weights.astype("float64"), columns).reshape(out_channels, oh, ow)
        if bias.size:
            result = result + bias.reshape(-1, 1, 1)
        out[n] = result
    return (out,)


register_opaque("onnx.deform_conv", ("data", "weight", "offset", "bias", "mask"),
                ("onnx.attrs.DeformConvAttrs", [("group", 1), ("offset_group", 1), ("strides", ()),
                                          ("pads", ()), ("dilations", ())]),
                _deform_conv_rel, _deform_conv_ref,
                "ONNX DeformConv (2-D): convolution sampling the input at offset positions")


# -- RoiAlign -------------------------------------------------------------------------------------

def _roi_align_rel(arg_types, attrs):
    name = "onnx.roi_align"
    data, rois, indices = (expect_tensor(t, f"{name}: {what}") for t, what in
                           zip(arg_types, ("data", "rois", "batch_indices")))
    if data.ndim != 4 or rois.ndim != 2 or dims_differ(rois.shape[1], 4) \
            or indices.ndim != 1 or dims_differ(indices.shape[0], rois.shape[0]):
        raise TypeInferenceError(f"{name}: expected data (N, C, H, W), rois (R, 4) and "
                                 f"batch_indices (R,), got {data}, {rois} and {indices}")
    return TensorType((rois.shape[0], data.shape[1], attrs["output_height"],
                       attrs["output_width"]), data.dtype)


def _roi_axis(start, length, bins, grid, size):
    """Sample positions along one axis of one RoI (``bins * grid`` of them) as bilinear
    ``[(index, weight), ...]`` taps, with ONNX's clamping rules."""
    step = length / bins
    samples = (start + np.arange(bins)[:, None] * step
               + (np.arange(grid)[None, :] + 0.5) * step / grid).reshape(-1)
    outside = (samples < -1.0) | (samples > size)
    samples = np.maximum(samples, 0.0)
    low = np.floor(samples).astype("int64")
    at_end = low >= size - 1
    low = np.where(at_end, size - 1, low)
    high = np.where(at_end, size - 1, low + 1)
    frac = np.where(at_end, 0.0, samples - low)
    keep = np.where(outside, 0.0, 1.0)
    return [(low, (1.0 - frac) * keep), (high, frac * keep)]


def _roi_align_ref(data, rois, batch_indices, mode="avg", output_height=1, output_width=1,
                   sampling_ratio=0, spatial_scale=1.0,
                   coordinate_transformation_mode="half_pixel"):
    name = "onnx.roi_align"
    count, channels, height, width = rois.shape[0], data.shape[1], data.shape[2], data.shape[3]
    half_pixel = coordinate_transformation_mode == "half_pixel"
    shift = 0.5 if half_pixel else 0.0
    out = np.zeros((count, channels, output_height, output_width), data.dtype)
    for r in range(count):
        batch = int(batch_indices[r])
        if not 0 <= batch < data.shape[0]:
            raise OpImplError(f"{name}: batch index {batch} of RoI {r} is out of range "
                              f"[0, {data.shape[0]})", op=name)
        x1, y1, x2, y2 = (float(v) * spatial_scale - shift for v in rois[r])
        roi_h, roi_w = y2 - y1, x2 - x1
        if not half_pixel:  # legacy mode: malformed RoIs become 1x1
            roi_h, roi_w = max(roi_h, 1.0), max(roi_w, 1.0)
        grid_h = sampling_ratio if sampling_ratio > 0 else int(np.ceil(roi_h / output_height))
        grid_w = sampling_ratio if sampling_ratio > 0 else int(np.ceil(roi_w / output_width))
        if grid_h <= 0 or grid_w <= 0:
            continue  # no samples: the bins stay zero
        image = data[batch].astype("float64")
        rows = _roi_axis(y1, roi_h, output_height, grid_h, height)
        cols = _roi_axis(x1, roi_w, output_width, grid_w, width)
        # one term per bilinear corner: (C, oh * grid_h, ow * grid_w)
        terms = [image[:, ri][:, :, ci] * (rw[:, None] * cw[None, :])
                 for ri, rw in rows for ci, cw in cols]
        shape = (channels, output_height, grid_h, output_width, grid_w)
        if mode == "max":  # ONNX (like onnxruntime) takes the max of the weighted corners
            samples = np.max(np.stack(terms), axis=0).reshape(shape)
            out[r] = samples.max(axis=(2, 4))
        else:
            out[r] = sum(terms).reshape(shape).sum(axis=(2, 4)) / (grid_h * grid_w)
    return (out,)


register_opaque("onnx.roi_align", ("data", "rois", "batch_indices"),
                ("onnx.attrs.RoiAlignAttrs", [("mode", "avg"), ("output_height", 1),
                                        ("output_width", 1), ("sampling_ratio", 0),
                                        ("spatial_scale", 1.0),
                                        ("coordinate_transformation_mode", "half_pixel")]),
                _roi_align_rel, _roi_align_ref,
                "ONNX RoiAlign: bilinear average/max pooling of regions of interest")
