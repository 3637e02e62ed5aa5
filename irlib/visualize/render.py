"""Drawing a :class:`~irlib.visualize.graph.DataflowGraph`: Graphviz DOT source (through the
``graphviz`` Python package), SVG/PNG through the ``dot`` program, an HTML page, and a
plain-text listing for when ``dot`` is not installed."""

from __future__ import annotations

import html
import shutil

from ..errors import IRError

COLORS = {"input": "#d6eaf8", "op": "#fdebd0", "call": "#e8daef",
          "control": "#fadbd8", "output": "#d5f5e3"}
"""Fill colour of each node kind."""


class DrawingError(IRError):
    """The graph cannot be drawn in the asked format (no ``dot`` program, an unknown
    format)."""


def have_dot() -> bool:
    """Whether the Graphviz ``dot`` program is on ``PATH``."""
    return shutil.which("dot") is not None


def _label(node) -> str:
    lines = [node.title]
    if node.collapsed:
        shown = node.collapsed[:4]
        more = len(node.collapsed) - len(shown)
        lines.append(", ".join(shown) + (f", +{more}" if more > 0 else ""))
    if node.type_text:
        lines.append(node.type_text)
    return "\n".join(lines)


def to_digraph(graph):
    """The ``graphviz.Digraph`` of ``graph``: one box per node, fused groups as clusters."""
    import graphviz
    dot = graphviz.Digraph(graph.name, graph_attr={"rankdir": "TB", "fontname": "Helvetica"},
                           node_attr={"shape": "box", "style": "rounded,filled",
                                      "fontname": "Helvetica", "fontsize": "10"},
                           edge_attr={"fontname": "Helvetica", "fontsize": "9"})
    clusters = {index: graphviz.Digraph(f"cluster_{index}",
                                        graph_attr={"label": label, "style": "dashed",
                                                    "fontsize": "9", "color": "#7f8c8d"})
                for index, label in graph.groups.items()}
    for node in graph.nodes:
        target = clusters[node.group] if node.group is not None else dot
        target.node(node.id, _label(node), fillcolor=COLORS.get(node.kind, "white"),
                    tooltip=node.title)
    for cluster in clusters.values():
        dot.subgraph(cluster)
    for node in graph.nodes:
        for source, label in node.inputs:
            dot.edge(source, node.id, label=label or None)
    return dot


def to_dot(graph) -> str:
    """The DOT source of ``graph`` (no ``dot`` program needed)."""
    return to_digraph(graph).source


def render(graph, fmt: str) -> bytes:
    """``graph`` rendered by the ``dot`` program in ``fmt`` (``svg``, ``png``).

    Raises:
        DrawingError: ``dot`` is not installed.
    """
    if not have_dot():
        raise DrawingError("the Graphviz `dot` program is not installed (Debian/Ubuntu: "
                           "apt-get install graphviz)")
    return to_digraph(graph).pipe(format=fmt)


def to_html(graph) -> str:
    """A standalone HTML page showing the SVG drawing of ``graph``."""
    svg = render(graph, "svg").decode("utf-8")
    svg = svg[svg.find("<svg"):]
    title = html.escape(f"irlib: @{graph.name}")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title>"
            f"</head>\n<body style=\"font-family: sans-serif\"><h1>{title}</h1>\n"
            f"<p>{graph.count('input')} inputs, {graph.count('op')} ops, "
            f"{len(graph.groups)} fused groups</p>\n{svg}\n</body></html>\n")


def to_text(graph) -> str:
    """A plain-text listing of ``graph``: one line per node in topological order, fused
    groups as indented blocks under a header line."""
    names = {}
    counter = 0
    lines = [f"@{graph.name}: {graph.count('input')} inputs, {graph.count('op')} ops, "
             f"{len(graph.groups)} fused groups"]
    current = None
    for node in graph.nodes:
        if node.group != current:
            current = node.group
            if current is not None:
                lines.append(f"  [{graph.groups[current]}]")
        if node.kind == "input":
            names[node.id] = node.title
        else:
            names[node.id] = f"%{counter}"
            counter += 1
        indent = "    " if node.group is not None else "  "
        args = [names[source] + label for source, label in node.inputs] + node.collapsed
        ty = f" : {node.type_text}" if node.type_text else ""
        if node.kind == "input":
            lines.append(f"{indent}input {node.title}{ty}")
        elif node.kind == "output":
            lines.append(f"{indent}{node.title} = {', '.join(args)}{ty}")
        else:
            lines.append(f"{indent}{names[node.id]} = {node.title}({', '.join(args)}){ty}")
    return "\n".join(lines) + "\n"
