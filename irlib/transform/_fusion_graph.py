"""The analysis behind FuseOps: the indexed forward graph, its post-dominator tree and the
graph partitioner (Relay's ``IndexedForwardGraph``, ``DominatorTree`` and
``GraphPartitioner``), all iterative.

Every expression node of a function (not descending into ``Primitive`` or ``Compiler``
functions, and not counting ``Op`` callees) gets an index in post-DFS order, a pattern
(:class:`~irlib.op.registry.OpPattern`) and a list of *output edges*
``(consumer index, edge pattern)``. A node used where the analysis cannot follow it (a let
value or body, an ``if`` branch, a function body, a non-tensor tuple field, the root) is
marked ``extern_ref`` and never fuses into anything.

The post-dominator of a node is the least common ancestor of its consumers in the tree; the
tree edge carries the most relaxed (largest) pattern seen on the way. The partitioner then
runs Relay's three phases of fusion over the nodes in post-DFS order (see :func:`partition`).
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir.functor import children
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
    unlike Relay, so that FuseOps is idempotent)."""
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
        """Record that node ``parent_index`` consumes ``child`` (None: an unknown consumer)."""
        i = self.index.get(child)
        if i is None:      # an Op callee: not a graph node
            return
        if parent_index is None:
            self.extern_ref[i] = True
        else:
            self.outputs[i].append((parent_index, edge_pattern))


def _post_dfs(expr) -> list:
    """The nodes under ``expr`` in post-DFS order, children in evaluation order."""
    order, seen = [], set()
    stack = [(expr, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if node in seen or type(node) is E.Op:
            continue
        seen.add(node)
        stack.append((node, True))
        if type(node) is E.Function and is_opaque_function(node):
            continue
        for child in reversed(children(node)):
            if child not in seen:
                stack.append((child, False))
    return order


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


class Group:
    """A union-find set of fused nodes.

    Attributes:
        parent: the group this one was merged into (None for a root).
        pattern: the group's pattern (the anchor's, once one is merged in).
        root_index: the graph index of the node that computes the group's result.
        has_anchor: whether it holds an OUT_ELEMWISE_FUSABLE op.
        num_nodes: the number of nodes merged into it.
    """

    __slots__ = ("parent", "pattern", "root_index", "has_anchor", "num_nodes")

    def __init__(self, pattern, root_index):
        self.parent = None
        self.pattern = pattern
        self.root_index = root_index
        self.has_anchor = pattern == OUT_ELEMWISE_FUSABLE
        self.num_nodes = 1

    def find_root(self) -> "Group":
        """The representative of this group's set (with path compression)."""
        root = self
        while root.parent is not None:
            root = root.parent
        node = self
        while node.parent is not None and node.parent is not root:
            node.parent, node = root, node.parent
        return root


class _Partitioner:
    def __init__(self, graph: ForwardGraph, max_depth: int):
        self.graph = graph
        self.max_depth = max_depth
        self.groups = [Group(p, i) for i, p in enumerate(graph.pattern)]

    def root(self, i) -> Group:
        return self.groups[i].find_root()

    def _path_nodes(self, src, sink):
        """Nodes reachable from ``src``'s consumers up to (and including) ``sink``."""
        seen = set()
        stack = [c for c, _ in self.graph.outputs[src]]
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            if node != sink:
                stack.extend(c for c, _ in self.graph.outputs[node])
        return seen

    def check_path(self, src, sink, fcond) -> bool:
        return all(fcond(self.root(node).pattern, node == sink)
                   for node in self._path_nodes(src, sink))

    def count_with_new_child(self, child, sink) -> int:
        total = self.root(sink).num_nodes + self.groups[child].num_nodes
        return total + sum(self.groups[n].num_nodes
                           for n in self._path_nodes(child, sink) if n != sink)

    def commit_fuse(self, src, sink) -> None:
        target = self.groups[sink]
        members = self._path_nodes(src, sink)
        members.discard(sink)
        members.add(src)
        for node in sorted(members):
            self.merge(self.groups[node], target)

    @staticmethod
    def merge(child: Group, parent: Group) -> None:
        child, parent = child.find_root(), parent.find_root()
        if child is parent:
            return
        parent.num_nodes += child.num_nodes
        child.parent = parent
        if child.has_anchor:
            parent.has_anchor = True
            parent.pattern = max(child.pattern, parent.pattern)

    def run_phase(self, dom_parent, dom_pattern, phase: int) -> None:
        groups = self.groups
        for nid in range(len(groups)):
            if groups[nid].pattern == OPAQUE:
                continue
            target = dom_parent[nid]
            if target is None:
                continue
            if self.count_with_new_child(nid, target) > self.max_depth:
                continue
            group = groups[nid]
            if phase == 2:
                self._phase_two(nid, target)
                continue
            if group.find_root() is groups[target].find_root():
                continue
            if groups[target].pattern == TUPLE:
                continue
            pattern = group.pattern
            if pattern == OUT_ELEMWISE_FUSABLE:
                if phase == 0 and dom_pattern[nid] == ELEMWISE and \
                        self.check_path(nid, target, lambda k, sink: k <= BROADCAST):
                    self.commit_fuse(nid, target)
            elif pattern <= BROADCAST:
                if dom_pattern[nid] <= INJECTIVE or dom_pattern[nid] == COMM_REDUCE:
                    if self.check_path(nid, target, _broadcast_path_ok):
                        self.commit_fuse(nid, target)
            elif pattern in (INJECTIVE, TUPLE):
                if phase == 1 and self.check_path(nid, target, lambda k, sink: k <= INJECTIVE):
                    self.commit_fuse(nid, target)

    def _phase_two(self, nid, target) -> None:
        # Fuse injective ops into an intermediate tuple that itself fused into its consumer.
        if self.groups[nid].pattern > INJECTIVE:
            return
        parent_group = self.groups[target]
        root_group = parent_group.find_root()
        if root_group.pattern == TUPLE:
            return
        if parent_group.pattern == TUPLE and root_group.pattern <= INJECTIVE:
            if self.check_path(nid, target, lambda k, sink: k <= INJECTIVE):
                self.commit_fuse(nid, target)


def _broadcast_path_ok(kind, is_sink) -> bool:
    if not is_sink:
        return kind <= INJECTIVE
    return kind <= BROADCAST or kind in (COMM_REDUCE, INJECTIVE, OUT_ELEMWISE_FUSABLE)


def partition(graph: ForwardGraph, opt_level: int, max_depth: int = 256) -> list:
    """Assign every node of ``graph`` to a fusion group (Relay's ``GraphPartitioner``).

    Phase 0 fuses OUT_ELEMWISE_FUSABLE anchors (conv2d, dense, pooling) into an elementwise
    post-dominator through at most broadcast ops, and elementwise/broadcast ops into an
    injective or reducing post-dominator. Phase 1 also fuses injective ops and tuples into
    their post-dominator when the whole path is injective. Phase 2 fuses injective ops into
    intermediate tuples. Opaque nodes never fuse; a group never exceeds ``max_depth`` nodes.

    Args:
        graph: the forward graph.
        opt_level: 0 keeps every node in its own group.
        max_depth: the most nodes one group may hold.

    Returns:
        One :class:`Group` per node (use ``find_root()`` to compare groups).
    """
    partitioner = _Partitioner(graph, max_depth)
    if opt_level == 0:
        return partitioner.groups
    dom_parent, dom_pattern, _ = post_dominators(graph)
    for phase in range(3):
        partitioner.run_phase(dom_parent, dom_pattern, phase)
    return partitioner.groups
