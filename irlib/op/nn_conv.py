"""2-D convolution: ``nn.conv2d`` and the two ops its gradient is made of,
``nn.conv2d_transpose`` (adjoint w.r.t. the data) and ``nn.conv2d_backward_weight``.

Before/after in the text format::

    nn.conv2d(%x, %w, padding=[1, 1, 1, 1])    /* x: (1, 3, 8, 8), w: (4, 3, 3, 3) */
    -> Tensor[(1, 4, 8, 8), float32]

Layouts: data in any permutation of ``NCHW`` (``NCHW``, ``NHWC``), kernel in any permutation
of ``OIHW`` (``OIHW``, ``HWIO``). ``groups`` splits channels; ``groups == channels`` is a
depthwise convolution. The reference implementation is im2col plus one batched matmul.
"""

from __future__ import annotations

import numpy as np

from ..errors import GradientError, TypeInferenceError
from ..ir.dims import Any, AnyDim
from ..ir.types import TensorType, normalize_dtype
from ._layouts import (from_canonical, layout_positions, pad_spatial, padding4, pair,
                       to_canonical, windows)
from .registry import OpPattern, make_call, register_op
from .transform import checked_type_for_grad
from .type_relations import dims_differ, expect_tensor

__all__ = ["conv2d", "conv2d_transpose", "conv2d_backward_weight"]

_CONV_FIELDS = [("strides", (1, 1)), ("padding", (0, 0, 0, 0)), ("dilation", (1, 1)),
                ("groups", 1), ("channels", None), ("kernel_size", None),
                ("data_layout", "NCHW"), ("kernel_layout", "OIHW"), ("out_layout", ""),
                ("out_dtype", "")]


def _spatial_out(size, kernel, stride, dilation, pad_before, pad_after):
    if isinstance(size, AnyDim):  # Any has no arithmetic
        return Any
    return (size + pad_before + pad_after - dilation * (kernel - 1) - 1) // stride + 1


def _out_dtype(attrs, data: TensorType) -> str:
    return normalize_dtype(attrs["out_dtype"]) if attrs["out_dtype"] else data.dtype


def _check_kernel_attrs(op_name, attrs, out_channels, kernel):
    channels = attrs["channels"]
    if channels is not None and dims_differ(channels, out_channels):
        raise TypeInferenceError(f"{op_name}: channels={channels} but weight has "
                                 f"{out_channels} output channels")
    if attrs["kernel_size"] is not None:
        expected = pair(attrs["kernel_size"], f"{op_name}: kernel_size")
        if any(dims_differ(a, b) for a, b in zip(expected, kernel)):
            raise TypeInferenceError(f"{op_name}: kernel_size={expected} but weight has "
                                     f"spatial size {tuple(kernel)}")


