"""The Relay text format (v0.0.5): printer, metadata section, and (soon) the parser.

See docs/text_format.md for the grammar and the printing conventions.
"""

from .printer import VERSION_HEADER, astext, pretty_print

__all__ = ["VERSION_HEADER", "astext", "pretty_print"]
