"""The Relay text format (v0.0.5): printer, parser and metadata section.

See docs/text-format.md for the grammar, the printing conventions and the parser's design.
"""

from .parser import fromtext, parse, parse_expr
from .printer import VERSION_HEADER, astext, pretty_print
from ..ir import hooks as _hooks

# node.astext() / str(node) of the IR call the printer through these hooks (layer rule).
_hooks.install("astext", astext)
_hooks.install("pretty_print", pretty_print)

__all__ = ["VERSION_HEADER", "astext", "pretty_print", "parse", "parse_expr", "fromtext"]
