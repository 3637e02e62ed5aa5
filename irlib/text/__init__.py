"""The Relay text format (v0.0.5): printer, parser and metadata section.

See docs/text-format.md for the grammar, the printing conventions and the parser's design.
"""

from .parser import fromtext, parse, parse_expr
from .printer import VERSION_HEADER, astext, pretty_print

__all__ = ["VERSION_HEADER", "astext", "pretty_print", "parse", "parse_expr", "fromtext"]
