"""Image resampling: ``image.resize2d``, ``image.grid_sample`` and ``nn.upsampling``.

Before/after in the text format::

    image.resize2d(%x, size=[8, 8], method="linear")      /* Tensor[(1, 3, 4, 4), float32] */
    -> Tensor[(1, 3, 8, 8), float32]
    image.grid_sample(%x, %g)                              /* g: (1, 2, 5, 6) */
    -> Tensor[(1, 3, 5, 6), float32]

Resize maps output coordinate ``x`` to an input coordinate by
``coordinate_transformation_mode`` (scale = in / out):

* ``half_pixel``: ``(x + 0.5) * scale - 0.5``; ``pytorch_half_pixel``: the same, 0 when the
  output has size 1; ``align_corners``: ``x * (in - 1) / (out - 1)``; ``asymmetric``:
  ``x * scale``; ``tf_half_pixel_for_nn``: ``(x + 0.5) * scale``; ``tf_crop_and_resize``:
  from ``roi`` (``[start_h, start_w, end_h, end_w]``, normalised), positions outside the
  input take ``extrapolation_value``.

``nearest_neighbor`` rounds by ``rounding_method`` (``round``: half away from zero,
``round_prefer_floor``, ``round_prefer_ceil``, ``floor``, ``ceil``; ``""``: ``round`` for
align_corners else ``floor``, like TVM). ``linear`` and ``cubic`` (Keys kernel with
``cubic_alpha``; ``cubic_exclude`` drops and renormalises taps outside the input) clamp taps
to the edge. Every method is separable, so the reference resamples one axis at a time.
"""

from __future__ import annotations

import numpy as np

from ..errors import GradientError, TypeInferenceError
from ..ir.expr import Tuple, const
from ..ir.types import TensorType, normalize_dtype
from ._composite import arg_types, composite_grad
from ._layouts import from_canonical, layout_positions, to_canonical
from .registry import OpPattern, make_call, register_op
from .type_relations import expect_tensor

__all__ = ["resize2d", "grid_sample"]  # upsampling is exported by irlib.nn

_METHODS = ("nearest_neighbor", "linear", "cubic")
_MODES = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
          "tf_half_pixel_for_nn", "tf_crop_and_resize")
_ROUNDING = ("", "round", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def source_coordinates(out_size: int, in_size: int, mode: str, roi=(0.0, 1.0)) -> np.ndarray:
    """Input coordinates of the ``out_size`` output positions along one axis.

    Args:
        out_size: the output length along the axis.
        in_size: the input length.
        mode: the coordinate transformation mode (module docstring).
        roi: the ``(start, end)`` region of interest, normalised (``tf_crop_and_resize`` only).
    """
    x = np.arange(out_size, dtype=np.float64)
    scale = in_size / out_size
    if mode == "half_pixel":
        return (x + 0.5) * scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) * scale - 0.5 if out_size > 1 else np.zeros(out_size)
    if mode == "align_corners":
        return x * ((in_size - 1) / (out_size - 1)) if out_size > 1 else np.zeros(out_size)
    if mode == "asymmetric":
        return x * scale
    if mode == "tf_half_pixel_for_nn":
        return (x + 0.5) * scale
    start, end = roi
    if out_size > 1:
        return start * (in_size - 1) + x * (end - start) * (in_size - 1) / (out_size - 1)
    return np.full(out_size, 0.5 * (start + end) * (in_size - 1))


def round_coordinates(coords: np.ndarray, method: str) -> np.ndarray:
    """Nearest-neighbour rounding of input coordinates (see the module docstring).

    Args:
        coords: the input coordinates.
        method: the rounding method (module docstring).
    """
    if method == "round":
        return np.sign(coords) * np.floor(np.abs(coords) + 0.5)
    if method == "round_prefer_floor":
        return np.ceil(coords - 0.5)
    if method == "round_prefer_ceil":
        return np.floor(coords + 0.5)
    if method == "ceil":
        return np.ceil(coords)
    return np.floor(coords)


