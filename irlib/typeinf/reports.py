"""Turning type errors into :class:`~irlib.errors.TypeErrorReport` s and one exception.

Inference collects every problem it finds in a function (or a group of mutually recursive
functions) before raising one :class:`~irlib.errors.TypeInferenceError` whose message lists
them all. Each report names the expression in two ways: a short description in the message
(``call to add``, ``variable %x``), which never fails, and the expression printed in the text
format, cut to a few lines so an error deep inside a large program stays readable.
"""

from __future__ import annotations

from ..errors import TypeErrorReport, TypeInferenceError
from ..ir import expr as E

_MAX_LINES = 12
_MAX_CHARS = 1200
# Printing is linear in the size of the expression; print only the first few reports.
_MAX_PRINTED = 20


def describe(node) -> str:
    """A short, always-available description of an expression (``call to add``).

    Args:
        node: the expression.
    """
    kind = type(node)
    if kind is E.Var:
        return f"variable %{node.name_hint}"
    if kind is E.GlobalVar:
        return f"global @{node.name_hint}"
    if kind is E.Call:
        callee = node.op
        if isinstance(callee, E.Op):
            return f"call to {callee.name}"
        if isinstance(callee, E.Constructor):
            return f"constructor call {callee.name_hint}(...)"
        if isinstance(callee, (E.GlobalVar, E.Var)):
            return f"call to {describe(callee).split()[-1]}"
        return "call"
    if kind is E.TupleGetItem:
        return f"projection .{node.index}"
    if kind is E.Constant:
        return f"constant of type {node.tensor_type}"
    if kind is E.Op:
        return f"operator {node.name}"
    if kind is E.Constructor:
        return f"constructor {node.name_hint}"
    if kind is E.Function:
        return f"function of {len(node.params)} parameter(s)"
    names = {E.Tuple: "tuple", E.Let: "let binding", E.If: "if expression",
             E.Match: "match expression", E.RefCreate: "ref creation",
             E.RefRead: "ref read", E.RefWrite: "ref write"}
    return names.get(kind, kind.__name__)


def expression_text(node) -> str:
    """``node`` in the text format, shortened; a short description if printing fails."""
    try:
        text = str(node)
    except Exception:  # noqa: BLE001 - the printer must never hide the type error
        return describe(node)
    lines = text.splitlines()
    if len(lines) > _MAX_LINES:
        text = "\n".join(lines[:_MAX_LINES] + [f"... ({len(lines) - _MAX_LINES} more lines)"])
    if len(text) > _MAX_CHARS:
        text = text[:_MAX_CHARS] + " ..."
    return text


class ErrorCollector:
    """Accumulates reports; :meth:`raise_if_any` raises them as one exception."""

    def __init__(self):
        self.reports: list = []

    def __len__(self) -> int:
        return len(self.reports)

    def add(self, node, message: str, expected=None, actual=None) -> None:
        """Record an error at ``node``.

        Args:
            node: the offending expression (or None).
            message: what is wrong; the node's description is prepended.
            expected: the type that was required, if any (printed in text syntax).
            actual: the type that was found, if any.
        """
        text = None
        if node is not None:
            message = f"{describe(node)}: {message}"
            text = expression_text(node) if len(self.reports) < _MAX_PRINTED else None
        self.reports.append(TypeErrorReport(
            message, expr_text=text,
            expected=None if expected is None else str(expected),
            actual=None if actual is None else str(actual),
            span=getattr(node, "span", None)))

    def raise_if_any(self, where: str) -> None:
        """Raise a :class:`TypeInferenceError` listing every report, if there are any.

        Args:
            where: what was being checked (``"@main"``), for the first line of the message.

        Raises:
            TypeInferenceError: when at least one error was recorded.
        """
        if not self.reports:
            return
        count = len(self.reports)
        header = f"type inference of {where} found {count} error{'s' if count > 1 else ''}:"
        body = "\n".join(f"{index}. " + str(report).replace("\n", "\n   ")
                         for index, report in enumerate(self.reports, start=1))
        reports, self.reports = self.reports, []
        raise TypeInferenceError(header + "\n" + body, errors=reports)
