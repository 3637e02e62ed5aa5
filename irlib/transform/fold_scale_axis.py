"""FoldScaleAxis: fold per-channel constant scales into convolution and dense weights
(Relay's ``ForwardFoldScaleAxis``, ``BackwardFoldScaleAxis`` and ``FoldScaleAxis``).

*Backward*: ``multiply(A, s)`` where ``s`` is a constant that varies only along the channel
axis of ``A`` and ``A`` is ``nn.conv2d``/``nn.conv3d``/``nn.dense``, possibly under
``nn.relu`` (only when every scale is positive) and ``add``/``subtract`` of a bias (the
bias is multiplied by ``s``, or, when it is itself such a chain as in a residual add of two
convolutions, absorbs the scale the same way), is rewritten so that the weight is scaled along its *output*
channel axis and the multiply disappears. Every node on the way must have no other use.

*Forward*: ``conv(relu*(multiply(x, s)), w)`` (the relu only for a positive ``s``; a
``groups=1`` ``nn.conv2d``/``nn.conv3d`` or an ``nn.dense``) with ``s`` constant per input
channel becomes ``conv(relu*(x), w * s)``, the weight scaled along its *input* channel axis.
A bias added after the scale moves in front of it: ``relu(x * s + b)`` becomes
``relu(x + b / s)`` (for a nowhere-zero ``s``), the batch-norm-before-conv shape of
pre-activation ResNets.

``FoldScaleAxis()`` is ``Sequential([BackwardFoldScaleAxis(), ForwardFoldScaleAxis(),
FoldConstant()])`` at level 0 whose first two passes are level 3: as in Relay, under the
default ``PassContext`` (opt_level 2) only its FoldConstant runs.

Before/after (backward; ``%s`` a constant of shape ``(C, 1, 1)``)::

    multiply(nn.relu(add(nn.conv2d(%x, %w), %b)), %s)
    nn.relu(add(nn.conv2d(%x, multiply(%w, %s')), multiply(%b, %s)))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..ir import expr as E
from ..ir.functor import use_counts
from ..ir.functor import ExprMutator
from ._typed import op, op_name, rewrite_typed_module, tensor_type
from .fold_constant import FoldConstant
from .pass_infra import ModulePass, Sequential

_CONVS = {"nn.conv2d": 2, "nn.conv3d": 3}
_ANCHORS = frozenset(_CONVS) | {"nn.dense"}
_CHAIN = _ANCHORS | {"nn.relu", "add", "subtract"}
_MAX_NESTING = 8


def _channel_scale(scale, ty, axis):
    """The scale as a per-channel vector of length ``ty.shape[axis]``, or None."""
    if not isinstance(scale, E.Constant) or ty is None:
        return None
    data = scale.data.numpy()
    ndim = len(ty.shape)
    if data.ndim > ndim or not isinstance(ty.shape[axis], int):
        return None
    shape = (1,) * (ndim - data.ndim) + data.shape
    if any(d != 1 for i, d in enumerate(shape) if i != axis):
        return None
    vector = data.reshape(-1)
    return np.broadcast_to(vector, (ty.shape[axis],)) if vector.size in (1, ty.shape[axis]) \
        else None


def _channel_axis(anchor):
    """The channel axis of the anchor's output, or None for an unsupported layout."""
    name = op_name(anchor)
    if name == "nn.dense":
        return len(tensor_type(anchor).shape) - 1
    layout = anchor.attrs["out_layout"] or anchor.attrs["data_layout"]
    if not layout.isalpha() or not layout.isupper() or "C" not in layout:
        return None    # blocked layouts (NCHW16c) are left alone
    return layout.index("C")


def _weight_scale(anchor, vector, kernel_axis_letter):
    """``vector`` shaped to broadcast along the weight's O (or I) axis."""
    weight_type = tensor_type(anchor.args[1])
    if op_name(anchor) == "nn.dense":
        axis = 0 if kernel_axis_letter == "O" else 1
    else:
        layout = anchor.attrs["kernel_layout"]
        if kernel_axis_letter not in layout or not layout.isupper():
            return None
        axis = layout.index(kernel_axis_letter)
    shape = [1] * len(weight_type.shape)
    shape[axis] = -1
    return E.Constant(np.asarray(vector, dtype=weight_type.dtype).reshape(shape))


