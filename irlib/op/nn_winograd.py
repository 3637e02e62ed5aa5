"""Winograd convolution ops: ``nn.contrib_conv2d_winograd_weight_transform`` and
``nn.contrib_conv2d_winograd_without_weight_transform`` (Relay's names and attributes).

A stride-1, undilated, ungrouped 3x3 ``nn.conv2d`` equals
``contrib_conv2d_winograd_without_weight_transform(data,
contrib_conv2d_winograd_weight_transform(weight, tile_size), tile_size, ...)``. Split this
way, the weight transform of a constant weight is folded at build time (FoldConstant), and
only the data and output transforms and the ``a*a`` products (``a = tile_size + 2``) run per
call (see ``jitkernels/cpu/winograd.py`` for the algorithm and its cost). ``interp.build``
makes this rewrite on the CPU where the kernels' cost model says it pays.

Before/after in the text format (``%w`` an OIHW 3x3 weight, ``tile_size=4``)::

    nn.conv2d(%x, %w, padding=[1, 1, 1, 1])
    nn.contrib_conv2d_winograd_without_weight_transform(%x,
        nn.contrib_conv2d_winograd_weight_transform(%w, tile_size=4),
        tile_size=4, padding=[1, 1, 1, 1], kernel_size=[3, 3])

Transformed weight layouts: ``(a, a, O, I)`` (``kernel_layout="OIHW"``, what the weight
transform returns) or ``(a, a, I, O)`` (``kernel_layout="HWIO"``, what channels-last data
multiplies fastest). ``tile_size`` is 2 (F(2x2, 3x3)) or 4 (F(4x4, 3x3)).
"""

from __future__ import annotations

import numpy as np

from ..errors import TypeInferenceError
from ..ir.dims import AnyDim
from ..ir.types import TensorType, normalize_dtype
from ._layouts import from_canonical, layout_positions, padding4, pair, to_canonical
from .registry import OpPattern, make_call, register_op
from .type_relations import dims_differ, expect_tensor

__all__ = ["contrib_conv2d_winograd_weight_transform",
           "contrib_conv2d_winograd_without_weight_transform", "WINOGRAD_MATRICES"]

WINOGRAD_MATRICES = {
    2: (np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.float64),
        np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], np.float64),
        np.array([[1, 1, 1, 0], [0, 1, -1, -1]], np.float64)),
    4: (np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
                  [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], np.float64),
        np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
                  [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]], np.float64),
        np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0],
                  [0, 1, -1, 8, -8, 1]], np.float64)),
}
"""``tile size m -> (B^T, G, A^T)``: the Cook-Toom matrices of F(m x m, 3 x 3) for the
interpolation points 0, 1, -1 (, 2, -2) and infinity (``a x a``, ``a x 3``, ``m x a``)."""

_TRANSFORMED_LAYOUTS = {"OIHW": "OI", "HWIO": "IO"}


def _tile(attrs, op_name: str) -> int:
    tile = attrs["tile_size"]
    if tile not in WINOGRAD_MATRICES:
        raise TypeInferenceError(f"{op_name}: tile_size={tile}; supported: 2 and 4")
    return int(tile)


# -- the weight transform ---------------------------------------------------------------------

def _weight_transform_rel(arg_types, attrs):
    name = "nn.contrib_conv2d_winograd_weight_transform"
    weight = expect_tensor(arg_types[0], f"{name}: weight")
    tile = _tile(attrs, name)
    if weight.ndim != 4:
        raise TypeInferenceError(f"{name}: the weight must be OIHW (4-D), got {weight}")
    for dim in weight.shape[2:]:
        if dims_differ(dim, 3):
            raise TypeInferenceError(f"{name}: the weight must be 3x3, got {weight}")
    alpha = tile + 2
    return TensorType((alpha, alpha, weight.shape[0], weight.shape[1]), weight.dtype)


def _weight_transform_ref(weight, tile_size):
    """``U[:, :, o, c] = G weight[o, c] G^T``, computed in float64."""
    _, g, _ = WINOGRAD_MATRICES[int(tile_size)]
    out = np.einsum("ai,ocij,bj->aboc", g, np.asarray(weight, np.float64), g, optimize=True)
    return (np.ascontiguousarray(out).astype(weight.dtype, copy=False),)


_WEIGHT = register_op("nn.contrib_conv2d_winograd_weight_transform", ("weight",),
                      attrs=("relay.attrs.ConvWinogradWeightTransformAttrs",
                             [("tile_size", 4)]),
                      type_rel=_weight_transform_rel, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                      description="Winograd transform of a 3x3 conv2d weight",
                      support_level=10)
