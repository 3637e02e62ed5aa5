"""Conv epilogues handed to the convolution kernel (applied while its output is in cache).

:func:`match_epilogue` recognises a fused group that is a channels-last convolution anchor
followed by a straight chain of

* ``add``/``multiply`` with a per-channel operand (shape ``(..., 1, O)`` or ``(O,)``, a group
  input or a constant), ``nn.bias_add`` on the channel axis: a bias, a folded batch norm;
* ``add`` with a tensor of the output's shape (a residual connection);
* ``nn.relu``;

and returns a :class:`FusedEpilogue`: at run time it gathers the operands into a
:class:`jitkernels.cpu.epilogue.Epilogue` and calls the anchor kernel's
``into_fused(out, *operands, epilogue=..., **attrs)``, which writes the group's output
directly: no anchor buffer, no second pass over the output. When the kernel declines (a
layout or dtype it has no fused path for) the caller runs the group the generic way.
"""

from __future__ import annotations

import numpy as np

from irlib.ir import expr as E

from ..cpu.epilogue import ADD, MUL, RELU, RESIDUAL, Epilogue

__all__ = ["match_epilogue", "FusedEpilogue", "ANCHORS"]

ANCHORS = ("nn.conv2d", "nn.contrib_conv2d_winograd_without_weight_transform",
           "nn.conv2d_transpose")
"""Anchor ops whose kernels have an ``into_fused`` form."""

CHANNELS_FIRST_ANCHORS = ("nn.conv2d_transpose",)
"""Anchors whose fused form takes an NCHW output (per-channel operands along axis 1); the
others take NHWC outputs (channels last)."""


def channel_axis(anchor: E.Call) -> int:
    """The output axis an epilogue's per-channel operands run along: 1 for the NCHW
    anchors of :data:`CHANNELS_FIRST_ANCHORS`, else 3 (NHWC)."""
    return 1 if anchor.op.name in CHANNELS_FIRST_ANCHORS else 3


def _static_shape(node):
    try:
        return tuple(int(d) for d in node._checked_type.shape)
    except (TypeError, ValueError, AttributeError):
        return None


def _per_channel(shape, out_shape, axis: int = 3) -> bool:
    """Whether an operand of ``shape`` broadcasts along the channel ``axis`` of the 4-D
    ``out_shape`` only (numpy broadcasting: ``shape`` aligned to the right)."""
    if len(shape) > len(out_shape) or not shape:
        return False
    full = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    return all(d == 1 for i, d in enumerate(full) if i != axis) and \
        full[axis] in (1, out_shape[axis])


def match_epilogue(group, anchor: E.Call):
    """The group's epilogue as a list of ``(kind, operand)`` steps, or None.

    Args:
        group: the code generator's ``_Group`` (nodes, input slots, outputs).
        anchor: the anchor call (an op of :data:`ANCHORS` computing channels-last data).

    Returns:
        ``[(kind, operand)]`` with ``operand`` an input slot (int), a constant array or
        None (RELU), in application order; None when the group is not such a chain.
    """
    if anchor.op.name not in ANCHORS or len(group.outputs) != 1:
        return None
    attrs = anchor.attrs
    axis = channel_axis(anchor)
    if (attrs["out_layout"] or attrs["data_layout"]) != ("NCHW" if axis == 1 else "NHWC"):
        return None
    out_shape = _static_shape(anchor)
    if out_shape is None or len(out_shape) != 4:
        return None
    dtype = anchor._checked_type.dtype
    consumers: dict = {}
    calls = [n for n in group.nodes if isinstance(n, E.Call)]
    for call in calls:
        for arg in call.args:
            consumers.setdefault(arg, []).append(call)
    steps, current, chain = [], anchor, {anchor}
    output = group.outputs[0]
    while current is not output:
        users = consumers.get(current, [])
        if len(users) != 1:
            return None
        call = users[0]
        step = _step(call, current, out_shape, dtype, group, axis)
        if step is None:
            return None
        steps.append(step)
        chain.add(call)
        current = call
    if any(call not in chain for call in calls):
        return None
    if sum(1 for kind, _ in steps if kind == RESIDUAL) > 1:
        return None
    return steps


