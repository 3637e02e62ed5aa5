"""Gradients of the convolutions, and ``nn.conv2d_backward_weight``, the op they are made of.

Every rule is built from 2-D ops (Relay's FPrimalGradient for conv2d):

* ``nn.conv2d``: the data adjoint is ``nn.conv2d_transpose`` of the output gradient, the
  weight adjoint ``nn.conv2d_backward_weight`` (other layouts go through layout_transforms);
* ``nn.conv2d_transpose``: the adjoint of conv2d, so the roles swap (a conv2d and a
  backward-weight with data and output exchanged);
* ``nn.conv1d`` and ``nn.conv1d_transpose``: lifted to their 2-D ops over a unit height;
* ``nn.conv3d`` and ``nn.conv3d_transpose``: sums over the kernel's depth taps of 2-D ops on
  the depth planes (folded into the batch), differentiated as composites.

The op definitions themselves (one parameterised relation and reference for all six) are in
:mod:`irlib.op.nn_conv`.
"""

from __future__ import annotations

import numpy as np

from ..errors import GradientError, TypeInferenceError
from ..ir.expr import const
from ..ir.types import TensorType, normalize_dtype
from ._composite import composite_grad
from ._layouts import pad_spatial, padding4, pair, windows
from ._windows import conv_out_size, ntuple, padding_n, window_geometry
from .nn_conv import conv2d, conv2d_transpose
from .registry import OpPattern, get_def, make_call, register_op
from .transform import checked_type_for_grad
from .type_relations import expect_tensor

__all__ = ["conv2d_backward_weight"]


def _out_dtype(attrs, data: TensorType) -> str:
    return normalize_dtype(attrs["out_dtype"]) if attrs["out_dtype"] else data.dtype


def _permute(expr, source: str, target: str):
    if source == target:
        return expr
    return make_call("transpose", (expr,), {"axes": tuple(source.index(c) for c in target)})