def cubic_weights(t: np.ndarray, alpha: float) -> np.ndarray:
    """Keys cubic convolution weights for tap distances ``t``.

    Args:
        t: the tap distances.
        alpha: the Keys kernel's ``a`` (``cubic_alpha``).
    """
    t = np.abs(t)
    near = ((alpha + 2) * t - (alpha + 3)) * t * t + 1
    far = ((alpha * t - 5 * alpha) * t + 8 * alpha) * t - 4 * alpha
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def _shape_along(vector, axis, ndim):
    shape = [1] * ndim
    shape[axis] = -1
    return np.reshape(vector, shape)


def resample_axis(data, axis, coords, method, rounding, alpha=-0.5, exclude=False):
    """Resample ``data`` along ``axis`` at the input coordinates ``coords`` (float64).

    Args:
        data: the array.
        axis: the axis resampled.
        coords: the input coordinates of the output positions.
        method: ``"nearest_neighbor"``, ``"linear"`` or ``"cubic"``.
        rounding: the nearest-neighbour rounding method.
        alpha: the cubic kernel's ``a``.
        exclude: drop (and renormalise) cubic taps outside the input.
    """
    size = data.shape[axis]
    if method == "nearest_neighbor":
        index = np.clip(round_coordinates(coords, rounding), 0, size - 1).astype(np.int64)
        return np.take(data, index, axis)
    base = np.floor(coords)
    frac = coords - base
    offsets = (0, 1) if method == "linear" else (-1, 0, 1, 2)
    total = 0.0
    weight_sum = 0.0
    for offset in offsets:
        tap = base + offset
        if method == "linear":
            weight = frac if offset else 1.0 - frac
        else:
            weight = cubic_weights(frac - offset, alpha)
            if exclude:
                weight = np.where((tap < 0) | (tap > size - 1), 0.0, weight)
        weight_sum = weight_sum + weight
        index = np.clip(tap, 0, size - 1).astype(np.int64)
        total = total + np.take(data, index, axis) * _shape_along(weight, axis, data.ndim)
    if method == "cubic" and exclude:
        total = total / _shape_along(weight_sum, axis, data.ndim)
    return total


def resize_nchw(data, size, method, mode, rounding, alpha=-0.5, exclude=False, roi=None,
                extrapolation=0.0):
    """Resize an NCHW array to ``size`` (see the module docstring for the attributes).

    Args:
        data: the NCHW array.
        size: the output ``(H, W)``.
        method: ``"nearest_neighbor"``, ``"linear"`` or ``"cubic"``.
        mode: the coordinate transformation mode.
        rounding: the nearest-neighbour rounding method.
        alpha: the cubic kernel's ``a``.
        exclude: drop (and renormalise) cubic taps outside the input.
        roi: the region of interest of ``tf_crop_and_resize``.
        extrapolation: the value of positions outside the input (``tf_crop_and_resize``).
    """
    if rounding == "":
        rounding = "round" if mode == "align_corners" else "floor"
    out = data.astype(np.float64)
    outside = np.zeros((1, 1) + tuple(size), bool)
    roi = roi if roi is not None else (0.0, 0.0, 1.0, 1.0)
    for i in range(2):
        axis = 2 + i
        coords = source_coordinates(size[i], data.shape[axis], mode, (roi[i], roi[2 + i]))
        if mode == "tf_crop_and_resize":
            mask = (coords < 0) | (coords > data.shape[axis] - 1)
            outside = outside | _shape_along(mask, axis, 4)
        out = resample_axis(out, axis, coords, method, rounding, alpha, exclude)
    if mode == "tf_crop_and_resize":
        out = np.where(outside, extrapolation, out)
    return out


