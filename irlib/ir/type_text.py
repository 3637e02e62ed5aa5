"""Text-format spelling of types (used by ``str(type)``, the printer and error messages).

The type printer walks an explicit work stack, so a type nested thousands deep (a tuple of a
tuple of ...) prints in time linear in its size; expression printing lives in
:mod:`irlib.text.printer`.
"""

from __future__ import annotations

from .dims import format_dim
from . import types as T


def shape_to_text(shape) -> str:
    """``(1, 3)`` for a shape; a rank-1 shape prints ``(10)`` as in Relay."""
    return "(" + ", ".join(format_dim(d) for d in shape) + ")"


def type_to_text(ty, type_var_names=None) -> str:
    """Spell ``ty`` in the text format.

    Args:
        ty: a :class:`~irlib.ir.types.Type`.
        type_var_names: optional dict from TypeVar to the name to print (the printer uses it
            to keep distinct type variables apart).
    """
    names = type_var_names or {}
    # An explicit work stack (no Python recursion: a tuple type nested 5,000 deep prints):
    # each item is either a string to emit or a type to expand into further items, pushed in
    # reverse so they pop in reading order.
    out: list = []
    stack: list = [ty]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        stack.extend(reversed(_expand(item, names)))
    return "".join(out)


def _joined(items, sep: str = ", ") -> list:
    """``items`` interleaved with ``sep`` (a list of types and strings)."""
    parts: list = []
    for i, item in enumerate(items):
        if i:
            parts.append(sep)
        parts.append(item)
    return parts


def _expand(t, names) -> list:
    """One level of ``t``'s spelling: strings to emit and child types to expand in order."""
    if isinstance(t, T.TensorType):
        if not t.shape:
            return [t.dtype]
        return [f"Tensor[{shape_to_text(t.shape)}, {t.dtype}]"]
    if isinstance(t, T.TupleType):
        if len(t.fields) == 1:
            return ["(", t.fields[0], ",)"]
        return ["(", *_joined(t.fields), ")"]
    if isinstance(t, T.FuncType):
        parts: list = ["fn "]
        if t.type_params:
            parts += ["[", *_joined(t.type_params), "]"]
        return parts + ["(", *_joined(t.arg_types), ") -> ", t.ret_type]
    if isinstance(t, T.TypeVar):
        return [names.get(t, t.name_hint)]
    if isinstance(t, T.GlobalTypeVar):
        return [t.name_hint]
    if isinstance(t, T.TypeCall):
        if not t.args:
            return [t.func]
        return [t.func, "[", *_joined(t.args), "]"]
    if isinstance(t, T.RefType):
        return ["ref(", t.value, ")"]
    if isinstance(t, T.IncompleteType):
        return ["_"]
    if isinstance(t, T.TypeData):
        return [type_data_to_text(t, names)]
    if isinstance(t, T.TypeRelation):
        return [f"{getattr(t.func, '__name__', t.func)}(", *_joined(t.args), ")"]
    return [repr(t)]


def type_data_to_text(data, type_var_names=None, indent: str = "  ") -> str:
    """A ``type Name[A] { Ctor(A), ... }`` definition, one constructor a line.

    Args:
        data: the :class:`~irlib.ir.types.TypeData`.
        type_var_names: the names to print its type variables with (default: their name hints).
        indent: the indentation of each constructor line.
    """
    names = type_var_names or {}
    header = data.header.name_hint
    if data.type_vars:
        header += "[" + ", ".join(names.get(v, v.name_hint) for v in data.type_vars) + "]"
    if not data.constructors:
        return f"type {header} {{\n}}"
    lines = [f"type {header} {{"]
    for ctor in data.constructors:
        if ctor.inputs:
            args = ", ".join(type_to_text(t, names) for t in ctor.inputs)
            lines.append(f"{indent}{ctor.name_hint}({args}),")
        else:
            lines.append(f"{indent}{ctor.name_hint},")
    lines.append("}")
    return "\n".join(lines)
