"""Source locations attached to IR nodes.

A :class:`Span` says where in a text-format source a node came from. The parser attaches one
to every node it builds; passes keep it through ``node.replace(...)``; error messages print it
as ``source:line:col``. Lines and columns are 1-based.
"""

from __future__ import annotations

from dataclasses import dataclass


class SourceName(str):
    """The name of a source text (Relay's ``SourceName``); a ``str`` with a ``name``
    attribute, usable wherever a span's ``source_name`` is expected."""

    __slots__ = ()

    @property
    def name(self) -> str:
        """The name itself."""
        return str(self)


@dataclass(frozen=True, slots=True)
class Span:
    """A region of a source text.

    Args:
        source_name: the name the source was parsed under (a file path or ``"from_string"``).
        line: 1-based line of the first character.
        column: 1-based column of the first character.
        end_line: line of the character after the region (defaults to ``line``).
        end_column: column of the character after the region (defaults to ``column``).
    """

    source_name: str
    line: int
    column: int
    end_line: int = -1
    end_column: int = -1

    def __post_init__(self):
        if self.end_line < 0:
            object.__setattr__(self, "end_line", self.line)
        if self.end_column < 0:
            object.__setattr__(self, "end_column", self.column)

    def merge(self, other: "Span | None") -> "Span":
        """The smallest span covering ``self`` and ``other`` (same source assumed)."""
        if other is None:
            return self
        start = min((self.line, self.column), (other.line, other.column))
        end = max((self.end_line, self.end_column), (other.end_line, other.end_column))
        return Span(self.source_name, start[0], start[1], end[0], end[1])

    def __str__(self) -> str:
        return f"{self.source_name}:{self.line}:{self.column}"