class _Backward(ExprMutator):
    def __init__(self, uses):
        super().__init__()
        self.uses = uses

    def enter_function(self, node):
        return not node.get_attr("Primitive")

    def visit_call(self, node, original):
        if op_name(original) != "multiply":
            return node
        for side in (0, 1):
            chain, scale = original.args[side], original.args[1 - side]
            if op_name(chain) in _CHAIN and isinstance(scale, E.Constant):
                folded = self._fold(chain, scale, tensor_type(original))
                if folded is not None:
                    return folded
        return node

    def _fold(self, top, scale, out_type, depth=0):
        # Walk down the single-use chain to the anchor, remembering the steps.
        steps, node = [], top
        while op_name(node) not in _ANCHORS:
            if self.uses.get(node, 0) != 1 or op_name(node) not in _CHAIN:
                return None
            steps.append(node)
            if op_name(node) == "nn.relu":
                node = node.args[0]
            else:
                lhs, rhs = node.args
                node = lhs if op_name(lhs) in _CHAIN else rhs
                if op_name(node) not in _CHAIN:
                    return None
        anchor = node
        if self.uses.get(anchor, 0) != 1 or tensor_type(anchor) is None:
            return None
        if out_type is None or tuple(out_type.shape) != tuple(tensor_type(top).shape):
            return None     # the multiply broadcasts beyond its chain operand
        axis = _channel_axis(anchor)
        if axis is None:
            return None
        vector = _channel_scale(scale, tensor_type(anchor), axis)
        if vector is None or any(op_name(s) == "nn.relu" for s in steps) and \
                not np.all(vector > 0):
            return None
        weight_scale = _weight_scale(anchor, vector, "O")
        if weight_scale is None:
            return None
        memo = self.memo
        new_weight = op("multiply", memo[anchor.args[1]], weight_scale)
        result = anchor.replace(args=(memo[anchor.args[0]], new_weight))
        for step in reversed(steps):
            if op_name(step) == "nn.relu":
                result = step.replace(args=(result,))
                continue
            lhs, rhs = step.args
            chain_is_lhs = op_name(lhs) in _CHAIN
            other = rhs if chain_is_lhs else lhs
            # Both operands of a residual add can absorb the scale; the depth cap bounds the
            # (rare) nesting of such adds.
            scaled_bias = self._fold(other, scale, out_type, depth + 1) \
                if depth < _MAX_NESTING and op_name(other) in _CHAIN else None
            if scaled_bias is None:
                scaled_bias = op("multiply", memo[other], scale)
            args = (result, scaled_bias) if chain_is_lhs else (scaled_bias, result)
            result = step.replace(args=args)
        return result


class _Forward(ExprMutator):
    def __init__(self, uses):
        super().__init__()
        self.uses = uses

    def enter_function(self, node):
        return not node.get_attr("Primitive")

    def visit_call(self, node, original):
        name = op_name(original)
        if name not in _ANCHORS or name in _CONVS and original.attrs["groups"] != 1:
            return node
        if name in _CONVS:
            layout = original.attrs["data_layout"]
            if not layout.isalpha() or not layout.isupper():
                return node
            axis = layout.index("C")
        else:
            axis = len(tensor_type(original.args[0]).shape) - 1
        relus, data = 0, original.args[0]
        while op_name(data) == "nn.relu" and self.uses.get(data, 0) == 1:
            relus, data = relus + 1, data.args[0]
        bias_add = None
        if op_name(data) == "add" and self.uses.get(data, 0) == 1:
            # (x * s + b) == (x + b / s) * s: the scale moves past a bias add
            for side in (0, 1):
                inner = data.args[side]
                if op_name(inner) == "multiply" and self.uses.get(inner, 0) == 1 and \
                        tuple(tensor_type(inner).shape) == tuple(tensor_type(data).shape):
                    bias_add, data = (data, data.args[1 - side]), inner
                    break
        if op_name(data) != "multiply" or self.uses.get(data, 0) != 1:
            return node
        for side in (0, 1):
            value, scale = data.args[side], data.args[1 - side]
            vector = _channel_scale(scale, tensor_type(data), axis)
            if vector is None or relus and not np.all(vector > 0):
                continue
            if tensor_type(value) is None or \
                    tuple(tensor_type(value).shape) != tuple(tensor_type(data).shape):
                continue
            weight_scale = _weight_scale(original, vector, "I")
            if weight_scale is None or bias_add is not None and not np.all(vector != 0):
                continue
            new_data = self.memo[value]
            if bias_add is not None:
                new_data = op("add", new_data, op("divide", self.memo[bias_add[1]], scale))
            for _ in range(relus):
                new_data = op("nn.relu", new_data)
            new_weight = op("multiply", node.args[1], weight_scale)
            return node.replace(args=(new_data, new_weight) + node.args[2:])
        return node


def backward_fold_scale_axis(func: E.Function) -> E.Function:
    """``func`` (type-checked) with output-channel scales folded into weights."""
    return _Backward(use_counts(func)).visit(func)


def forward_fold_scale_axis(func: E.Function) -> E.Function:
    """``func`` (type-checked) with input-channel scales folded into weights."""
    return _Forward(use_counts(func)).visit(func)


@dataclass(frozen=True)
class BackwardFoldScaleAxis(ModulePass):
    """Fold a constant per-channel multiply after a conv/dense into its weight."""

    name: ClassVar[str] = "BackwardFoldScaleAxis"
    opt_level: ClassVar[int] = 3
    required: ClassVar[tuple] = ("InferType",)

    def transform_module(self, mod, ctx=None):
        """The rewritten, type-checked copy of ``mod``."""
        return rewrite_typed_module(mod, backward_fold_scale_axis)


@dataclass(frozen=True)
class ForwardFoldScaleAxis(ModulePass):
    """Fold a constant per-channel multiply before a conv/dense into its weight."""

    name: ClassVar[str] = "ForwardFoldScaleAxis"
    opt_level: ClassVar[int] = 3
    required: ClassVar[tuple] = ("InferType",)

    def transform_module(self, mod, ctx=None):
        """The rewritten, type-checked copy of ``mod``."""
        return rewrite_typed_module(mod, forward_fold_scale_axis)


def FoldScaleAxis() -> Sequential:  # noqa: N802 - Relay's name for a pass constructor
    """Relay's ``FoldScaleAxis``: Backward, Forward, then FoldConstant (see module docstring).

    Returns:
        The Sequential named ``FoldScaleAxis``.
    """
    return Sequential([BackwardFoldScaleAxis(), ForwardFoldScaleAxis(), FoldConstant()],
                      opt_level=0, name="FoldScaleAxis")
