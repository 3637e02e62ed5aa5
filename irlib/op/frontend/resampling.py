"""Resampling ops with ONNX semantics (``onnx.*``), each with a numpy reference:

* ``onnx.resize(data, roi, scales, sizes, ...)`` -- ``Resize``/``Upsample`` on any number of
  axes (nearest, linear, cubic; every coordinate transformation mode);
* ``onnx.grid_sample(data, grid, ...)`` -- ``GridSample``: sample ``data`` at the normalized
  coordinates of ``grid`` (bilinear, nearest or bicubic; zeros, border or reflection padding);
* ``onnx.affine_grid(theta, size, align_corners)`` -- the sampling grid of a batch of 2-D
  (``[N, 2, 3]``) or 3-D (``[N, 3, 4]``) affine transforms.
"""

from __future__ import annotations

import numpy as np

from ...errors import OpImplError, TypeInferenceError
from ...ir.dims import Any
from ...ir.types import TensorType
from ..registry import register_opaque
from ..type_relations import expect_tensor

__all__ = ['resize_scales_and_sizes']


# -- Resize -----------------------------------------------------------------------------------

def _source_coords(out_len, in_len, scale, mode, roi_start, roi_end):
    """Input coordinate of each output index along one axis (ONNX coordinate transforms).

    ``width`` is the unrounded output length ``scale * in_len``, which ONNX uses (not the
    integer ``out_len``) in the align_corners, crop and PyTorch transforms."""
    x = np.arange(out_len, dtype="float64")
    width = scale * in_len
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        offset = in_len / 2 * (1 - out_len / width)
        return offset + (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if width != 1 else np.full(out_len, -0.5)
    if mode == "align_corners":
        return x * (in_len - 1) / (width - 1) if width != 1 else np.zeros(out_len)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_crop_and_resize":
        if width != 1:
            return roi_start * (in_len - 1) + x * (roi_end - roi_start) * (in_len - 1) / (
                width - 1)
        return np.full(out_len, 0.5 * (roi_start + roi_end) * (in_len - 1))
    raise ValueError(f"unknown coordinate_transformation_mode {mode!r}")


def _cubic_kernel(d, a):
    d = np.abs(d)
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def _axis_weights(in_len, out_len, scale, roi, attrs):
    """``(weights (out, in), outside (out,))`` of one axis: output = weights @ input, and
    ``outside`` marks outputs that take the extrapolation value."""
    coords = _source_coords(out_len, in_len, scale, attrs["coordinate_transformation_mode"],
                            roi[0], roi[1])
    outside = (coords < 0) | (coords > in_len - 1) if \
        attrs["coordinate_transformation_mode"] == "tf_crop_and_resize" else \
        np.zeros(out_len, bool)
    weights = np.zeros((out_len, in_len))
    method = attrs["method"]
    if method == "nearest":
        rule = attrs["nearest_mode"]
        if rule == "round_prefer_floor":
            index = np.where(coords % 1 == 0.5, np.floor(coords), np.round(coords))
        elif rule == "round_prefer_ceil":
            index = np.where(coords % 1 == 0.5, np.ceil(coords), np.round(coords))
        elif rule == "floor":
            index = np.floor(coords)
        else:
            index = np.ceil(coords)
        index = np.clip(index, 0, in_len - 1).astype("int64")
        weights[np.arange(out_len), index] = 1.0
        return weights, outside
    kernel_scale = min(scale, 1.0) if attrs["antialias"] else 1.0
    reach = 1 if method == "linear" else 2
    start = int(np.floor(-reach / kernel_scale)) + 1
    offsets = np.arange(start, 1 - start + 1)
    base = np.floor(coords)
    ratio = coords - base
    for row in range(out_len):
        distance = (offsets - ratio[row]) * kernel_scale
        if method == "linear":
            coeffs = np.clip(1 - np.abs(distance), 0, None)
        else:
            coeffs = _cubic_kernel(distance, attrs["cubic_coeff_a"])
        if attrs["antialias"]:
            coeffs = coeffs / coeffs.sum()
        index = base[row].astype("int64") + offsets
        if attrs["exclude_outside"]:
            coeffs = np.where((index < 0) | (index >= in_len), 0.0, coeffs)
            coeffs = coeffs / coeffs.sum()
        np.add.at(weights[row], np.clip(index, 0, in_len - 1), coeffs)
    return weights, outside


def resize_scales_and_sizes(in_shape, scales, sizes, axes, policy):
    """``(scales, out_shape)`` per axis of ``in_shape`` from ONNX Resize's scales or sizes
    (on ``axes``) and ``keep_aspect_ratio_policy``.

    Args:
        in_shape: the input shape.
        scales: the per-axis scales given to Resize, or None.
        sizes: the output sizes given to Resize, or None.
        axes: the axes ``scales``/``sizes`` refer to.
        policy: ``keep_aspect_ratio_policy`` (``stretch``, ``not_larger`` or ``not_smaller``).
    """
    ndim = len(in_shape)
    axes = [a % ndim for a in axes] if len(axes) else list(range(ndim))
    full_scales = [1.0] * ndim
    out_shape = list(in_shape)
    if sizes is not None and len(sizes):
        sizes = [int(s) for s in sizes]
        ratios = [sizes[i] / in_shape[a] for i, a in enumerate(axes)]
        if policy in ("not_larger", "not_smaller"):
            ratio = min(ratios) if policy == "not_larger" else max(ratios)
            for a in axes:
                full_scales[a] = ratio
                # round half away from zero, as ONNX's reference (not numpy's banker's rule)
                out_shape[a] = int(np.floor(ratio * in_shape[a] + 0.5))
        else:
            for i, a in enumerate(axes):
                full_scales[a] = ratios[i]
                out_shape[a] = sizes[i]
    else:
        for i, a in enumerate(axes):
            full_scales[a] = float(scales[i])
            out_shape[a] = int(np.floor(in_shape[a] * float(scales[i])))
    return full_scales, out_shape


def _resize_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "onnx.resize: data")
    if attrs["out_shape"]:
        return TensorType(tuple(attrs["out_shape"]), data.dtype)
    return TensorType([Any] * data.ndim, data.dtype)


