"""The dataflow graph of a function, as drawn by ``irlib show`` and ``mod.show()``.

:func:`dataflow_graph` turns a function into :class:`DataflowGraph`: one node per input
(a parameter that is not a weight), per op call, per call of a global function or other
callee, per control-flow construct (``if``, ``match``, ref
ops: drawn closed, without their branches) and one ``output`` node per output. Weights (the
parameters named in ``params``) and constants are collapsed into the label of the node that
uses them; ``let`` bindings, tuples and tuple projections are transparent (a tuple argument
is one edge per field, a projection labels its edge ``[i]``). A call of a ``Primitive`` function (what FuseOps makes) becomes a cluster
holding the nodes of its body. The walk is iterative (``irlib.ir.functor.post_order``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..ir import expr as E
from ..ir.functor import operands, post_order
from ..ir.types import TensorType, TupleType


@dataclass
class GraphNode:
    """One drawn node.

    Attributes:
        id: a unique id (``"n0"``, ``"n1"``, ...).
        kind: ``"input"``, ``"op"``, ``"call"``, ``"control"`` or ``"output"``.
        title: the op name, input name, callee, ...
        type_text: the node's output type, short (``1x64x56x56 float32``), or "".
        collapsed: the weights and constants folded into the node, as ``name<shape>`` texts.
        inputs: ``(source node id, edge label)`` pairs, in argument order.
        group: the fused group (cluster) index the node belongs to, or None.
    """

    id: str
    kind: str
    title: str
    type_text: str = ""
    collapsed: list = field(default_factory=list)
    inputs: list = field(default_factory=list)
    group: Optional[int] = None


@dataclass
class DataflowGraph:
    """The nodes of one function's dataflow, in topological order, with its fused groups.

    Attributes:
        name: the function's name (``main``).
        nodes: the :class:`GraphNode` s, every node after its inputs.
        groups: group index -> its label (``fused group 3``), in order of appearance.
    """

    name: str
    nodes: list
    groups: dict

    def count(self, kind: Optional[str] = None) -> int:
        """The number of nodes (of the given ``kind``, or all)."""
        return sum(1 for node in self.nodes if kind is None or node.kind == kind)


def type_text(ty) -> str:
    """A short text of a type: ``1x3x224x224 float32`` for a tensor, ``(a, b)`` for a tuple,
    "" when there is no type.

    Args:
        ty: the type, or None.
    """
    if ty is None:
        return ""
    if isinstance(ty, TensorType):
        dims = "x".join(str(d) for d in ty.shape) or "scalar"
        return f"{dims} {ty.dtype}"
    if isinstance(ty, TupleType):
        return "(" + ", ".join(type_text(f) for f in ty.fields) + ")"
    return " ".join(str(ty).split())


def _type_of(expr) -> str:
    """The short type of ``expr`` if type inference has run on it, else ""."""
    return type_text(getattr(expr, "_checked_type", None))


def _is_primitive(func) -> bool:
    """Whether ``func`` is a FuseOps group (``Primitive=1``)."""
    attrs = func.attrs or {}
    try:
        return int(attrs.get("Primitive", 0)) == 1
    except (TypeError, ValueError):
        return False


class _Builder:
    """Builds a :class:`DataflowGraph`; refs are ``("node", id, label)``, ``("weight",
    text)`` or ``("tuple", [refs])``."""

    def __init__(self, name: str, weights: set):
        self.graph = DataflowGraph(name, [], {})
        self.weights = weights
        self.env: dict = {}        # Var -> ref (function parameters, let-bound vars)
        self.group: Optional[int] = None

    def add(self, kind, title, expr=None, refs=(), type_override=None) -> tuple:
        node = GraphNode(f"n{len(self.graph.nodes)}", kind, title,
                         type_override if type_override is not None else _type_of(expr),
                         group=self.group)
        for index, ref in enumerate(refs):
            for item in self._flat(ref):
                if item[0] == "node":
                    node.inputs.append((item[1], item[2]))
                else:
                    node.collapsed.append(item[1])
        self.graph.nodes.append(node)
        return ("node", node.id, "")

    def _flat(self, ref) -> list:
        if ref[0] == "tuple":
            return [item for part in ref[1] for item in self._flat(part)]
        return [ref]

    def function(self, func, args=None) -> tuple:
        """Bind ``func``'s parameters (inputs, weights, or ``args`` refs) and build its body."""
        for index, param in enumerate(func.params):
            if args is not None:
                self.env[param] = args[index]
            elif param.name_hint in self.weights:
                self.env[param] = ("weight", f"{param.name_hint}<{_shape_of(param)}>")
            else:
                self.env[param] = self.add("input", param.name_hint, param)
        return self.body(func.body)

    def body(self, expr) -> tuple:
        """Build ``expr`` (a let chain is walked in a loop)."""
        while isinstance(expr, E.Let):
            self.env[expr.var] = self.value(expr.value)
            expr = expr.body
        return self.value(expr)

    def value(self, root) -> tuple:
        """Build a let-free dataflow expression; lets and functions inside are leaves."""
        refs: dict = {}
        for node in post_order(root, children_of=self._children):
            refs[node] = self._build(node, refs)
        return refs[root]

    @staticmethod
    def _children(node) -> tuple:
        """The operands drawn as edges into ``node`` (a call's callee is its label, not an
        edge)."""
        found = operands(node)
        return found[1:] if type(node) is E.Call else found

    def _build(self, node, refs) -> tuple:
        kind = type(node)
        if kind is E.Var:
            if node not in self.env:          # a free variable: an input of its own
                self.env[node] = self.add("input", node.name_hint, node)
            return self.env[node]
        if kind is E.Constant:
            return ("weight", f"const<{_shape_of(node)}>")
        if kind is E.Let:
            return self.body(node)
        if kind is E.Tuple:
            return ("tuple", [refs[f] for f in node.fields])
        if kind is E.TupleGetItem:
            source = refs[node.tuple_value]
            if source[0] == "tuple":
                return source[1][node.index]
            if source[0] == "node":
                return ("node", source[1], f"[{node.index}]")
            return source
        if kind is E.Call:
            args = [refs[a] for a in node.args]
            op = node.op
            if isinstance(op, E.Op):       # a tuple argument: one edge per field
                return self.add("op", op.name, node, args)
            if isinstance(op, E.Function):
                return self._inline(op, args, node)
            title = f"@{op.name_hint}" if isinstance(op, E.GlobalVar) else (
                op.name if isinstance(op, E.Constructor) else "call")
            return self.add("call", title, node, args)
        if kind is E.Function:
            return self.add("control", "fn", node)
        if kind is E.If:
            return self.add("control", "if", node, [refs[node.cond]])
        if kind is E.Match:
            return self.add("control", f"match ({len(node.clauses)} clauses)", node,
                            [refs[node.data]])
        if kind in (E.RefCreate, E.RefRead, E.RefWrite):
            names = {E.RefCreate: "ref", E.RefRead: "ref_read", E.RefWrite: "ref_write"}
            return self.add("control", names[kind], node,
                            [refs[c] for c in self._children(node)])
        if kind is E.Constructor:
            return self.add("call", node.name, node)
        if kind is E.GlobalVar:
            return self.add("call", f"@{node.name_hint}", node)
        return self.add("control", type(node).__name__, node)

    def _inline(self, func, args, call) -> tuple:
        """A call of a function literal: its body drawn in place (a cluster if Primitive)."""
        outer = self.group
        if _is_primitive(func) and outer is None:
            self.group = len(self.graph.groups)
            ops = sorted({n.op.name for n in post_order(func.body)
                          if type(n) is E.Call and isinstance(n.op, E.Op)})
            self.graph.groups[self.group] = f"fused group {self.group}: {', '.join(ops)}"
        try:
            return self.function(func, args)
        finally:
            self.group = outer