_WEIGHT.def_impl(_weight_transform_ref)


def contrib_conv2d_winograd_weight_transform(weight, tile_size):
    """The Winograd weight transform ``G g G^T`` of an OIHW 3x3 weight
    (``relay.nn.contrib_conv2d_winograd_weight_transform``).

    Args:
        weight: ``(O, I, 3, 3)``.
        tile_size: the output tile ``m`` (2 or 4).

    Returns:
        A Call whose value is ``(m + 2, m + 2, O, I)``.
    """
    return make_call("nn.contrib_conv2d_winograd_weight_transform", (weight,),
                     {"tile_size": int(tile_size)})


# -- the convolution on a transformed weight --------------------------------------------------

_FIELDS = [("tile_size", 4), ("strides", (1, 1)), ("padding", (0, 0, 0, 0)),
           ("dilation", (1, 1)), ("groups", 1), ("channels", None), ("kernel_size", None),
           ("data_layout", "NCHW"), ("kernel_layout", "OIHW"), ("out_layout", ""),
           ("out_dtype", "")]


def _winograd_rel(arg_types, attrs):
    name = "nn.contrib_conv2d_winograd_without_weight_transform"
    data = expect_tensor(arg_types[0], f"{name}: data")
    weight = expect_tensor(arg_types[1], f"{name}: weight")
    tile = _tile(attrs, name)
    d_pos = layout_positions(attrs["data_layout"], "NCHW", f"{name}: data_layout")
    out_layout = attrs["out_layout"] or attrs["data_layout"]
    o_pos = layout_positions(out_layout, "NCHW", f"{name}: out_layout")
    kernel_layout = attrs["kernel_layout"]
    if kernel_layout not in _TRANSFORMED_LAYOUTS:
        raise TypeInferenceError(f"{name}: kernel_layout={kernel_layout!r}; supported: "
                                 f"'OIHW' (weight (a, a, O, I)) and 'HWIO' ((a, a, I, O))")
    if data.ndim != 4 or weight.ndim != 4:
        raise TypeInferenceError(f"{name}: data and weight must be 4-D, got {data} and "
                                 f"{weight}")
    if (pair(attrs["strides"], f"{name}: strides") != (1, 1)
            or pair(attrs["dilation"], f"{name}: dilation") != (1, 1)
            or attrs["groups"] != 1):
        raise TypeInferenceError(f"{name}: only stride 1, dilation 1 and one group")
    if attrs["kernel_size"] is not None and \
            tuple(pair(attrs["kernel_size"], f"{name}: kernel_size")) != (3, 3):
        raise TypeInferenceError(f"{name}: kernel_size must be 3x3")
    alpha = tile + 2
    if dims_differ(weight.shape[0], alpha) or dims_differ(weight.shape[1], alpha):
        raise TypeInferenceError(f"{name}: tile_size={tile} needs a ({alpha}, {alpha}, ...) "
                                 f"transformed weight, got {weight}")
    order = _TRANSFORMED_LAYOUTS[kernel_layout]
    out_channels = weight.shape[2 + order.index("O")]
    in_channels = weight.shape[2 + order.index("I")]
    if dims_differ(data.shape[d_pos["C"]], in_channels):
        raise TypeInferenceError(f"{name}: data has {data.shape[d_pos['C']]} channels but "
                                 f"the weight expects {in_channels}")
    channels = attrs["channels"]
    if channels is not None and dims_differ(channels, out_channels):
        raise TypeInferenceError(f"{name}: channels={channels} but the weight has "
                                 f"{out_channels} output channels")
    top, left, bottom, right = padding4(attrs["padding"], f"{name}: padding")
    sizes = []
    for axis, before, after in (("H", top, bottom), ("W", left, right)):
        size = data.shape[d_pos[axis]]
        sizes.append(size if isinstance(size, AnyDim) else size + before + after - 2)
    for size in sizes:
        if isinstance(size, int) and size <= 0:
            raise TypeInferenceError(f"{name}: the 3x3 kernel is larger than the padded "
                                     f"input {data}")
    dims = {"N": data.shape[d_pos["N"]], "C": out_channels, "H": sizes[0], "W": sizes[1]}
    shape = [None] * 4
    for letter, position in o_pos.items():
        shape[position] = dims[letter]
    dtype = normalize_dtype(attrs["out_dtype"]) if attrs["out_dtype"] else data.dtype
    return TensorType(shape, dtype)


