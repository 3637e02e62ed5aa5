"""``nn.conv3d_transpose``: transposed 3-D convolution (``relay.nn.conv3d_transpose``).

Before/after in the text format::

    nn.conv3d_transpose(%x, %w, strides=[2, 2, 2])   /* x: (1, 4, 3, 3, 3), w: (4, 2, 3, 3, 3) */
    -> Tensor[(1, 2, 7, 7, 7), float32]

The weight is ``(C_in, C_out/groups, KD, KH, KW)`` in the default ``IODHW`` layout (a conv3d's
OIDHW weight is directly the weight of its transpose). Each output extent is
``(in - 1) * stride - pad_before - pad_after + dilation * (kernel - 1) + 1 + output_padding``.
The reference is :func:`irlib.op.nn_convnd.conv_transpose_nd`.
"""

from __future__ import annotations

from ..errors import GradientError

from ..ir.expr import const
from ._composite import composite_grad
from .nn_conv import conv2d_transpose
from .nn_convnd import conv_attrs, conv_transpose_ref, conv_transpose_rel, ntuple, padding_n
from .registry import OpPattern, make_call, register_op
from .transform import checked_type_for_grad

__all__ = ["conv3d_transpose"]

_NAME = "nn.conv3d_transpose"
_FIELDS = [("channels", None), ("kernel_size", None), ("strides", (1, 1, 1)),
           ("output_padding", (0, 0, 0)), ("padding", (0,) * 6), ("dilation", (1, 1, 1)),
           ("groups", 1), ("data_layout", "NCDHW"), ("kernel_layout", "IODHW"),
           ("out_layout", ""), ("out_dtype", "")]


_CONV3D_T = register_op(_NAME, ("data", "weight"),
                        attrs=("relay.attrs.Conv3DTransposeAttrs", _FIELDS),
                        type_rel=conv_transpose_rel(_NAME, 3),
                        pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                        description="transposed 3-D convolution", support_level=2)
_CONV3D_T.def_impl(conv_transpose_ref(3))


@_CONV3D_T.def_grad
def _conv3d_transpose_grad(call, out_grad):
    return composite_grad(_as_conv2d_transposes)(call, out_grad)


def _permute(expr, source: str, target: str):
    if source == target:
        return expr
    return make_call("transpose", (expr,), {"axes": tuple(source.index(c) for c in target)})


def _slice(expr, axis, begin, end, stride=1):
    return make_call("strided_slice", (expr,), {"begin": [begin], "end": [end],
                                                "strides": [stride], "axes": [axis],
                                                "slice_mode": "end"})


def _pad_axis(expr, rank, axis, before, after):
    widths = [(0, 0)] * rank
    widths[axis] = (before, after)
    return make_call("nn.pad", (expr, make_call("cast_like", (const(0.0), expr))),
                     {"pad_width": tuple(widths), "pad_mode": "constant"})


def _as_conv2d_transposes(data, weight, **attrs):
    """conv3d_transpose as a sum over the kernel's depth taps of conv2d_transposes of the
    depth planes (folded into the batch), each spread to its output depths (for the
    gradient)."""
    data_type = checked_type_for_grad(data, _NAME)
    weight_type = checked_type_for_grad(weight, _NAME)
    batch, depth = (data_type.shape[attrs["data_layout"].index(c)] for c in "ND")
    kernel_depth = weight_type.shape[attrs["kernel_layout"].index("D")]
    if not all(isinstance(v, int) for v in (batch, depth, kernel_depth)):
        raise GradientError(f"the gradient of {_NAME} needs static batch and depth")
    strides = ntuple(attrs["strides"], 3, "strides")
    dilation = ntuple(attrs["dilation"], 3, "dilation")
    extra = ntuple(attrs["output_padding"], 3, "output_padding")
    pads = padding_n(attrs["padding"], 3)
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


def conv3d_transpose(data, weight, strides=(1, 1, 1), padding=(0, 0, 0), dilation=(1, 1, 1),
                     groups=1, channels=None, kernel_size=None, data_layout="NCDHW",
                     kernel_layout="IODHW", out_layout="", output_padding=(0, 0, 0),
                     out_dtype=""):
    """Transposed 3-D convolution (``relay.nn.conv3d_transpose``).

    Args:
        data: ``(N, C_in, D, H, W)`` in ``data_layout``.
        weight: ``(C_in, C_out/groups, KD, KH, KW)`` in ``kernel_layout``.
        strides, dilation: 1 or 3 ints.
        padding: 1, 3 or 6 ints (all "before" amounts, then all "after").
        output_padding: extra extent added at the end of each output axis.
        groups: number of channel groups.
        channels, kernel_size: optional checks on the weight's shape.
        out_layout: the output layout (default: ``data_layout``).
        out_dtype: the output dtype (default: the data's).

    Returns:
        A Call of ``nn.conv3d_transpose``.

    Raises:
        TypeInferenceError: when a tuple attribute has the wrong length.
    """
    attrs = conv_attrs(3, strides, padding, dilation, groups, channels, kernel_size,
                       data_layout, kernel_layout, out_layout, out_dtype, output_padding)
    return make_call(_NAME, (data, weight), attrs)