def resize_expr(data, layout, in_hw, size, method, mode, rounding, alpha=-0.5, exclude=False,
                roi=None, extrapolation=0.0):
    """A resize as primitives (for gradients): resizing is linear and separable, so it is one
    einsum of the NCHW data with two constant interpolation matrices (plus the extrapolation
    mask of ``tf_crop_and_resize``).

    Args:
        data: the input expression in ``layout``.
        layout: a permutation of ``NCHW``.
        in_hw: the static input ``(height, width)``.
        size, method, mode, rounding, alpha, exclude, roi, extrapolation: as
            :func:`resize_nchw`.

    Returns:
        An expression in ``layout``.
    """
    if rounding == "":
        rounding = "round" if mode == "align_corners" else "floor"
    roi = roi if roi is not None else (0.0, 0.0, 1.0, 1.0)
    matrices, outside = [], np.zeros(tuple(size), bool)
    for i in range(2):
        coords = source_coordinates(size[i], in_hw[i], mode, (roi[i], roi[2 + i]))
        # Resampling the identity gives row o = the weights of output o over the inputs.
        matrices.append(resample_axis(np.eye(in_hw[i]), 0, coords, method, rounding, alpha,
                                      exclude))
        if mode == "tf_crop_and_resize":
            mask = (coords < 0) | (coords > in_hw[i] - 1)
            outside = outside | (mask[:, None] if i == 0 else mask[None, :])
    x = _transpose(data, [layout.index(c) for c in "NCHW"])
    weights = [make_call("cast_like", (const(m), x)) for m in matrices]
    out = make_call("einsum", (Tuple([x] + weights),), {"equation": "nchw,ih,jw->ncij"})
    if outside.any():
        out = make_call("where", (const(outside), make_call(
            "cast_like", (const(float(extrapolation)), out)), out))
    return _transpose(out, ["NCHW".index(c) for c in layout])


def _transpose(expr, axes):
    axes = tuple(axes)
    if axes == tuple(range(len(axes))):
        return expr
    return make_call("transpose", (expr,), {"axes": axes})


def _static_hw(data, layout, what):
    shape = arg_types([data], what)[0].shape
    hw = (shape[layout.index("H")], shape[layout.index("W")])
    if not all(isinstance(v, int) for v in hw):
        raise GradientError(f"the gradient of {what} needs a static spatial size")
    return hw


# -- resize2d ----------------------------------------------------------------------------------

def _check_choice(op, name, value, choices):
    if value not in choices:
        raise TypeInferenceError(f"{op}: {name} must be one of {choices}, got {value!r}")


def _resize_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "image.resize2d: data")
    if data.ndim != 4:
        raise TypeInferenceError(f"image.resize2d: data must be 4-D, got {data}")
    pos = layout_positions(attrs["layout"], "NCHW", "image.resize2d: layout")
    _check_choice("image.resize2d", "method", attrs["method"], _METHODS)
    _check_choice("image.resize2d", "coordinate_transformation_mode",
                  attrs["coordinate_transformation_mode"], _MODES)
    _check_choice("image.resize2d", "rounding_method", attrs["rounding_method"], _ROUNDING)
    size = attrs["size"]
    if size is None or len(size) != 2 or not all(isinstance(s, int) and s > 0 for s in size):
        raise TypeInferenceError(f"image.resize2d: size must be two positive ints, got {size}")
    shape = list(data.shape)
    shape[pos["H"]], shape[pos["W"]] = size
    dtype = normalize_dtype(attrs["out_dtype"]) if attrs["out_dtype"] else data.dtype
    return TensorType(shape, dtype)


_RESIZE_FIELDS = [("roi", None), ("size", None), ("layout", "NCHW"), ("method", "linear"),
                  ("coordinate_transformation_mode", "half_pixel"), ("rounding_method", ""),
                  ("cubic_alpha", -0.5), ("cubic_exclude", 0), ("extrapolation_value", 0.0),
                  ("out_dtype", "")]
_RESIZE = register_op("image.resize2d", ("data",),
                      attrs=("relay.attrs.Resize2DAttrs", _RESIZE_FIELDS),
                      type_rel=_resize_rel, pattern=OpPattern.INJECTIVE,
                      description="resize the spatial axes (nearest/linear/cubic)")


