"""Seeing the IR: the dataflow graph of a function drawn with Graphviz, or as text.

``irlib.visualize.show(mod)`` (also ``mod.show()`` and ``expr.show()``) returns a
:class:`GraphView`; in a notebook it displays as SVG (when the Graphviz ``dot`` program is
installed; else as the text listing). ``irlib show`` on the command line writes the same
drawing to ``.svg``/``.png``/``.html``/``.dot`` files. Only the IR is read here: nothing of
the runtime is imported.
"""

from __future__ import annotations

from .graph import DataflowGraph, GraphNode, dataflow_graph, type_text
from .render import DrawingError, have_dot, render, to_dot, to_html, to_text

__all__ = ["show", "GraphView", "DataflowGraph", "GraphNode", "dataflow_graph", "type_text",
           "DrawingError", "have_dot", "render", "to_dot", "to_html", "to_text"]


class GraphView:
    """A drawable dataflow graph (what ``show()`` returns).

    Args:
        graph: the :class:`DataflowGraph`.
    """

    def __init__(self, graph: DataflowGraph):
        self.graph = graph

    @property
    def source(self) -> str:
        """The Graphviz DOT source."""
        return to_dot(self.graph)

    def svg(self) -> str:
        """The SVG drawing (needs ``dot``; raises :class:`DrawingError` otherwise)."""
        return render(self.graph, "svg").decode("utf-8")

    def text(self) -> str:
        """The plain-text listing."""
        return to_text(self.graph)

    def save(self, path: str) -> None:
        """Write the drawing to ``path``; the format is its extension: ``.svg``, ``.png``,
        ``.html``, ``.dot`` or ``.txt``.

        Raises:
            DrawingError: an unknown extension, or ``dot`` missing for svg/png/html.
        """
        suffix = path.rsplit(".", 1)[-1].lower() if "." in path else ""
        if suffix in ("svg", "png"):
            data = render(self.graph, suffix)
        elif suffix == "html":
            data = to_html(self.graph).encode("utf-8")
        elif suffix in ("dot", "gv"):
            data = self.source.encode("utf-8")
        elif suffix == "txt":
            data = self.text().encode("utf-8")
        else:
            raise DrawingError(f"cannot draw to {path!r}: the format is chosen by the "
                               "extension, one of .svg, .png, .html, .dot, .txt")
        with open(path, "wb") as handle:
            handle.write(data)

    def _repr_svg_(self):
        """The notebook display: SVG when ``dot`` is installed, else None (the text repr)."""
        return self.svg() if have_dot() else None

    def __repr__(self) -> str:
        return self.text()


def show(obj, params=None, name: str = None) -> GraphView:
    """The :class:`GraphView` of an IRModule's ``main`` (or the named function), a
    function or an expression.

    Args:
        obj: an ``IRModule``, a ``Function`` or any expression. Run ``InferType`` first to see
            shapes and dtypes on the nodes (untyped nodes are drawn without them).
        params: names (dict keys or a set) of the parameters that are weights: drawn folded
            into the nodes using them.
        name: the function of a module to draw (default ``main``).
    """
    from ..ir.module import IRModule
    if isinstance(obj, IRModule):
        name = name or "main"
        return GraphView(dataflow_graph(obj[name], params, name))
    return GraphView(dataflow_graph(obj, params, name or "expr"))
