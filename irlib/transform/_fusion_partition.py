"""The graph partitioner of FuseOps (Relay's ``GraphPartitioner``): union-find groups over the
indexed forward graph of :mod:`irlib.transform._fusion_graph`, merged in Relay's three
phases (see :func:`partition`). Iterative throughout.
"""

from __future__ import annotations

from ._fusion_graph import (BROADCAST, COMM_REDUCE, ELEMWISE, INJECTIVE, OPAQUE,
                            OUT_ELEMWISE_FUSABLE, TUPLE, ForwardGraph, post_dominators)


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
