"""The layouts the numba CPU kernels prefer, registered with the kernel registry
(:func:`jitkernels.register_layout_preference`); ``interp.build`` asks
:func:`jitkernels.layout_preferences` for them at ``opt_level >= 3``.

``nn.conv2d``: NCHW/OIHW calls with static shapes that :func:`.conv.prefers_channels_last`
accepts run channels-last (NHWC/HWIO), except the tiny layers that
:func:`.direct_conv.keeps_channels_first` keeps channels-first.
"""

from __future__ import annotations

from .. import register_layout_preference
from .._geometry import ntuple
from . import direct_conv
from .conv import prefers_channels_last

__all__ = ["conv2d_channels_last"]


@register_layout_preference("nn.conv2d", ("NHWC", "HWIO"), target="cpu")
def conv2d_channels_last(call) -> bool:
    """Whether the CPU kernel runs this typed NCHW/OIHW ``nn.conv2d`` call faster
    channels-last (static shapes, what :func:`.conv.prefers_channels_last` accepts).

    Args:
        call: a typed call of ``nn.conv2d``.
    """
    attrs = call.attrs
    if (attrs.get("data_layout") or "NCHW") != "NCHW" or \
            (attrs.get("kernel_layout") or "OIHW") != "OIHW" or \
            (attrs.get("out_layout") or "NCHW") != "NCHW":
        return False
    data_type, weight_type = (arg._checked_type for arg in call.args[:2])
    try:
        data_shape = tuple(int(d) for d in data_type.shape)
        weight_shape = tuple(int(d) for d in weight_type.shape)
    except (TypeError, ValueError, AttributeError):
        return False
    if _tiny(data_shape, weight_shape, attrs, call):
        return False
    return (data_type.dtype == weight_type.dtype
            and prefers_channels_last(data_shape, weight_shape, int(attrs.get("groups", 1)),
                                      data_type.dtype))


def _tiny(data_shape, weight_shape, attrs, call) -> bool:
    """A tiny layer the direct kernel runs faster channels-first
    (:func:`.direct_conv.keeps_channels_first`)."""
    try:
        out_shape = tuple(int(d) for d in call._checked_type.shape)
    except (TypeError, ValueError, AttributeError):
        return False
    if len(out_shape) != 4 or len(weight_shape) != 4 or len(data_shape) != 4:
        return False
    return direct_conv.keeps_channels_first(
        data_shape[1], weight_shape[0], weight_shape[2:], ntuple(attrs.get("strides", 1), 2),
        out_shape[0] * out_shape[2] * out_shape[3], int(attrs.get("groups", 1)))