def _resize_ref(data, roi, scales, sizes, axes=(), method="nearest",
                coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_floor",
                cubic_coeff_a=-0.75, exclude_outside=False, extrapolation_value=0.0,
                antialias=False, keep_aspect_ratio_policy="stretch", out_shape=()):
    attrs = dict(method=method, coordinate_transformation_mode=coordinate_transformation_mode,
                 nearest_mode=nearest_mode, cubic_coeff_a=cubic_coeff_a,
                 exclude_outside=exclude_outside, antialias=antialias)
    ndim = data.ndim
    full_scales, shape = resize_scales_and_sizes(data.shape, scales, sizes, list(axes),
                                                 keep_aspect_ratio_policy)
    roi = np.asarray(roi, "float64").reshape(-1)
    roi_axes = [a % ndim for a in axes] if len(axes) else list(range(ndim))
    starts, ends = np.zeros(ndim), np.ones(ndim)
    if roi.size:
        half = roi.size // 2
        starts[roi_axes] = roi[:half]
        ends[roi_axes] = roi[half:]
    out = data.astype("float64")
    outside = np.zeros((), bool)
    for axis in range(ndim):
        if shape[axis] == data.shape[axis] and full_scales[axis] == 1.0 and \
                coordinate_transformation_mode != "tf_crop_and_resize":
            continue
        weights, out_of_range = _axis_weights(data.shape[axis], shape[axis], full_scales[axis],
                                              (starts[axis], ends[axis]), attrs)
        out = np.moveaxis(np.tensordot(weights, np.moveaxis(out, axis, 0), axes=(1, 0)), 0,
                          axis)
        view = [1] * ndim
        view[axis] = shape[axis]
        outside = outside | out_of_range.reshape(view)
    out = np.where(outside, extrapolation_value, out)
    if data.dtype.kind in "iu":
        out = np.round(out)
    return (out.astype(data.dtype),)