def _conv2d_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.conv2d: data")
    weight = expect_tensor(arg_types[1], "nn.conv2d: weight")
    d_pos = layout_positions(attrs["data_layout"], "NCHW", "nn.conv2d: data_layout")
    k_pos = layout_positions(attrs["kernel_layout"], "OIHW", "nn.conv2d: kernel_layout")
    out_layout = attrs["out_layout"] or attrs["data_layout"]
    o_pos = layout_positions(out_layout, "NCHW", "nn.conv2d: out_layout")
    if data.ndim != 4 or weight.ndim != 4:
        raise TypeInferenceError(f"nn.conv2d: data and weight must be 4-D, got {data} and "
                                 f"{weight}")
    groups = attrs["groups"]
    in_channels = data.shape[d_pos["C"]]
    out_channels = weight.shape[k_pos["O"]]
    per_group = weight.shape[k_pos["I"]]
    if dims_differ(in_channels, per_group * groups):
        raise TypeInferenceError(
            f"nn.conv2d: data has {in_channels} input channels but weight expects "
            f"{per_group * groups} ({per_group} per group x groups={groups})")
    if isinstance(out_channels, int) and out_channels % groups:
        raise TypeInferenceError(f"nn.conv2d: {out_channels} output channels do not divide "
                                 f"into groups={groups}")
    kernel = (weight.shape[k_pos["H"]], weight.shape[k_pos["W"]])
    _check_kernel_attrs("nn.conv2d", attrs, out_channels, kernel)
    strides = pair(attrs["strides"], "nn.conv2d: strides")
    dilation = pair(attrs["dilation"], "nn.conv2d: dilation")
    top, left, bottom, right = padding4(attrs["padding"], "nn.conv2d: padding")
    out_h = _spatial_out(data.shape[d_pos["H"]], kernel[0], strides[0], dilation[0], top, bottom)
    out_w = _spatial_out(data.shape[d_pos["W"]], kernel[1], strides[1], dilation[1], left, right)
    for size in (out_h, out_w):
        if isinstance(size, int) and size <= 0:
            raise TypeInferenceError(f"nn.conv2d: kernel {tuple(kernel)} (dilation "
                                     f"{dilation}) is larger than the padded input {data}")
    dims = {"N": data.shape[d_pos["N"]], "C": out_channels, "H": out_h, "W": out_w}
    shape = [None] * 4
    for letter, position in o_pos.items():
        shape[position] = dims[letter]
    return TensorType(shape, _out_dtype(attrs, data))


