"""Strongly connected components of a directed graph (iterative Tarjan).

Type inference checks globals one component of the call graph at a time (callees first), and
:class:`~irlib.analysis.call_graph.CallGraph` reports recursive groups with it. The graph is
given as plain Python objects, so any hashable nodes work.
"""

from __future__ import annotations


def strongly_connected_components(nodes: list, edges: dict) -> list:
    """Tarjan's algorithm, iteratively; components come callees first.

    Args:
        nodes: the graph's nodes, in the order to start searches from.
        edges: node -> its successors.

    Returns:
        A list of components (lists of nodes); a component comes after every component it
        has an edge into.
    """
    index: dict = {}
    low: dict = {}
    on_stack: set = set()
    stack: list = []
    components: list = []
    for start in nodes:
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(edges[start]))]
        while work:
            node, successors = work[-1]
            descended = False
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(edges[succ])))
                    descended = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if descended:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member is node:
                        break
                components.append(component)
    return components