register_opaque("onnx.resize", ("data", "roi", "scales", "sizes"),
                ("onnx.attrs.ResizeAttrs", [("axes", ()), ("method", "nearest"),
                                      ("coordinate_transformation_mode", "half_pixel"),
                                      ("nearest_mode", "round_prefer_floor"),
                                      ("cubic_coeff_a", -0.75), ("exclude_outside", False),
                                      ("extrapolation_value", 0.0), ("antialias", False),
                                      ("keep_aspect_ratio_policy", "stretch"),
                                      ("out_shape", ())]),
                _resize_rel, _resize_ref,
                "ONNX Resize on any axes: nearest/linear/cubic, every coordinate transform, "
                "antialias; scales or sizes given at run time")


# -- GridSample -------------------------------------------------------------------------------

def _reflect(x, low, high):
    """Reflect coordinates ``x`` at the borders ``low``/``high`` until inside."""
    span = high - low
    below, above = x < low, x > high
    distance = np.where(below, low - x, np.where(above, x - high, 0.0))
    turns = np.floor(distance / span) if span > 0 else np.zeros_like(distance)
    rest = distance - turns * span
    even = turns % 2 == 0
    from_low = np.where(even, low + rest, high - rest)
    from_high = np.where(even, high - rest, low + rest)
    return np.where(below, from_low, np.where(above, from_high, x))


def _grid_sample_ref(data, grid, mode="linear", padding_mode="zeros", align_corners=False):
    spatial = data.shape[2:]
    nd = len(spatial)
    coords = []
    for i, size in enumerate(spatial):
        g = grid[..., nd - 1 - i].astype("float32")
        if align_corners:
            x = (g + 1) / np.float32(2) * np.float32(size - 1)
        else:
            x = ((g + 1) * np.float32(size) - 1) / np.float32(2)
        coords.append(x.astype("float64"))
    if mode == "nearest":
        coords = [np.rint(x) for x in coords]
    borders = [(0.0, size - 1.0) if align_corners else (-0.5, size - 0.5) for size in spatial]
    for i, size in enumerate(spatial):
        low, high = borders[i]
        if padding_mode == "border":
            coords[i] = np.where((coords[i] < low) | (coords[i] > high),
                                 np.clip(coords[i], 0, size - 1), coords[i])
        elif padding_mode == "reflection":
            coords[i] = _reflect(coords[i], low, high)
    batch = np.arange(data.shape[0]).reshape((-1,) + (1,) * (grid.ndim - 2))

    def fetch(indices):
        valid = np.ones(indices[0].shape, bool)
        fixed = []
        for i, (index, size) in enumerate(zip(indices, spatial)):
            if padding_mode == "zeros":
                valid &= (index >= 0) & (index < size)
                index = np.clip(index, 0, size - 1)
            elif padding_mode == "border":
                index = np.clip(index, 0, size - 1)
            else:
                index = np.clip(_reflect(index.astype("float64"), *borders[i]).astype("int64"),
                                0, size - 1)
            fixed.append(index)
        values = data[(batch, slice(None)) + tuple(fixed)].astype("float64")
        return np.where(valid[..., None], values, 0.0)

    if mode == "nearest":
        out = fetch([x.astype("int64") for x in coords])
    else:
        taps = (0, 1) if mode == "linear" else (-1, 0, 1, 2)
        bases = [np.floor(x).astype("int64") for x in coords]
        fractions = [x - np.floor(x) for x in coords]
        out = 0.0
        for offsets in np.ndindex(*(len(taps),) * nd):
            weight = 1.0
            for i, k in enumerate(offsets):
                distance = np.abs(taps[k] - fractions[i])
                weight = weight * (np.clip(1 - distance, 0, None) if mode == "linear"
                                   else _cubic_kernel(distance, -0.75))
            out = out + weight[..., None] * fetch([b + taps[k] for b, k in
                                                   zip(bases, offsets)])
    return (np.moveaxis(out, -1, 1).astype(data.dtype),)