def _slice(expr, axis, begin, end, stride=1):
    return make_call("strided_slice", (expr,), {"begin": [begin], "end": [end],
                                                "strides": [stride], "axes": [axis],
                                                "slice_mode": "end"})



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
        strides: the convolution's strides.
        padding: the convolution's padding.
        dilation: the convolution's dilation.
        groups: the convolution's channel groups.
        channels: the convolution's output channels.
        grad_layout: the layout of ``grad`` (``"NCHW"``).
        data_layout: the layout of ``data`` (``"NCHW"``).
        kernel_layout: the layout of the weight gradient (``"OIHW"``).
        out_dtype: the result dtype (default: ``data``'s).

    Returns:
        A Call of ``nn.conv2d_backward_weight``.
    """
    attrs = {"strides": pair(strides, "strides"), "padding": padding4(padding),
             "dilation": pair(dilation, "dilation"),
             "kernel_size": None if kernel_size is None else pair(kernel_size, "kernel_size")}
    attrs.update(groups=int(groups), channels=channels, grad_layout=grad_layout,
                 data_layout=data_layout, kernel_layout=kernel_layout, out_dtype=out_dtype)
    return make_call("nn.conv2d_backward_weight", (grad, data), attrs)


# -- conv2d, conv2d_transpose ------------------------------------------------------------------


@get_def("nn.conv2d").def_grad
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


@get_def("nn.conv2d_transpose").def_grad
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


# -- conv1d, conv1d_transpose: lifted to 2-D ------------------------------------------------------


@get_def("nn.conv1d").def_grad
def _conv1d_grad(call, out_grad):
    # Lift to a conv2d over a unit height and reuse conv2d's adjoint ops.
    data, weight = call.args
    attrs = call.attrs
    out_layout = attrs["out_layout"] or attrs["data_layout"]
    (stride,), (dilation,), (before, after) = window_geometry(attrs, 1)
    data_type = checked_type_for_grad(data, "nn.conv1d")
    weight_type = checked_type_for_grad(weight, "nn.conv1d")
    width = data_type.shape[attrs["data_layout"].index("W")]
    kernel = weight_type.shape[attrs["kernel_layout"].index("W")]
    if not (isinstance(width, int) and isinstance(kernel, int)):
        raise GradientError("the gradient of nn.conv1d needs static spatial sizes")
    extra = (width + before + after - dilation * (kernel - 1) - 1) % stride

    def lift(expr, source, canonical):
        return make_call("expand_dims", (_permute(expr, source, canonical),),
                         {"axis": 2, "num_newaxis": 1})

    x2 = lift(data, attrs["data_layout"], "NCW")
    w2 = lift(weight, attrs["kernel_layout"], "OIW")
    g2 = lift(out_grad, out_layout, "NCW")
    common = dict(strides=(1, stride), padding=(0, before, 0, after), dilation=(1, dilation),
                  groups=attrs["groups"])
    data_grad = conv2d_transpose(g2, w2, output_padding=(0, extra), **common)
    weight_grad = conv2d_backward_weight(g2, x2, kernel_size=(1, kernel), **common)

    def lower(expr, canonical, target):
        squeezed = make_call("squeeze", (expr,), {"axis": [2]})
        return make_call("cast_like", (_permute(squeezed, canonical, target), data))

    return [lower(data_grad, "NCW", attrs["data_layout"]),
            lower(weight_grad, "OIW", attrs["kernel_layout"])]


@get_def("nn.conv1d_transpose").def_grad
def _conv1d_transpose_grad(call, out_grad):
    # Lift to conv2d_transpose over a unit height (whose gradient rule does the work).
    attrs = call.attrs

    def forward(data, weight, **_):
        def lift(expr, source, canonical):
            return make_call("expand_dims", (_permute(expr, source, canonical),),
                             {"axis": 2, "num_newaxis": 1})
        before, after = padding_n(attrs["padding"], 1)
        lifted = conv2d_transpose(
            lift(data, attrs["data_layout"], "NCW"), lift(weight, attrs["kernel_layout"], "IOW"),
            strides=(1,) + ntuple(attrs["strides"], 1, "strides"),
            padding=(0, before, 0, after), dilation=(1,) + ntuple(attrs["dilation"], 1,
                                                                  "dilation"),
            groups=attrs["groups"], kernel_layout="IOHW",
            output_padding=(0,) + ntuple(attrs["output_padding"], 1, "output_padding"))
        out = make_call("squeeze", (lifted,), {"axis": [2]})
        return _permute(out, "NCW", attrs["out_layout"] or attrs["data_layout"])
    return composite_grad(forward)(call, out_grad)


# -- conv3d, conv3d_transpose: sums of 2-D ops over the depth taps ---------------------------------


@get_def("nn.conv3d").def_grad
def _conv3d_grad(call, out_grad):
    return composite_grad(_conv3d_as_conv2d)(call, out_grad)


def _conv3d_as_conv2d(data, weight, **attrs):
    """conv3d as a sum over the kernel's depth taps of conv2ds over depth-strided slices
    (the depth positions folded into the batch), for the gradient."""
    data_type, weight_type = (checked_type_for_grad(data, "nn.conv3d"),
                              checked_type_for_grad(weight, "nn.conv3d"))
    x = _permute(data, attrs["data_layout"], "NCDHW")
    w = _permute(weight, attrs["kernel_layout"], "OIDHW")
    batch, _, depth = (data_type.shape[attrs["data_layout"].index(c)] for c in "NCD")
    out_channels, _, kernel_depth = (weight_type.shape[attrs["kernel_layout"].index(c)]
                                     for c in "OID")
    if not all(isinstance(v, int) for v in (batch, depth, kernel_depth)):
        raise GradientError("the gradient of nn.conv3d needs static batch and depth")
    strides, dilation, pads = window_geometry(attrs, 3)
    out_depth = conv_out_size(depth, kernel_depth, strides[0], dilation[0], pads[0], pads[3])
    if pads[0] or pads[3]:
        x = make_call("nn.pad", (x, make_call("cast_like", (const(0.0), x))),
                      {"pad_width": ((0, 0), (0, 0), (pads[0], pads[3]), (0, 0), (0, 0)),
                       "pad_mode": "constant"})
    total = None
    for tap in range(kernel_depth):
        start = tap * dilation[0]
        planes = _slice(x, 2, start, start + (out_depth - 1) * strides[0] + 1, strides[0])
        planes = make_call("reshape", (make_call("transpose", (planes,),
                                                 {"axes": (0, 2, 1, 3, 4)}),),
                           {"newshape": (-3, -2), "allowzero": False})  # (N*OD, C, H, W)
        kernel = make_call("squeeze", (_slice(w, 2, tap, tap + 1, 1),), {"axis": [2]})
        out = conv2d(planes, kernel, strides=strides[1:], dilation=dilation[1:],
                     padding=(pads[1], pads[2], pads[4], pads[5]), groups=attrs["groups"])
        total = out if total is None else make_call("add", (total, out))
    total = make_call("reshape", (total,), {"newshape": (-4, batch, out_depth, -2),
                                            "allowzero": False})
    total = make_call("transpose", (total,), {"axes": (0, 2, 1, 3, 4)})
    return _permute(total, "NCDHW", attrs["out_layout"] or attrs["data_layout"])


@get_def("nn.conv3d_transpose").def_grad
def _conv3d_transpose_grad(call, out_grad):
    return composite_grad(_as_conv2d_transposes)(call, out_grad)


def _pad_axis(expr, rank, axis, before, after):
    widths = [(0, 0)] * rank
    widths[axis] = (before, after)
    return make_call("nn.pad", (expr, make_call("cast_like", (const(0.0), expr))),
                     {"pad_width": tuple(widths), "pad_mode": "constant"})


def _as_conv2d_transposes(data, weight, **attrs):
    """conv3d_transpose as a sum over the kernel's depth taps of conv2d_transposes of the
    depth planes (folded into the batch), each spread to its output depths (for the
    gradient)."""
    data_type = checked_type_for_grad(data, "nn.conv3d_transpose")
    weight_type = checked_type_for_grad(weight, "nn.conv3d_transpose")
    batch, depth = (data_type.shape[attrs["data_layout"].index(c)] for c in "ND")
    kernel_depth = weight_type.shape[attrs["kernel_layout"].index("D")]
    if not all(isinstance(v, int) for v in (batch, depth, kernel_depth)):
        raise GradientError("the gradient of nn.conv3d_transpose needs static batch and depth")
    strides, dilation, pads = window_geometry(attrs, 3)
    extra = ntuple(attrs["output_padding"], 3, "output_padding")
    x = _permute(data, attrs["data_layout"], "NCDHW")
    w = _permute(weight, attrs["kernel_layout"], "IODHW")
    planes = make_call("reshape", (make_call("transpose", (x,), {"axes": (0, 2, 1, 3, 4)}),),
                       {"newshape": (-3, -2), "allowzero": False})  # (N*D, C, H, W)
    spread = (depth - 1) * strides[0] + 1
    full = spread + dilation[0] * (kernel_depth - 1) + extra[0]
    total = None
    for tap in range(kernel_depth):
        kernel = make_call("squeeze", (_slice(w, 2, tap, tap + 1),), {"axis": [2]})
        out = conv2d_transpose(planes, kernel, strides=strides[1:], dilation=dilation[1:],
                               padding=(pads[1], pads[2], pads[4], pads[5]),
                               groups=attrs["groups"], output_padding=extra[1:],
                               kernel_layout="IOHW")
        out = make_call("reshape", (out,), {"newshape": (-4, batch, depth, -2),
                                            "allowzero": False})
        out = make_call("transpose", (out,), {"axes": (0, 2, 1, 3, 4)})  # (N, O, D, H', W')
        if strides[0] > 1:  # zeros between the depth planes
            out = make_call("expand_dims", (out,), {"axis": 3, "num_newaxis": 1})
            out = _pad_axis(out, 6, 3, 0, strides[0] - 1)
            out = make_call("reshape", (out,), {"newshape": (0, 0, -3, -2),
                                                "allowzero": False})
            out = _slice(out, 2, 0, spread)
        start = tap * dilation[0]
        out = _pad_axis(out, 5, 2, start, full - spread - start)
        total = out if total is None else make_call("add", (total, out))
    total = _slice(total, 2, pads[0], full - pads[3])
    return _permute(total, "NCDHW", attrs["out_layout"] or attrs["data_layout"])