def winograd_nhwc_reference(data, u_aaio, tile, padding) -> np.ndarray:
    """Winograd convolution in float64 numpy: NHWC ``data``, ``(a, a, I, O)`` weight.

    Every tile's ``a x a`` patch of the zero-padded image (padded further at the bottom
    and right to whole tiles) is transformed by ``B^T . B``, multiplied element-wise by the
    weight and summed over channels, transformed back by ``A^T . A`` and cropped.

    Args:
        data: the NHWC input.
        u_aaio: the transformed weight, ``(a, a, I, O)``.
        tile: the output tile side (``a = tile + 2``).
        padding: ``(top, left, bottom, right)``.
    """
    bt, _, at = WINOGRAD_MATRICES[tile]
    top, left, bottom, right = padding
    batch, height, width, _ = data.shape
    out_h, out_w = height + top + bottom - 2, width + left + right - 2
    tiles_h, tiles_w = -(-out_h // tile), -(-out_w // tile)
    padded = np.pad(np.asarray(data, np.float64),
                    ((0, 0), (top, tiles_h * tile + 2 - height - top),
                     (left, tiles_w * tile + 2 - width - left), (0, 0)))
    alpha = tile + 2
    rows = np.arange(tiles_h)[:, None] * tile + np.arange(alpha)[None]      # (th, a)
    cols = np.arange(tiles_w)[:, None] * tile + np.arange(alpha)[None]      # (tw, a)
    patches = padded[:, rows[:, None, :, None], cols[None, :, None, :], :]  # n,th,tw,a,a,c
    v = np.einsum("ia,nyxabc,jb->nyxijc", bt, patches, bt, optimize=True)
    m = np.einsum("nyxijc,ijco->nyxijo", v, np.asarray(u_aaio, np.float64), optimize=True)
    y = np.einsum("ai,nyxijo,bj->nyaxbo", at, m, at, optimize=True)
    y = y.reshape(batch, tiles_h * tile, tiles_w * tile, -1)
    return y[:, :out_h, :out_w]


def _winograd_ref(data, weight, **attrs):
    tile = int(attrs["tile_size"])
    nhwc = to_canonical(data, attrs["data_layout"], "NHWC")
    u = weight if attrs["kernel_layout"] == "HWIO" else np.swapaxes(weight, 2, 3)
    out = winograd_nhwc_reference(nhwc, u, tile, padding4(attrs["padding"]))
    dtype = normalize_dtype(attrs["out_dtype"]) if attrs["out_dtype"] else data.dtype
    out_layout = attrs["out_layout"] or attrs["data_layout"]
    return (np.ascontiguousarray(from_canonical(out, "NHWC", out_layout)).astype(
        dtype, copy=False),)


_WINOGRAD = register_op("nn.contrib_conv2d_winograd_without_weight_transform",
                        ("data", "weight"),
                        attrs=("relay.attrs.Conv2DWinogradAttrs", _FIELDS),
                        type_rel=_winograd_rel, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                        description="3x3 stride-1 conv2d on a Winograd-transformed weight",
                        support_level=10)
_WINOGRAD.def_impl(_winograd_ref)


def contrib_conv2d_winograd_without_weight_transform(
        data, weight, tile_size, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
        channels=None, kernel_size=None, data_layout="NCHW", kernel_layout="OIHW",
        out_layout="", out_dtype=""):
    """A 3x3, stride-1 conv2d whose weight is already Winograd-transformed
    (``relay.nn.contrib_conv2d_winograd_without_weight_transform``).

    Args:
        data: ``(N, C, H, W)`` in ``data_layout`` (``NCHW``, ``NHWC``, ...).
        weight: the transformed weight: ``(a, a, O, I)`` with ``kernel_layout="OIHW"``,
            ``(a, a, I, O)`` with ``"HWIO"`` (``a = tile_size + 2``).
        tile_size: 2 or 4.
        strides, dilation, groups: must be 1 (kept for Relay's signature).
        padding: 1, 2 or 4 ints, as for ``nn.conv2d``.
        channels, kernel_size: checked if given (``kernel_size`` must be 3x3).
        data_layout, kernel_layout, out_layout, out_dtype: as for ``nn.conv2d``.

    Returns:
        A Call of the op.
    """
    attrs = {"tile_size": int(tile_size), "strides": pair(strides, "strides"),
             "padding": padding4(padding), "dilation": pair(dilation, "dilation"),
             "groups": int(groups), "channels": channels,
             "kernel_size": None if kernel_size is None else pair(kernel_size, "kernel_size"),
             "data_layout": data_layout, "kernel_layout": kernel_layout,
             "out_layout": out_layout, "out_dtype": out_dtype}
    return make_call("nn.contrib_conv2d_winograd_without_weight_transform", (data, weight),
                     attrs)
