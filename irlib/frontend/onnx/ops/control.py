"""Control flow: ``If`` as an irlib ``If`` expression whose branches are the converted
subgraphs (they see the outer graph's values through the enclosing context)."""

from __future__ import annotations

from ....ir import expr as E
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
    then_body = then_outputs[0] if len(then_outputs) == 1 else ctx.make_tuple(then_outputs)
    else_body = else_outputs[0] if len(else_outputs) == 1 else ctx.make_tuple(else_outputs)
    then_type, else_type = ctx.type_of(then_body), ctx.type_of(else_body)
    if then_type != else_type:
        unsupported(f"If branches of different types ({then_type} vs {else_type}) are not "
                    "supported")
    node = ctx.set_type(E.If(cond, then_body, else_body), then_type)
    if len(then_outputs) == 1:
        return [node]
    return [ctx.tuple_get(node, i) for i in range(len(then_outputs))]