def _grid_sample_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "onnx.grid_sample: data")
    grid = expect_tensor(arg_types[1], "onnx.grid_sample: grid")
    if grid.ndim != data.ndim:
        raise TypeInferenceError(f"onnx.grid_sample: grid {grid} must have the rank of "
                                 f"data {data}")
    return TensorType((data.shape[0], data.shape[1]) + tuple(grid.shape[1:-1]), data.dtype)


register_opaque("onnx.grid_sample", ("data", "grid"),
                ("onnx.attrs.GridSampleAttrs", [("mode", "linear"), ("padding_mode", "zeros"),
                                          ("align_corners", False)]),
                _grid_sample_rel, _grid_sample_ref,
                "ONNX GridSample on 1-3 spatial dims: nearest/linear/cubic; zeros, border or "
                "reflection padding")


# -- AffineGrid ---------------------------------------------------------------------------------

def _affine_grid_rel(arg_types, attrs):
    theta = expect_tensor(arg_types[0], "onnx.affine_grid: theta")
    size = expect_tensor(arg_types[1], "onnx.affine_grid: size")
    if theta.ndim != 3 or theta.shape[1] not in (2, 3) or \
            theta.shape[2] not in (theta.shape[1] + 1, Any):
        raise TypeInferenceError(f"onnx.affine_grid: theta must be [N, 2, 3] or [N, 3, 4], "
                                 f"got {theta}")
    spatial = theta.shape[1]
    if size.ndim != 1 or size.shape[0] not in (spatial + 2, Any):
        raise TypeInferenceError(f"onnx.affine_grid: size {size} must list {spatial + 2} dims "
                                 f"for theta {theta}")
    return TensorType((theta.shape[0],) + (Any,) * spatial + (spatial,), theta.dtype)


def _axis_coordinates(count: int, align_corners: bool) -> np.ndarray:
    if align_corners:
        # the end points sit on the corner pixels' centers; one pixel sits at 0
        return np.linspace(-1.0, 1.0, count) if count > 1 else np.zeros(count)
    return (2.0 * np.arange(count) + 1.0) / count - 1.0


def _affine_grid_ref(theta, size, align_corners=False):
    op = "onnx.affine_grid"
    spatial = theta.shape[1]
    dims = [int(d) for d in np.asarray(size).reshape(-1)]
    if len(dims) != spatial + 2 or dims[0] != theta.shape[0] or min(dims[2:]) < 0:
        raise OpImplError(f"{op}: size {dims} does not match theta {theta.shape}", op=op)
    # homogeneous coordinates, fastest axis first: (x, y[, z], 1)
    axes = [_axis_coordinates(n, align_corners) for n in dims[2:]]
    mesh = np.meshgrid(*axes, indexing="ij")  # slowest (depth/height) first
    points = np.stack(list(reversed(mesh)) + [np.ones(dims[2:])], axis=-1)
    flat = points.reshape(-1, spatial + 1)
    grid = np.einsum("nij,pj->npi", theta.astype("float64"), flat)
    return (grid.reshape([dims[0]] + dims[2:] + [spatial]).astype(theta.dtype),)


register_opaque("onnx.affine_grid", ("theta", "size"),
                ("onnx.attrs.AffineGridAttrs", [("align_corners", False)]),
                _affine_grid_rel, _affine_grid_ref,
                "ONNX AffineGrid: sampling grid [N, (D,) H, W, 2|3] of affine transforms theta "
                "over the normalized [-1, 1] output coordinates")