def _shape_of(expr) -> str:
    """``64x3x7x7`` for a typed or annotated tensor expression, ``?`` when unknown."""
    ty = getattr(expr, "_checked_type", None)
    if ty is None and isinstance(expr, E.Var):
        ty = expr.type_annotation
    if ty is None and isinstance(expr, E.Constant):
        return "x".join(str(d) for d in expr.data.shape) or "scalar"
    if isinstance(ty, TensorType):
        return "x".join(str(d) for d in ty.shape) or "scalar"
    return "?"


def dataflow_graph(func, params=None, name: str = "main") -> DataflowGraph:
    """The :class:`DataflowGraph` of ``func``.

    Args:
        func: an ``irlib.Function`` (or any expression: its free variables become inputs).
        params: the weights: a dict or set of parameter names drawn collapsed into their
            users (e.g. the ``params`` of ``zoo.create_workload``); None: no parameter is a
            weight.
        name: the graph's name.
    """
    builder = _Builder(name, set(params or ()))
    if isinstance(func, E.Function):
        result = builder.function(func)
        out_type = getattr(func.body, "_checked_type", None)
    else:
        result = builder.body(func)
        out_type = getattr(func, "_checked_type", None)
    outputs = builder._flat(result) if result[0] == "tuple" else [result]
    types = list(out_type.fields) if isinstance(out_type, TupleType) and \
        len(out_type.fields) == len(outputs) else [out_type] * len(outputs)
    for index, (ref, ty) in enumerate(zip(outputs, types)):
        title = "output" if len(outputs) == 1 else f"output {index}"
        builder.add("output", title, refs=[ref], type_override=type_text(ty))
    return builder.graph
