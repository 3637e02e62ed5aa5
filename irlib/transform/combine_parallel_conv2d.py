"""CombineParallelConv2D: merge sibling convolutions of one input into one wider convolution
(Relay's ``CombineParallelConv2D(min_num_branches=3)``, pass name ``CombineParallelConv2d``).

At least ``min_num_branches`` ``nn.conv2d`` calls on the *same* input, with equal
attributes apart from ``channels``, ``groups=1`` and weights of the same shape apart from
the output channels, become one ``nn.conv2d`` over the weights concatenated along the
output-channel axis (``channels`` the sum), and one
``strided_slice(..., begin=[0, off], end=[-1, c_i], strides=[1, 1], slice_mode="size")`` per
branch (the begin/end lists reach the channel axis of the data layout). Elementwise and
broadcast ops that follow every branch the same way (same op and attributes, each branch
its only user) are merged too, before the slices: their per-branch operands are
concatenated along the channel axis (a shared operand without a channel extent is kept).

Before/after::

    (nn.relu(nn.conv2d(%x, %w1)), nn.relu(nn.conv2d(%x, %w2)), nn.relu(nn.conv2d(%x, %w3)))
    %0 = nn.relu(nn.conv2d(%x, concatenate((%w1, %w2, %w3)), channels=12));
    (strided_slice(%0, begin=[0, 0], end=[-1, 4], ...), strided_slice(%0, [0, 4], ...), ...)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import expr as E
from ..op.registry import OpPattern, get_def
from ._combine import combine_rounds, consumers, sibling_groups
from ._typed import op, op_name, rewrite_typed_module, tensor_type
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


def _follow(calls, func, channel_axis, widths):
    """The elementwise/broadcast ops that follow every branch identically, merged.

    Returns ``(steps, tails)``: per merged op the original node of the first branch, the
    position of the branch value among its arguments and the merged other arguments; and the
    last node of each branch (the one its slice replaces).
    """
    users = consumers(func)
    tails, steps = list(calls), []
    while True:
        nexts = [users.get(t, []) for t in tails]
        if any(len(n) != 1 for n in nexts):
            return steps, tails
        nexts = [n[0] for n in nexts]
        first = nexts[0]
        name = op_name(first)
        if name is None or get_def(name).pattern > OpPattern.BROADCAST or any(
                op_name(n) != name or n.attrs != first.attrs for n in nexts):
            return steps, tails
        positions = {tuple(i for i, a in enumerate(n.args) if a is t)
                     for n, t in zip(nexts, tails)}
        if len(positions) != 1 or len(next(iter(positions))) != 1:
            return steps, tails
        position = next(iter(positions))[0]
        if any(tensor_type(n) is None or tensor_type(n).shape != tensor_type(t).shape
               for n, t in zip(nexts, tails)):
            return steps, tails
        others = []
        for j in range(len(first.args)):
            if j == position:
                others.append(None)
                continue
            merged = _merge_operands([n.args[j] for n in nexts], tensor_type(first),
                                     channel_axis, widths)
            if merged is None:
                return steps, tails
            others.append(merged)
        steps.append((first, position, others))
        tails = nexts


def _merge_operands(values, out_type, channel_axis, widths):
    """One operand standing for each branch's ``values`` in the combined op, or None."""
    types = [tensor_type(v) for v in values]
    if any(t is None for t in types):
        return None
    rank = len(out_type.shape)
    axis = channel_axis - (rank - len(types[0].shape))
    if all(v is values[0] for v in values) and (axis < 0 or types[0].shape[axis] == 1):
        return values[0]
    if axis < 0 or any(len(t.shape) != len(types[0].shape) for t in types):
        return None
    for t, width in zip(types, widths):
        rest = [d for i, d in enumerate(t.shape) if i != axis]
        if t.shape[axis] != width or rest != [d for i, d in enumerate(types[0].shape)
                                              if i != axis]:
            return None
    return op("concatenate", E.Tuple(tuple(values)), axis=axis)


def _combine(calls, func):
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
    steps, tails = _follow(calls, func, channel_axis, widths)
    for node, position, others in steps:
        args = tuple(combined if j == position else other for j, other in enumerate(others))
        combined = E.Call(node.op, args, node.attrs, span=node.span)
    replacements, offset = {}, 0
    for tail, width in zip(tails, widths):
        replacements[tail] = op("strided_slice", combined,
                                begin=[0] * channel_axis + [offset],
                                end=[-1] * channel_axis + [width],
                                strides=[1] * (channel_axis + 1), slice_mode="size")
        offset += width
    return replacements


def combine_parallel_conv2d(func, min_num_branches=3, mod=None):
    """``func`` (type-checked) with sibling convolutions combined.

    Args:
        func: the function.
        min_num_branches: the least number of siblings worth combining.
        mod: the module ``func``'s globals live in (for type inference).
    """
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