def conv2d_nchw(data, weight, strides, padding, dilation, groups) -> np.ndarray:
    """Convolution of NCHW ``data`` with OIHW ``weight`` by im2col and one batched matmul."""
    batch = data.shape[0]
    out_channels, per_group, kh, kw = weight.shape
    padded = pad_spatial(data, padding)
    out_h = _spatial_out(data.shape[2], kh, strides[0], dilation[0], padding[0], padding[2])
    out_w = _spatial_out(data.shape[3], kw, strides[1], dilation[1], padding[1], padding[3])
    view = windows(padded, (kh, kw), strides, dilation, (out_h, out_w))
    # (N, G, I, oh, ow, kh, kw) -> (N, G, oh*ow, I*kh*kw): the im2col matrix per group.
    view = view.reshape(batch, groups, per_group, out_h, out_w, kh, kw)
    columns = view.transpose(0, 1, 3, 4, 2, 5, 6).reshape(
        batch, groups, out_h * out_w, per_group * kh * kw)
    kernel = weight.reshape(groups, out_channels // groups, per_group * kh * kw)
    out = np.matmul(columns, kernel.transpose(0, 2, 1))         # (N, G, oh*ow, O/G)
    out = out.transpose(0, 1, 3, 2).reshape(batch, out_channels, out_h, out_w)
    return out


def _conv2d_ref(data, weight, **attrs):
    data_nchw = to_canonical(data, attrs["data_layout"], "NCHW")
    weight_oihw = to_canonical(weight, attrs["kernel_layout"], "OIHW")
    out = conv2d_nchw(data_nchw, weight_oihw, pair(attrs["strides"], "strides"),
                      padding4(attrs["padding"]), pair(attrs["dilation"], "dilation"),
                      attrs["groups"])
    dtype = normalize_dtype(attrs["out_dtype"]) if attrs["out_dtype"] else data.dtype
    out_layout = attrs["out_layout"] or attrs["data_layout"]
    return (from_canonical(out, "NCHW", out_layout).astype(dtype, copy=False),)


_CONV2D = register_op("nn.conv2d", ("data", "weight"),
                      attrs=("relay.attrs.Conv2DAttrs", _CONV_FIELDS),
                      type_rel=_conv2d_rel, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                      description="2-D convolution", support_level=2)
_CONV2D.def_impl(_conv2d_ref)


@_CONV2D.def_grad
def _conv2d_grad(call, out_grad):
    data, weight = call.args
    attrs = call.attrs
    data_layout, kernel_layout = attrs["data_layout"], attrs["kernel_layout"]
    out_layout = attrs["out_layout"] or data_layout
    strides = pair(attrs["strides"], "strides")
    dilation = pair(attrs["dilation"], "dilation")
    padding = padding4(attrs["padding"])
    kernel_size = attrs["kernel_size"]
    output_padding = (0, 0)
    if kernel_size is None or strides != (1, 1):
        data_shape = _permuted(checked_type_for_grad(data, "nn.conv2d").shape, data_layout,
                               "NCHW")
        weight_shape = _permuted(checked_type_for_grad(weight, "nn.conv2d").shape,
                                 kernel_layout, "OIHW")
        kernel_size = weight_shape[2:]
        output_padding = tuple(
            (data_shape[2 + i] + padding[i] + padding[i + 2] - dilation[i] * (kernel_size[i] - 1)
             - 1) % strides[i] for i in range(2))
        if not all(isinstance(v, int) for v in output_padding + tuple(kernel_size)):
            raise GradientError("the gradient of a strided nn.conv2d needs static "
                                      "spatial sizes")
    # Other layouts: compute in NCHW/OIHW between layout_transforms.
    data = _to_layout(data, data_layout, "NCHW")
    weight = _to_layout(weight, kernel_layout, "OIHW")
    out_grad = _to_layout(out_grad, out_layout, "NCHW")
    data_grad = conv2d_transpose(out_grad, weight, strides=strides, padding=padding,
                                 dilation=dilation, groups=attrs["groups"],
                                 output_padding=output_padding)
    weight_grad = conv2d_backward_weight(out_grad, data, strides=strides, padding=padding,
                                         dilation=dilation, groups=attrs["groups"],
                                         kernel_size=kernel_size)
    return [_to_layout(data_grad, "NCHW", data_layout),
            _to_layout(weight_grad, "OIHW", kernel_layout)]


def _permuted(shape, layout: str, canonical: str) -> tuple:
    return tuple(shape[layout.index(letter)] for letter in canonical)


def _to_layout(expr, source: str, target: str):
    if source == target:
        return expr
    return make_call("layout_transform", (expr,), {"src_layout": source,
                                                   "dst_layout": target})


@_CONV2D.def_layout
def _conv2d_layout(attrs, desired_layouts):
    """Attrs of the same convolution with the data (and kernel) in the desired layouts.

    Args:
        attrs: the call's Conv2DAttrs.
        desired_layouts: a data layout (``"NHWC"``), or ``[data, kernel]`` where the kernel
            may be ``"default"`` (``OIHW`` for ``NCHW``, ``HWIO`` for ``NHWC``).
    """
    if isinstance(desired_layouts, str):
        desired_layouts = (desired_layouts, "default")
    data_layout, kernel_layout = desired_layouts
    if kernel_layout == "default":
        kernel_layout = {"NCHW": "OIHW", "NHWC": "HWIO"}.get(data_layout, "OIHW")
    return attrs.with_changes(data_layout=data_layout, kernel_layout=kernel_layout)


def _normalize_conv_attrs(strides, padding, dilation, kernel_size) -> dict:
    return {"strides": pair(strides, "strides"), "padding": padding4(padding),
            "dilation": pair(dilation, "dilation"),
            "kernel_size": None if kernel_size is None else pair(kernel_size, "kernel_size")}


def conv2d(data, weight, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
           channels=None, kernel_size=None, data_layout="NCHW", kernel_layout="OIHW",
           out_layout="", out_dtype=""):
    """2-D convolution (``relay.nn.conv2d``).

    Args:
        data: the input, ``(N, C, H, W)`` in ``data_layout``.
        weight: the kernel, ``(O, C/groups, KH, KW)`` in ``kernel_layout``.
        strides: an int or a pair.
        padding: 1, 2 or 4 ints; stored as ``(top, left, bottom, right)``.
        dilation: an int or a pair.
        groups: number of channel groups (``groups == C`` is depthwise).
        channels: number of output channels (checked against the weight if given).
        kernel_size: the kernel's spatial size (checked if given).
        data_layout: ``"NCHW"``, ``"NHWC"`` or another permutation of those letters.
        kernel_layout: ``"OIHW"``, ``"HWIO"`` or another permutation.
        out_layout: the output layout (default: ``data_layout``).
        out_dtype: the output dtype (default: the data dtype).

    Returns:
        A Call of ``nn.conv2d``.
    """
    attrs = _normalize_conv_attrs(strides, padding, dilation, kernel_size)
    attrs.update(groups=int(groups), channels=channels, data_layout=data_layout,
                 kernel_layout=kernel_layout, out_layout=out_layout, out_dtype=out_dtype)
    return make_call("nn.conv2d", (data, weight), attrs)


# -- conv2d_transpose ---------------------------------------------------------------------------

_TRANSPOSE_FIELDS = [("channels", None), ("kernel_size", None), ("strides", (1, 1)),
                     ("output_padding", (0, 0)), ("padding", (0, 0, 0, 0)),
                     ("dilation", (1, 1)), ("groups", 1), ("data_layout", "NCHW"),
                     ("kernel_layout", "IOHW"), ("out_layout", ""), ("out_dtype", "")]


def _conv2d_transpose_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.conv2d_transpose: data")
    weight = expect_tensor(arg_types[1], "nn.conv2d_transpose: weight")
    layout_positions(attrs["data_layout"], "NCHW", "nn.conv2d_transpose: data_layout")
    o_pos = layout_positions(attrs["out_layout"] or attrs["data_layout"], "NCHW",
                             "nn.conv2d_transpose: out_layout")
    if data.ndim != 4 or weight.ndim != 4:
        raise TypeInferenceError(f"nn.conv2d_transpose: data and weight must be 4-D, got "
                                 f"{data} and {weight}")
    data = TensorType(_permuted(data.shape, attrs["data_layout"], "NCHW"), data.dtype)
    k_pos = layout_positions(attrs["kernel_layout"], "OIHW", "nn.conv2d_transpose: "
                                                            "kernel_layout")
    groups = attrs["groups"]
    if dims_differ(data.shape[1], weight.shape[k_pos["I"]]):
        raise TypeInferenceError(f"nn.conv2d_transpose: data has {data.shape[1]} channels but "
                                 f"weight expects {weight.shape[k_pos['I']]}")
    kernel = (weight.shape[k_pos["H"]], weight.shape[k_pos["W"]])
    out_channels = weight.shape[k_pos["O"]] * groups
    _check_kernel_attrs("nn.conv2d_transpose", attrs, out_channels, kernel)
    strides = pair(attrs["strides"], "strides")
    dilation = pair(attrs["dilation"], "dilation")
    extra = pair(attrs["output_padding"], "output_padding")
    pads = padding4(attrs["padding"])
    spatial = [(data.shape[2 + i] - 1) * strides[i] - pads[i] - pads[i + 2]
               + dilation[i] * (kernel[i] - 1) + 1 + extra[i] for i in range(2)]
    dims = {"N": data.shape[0], "C": out_channels, "H": spatial[0], "W": spatial[1]}
    shape = [None] * 4
    for letter, position in o_pos.items():
        shape[position] = dims[letter]
    return TensorType(shape, _out_dtype(attrs, data))


def _conv2d_transpose_ref(data, weight, **attrs):
    strides = pair(attrs["strides"], "strides")
    dilation = pair(attrs["dilation"], "dilation")
    extra = pair(attrs["output_padding"], "output_padding")
    top, left, bottom, right = padding4(attrs["padding"])
    groups = attrs["groups"]
    data = to_canonical(data, attrs["data_layout"], "NCHW")
    # Canonical IOHW: (G*I, O/G, KH, KW) -> the equivalent forward kernel (G*O/G, I, KH, KW),
    # spatially flipped.
    weight = to_canonical(weight, attrs["kernel_layout"], "IOHW")
    in_channels, per_group_out, kh, kw = weight.shape
    forward = weight.reshape(groups, in_channels // groups, per_group_out, kh, kw)
    forward = forward.transpose(0, 2, 1, 3, 4)[..., ::-1, ::-1].reshape(
        groups * per_group_out, in_channels // groups, kh, kw)
    batch, _, height, width = data.shape
    dilated = np.zeros((batch, in_channels, (height - 1) * strides[0] + 1,
                        (width - 1) * strides[1] + 1), dtype=data.dtype)
    dilated[:, :, ::strides[0], ::strides[1]] = data
    reach = (dilation[0] * (kh - 1), dilation[1] * (kw - 1))
    pads = (reach[0] - top, reach[1] - left, reach[0] - bottom + extra[0],
            reach[1] - right + extra[1])
    dilated = pad_spatial(dilated, pads)
    out = conv2d_nchw(dilated, np.ascontiguousarray(forward), (1, 1), (0, 0, 0, 0), dilation,
                      groups)
    dtype = normalize_dtype(attrs["out_dtype"]) if attrs["out_dtype"] else data.dtype
    out = from_canonical(out, "NCHW", attrs["out_layout"] or attrs["data_layout"])
    return (out.astype(dtype, copy=False),)


_CONV2D_T = register_op("nn.conv2d_transpose", ("data", "weight"),
                        attrs=("relay.attrs.Conv2DTransposeAttrs", _TRANSPOSE_FIELDS),
                        type_rel=_conv2d_transpose_rel,
                        pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                        description="transposed 2-D convolution", support_level=2)
_CONV2D_T.def_impl(_conv2d_transpose_ref)


@_CONV2D_T.def_grad
def _conv2d_transpose_grad(call, out_grad):
    # The transposed convolution is the adjoint of conv2d(., weight) (weight read as OIHW):
    # its data adjoint is that conv2d, its weight adjoint conv2d_backward_weight with the
    # roles of data and output swapped.
    data, weight = call.args
    attrs = call.attrs
    data_layout = attrs["data_layout"]
    common = dict(strides=pair(attrs["strides"], "strides"), padding=padding4(attrs["padding"]),
                  dilation=pair(attrs["dilation"], "dilation"), groups=attrs["groups"])
    weight_iohw = _to_layout(weight, attrs["kernel_layout"], "IOHW")
    grad_nchw = _to_layout(out_grad, attrs["out_layout"] or data_layout, "NCHW")
    data_nchw = _to_layout(data, data_layout, "NCHW")
    kernel = _permuted(checked_type_for_grad(weight, "nn.conv2d_transpose").shape,
                       attrs["kernel_layout"], "IOHW")[2:]
    data_grad = conv2d(grad_nchw, weight_iohw, **common)
    weight_grad = conv2d_backward_weight(data_nchw, grad_nchw, kernel_size=kernel, **common)
    return [_to_layout(data_grad, "NCHW", data_layout),
            _to_layout(weight_grad, "IOHW", attrs["kernel_layout"])]


def conv2d_transpose(data, weight, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
                     channels=None, kernel_size=None, data_layout="NCHW",
                     kernel_layout="IOHW", out_layout="", output_padding=(0, 0),
                     out_dtype=""):
    """Transposed 2-D convolution (``relay.nn.conv2d_transpose``); data in any permutation
    of ``NCHW`` (``NCHW``, ``NHWC``).

    ``weight`` is ``(C_in, C_out/groups, KH, KW)`` in the default ``IOHW`` layout, so a
    conv2d's OIHW weight is directly the weight of its transpose.

    Returns:
        A Call of ``nn.conv2d_transpose``.
    """
    attrs = _normalize_conv_attrs(strides, padding, dilation, kernel_size)
    attrs.update(groups=int(groups), channels=channels, data_layout=data_layout,
                 kernel_layout=kernel_layout, out_layout=out_layout, out_dtype=out_dtype,
                 output_padding=pair(output_padding, "output_padding"))
    return make_call("nn.conv2d_transpose", (data, weight), attrs)


# -- conv2d_backward_weight -------------------------------------------------------------------

_BACKWARD_FIELDS = [("strides", (1, 1)), ("padding", (0, 0, 0, 0)), ("dilation", (1, 1)),
                    ("groups", 1), ("channels", None), ("kernel_size", None),
                    ("grad_layout", "NCHW"), ("data_layout", "NCHW"),
                    ("kernel_layout", "OIHW"), ("out_dtype", "")]


def _backward_weight_rel(arg_types, attrs):
    grad = expect_tensor(arg_types[0], "nn.conv2d_backward_weight: grad")
    data = expect_tensor(arg_types[1], "nn.conv2d_backward_weight: data")
    if attrs["kernel_size"] is None:
        raise TypeInferenceError("nn.conv2d_backward_weight: kernel_size is required")
    kernel = pair(attrs["kernel_size"], "kernel_size")
    groups = attrs["groups"]
    return TensorType((grad.shape[1], data.shape[1] // groups, *kernel),
                      _out_dtype(attrs, data))


def _backward_weight_ref(grad, data, **attrs):
    strides = pair(attrs["strides"], "strides")
    dilation = pair(attrs["dilation"], "dilation")
    kh, kw = pair(attrs["kernel_size"], "kernel_size")
    groups = attrs["groups"]
    batch, channels = data.shape[:2]
    out_channels, out_h, out_w = grad.shape[1:]
    view = windows(pad_spatial(data, padding4(attrs["padding"])), (kh, kw), strides, dilation,
                   (out_h, out_w))
    per_group = channels // groups
    # columns: (G, N*oh*ow, I*kh*kw); grads: (G, O/G, N*oh*ow); result (G, O/G, I*kh*kw).
    columns = view.reshape(batch, groups, per_group, out_h, out_w, kh, kw).transpose(
        1, 0, 3, 4, 2, 5, 6).reshape(groups, batch * out_h * out_w, per_group * kh * kw)
    grads = grad.reshape(batch, groups, out_channels // groups, out_h * out_w).transpose(
        1, 2, 0, 3).reshape(groups, out_channels // groups, batch * out_h * out_w)
    out = np.matmul(grads, columns).reshape(out_channels, per_group, kh, kw)
    dtype = normalize_dtype(attrs["out_dtype"]) if attrs["out_dtype"] else data.dtype
    return (out.astype(dtype, copy=False),)


_BACKWARD_WEIGHT = register_op("nn.conv2d_backward_weight", ("grad", "data"),
                               attrs=("relay.attrs.Conv2DAttrs", _BACKWARD_FIELDS),
                               type_rel=_backward_weight_rel,
                               pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                               description="gradient of conv2d w.r.t. its weight")
_BACKWARD_WEIGHT.def_impl(_backward_weight_ref)


def conv2d_backward_weight(grad, data, strides=(1, 1), padding=(0, 0), dilation=(1, 1),
                           groups=1, channels=None, kernel_size=None, grad_layout="NCHW",
                           data_layout="NCHW", kernel_layout="OIHW", out_dtype=""):
    """The gradient of an NCHW/OIHW conv2d with respect to its weight.

    Args:
        grad: the adjoint of the convolution's output.
        data: the convolution's input.
        kernel_size: the kernel's spatial size (required).

    Returns:
        A Call of ``nn.conv2d_backward_weight``.
    """
    attrs = _normalize_conv_attrs(strides, padding, dilation, kernel_size)
    attrs.update(groups=int(groups), channels=channels, grad_layout=grad_layout,
                 data_layout=data_layout, kernel_layout=kernel_layout, out_dtype=out_dtype)
    return make_call("nn.conv2d_backward_weight", (grad, data), attrs)