@_RESIZE.def_impl
def _resize_ref(data, **attrs):
    x = to_canonical(data, attrs["layout"], "NCHW")
    out = resize_nchw(x, attrs["size"], attrs["method"],
                      attrs["coordinate_transformation_mode"], attrs["rounding_method"],
                      attrs["cubic_alpha"], bool(attrs["cubic_exclude"]), attrs["roi"],
                      attrs["extrapolation_value"])
    dtype = normalize_dtype(attrs["out_dtype"]) if attrs["out_dtype"] else data.dtype
    if np.issubdtype(np.dtype(dtype), np.integer):
        out = np.round(out)
    return (from_canonical(out.astype(dtype), "NCHW", attrs["layout"]),)


@_RESIZE.def_grad
@composite_grad
def _resize_grad(data, **attrs):
    if attrs["out_dtype"] and not normalize_dtype(attrs["out_dtype"]).startswith("float"):
        raise GradientError("image.resize2d with an integer out_dtype has no gradient")
    out = resize_expr(data, attrs["layout"], _static_hw(data, attrs["layout"],
                                                         "image.resize2d"),
                      attrs["size"], attrs["method"], attrs["coordinate_transformation_mode"],
                      attrs["rounding_method"], attrs["cubic_alpha"],
                      bool(attrs["cubic_exclude"]), attrs["roi"], attrs["extrapolation_value"])
    if attrs["out_dtype"]:
        out = make_call("cast", (out,), {"dtype": normalize_dtype(attrs["out_dtype"])})
    return out


def resize2d(data, size, roi=None, layout="NCHW", method="linear",
             coordinate_transformation_mode="half_pixel", rounding_method="",
             cubic_alpha=-0.5, cubic_exclude=0, extrapolation_value=0.0, out_dtype=None):
    """Resize the spatial axes of ``data`` (``relay.image.resize2d``, static size).

    Args:
        data: 4-D input in ``layout`` (a permutation of ``NCHW``).
        size: the output ``(height, width)``.
        roi: ``[start_h, start_w, end_h, end_w]`` for ``tf_crop_and_resize``.
        layout: the data layout.
        method: ``"nearest_neighbor"``, ``"linear"`` or ``"cubic"``.
        coordinate_transformation_mode: see the module docstring.
        rounding_method: nearest-neighbour rounding (see the module docstring).
        cubic_alpha: the cubic kernel's ``a`` (ONNX uses -0.75).
        cubic_exclude: drop (and renormalise) cubic taps outside the input.
        extrapolation_value: value outside the roi for ``tf_crop_and_resize``.
        out_dtype: the output dtype (default: data's).

    Returns:
        A Call of ``image.resize2d``.
    """
    attrs = {"size": tuple(int(s) for s in size),
             "roi": None if roi is None else tuple(float(r) for r in roi), "layout": layout,
             "method": method, "coordinate_transformation_mode": coordinate_transformation_mode,
             "rounding_method": rounding_method, "cubic_alpha": float(cubic_alpha),
             "cubic_exclude": int(cubic_exclude),
             "extrapolation_value": float(extrapolation_value), "out_dtype": out_dtype or ""}
    return make_call("image.resize2d", (data,), attrs)


# -- upsampling --------------------------------------------------------------------------------

_UPSAMPLING_METHODS = {"nearest_neighbor": "nearest_neighbor", "bilinear": "linear",
                       "bicubic": "cubic"}


def _upsampling_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.upsampling: data")
    if data.ndim != 4:
        raise TypeInferenceError(f"nn.upsampling: data must be 4-D, got {data}")
    pos = layout_positions(attrs["layout"], "NCHW", "nn.upsampling: layout")
    _check_choice("nn.upsampling", "method", attrs["method"], tuple(_UPSAMPLING_METHODS))
    shape = list(data.shape)
    for letter, scale in (("H", attrs["scale_h"]), ("W", attrs["scale_w"])):
        if not scale > 0:
            raise TypeInferenceError(f"nn.upsampling: scale_{letter.lower()} must be "
                                     f"positive, got {scale}")
        size = shape[pos[letter]]
        shape[pos[letter]] = int(size * scale) if isinstance(size, int) else (
            size * int(scale) if float(scale).is_integer() else _any())
    return TensorType(shape, data.dtype)


