"""CombineParallelConv2D: merge sibling convolutions of one input into one wider convolution
(Relay's ``CombineParallelConv2D(min_num_branches=3)``, pass name ``CombineParallelConv2d``).

At least ``min_num_branches`` ``nn.conv2d`` calls on the *same* input, with equal
attributes apart from ``channels``, ``groups=1`` and weights of the same shape apart from
the output channels, become one ``nn.conv2d`` over the weights concatenated along the
output-channel axis (``channels`` the sum), and one
``strided_slice(..., begin=[0, off], end=[-1, c_i], strides=[1, 1], slice_mode="size")`` per
branch (the begin/end lists reach the channel axis of the data layout).

Before/after::

    (nn.conv2d(%x, %w1), nn.conv2d(%x, %w2), nn.conv2d(%x, %w3))
    %0 = nn.conv2d(%x, concatenate((%w1, %w2, %w3)), channels=12);
    (strided_slice(%0, begin=[0, 0], end=[-1, 4], ...), strided_slice(%0, [0, 4], ...), ...)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import expr as E
from ._combine import combine_rounds, sibling_groups
from ._typed import op, rewrite_typed_module, tensor_type
from .pass_infra import ModulePass


def _key(call):
    attrs = call.attrs
    weight = tensor_type(call.args[1])
    if attrs["groups"] != 1 or weight is None or not attrs["kernel_layout"].isupper():
        return None
    layout = attrs["kernel_layout"]
    out_axis = layout.index("O")
    rest = tuple(d for i, d in enumerate(weight.shape) if i != out_axis)
    fields = tuple((k, _freeze(v)) for k, v in attrs.items() if k != "channels")
    return fields + (("weight", rest, str(weight.dtype)),)


def _freeze(value):
    return tuple(_freeze(v) for v in value) if isinstance(value, (list, tuple)) else value


def _combine(calls):
    first = calls[0]
    attrs = first.attrs
    out_axis = attrs["kernel_layout"].index("O")
    widths = [tensor_type(c.args[1]).shape[out_axis] for c in calls]
    weights = E.Tuple(tuple(c.args[1] for c in calls))
    combined_attrs = dict(attrs)
    combined_attrs["channels"] = sum(widths)
    combined = op("nn.conv2d", first.args[0], op("concatenate", weights, axis=out_axis),
                  **combined_attrs)
    channel_axis = (attrs["out_layout"] or attrs["data_layout"]).index("C")
    replacements, offset = {}, 0
    for call, width in zip(calls, widths):
        replacements[call] = op("strided_slice", combined,
                                begin=[0] * channel_axis + [offset],
                                end=[-1] * channel_axis + [width],
                                strides=[1] * (channel_axis + 1), slice_mode="size")
        offset += width
    return replacements


def combine_parallel_conv2d(func, min_num_branches=3, mod=None):
    """``func`` (type-checked) with sibling convolutions combined."""
    return combine_rounds(func, lambda f: sibling_groups(f, "nn.conv2d", _key,
                                                         min_num_branches), _combine, mod)


@dataclass(frozen=True)
class CombineParallelConv2D(ModulePass):
    """Combine parallel conv2d calls (see the module docstring).

    Args:
        min_num_branches: the least number of siblings worth combining.
    """

    min_num_branches: int = 3
    name: ClassVar[str] = "CombineParallelConv2d"
    opt_level: ClassVar[int] = 4
    required: ClassVar[tuple] = ("InferType",)

    def transform_module(self, mod, ctx=None):
        """The combined, type-checked copy of ``mod``."""
        return rewrite_typed_module(
            mod, lambda f: combine_parallel_conv2d(f, self.min_num_branches, mod))
