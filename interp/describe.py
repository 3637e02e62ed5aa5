"""One-line descriptions of IR nodes for interpreter error messages.

Printing a node with the full printer would print its whole subtree (in a 100,000-node
program, 100,000 lines), so error messages use this shallow form instead: the node itself
with its operands written as atoms, e.g. ``nn.conv2d(%x, %w, padding=[1, 1])`` or
``match (%xs) {...}``.
"""

from __future__ import annotations

from irlib.ir import expr as E
from irlib.text.literals import scalar_literal


def describe_node(node, bound_to=None) -> str:
    """A one-line summary of ``node`` with its operands abbreviated.

    Args:
        node: an expression.
        bound_to: the let variable the node is the value of, if known (printed ``%v = ...``).

    Returns:
        The text.
    """
    text = _describe(node)
    if bound_to is not None:
        text = f"%{bound_to.name_hint} = {text}"
    return text


def describe_span(node) -> str:
    """``file:line:col`` of ``node``, or a note that it has no source location."""
    span = getattr(node, "span", None)
    return str(span) if span is not None else "<no source location>"


def _describe(node) -> str:
    kind = type(node)
    if kind is E.Call:
        operands = [_atom(arg) for arg in node.args]
        if isinstance(node.op, E.Op) and node.attrs is not None:
            operands += [f"{key}={_attr_text(value)}"
                         for key, value in node.attrs.non_default_items()]
        return f"{_atom(node.op)}({', '.join(operands)})"
    if kind is E.Tuple:
        inner = ", ".join(_atom(field) for field in node.fields)
        return f"({inner},)" if len(node.fields) == 1 else f"({inner})"
    if kind is E.TupleGetItem:
        return f"{_atom(node.tuple_value)}.{node.index}"
    if kind is E.Let:
        return f"let %{node.var.name_hint} = {_atom(node.value)}; ..."
    if kind is E.If:
        return f"if ({_atom(node.cond)}) {{...}} else {{...}}"
    if kind is E.Match:
        keyword = "match" if node.complete else "match?"
        return f"{keyword} ({_atom(node.data)}) {{...}}"
    if kind is E.RefCreate:
        return f"ref({_atom(node.value)})"
    if kind is E.RefRead:
        return f"ref_read({_atom(node.ref)})"
    if kind is E.RefWrite:
        return f"ref_write({_atom(node.ref)}, {_atom(node.value)})"
    if kind is E.Function:
        params = ", ".join("%" + p.name_hint for p in node.params)
        return f"fn ({params}) {{...}}"
    return _atom(node)


def _atom(node) -> str:
    kind = type(node)
    if kind is E.Var:
        return "%" + node.name_hint
    if kind is E.GlobalVar:
        return "@" + node.name_hint
    if kind is E.Op:
        return node.name
    if kind is E.Constructor:
        return node.name_hint
    if kind is E.Constant:
        data = node.data.numpy()
        literal = scalar_literal(data)
        return literal if literal is not None else f"<constant {data.dtype}{list(data.shape)}>"
    if kind is E.Call:
        return f"{_atom(node.op)}(...)" if not isinstance(node.op, (E.Call, E.Function)) \
            else "(...)(...)"
    if kind is E.Function:
        return "fn (...) {...}"
    if kind is E.Tuple:
        return "(...)"
    return "(...)"


def _attr_text(value) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(str(item) for item in value) + "]"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)