def _any():
    from ..ir.dims import Any
    return Any


_UPSAMPLING = register_op("nn.upsampling", ("data",),
                          attrs=("relay.attrs.UpSamplingAttrs",
                                 [("scale_h", 1.0), ("scale_w", 1.0), ("layout", "NCHW"),
                                  ("method", "nearest_neighbor"), ("align_corners", False)]),
                          type_rel=_upsampling_rel, pattern=OpPattern.INJECTIVE,
                          description="scale the spatial axes up by scale_h, scale_w")


@_UPSAMPLING.def_impl
def _upsampling_ref(data, scale_h=1.0, scale_w=1.0, layout="NCHW", method="nearest_neighbor",
                    align_corners=False):
    x = to_canonical(data, layout, "NCHW")
    size = (int(x.shape[2] * scale_h), int(x.shape[3] * scale_w))
    mode = "align_corners" if align_corners else "asymmetric"
    out = resize_nchw(x, size, _UPSAMPLING_METHODS[method], mode, "", -0.5)
    return (from_canonical(out.astype(data.dtype), "NCHW", layout),)


@_UPSAMPLING.def_grad
@composite_grad
def _upsampling_grad(data, scale_h=1.0, scale_w=1.0, layout="NCHW",
                     method="nearest_neighbor", align_corners=False):
    in_hw = _static_hw(data, layout, "nn.upsampling")
    size = (int(in_hw[0] * scale_h), int(in_hw[1] * scale_w))
    mode = "align_corners" if align_corners else "asymmetric"
    return resize_expr(data, layout, in_hw, size, _UPSAMPLING_METHODS[method], mode, "")


def upsampling(data, scale_h=1, scale_w=1, layout="NCHW", method="nearest_neighbor",
               align_corners=False):
    """Upsample the spatial axes (``relay.nn.upsampling``): a resize to
    ``(H * scale_h, W * scale_w)`` with asymmetric (or align_corners) coordinates.

    Args:
        method: ``"nearest_neighbor"``, ``"bilinear"`` or ``"bicubic"``.
        data: the 4-D input.
        scale_h: the height factor.
        scale_w: the width factor.
        layout: ``"NCHW"`` or ``"NHWC"``.
        align_corners: use align_corners coordinates instead of asymmetric ones.

    Returns:
        A Call of ``nn.upsampling``.
    """
    return make_call("nn.upsampling", (data,), {"scale_h": float(scale_h),
                                                "scale_w": float(scale_w), "layout": layout,
                                                "method": method,
                                                "align_corners": bool(align_corners)})


# -- grid_sample -------------------------------------------------------------------------------

def _grid_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "image.grid_sample: data")
    grid = expect_tensor(arg_types[1], "image.grid_sample: grid")
    if attrs["layout"] != "NCHW":
        raise TypeInferenceError(f"image.grid_sample: layout must be 'NCHW', got "
                                 f"{attrs['layout']!r}")
    if data.ndim != 4 or grid.ndim != 4 or grid.shape[1] != 2:
        raise TypeInferenceError(f"image.grid_sample: data must be (N, C, H, W) and grid "
                                 f"(N, 2, H_out, W_out), got {data} and {grid}")
    _check_choice("image.grid_sample", "method", attrs["method"],
                  ("nearest", "bilinear", "bicubic"))
    _check_choice("image.grid_sample", "padding_mode", attrs["padding_mode"],
                  ("zeros", "border", "reflection"))
    return TensorType((data.shape[0], data.shape[1], grid.shape[2], grid.shape[3]), data.dtype)


_GRID_SAMPLE = register_op("image.grid_sample", ("data", "grid"),
                           attrs=("relay.attrs.GridSampleAttrs",
                                  [("method", "bilinear"), ("layout", "NCHW"),
                                   ("padding_mode", "zeros"), ("align_corners", True)]),
                           type_rel=_grid_rel, pattern=OpPattern.INJECTIVE,
                           description="sample data at the normalised (x, y) positions of grid")


