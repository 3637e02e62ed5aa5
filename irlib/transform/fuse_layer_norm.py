"""FuseLayerNorm: put each layer normalisation written as primitives into one ``Primitive``
function.

Importers and SimplifyInference write a layer norm over the last axis as ::

    %d = subtract(%x, mean(%x, axis=[-1], keepdims=True))
    %n = multiply(%d, rsqrt(add(mean(multiply(%d, %d), axis=[-1], keepdims=True), 1e-5f)))
    add(multiply(%n, %gamma), %beta)

(also ``power(%d, 2f)`` for the square, ``variance(%x, %mean)`` for the mean of squares
as SimplifyInference expands ``nn.layer_norm``, and ``divide(%d, sqrt(...))`` for the
scaling; ``%gamma``/``%beta`` optional, constants of the row's length).
FuseOps would make four groups of it (two reductions that cannot fuse with their
producers, two elementwise tails), each a pass over the tensor. This pass finds the chain
with a dataflow pattern and replaces it by a call of a function marked ``Primitive=1`` and
``irlib.layer_norm=1`` whose body is the matched ops (so every executor and the numpy
references give the same result), with ``%x`` as its only parameter. The CPU graph executor
runs it as one kernel (``jitkernels.cpu.layer_norm``): one read of each row for the
statistics, one write of the result. :func:`describe_layer_norm` reads the epsilon and the
affine constants back.

Runs at ``opt_level`` 3, before FuseOps; only float32/float64 tensors with a static last
axis are rewritten.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..dataflow_pattern import DFPatternCallback, is_constant, is_op, rewrite, wildcard
from ..ir import expr as E
from ..ir.types import TensorType
from ._rewrite import substitute
from ._typed import rewrite_typed_module
from .pass_infra import ModulePass, register_pass

__all__ = ["FuseLayerNorm", "fuse_layer_norm", "describe_layer_norm", "LayerNormPlan",
           "LAYER_NORM_ATTR"]

LAYER_NORM_ATTR = "irlib.layer_norm"
"""The function attribute that marks a fused layer norm (value 1)."""


def _make_pattern():
    """``(root, x, epsilon, gamma, beta)`` patterns of a layer norm chain."""
    x, eps, gamma, beta = wildcard(), is_constant(), is_constant(), is_constant()
    centred = is_op("subtract")(x, is_op("mean")(x))
    square = is_op("multiply")(centred, centred) | is_op("power")(centred, is_constant())
    variance = is_op("mean")(square) | is_op("variance")(x, wildcard())
    shifted = is_op("add")(variance, eps)
    normed = is_op("multiply")(centred, is_op("rsqrt")(shifted)) \
        | is_op("divide")(centred, is_op("sqrt")(shifted))
    scaled = is_op("multiply")(normed, gamma) | normed
    out = is_op("add")(scaled, beta) | scaled
    return out, x, eps, gamma, beta


PATTERN = _make_pattern()[0]
"""The dataflow pattern of a layer norm chain (see the module docstring)."""


def _row_length(node):
    ty = node._checked_type
    if not isinstance(ty, TensorType) or not ty.shape or ty.dtype not in ("float32", "float64"):
        return None
    try:
        return int(ty.shape[-1])
    except (TypeError, ValueError):
        return None


class _LayerNormCallback(DFPatternCallback):
    """Replace each layer norm match by a call of a fused ``Primitive`` function."""

    def __init__(self):
        super().__init__(rewrite_once=True)     # the input is typed (rewrite_typed_module)
        self.pattern, self.x, self.eps, self.gamma, self.beta = _make_pattern()

    def callback(self, pre, post, node_map):
        """The call of the fused function, or ``post`` when the match does not qualify."""
        typed_x = _find_input(pre)
        if typed_x is None or _row_length(typed_x) is None:
            return post
        if describe_layer_norm(pre, check_only=True) is None:
            return post
        x = node_map[self.x][0]
        param = E.Var("p0", typed_x._checked_type)
        body = substitute(post, {x: param})
        func = E.Function((param,), body, None, (), {"Primitive": 1, LAYER_NORM_ATTR: 1})
        return E.Call(func, (x,))


def _is_op(node, *names) -> bool:
    return type(node) is E.Call and isinstance(node.op, E.Op) and node.op.name in names


def _walk(root):
    """``(x, centred, epsilon node, square node, gamma, beta)`` of a matched chain, reading
    the ops the pattern allows (commuted ``multiply``/``add`` included), or None."""
    node, gamma, beta = root, None, None
    if _is_op(node, "add") and not _is_op(node.args[0], "subtract"):
        first, second = node.args
        if type(second) is E.Constant:
            node, beta = first, second
        elif type(first) is E.Constant:
            node, beta = second, first
    if _is_op(node, "multiply"):
        first, second = node.args
        if type(second) is E.Constant and _is_op(first, "multiply", "divide"):
            node, gamma = first, second
        elif type(first) is E.Constant and _is_op(second, "multiply", "divide"):
            node, gamma = second, first
    if not _is_op(node, "multiply", "divide"):
        return None
    centred, scale = node.args
    if not _is_op(centred, "subtract"):
        centred, scale = scale, centred
    if not (_is_op(centred, "subtract") and _is_op(scale, "rsqrt", "sqrt")):
        return None
    shifted = scale.args[0]
    if not _is_op(shifted, "add"):
        return None
    variance, eps = shifted.args
    if type(variance) is E.Constant:
        variance, eps = eps, variance
    if not (_is_op(variance, "mean", "variance") and type(eps) is E.Constant):
        return None
    return centred.args[0], centred, eps, variance, gamma, beta


def _find_input(root):
    walked = _walk(root)
    return None if walked is None else walked[0]


def _last_axis_mean(node, rank: int) -> bool:
    attrs = node.attrs
    axis = attrs["axis"]
    axes = [axis] if isinstance(axis, int) else list(axis or [])
    return (len(axes) == 1 and int(axes[0]) % rank == rank - 1 and bool(attrs["keepdims"])
            and not attrs.get("exclude", False))


@dataclass
class LayerNormPlan:
    """What a fused layer norm computes: ``(x - mean) / sqrt(var + epsilon) * gamma + beta``
    over the last axis (``gamma``/``beta`` 1-D arrays of the row's length, or None)."""

    epsilon: float
    gamma: np.ndarray | None
    beta: np.ndarray | None


def _affine(constant, length: int):
    """A constant as a 1-D array of ``length`` (a scalar broadcast), or False when it does
    not broadcast along the last axis only."""
    if constant is None:
        return None
    data = constant.data.numpy()
    if data.size == 1:
        return np.full(length, data.reshape(()), data.dtype)
    if data.shape[-1] != length or data.size != length:
        return False
    return data.reshape(length)


def describe_layer_norm(node, check_only: bool = False):
    """The :class:`LayerNormPlan` of a typed fused function made by this pass (or of a
    typed matched chain, with ``check_only``), or None when it is not one the kernel runs.

    Args:
        node: the fused function, or the root of a matched chain.
        check_only: only check that the chain qualifies (``node`` is a matched chain, not a
            function).
    """
    body = node.body if isinstance(node, E.Function) else node
    if isinstance(node, E.Function) and not node.get_attr(LAYER_NORM_ATTR):
        return None
    walked = _walk(body)
    if walked is None:
        return None
    x, centred, eps, variance, gamma, beta = walked
    length = _row_length(x)
    if length is None:
        return None
    rank = len(x._checked_type.shape)
    mean = centred.args[1]
    square = variance.args[0]
    if not (_is_op(mean, "mean") and mean.args[0] is x and _last_axis_mean(mean, rank)
            and _last_axis_mean(variance, rank)):
        return None
    if _is_op(variance, "variance"):       # SimplifyInference's nn.layer_norm
        if not (variance.args[0] is x and variance.args[1] is mean
                and not variance.attrs.get("unbiased", False)):
            return None
    elif _is_op(square, "multiply"):
        if not (square.args[0] is centred and square.args[1] is centred):
            return None
    elif not (_is_op(square, "power") and square.args[0] is centred
              and type(square.args[1]) is E.Constant
              and float(square.args[1].data.numpy().reshape(-1)[0]) == 2.0
              and square.args[1].data.numpy().size == 1):
        return None
    eps_value = eps.data.numpy()
    if eps_value.size != 1:
        return None
    gamma_array, beta_array = _affine(gamma, length), _affine(beta, length)
    if gamma_array is False or beta_array is False:
        return None
    return LayerNormPlan(float(eps_value.reshape(())), gamma_array, beta_array)


def fuse_layer_norm(func: E.Function, mod=None) -> E.Function:
    """``func`` (typed) with its layer norm chains in fused functions (module docstring).

    Args:
        func: a type-checked function.
        mod: the module ``func`` belongs to (its global functions), if it calls any.
    """
    return rewrite(_LayerNormCallback(), func, mod)


@dataclass(frozen=True)
class FuseLayerNorm(ModulePass):
    """Group each layer norm chain over the last axis into one ``Primitive`` function."""

    name: ClassVar[str] = "FuseLayerNorm"
    opt_level: ClassVar[int] = 3
    required: ClassVar[tuple] = ("InferType",)

    def transform_module(self, mod, ctx=None):
        """The rewritten, type-checked copy of ``mod``."""
        return rewrite_typed_module(mod, lambda func: fuse_layer_norm(func, mod))


register_pass("FuseLayerNorm", FuseLayerNorm)