def _step(call, current, out_shape, dtype, group, axis: int = 3):
    """One chain link as ``(kind, operand)``, or None (``axis``: the channel axis)."""
    if not isinstance(call.op, E.Op) or _static_shape(call) != out_shape \
            or call._checked_type.dtype != dtype:
        return None
    name, args = call.op.name, call.args
    if name == "nn.relu":
        return (RELU, None)
    if name == "nn.bias_add":
        if args[0] is not current or call.attrs["axis"] % 4 != axis:
            return None
        other = args[1]
    elif name in ("add", "multiply"):
        if len(args) != 2 or (args[0] is current) == (args[1] is current):
            return None
        other = args[1] if args[0] is current else args[0]
    else:
        return None
    # a bias_add's vector runs along its axis, not the last one
    trail = (1,) * (3 - axis) if name == "nn.bias_add" else ()
    if isinstance(other, E.Constant):
        value = other.data.numpy()
        if value.dtype != np.dtype(dtype) or not _per_channel((value.shape or (1,)) + trail,
                                                              out_shape, axis):
            return None
        operand = np.ascontiguousarray(np.broadcast_to(value.reshape(-1),
                                                       out_shape[axis:axis + 1]))
    elif other in group.slot_of and getattr(other._checked_type, "dtype", None) == dtype:
        operand = group.slot_of[other]
    else:
        return None
    shape = _static_shape(other)
    if shape is None:
        return None
    if shape == out_shape and name == "add" and not isinstance(other, E.Constant):
        return (RESIDUAL, operand)
    if not _per_channel((shape or (1,)) + trail, out_shape, axis):
        return None
    return (ADD if name in ("add", "nn.bias_add") else MUL, operand)


class FusedEpilogue:
    """Runs a group as ``anchor.into_fused(out, ..., epilogue)`` (see the module docstring).

    Args:
        into_fused: the anchor kernel's fused destination-passing form.
        operands: the anchor's operands (input slots or constant arrays).
        attrs: the anchor's attributes.
        steps: from :func:`match_epilogue`.
        channels: the output's channel count; dtype: its numpy dtype.
    """

    def __init__(self, into_fused, operands, attrs, steps, channels: int, dtype):
        self.into_fused, self.operands, self.attrs = into_fused, operands, attrs
        self.kinds = np.array([kind for kind, _ in steps], np.int64)
        self.steps = steps
        self.channels, self.dtype = channels, np.dtype(dtype)
        self.placeholder = np.zeros((1, 1, 1, 1), self.dtype)
        # constant steps only (a conv's bias, a folded batch norm): one Epilogue for every
        # call (building it cost ~3 us of a graph's per-node Python)
        self.constant = None
        if not any(isinstance(operand, int) for _, operand in steps):
            self.constant = Epilogue(self.kinds, self._vectors(()), self.placeholder)

    def _vectors(self, arrays) -> np.ndarray:
        vectors = np.zeros((len(self.steps), self.channels), self.dtype)
        for s, (kind, operand) in enumerate(self.steps):
            if operand is not None and kind != RESIDUAL:
                value = arrays[operand] if isinstance(operand, int) else operand
                vectors[s] = value.reshape(-1)
        return vectors

    def __call__(self, arrays, out) -> bool:
        """Run on the graph's ``arrays`` into ``out``; False when the kernel declined."""
        epilogue = self.constant
        if epilogue is None:
            residual = self.placeholder
            for kind, operand in self.steps:
                if kind == RESIDUAL:
                    value = arrays[operand] if isinstance(operand, int) else operand
                    residual = np.ascontiguousarray(value)
            epilogue = Epilogue(self.kinds, self._vectors(arrays), residual)
        values = [arrays[o] if isinstance(o, int) else o for o in self.operands]
        return self.into_fused(out, *values, epilogue=epilogue, **self.attrs)