def _reflect(coords, low, high):
    span = high - low
    if span <= 0:
        return np.zeros_like(coords)
    distance = np.abs(coords - low)
    flips = np.floor(distance / span)
    extra = distance - flips * span
    return np.where(flips % 2 == 0, low + extra, high - extra)


def _pad_coordinates(coords, size, padding_mode, align_corners):
    if padding_mode == "border":
        return np.clip(coords, 0, size - 1)
    if padding_mode == "reflection":
        if align_corners:
            coords = _reflect(coords, 0.0, size - 1.0)
        else:
            coords = _reflect(coords, -0.5, size - 0.5)
        return np.clip(coords, 0, size - 1)
    return coords


@_GRID_SAMPLE.def_impl
def _grid_sample_ref(data, grid, method="bilinear", layout="NCHW", padding_mode="zeros",
                     align_corners=True):
    batch, channels, height, width = data.shape
    x = grid[:, 0].astype(np.float64)
    y = grid[:, 1].astype(np.float64)
    if align_corners:
        x, y = (x + 1) / 2 * (width - 1), (y + 1) / 2 * (height - 1)
    else:
        x, y = ((x + 1) * width - 1) / 2, ((y + 1) * height - 1) / 2
    batch_index = np.arange(batch)[:, None, None]

    def tap(yi, xi):
        """Values at integer positions (N, Ho, Wo) -> (N, C, Ho, Wo), zero outside."""
        if method == "bicubic" and padding_mode != "zeros":
            yi = _pad_coordinates(yi, height, padding_mode, align_corners)
            xi = _pad_coordinates(xi, width, padding_mode, align_corners)
        yi, xi = yi.astype(np.int64), xi.astype(np.int64)
        inside = (yi >= 0) & (yi < height) & (xi >= 0) & (xi < width)
        values = data[batch_index, :, np.clip(yi, 0, height - 1), np.clip(xi, 0, width - 1)]
        return np.moveaxis(values * inside[..., None], -1, 1)

    if method != "bicubic":
        x = _pad_coordinates(x, width, padding_mode, align_corners)
        y = _pad_coordinates(y, height, padding_mode, align_corners)
    if method == "nearest":
        out = tap(np.round(y), np.round(x))  # half to even, like nearbyint
    elif method == "bilinear":
        x0, y0 = np.floor(x), np.floor(y)
        fx, fy = (x - x0)[:, None], (y - y0)[:, None]
        out = ((1 - fy) * ((1 - fx) * tap(y0, x0) + fx * tap(y0, x0 + 1))
               + fy * ((1 - fx) * tap(y0 + 1, x0) + fx * tap(y0 + 1, x0 + 1)))
    else:
        x0, y0 = np.floor(x), np.floor(y)
        fx, fy = x - x0, y - y0
        out = 0.0
        for dy in (-1, 0, 1, 2):
            wy = cubic_weights(fy - dy, -0.75)[:, None]
            for dx in (-1, 0, 1, 2):
                wx = cubic_weights(fx - dx, -0.75)[:, None]
                out = out + wy * wx * tap(y0 + dy, x0 + dx)
    return (np.asarray(out).astype(data.dtype),)


def grid_sample(data, grid, method="bilinear", layout="NCHW", padding_mode="zeros",
                align_corners=True):
    """Sample ``data`` at grid positions (``relay.image.grid_sample``; PyTorch semantics).

    Args:
        data: ``(N, C, H, W)``.
        grid: ``(N, 2, H_out, W_out)``: normalised ``x`` (width) then ``y`` (height) in
            ``[-1, 1]``.
        method: ``"nearest"``, ``"bilinear"`` or ``"bicubic"`` (a = -0.75).
        layout: ``"NCHW"``.
        padding_mode: ``"zeros"``, ``"border"`` or ``"reflection"``.
        align_corners: -1/1 are the centres (True) or the outer edges of the corner pixels.

    Returns:
        A Call of ``image.grid_sample`` with shape ``(N, C, H_out, W_out)``.
    """
    return make_call("image.grid_sample", (data, grid),
                     {"method": method, "layout": layout, "padding_mode": padding_mode,
                      "align_corners": bool(align_corners)})
