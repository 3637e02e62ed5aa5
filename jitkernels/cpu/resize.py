"""CPU kernel of ``image.resize2d``.

Every method is separable: per output row and column the taps (input indices) and weights
are computed once in numpy (with the coordinate rules of :mod:`irlib.op.image`), and the
numba kernel forms ``sum_a sum_b wh[i, a] * ww[j, b] * x[n, c, ih[i, a], iw[j, b]]``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .. import register_kernel
from .._geometry import from_canonical, is_float, reference, to_canonical


@njit(cache=True, parallel=True)
def resize_nchw(x, out, index_h, weight_h, outside_h, index_w, weight_w, outside_w, fill):
    """Separable resampling of ``x (N, C, H, W)`` into float64 ``out (N, C, OH, OW)``."""
    batch, channels = x.shape[0], x.shape[1]
    oh, ow = out.shape[2], out.shape[3]
    for task in prange(batch * channels):
        n = task // channels
        c = task % channels
        for i in range(oh):
            for j in range(ow):
                if outside_h[i] or outside_w[j]:
                    out[n, c, i, j] = fill
                    continue
                acc = 0.0
                for a in range(index_h.shape[1]):
                    row = 0.0
                    for b in range(index_w.shape[1]):
                        row += weight_w[j, b] * x[n, c, index_h[i, a], index_w[j, b]]
                    acc += weight_h[i, a] * row
                out[n, c, i, j] = acc


def axis_taps(out_size, in_size, method, mode, rounding, alpha, exclude, roi):
    """``(indices, weights, outside)`` of the resampling along one axis.

    Returns:
        int64 ``(out, taps)`` input indices, float64 ``(out, taps)`` weights and a bool
        ``(out,)`` mask of positions outside the input (only ``tf_crop_and_resize``).
    """
    from irlib.op.image import cubic_weights, round_coordinates, source_coordinates
    coords = source_coordinates(out_size, in_size, mode, roi)
    outside = ((coords < 0) | (coords > in_size - 1)) if mode == "tf_crop_and_resize" else \
        np.zeros(out_size, bool)
    if method == "nearest_neighbor":
        if rounding == "":
            rounding = "round" if mode == "align_corners" else "floor"
        index = np.clip(round_coordinates(coords, rounding), 0, in_size - 1)
        return index.astype(np.int64)[:, None], np.ones((out_size, 1)), outside
    base = np.floor(coords)
    frac = coords - base
    offsets = np.array([0, 1] if method == "linear" else [-1, 0, 1, 2])
    taps = base[:, None] + offsets
    if method == "linear":
        weights = np.stack([1.0 - frac, frac], axis=1)
    else:
        weights = cubic_weights(frac[:, None] - offsets, alpha)
        if exclude:
            weights = np.where((taps < 0) | (taps > in_size - 1), 0.0, weights)
            weights = weights / weights.sum(axis=1, keepdims=True)
    return np.clip(taps, 0, in_size - 1).astype(np.int64), weights, outside


@register_kernel("image.resize2d")
def resize2d(data, **attrs):
    """``image.resize2d`` on CPU (same contract as the reference implementation)."""
    layout = attrs.get("layout") or "NCHW"
    if not is_float(data) or data.ndim != 4 or data.size == 0:
        return reference("image.resize2d", (data,), attrs)
    x = to_canonical(data, layout, "NCHW")
    size = tuple(int(s) for s in attrs["size"])
    roi = attrs.get("roi") or (0.0, 0.0, 1.0, 1.0)
    tables = [axis_taps(size[i], x.shape[2 + i], attrs.get("method", "linear"),
                        attrs.get("coordinate_transformation_mode", "half_pixel"),
                        attrs.get("rounding_method", ""), attrs.get("cubic_alpha", -0.5),
                        bool(attrs.get("cubic_exclude", 0)), (roi[i], roi[2 + i]))
              for i in range(2)]
    out = np.empty(x.shape[:2] + size, np.float64)
    resize_nchw(x, out, *tables[0], *tables[1], float(attrs.get("extrapolation_value", 0.0)))
    dtype = np.dtype(attrs.get("out_dtype") or data.dtype)
    if np.issubdtype(dtype, np.integer):
        out = np.round(out)
    return (from_canonical(out.astype(dtype), "NCHW", layout),)
