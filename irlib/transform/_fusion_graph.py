"""The analysis behind FuseOps: the indexed forward graph and its post-dominator tree
(Relay's ``IndexedForwardGraph`` and ``DominatorTree``), all iterative; the partitioner that
uses them is :mod:`irlib.transform._fusion_partition`.

Every expression node of a function (not descending into ``Primitive`` or ``Compiler``
functions, and not counting ``Op`` callees) gets an index in post-DFS order, a pattern
(:class:`~irlib.op.registry.OpPattern`) and a list of *output edges*
``(consumer index, edge pattern)``. A node used where the analysis cannot follow it (a let
value or body, an ``if`` branch, a function body, a non-tensor tuple field, the root) is
marked ``extern_ref`` and never fuses into anything.

The post-dominator of a node is the least common ancestor of its consumers in the tree; the
tree edge carries the most relaxed (largest) pattern seen on the way. The partitioner then
runs Relay's three phases of fusion over the nodes in post-DFS order.
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir.functor import children, post_order
from ..ir.types import TensorType, TupleType
from ..op.registry import OpPattern, get_def

ELEMWISE = OpPattern.ELEMWISE
BROADCAST = OpPattern.BROADCAST
INJECTIVE = OpPattern.INJECTIVE
COMM_REDUCE = OpPattern.COMM_REDUCE
OUT_ELEMWISE_FUSABLE = OpPattern.OUT_ELEMWISE_FUSABLE
TUPLE = OpPattern.TUPLE
OPAQUE = OpPattern.OPAQUE

# Scalar constants of these dtypes are inlined into fused functions (Relay's rule, which the
# code generator relies on); any other constant is opaque and becomes a parameter.
_SIMPLE_CONST_DTYPES = frozenset({"int32", "int64", "float32", "float64", "bool"})


def is_opaque_function(node) -> bool:
    """Whether a Function is left alone by fusion: ``Compiler`` set, or ``Primitive`` set at
    all (a ``Primitive=0`` function, a fused group without op calls, is not re-fused either,
    unlike Relay, so that FuseOps is idempotent).

    Args:
        node: the Function.
    """
    return node.get_attr("Primitive") is not None or node.get_attr("Compiler") is not None


class ForwardGraph:
    """The indexed forward dataflow graph of an expression.

    Attributes:
        nodes: the expression nodes in post-DFS order.
        index: node -> its position in ``nodes``.
        pattern: the pattern of each node.
        outputs: for each node, its ``(consumer index, edge pattern)`` list.
        extern_ref: for each node, whether it is used somewhere fusion cannot see.
    """

    def __init__(self, nodes: list):
        self.nodes = nodes
        self.index = {node: i for i, node in enumerate(nodes)}
        self.pattern = [OPAQUE] * len(nodes)
        self.outputs = [[] for _ in nodes]
        self.extern_ref = [False] * len(nodes)

    def link(self, child, parent_index, edge_pattern) -> None:
        """Record that node ``parent_index`` consumes ``child`` (None: an unknown consumer).

        Args:
            child: the consumed expression.
            parent_index: the consumer's index in the graph, or None.
            edge_pattern: the consumer's fusion pattern kind along this edge.
        """
        i = self.index.get(child)
        if i is None:      # an Op callee: not a graph node
            return
        if parent_index is None:
            self.extern_ref[i] = True
        else:
            self.outputs[i].append((parent_index, edge_pattern))


def _post_dfs(expr) -> list:
    """The nodes under ``expr`` in post-DFS order, children in evaluation order (``Op``
    callees are not nodes; opaque functions are leaves)."""
    return [node for node in post_order(expr, children_of=_fusion_children)
            if type(node) is not E.Op]


def _fusion_children(node) -> tuple:
    if type(node) is E.Function and is_opaque_function(node):
        return ()
    return tuple(c for c in children(node) if type(c) is not E.Op)


def _tensor_type(node):
    ty = node._checked_type
    return ty if isinstance(ty, TensorType) else None


def build_graph(expr) -> ForwardGraph:
    """The :class:`ForwardGraph` of ``expr`` (which must carry inferred types).

    Args:
        expr: a typed expression, usually a whole function.

    Returns:
        The graph.
    """
    graph = ForwardGraph(_post_dfs(expr))
    graph.link(expr, None, OPAQUE)
    pattern = graph.pattern
    for i, node in enumerate(graph.nodes):
        kind = type(node)
        if kind is E.Call:
            if isinstance(node.op, E.Op):
                op_pattern = OpPattern(get_def(node.op.name).pattern)
            else:
                op_pattern = OPAQUE
                graph.link(node.op, i, OPAQUE)
                graph.link(node.op, None, OPAQUE)
            pattern[i] = op_pattern
            out_type = _tensor_type(node)
            for arg in node.args:
                edge = op_pattern
                if edge == BROADCAST and out_type is not None:
                    arg_type = _tensor_type(arg)
                    if arg_type is not None and tuple(arg_type.shape) == tuple(out_type.shape):
                        edge = ELEMWISE
                graph.link(arg, i, edge)
        elif kind is E.Tuple:
            pattern[i] = TUPLE
            for field in node.fields:
                if _tensor_type(field) is not None:
                    graph.link(field, i, INJECTIVE)
                else:
                    graph.link(field, None, OPAQUE)
        elif kind is E.TupleGetItem:
            tuple_type = node.tuple_value._checked_type
            if isinstance(tuple_type, TupleType) and \
                    all(isinstance(f, TensorType) for f in tuple_type.fields):
                pattern[i] = INJECTIVE
                graph.link(node.tuple_value, i, INJECTIVE)
            else:
                graph.link(node.tuple_value, None, OPAQUE)
        elif kind is E.Constant:
            data = node.data
            if len(data.shape) == 0 and str(data.dtype) in _SIMPLE_CONST_DTYPES:
                pattern[i] = ELEMWISE
        elif kind is E.Function and is_opaque_function(node):
            pass
        else:
            for child in children(node):
                graph.link(child, None, OPAQUE)
    return graph


def post_dominators(graph: ForwardGraph):
    """The post-dominator tree of ``graph``.

    Returns:
        ``(parent, pattern, depth)`` lists indexed by node: the immediate post-dominator
        (None for none), the largest edge pattern on the way to it, and the tree depth.
    """
    n = len(graph.nodes)
    parent = [None] * n
    dom_pattern = [OPAQUE] * n
    depth = [1] * n
    for i in range(n - 1, -1, -1):
        if graph.extern_ref[i]:
            continue
        outputs = graph.outputs[i]
        if not outputs:
            continue
        pat = ELEMWISE
        lca = None
        for k, (consumer, edge) in enumerate(outputs):
            pat = max(pat, edge)
            if k == 0:
                lca = consumer
                continue
            lhs, rhs = lca, consumer
            while lhs != rhs:
                if lhs is None or rhs is None:
                    lhs = None
                    break
                if depth[lhs] < depth[rhs]:
                    pat = max(pat, dom_pattern[rhs])
                    rhs = parent[rhs]
                elif depth[rhs] < depth[lhs]:
                    pat = max(pat, dom_pattern[lhs])
                    lhs = parent[lhs]
                else:
                    pat = max(pat, dom_pattern[lhs], dom_pattern[rhs])
                    lhs, rhs = parent[lhs], parent[rhs]
            lca = lhs
            if lca is None:
                break
        parent[i] = lca
        dom_pattern[i] = pat
        depth[i] = depth[lca] + 1 if lca is not None else 1
    return parent, dom_pattern, depth

