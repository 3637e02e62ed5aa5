"""Which outputs of a fused group are written as a split nest, and where the parts lie.

A fused group whose output reads a ``concatenate`` elementwise (DenseNet's
``relu(concatenate(...) + shift)``, a fire module's plain concatenation) would otherwise
choose, for each output element, the field its position on the axis falls in: a chain of
``if`` over the fields, a clamped read of every field, and no vectorisation. Written as a
:func:`jitkernels.codegen.loops.split_nest`, each part of the axis lies within one field of
every such concatenation, so the part's body reads that field directly (the emitter
resolves the choice while generating the source) and its inner loop is a contiguous copy
with the epilogue applied on the fly.
"""

from __future__ import annotations

import math
import os

from irlib.ir import expr as E

from .loops import PARALLEL_MIN_ELEMENTS
from .node_types import shape_of
from .scalar_ops import RULES

SPLIT_CONCAT = os.environ.get("IRLIB_CODEGEN_SPLIT_CONCAT", "1") != "0"
"""Whether a static output that reads a concatenation elementwise is written by a split
nest (:func:`split_plan`); ``IRLIB_CODEGEN_SPLIT_CONCAT=0`` (read at import) turns it off:
a concatenation inside a group is then a per-element choice of field in one nest (a
concatenation that is the output itself is still written field by field)."""

SPLIT_PARALLEL_MIN_ELEMENTS = PARALLEL_MIN_ELEMENTS
"""A split nest's shared leading loops run as a ``prange`` from this many output elements
(see :func:`split_parallel`)."""


def split_parallel(shape: tuple) -> bool:
    """Whether a split nest over ``shape`` runs its shared leading loops in parallel: at
    least :data:`SPLIT_PARALLEL_MIN_ELEMENTS` elements.

    Args:
        shape: the output's static dims.
    """
    return math.prod(shape) >= SPLIT_PARALLEL_MIN_ELEMENTS


def _same_index_operands(node, shape: tuple) -> list:
    """The operands of ``node`` that an output of ``shape`` reads at its own index (an
    elementwise or broadcasting op's operands of that full shape, ``bias_add``'s data)."""
    rule = RULES.get(node.op.name)
    if rule is None or rule.index not in ("same", "broadcast", "bias_add"):
        return []
    args = node.args[:1] if rule.index == "bias_add" else node.args
    return [arg for arg in args if shape_of(arg) == shape]


def split_plan(node, inputs: dict):
    """``(axis, bounds)`` when output ``node`` (static shape) reads a ``concatenate`` of its
    own shape at its own index, through elementwise/broadcasting ops only (or is one).

    The output is then written in parts ``[bounds[j], bounds[j + 1])`` along ``axis``:
    the boundaries of the fields of every such concatenation on that axis, so that each
    part reads one field of each.

    Args:
        node: the output node of the group.
        inputs: the group's input nodes (their producers are not looked through).

    Returns:
        ``(axis, sorted bounds from 0 to the axis' extent)``, or None when there is no such
        concatenation or the output's shape is not static.
    """
    shape = shape_of(node)
    if not shape or not all(isinstance(d, int) for d in shape):
        return None
    concats, stack, seen = [], [node], set()
    while stack:
        current = stack.pop()
        if current in seen or current in inputs or not isinstance(current, E.Call) \
                or not isinstance(current.op, E.Op):
            continue
        seen.add(current)
        if current.op.name == "concatenate":
            if isinstance(current.args[0], E.Tuple) and shape_of(current) == shape:
                concats.append(current)
            continue
        stack.extend(_same_index_operands(current, shape))
    if not concats:
        return None
    axis = concats[0].attrs["axis"] % len(shape)
    bounds = {0, shape[axis]}
    for concat in concats:
        if concat.attrs["axis"] % len(shape) != axis:
            continue
        start = 0
        for field in concat.args[0].fields:
            start += shape_of(field)[axis]
            bounds.add(start)
    return axis, sorted(bounds)
