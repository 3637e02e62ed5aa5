"""Mismatch messages of :func:`irlib.ir.structural.assert_structural_equal`."""

from __future__ import annotations

import numpy as np

from ..ndarray import NDArray
from . import expr as E
from . import types as T
from .functor import children


def render_path(path) -> str:
    """``body*3.args[1]`` for a linked path; repeated segments are run-length compressed."""
    segments = []
    while path is not None:
        path, segment = path
        segments.append(segment)
    segments.reverse()
    pieces, index = [], 0
    while index < len(segments):
        segment, count = segments[index], 1
        while index + count < len(segments) and segments[index + count] == segment:
            count += 1
        pieces.append(segment if count < 4 else f"{segment}*{count}")
        if 1 < count < 4:
            pieces.extend([segment] * (count - 1))
        index += count
    text = ""
    for piece in pieces:
        text += piece if (not text or piece.startswith("[")) else "." + piece
    return text or "<root>"


def describe(value) -> str:
    """A short spelling of one side of a mismatch (``%x``, ``1.0 (float32)``, a type).

    Args:
        value: the expression, type or plain value on that side.
    """
    if isinstance(value, (E.Constant, NDArray, np.ndarray)):
        array = np.asarray(value.data.numpy() if isinstance(value, E.Constant) else value)
        if array.size <= 6:
            body = np.array2string(array, separator=", ") if array.ndim else repr(array.item())
            return f"{body} ({array.dtype})"
        return f"{array.dtype} tensor of shape {array.shape}"
    if isinstance(value, E.Var):
        return f"%{value.name_hint}"
    if isinstance(value, E.GlobalVar):
        return f"@{value.name_hint}"
    if isinstance(value, E.Op):
        return f"op {value.name}"
    if isinstance(value, E.Constructor):
        return f"constructor {value.name_hint}"
    if isinstance(value, T.Type):
        try:
            return str(value)
        except Exception:  # noqa: BLE001 - a half-built type still gets described
            return repr(value)
    if isinstance(value, E.Node):
        return type(value).__name__
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def small_text(value) -> str:
    """The value in the text format when it is a small expression (else empty)."""
    if not isinstance(value, E.Expr) or isinstance(value, (E.Var, E.Constant, E.Op)):
        return ""
    seen, stack = set(), [value]
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            if len(seen) > 40:
                return ""
            stack.extend(children(node))
    try:
        text = str(value)
    except Exception:  # noqa: BLE001 - the printer is optional for messages
        return ""
    return text if len(text) <= 400 else ""
