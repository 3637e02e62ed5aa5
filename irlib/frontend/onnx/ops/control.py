"""Control flow: ``If`` as an irlib ``If`` expression whose branches are the converted
subgraphs (they see the outer graph's values through the enclosing context).

A condition known at import time converts only the taken branch. A run-time one converts
both; their outputs must agree on a type: dims that differ join to ``Any``, and torch's
``squeeze(dim)`` pattern types as the squeezed rank (see :func:`_reconcile`).
"""

from __future__ import annotations

from ....ir import expr as E
from ....ir.types import IncompleteType, TensorType, TupleType, TypeCall
from ....typeinf.join import join_types
from ..registry import converter
from .common import unsupported


def convert_subgraph(ctx, graph):
    """Convert ``graph`` (a subgraph without inputs) in a child context; returns its outputs."""
    from ..importer import GraphContext, convert_graph
    child = GraphContext(ctx.importer, parent=ctx)
    return convert_graph(child, graph)


def convert_subgraph_with(ctx, graph, values):
    """Convert ``graph`` with its inputs bound to ``values``; returns its outputs."""
    from ..importer import GraphContext, convert_graph
    child = GraphContext(ctx.importer, parent=ctx)
    for info, value in zip(graph.input, values):
        child.bind(info.name, value)
    return convert_graph(child, graph)


@converter("If")
def _if(ctx, inputs, attrs):
    cond = inputs[0]
    if ctx.ndim(cond) > 0:
        cond = ctx.emit("reshape", cond, newshape=[])
    if ctx.dtype(cond) != "bool":
        cond = ctx.emit("cast", cond, dtype="bool")
    value = ctx.const_value(cond)
    if value is not None:
        # Only the taken branch is converted: ONNX never evaluates the other, which may not
        # even type-check for these shapes (silero-vad's 8 kHz branch given a 16 kHz chunk).
        return convert_subgraph(ctx, attrs["then_branch" if bool(value) else "else_branch"])
    then_outputs = convert_subgraph(ctx, attrs["then_branch"])
    else_outputs = convert_subgraph(ctx, attrs["else_branch"])
    if len(then_outputs) != len(else_outputs):
        unsupported(f"If branches with {len(then_outputs)} and {len(else_outputs)} outputs")
    types = []
    for index in range(len(then_outputs)):
        then_outputs[index], else_outputs[index], ty = _reconcile(
            ctx, then_outputs[index], else_outputs[index], index)
        types.append(ty)
    then_body = then_outputs[0] if len(then_outputs) == 1 else ctx.make_tuple(then_outputs)
    else_body = else_outputs[0] if len(else_outputs) == 1 else ctx.make_tuple(else_outputs)
    node = ctx.set_type(E.If(cond, then_body, else_body),
                        types[0] if len(types) == 1 else TupleType(types))
    if len(then_outputs) == 1:
        return [node]
    return [ctx.tuple_get(node, i) for i in range(len(then_outputs))]


def _reconcile(ctx, then_value, else_value, index):
    """Make one output of the two branches of a run-time ``If`` agree on a type.

    * equal types: kept;
    * tensors of one dtype and rank whose dims differ: the join, ``Any`` where they differ
      (the type checker joins If branches the same way);
    * tensors whose ranks differ, where the lower-rank shape is the higher-rank one with some
      axes left out that may have size 1 (torch exports ``squeeze(dim)`` as ``If(shape[d] ==
      1, Squeeze(x, d), Identity(x))``): the lower-rank type; the higher-rank branch squeezes
      those axes, which fails at run time (squeeze's "dimension d of ... is k, not 1")
      unless they have size 1. Typing needs one rank, and the squeezed one is what the
      exporter's code after the ``If`` was written for.

    Returns:
        ``(then_value, else_value, type)``.

    Raises:
        OpNotImplemented: for other mismatches (dtype, tuple structure, unrelated ranks).
    """
    then_type, else_type = ctx.type_of(then_value), ctx.type_of(else_value)
    if then_type == else_type:
        return then_value, else_value, then_type
    joined = join_types(then_type, else_type)
    if joined is None:
        joined = join_value_types(then_type, else_type)
    if joined is not None:
        return then_value, else_value, joined
    if (isinstance(then_type, TensorType) and isinstance(else_type, TensorType)
            and then_type.dtype == else_type.dtype and then_type.ndim != else_type.ndim):
        low, high = sorted((then_type, else_type), key=lambda t: t.ndim)
        axes = _dropped_axes(high.shape, low.shape)
        if axes is not None:
            if high is then_type:
                then_value = ctx.emit("squeeze", then_value, axis=axes)
            else:
                else_value = ctx.emit("squeeze", else_value, axis=axes)
            return then_value, else_value, join_types(low, ctx.type_of(
                then_value if high is then_type else else_value))
    unsupported(f"If output {index}: the branches have types {then_type} and {else_type}, "
                "which neither join (same dtype and rank) nor differ only by axes of size 1 "
                "that the lower-rank branch squeezes out")


#: How deep :func:`join_value_types` looks into nested ADT/tuple types (ONNX value types
#: nest a few levels: optional(seq(tensor))).
MAX_JOIN_DEPTH = 16


def join_value_types(left, right, depth: int = 0):
    """The join of two ONNX value types that may be sequences and optionals (the Prelude's
    ``List``/``Option``), for the outputs of two ``If`` branches: tensors join as in
    :func:`~irlib.typeinf.join.join_types` (``?`` where dims differ), the same ADT joins
    argument by argument, and an element type left to inference (``_``, an empty
    sequence's) takes the other branch's. ``if_opt``'s branches give
    ``Option[List[Tensor[(?), float32]]]`` (declared) and ``Option[List[Tensor[(5),
    float32]]]`` (built): the join is the former. The type checker unifies the branches of
    the IR ``if`` the same way.

    Args:
        left: one branch's type.
        right: the other's.
        depth: nesting levels already looked through (stops at :data:`MAX_JOIN_DEPTH`).

    Returns:
        The joined type, or None when the two do not join.
    """
    if left == right:
        return left
    if depth >= MAX_JOIN_DEPTH:
        return None
    if isinstance(left, IncompleteType):
        return right
    if isinstance(right, IncompleteType):
        return left
    if isinstance(left, TensorType) and isinstance(right, TensorType):
        return join_types(left, right)
    if isinstance(left, TypeCall) and isinstance(right, TypeCall):
        if left.func is not right.func or len(left.args) != len(right.args):
            return None
        args = [join_value_types(a, b, depth + 1) for a, b in zip(left.args, right.args)]
        return None if any(a is None for a in args) else TypeCall(left.func, args)
    if isinstance(left, TupleType) and isinstance(right, TupleType):
        if len(left.fields) != len(right.fields):
            return None
        fields = [join_value_types(a, b, depth + 1) for a, b in zip(left.fields, right.fields)]
        return None if any(f is None for f in fields) else TupleType(fields)
    return None


def _dropped_axes(high, low):
    """The axes of shape ``high`` that, left out, give shape ``low`` (dims compared for
    equality, first match first); None when there are none such or one has a static size
    other than 1."""
    position, dropped = 0, []
    for axis, dim in enumerate(high):
        if position < len(low) and dim == low[position]:
            position += 1
        elif isinstance(dim, int) and dim != 1:
            return None
        else:
            dropped.append(axis)
    return dropped if position == len(low) else None
