"""Text-format spelling of types (used by ``str(type)``, the printer and error messages).

Types are shallow in practice (a few levels), so this printer recurses; expression printing,
which must cope with 100,000-deep programs, lives in :mod:`irlib.text.printer`.
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

    def go(t) -> str:
        if isinstance(t, T.TensorType):
            if not t.shape:
                return t.dtype
            return f"Tensor[{shape_to_text(t.shape)}, {t.dtype}]"
        if isinstance(t, T.TupleType):
            if len(t.fields) == 1:
                return f"({go(t.fields[0])},)"
            return "(" + ", ".join(go(f) for f in t.fields) + ")"
        if isinstance(t, T.FuncType):
            params = ""
            if t.type_params:
                params = "[" + ", ".join(go(p) for p in t.type_params) + "]"
            args = ", ".join(go(a) for a in t.arg_types)
            return f"fn {params}({args}) -> {go(t.ret_type)}"
        if isinstance(t, T.TypeVar):
            return names.get(t, t.name_hint)
        if isinstance(t, T.GlobalTypeVar):
            return t.name_hint
        if isinstance(t, T.TypeCall):
            if not t.args:
                return go(t.func)
            return f"{go(t.func)}[" + ", ".join(go(a) for a in t.args) + "]"
        if isinstance(t, T.RefType):
            return f"ref({go(t.value)})"
        if isinstance(t, T.IncompleteType):
            return "_"
        if isinstance(t, T.TypeData):
            return type_data_to_text(t, names)
        if isinstance(t, T.TypeRelation):
            return f"{getattr(t.func, '__name__', t.func)}(" + ", ".join(go(a) for a in t.args) + ")"
        return repr(t)

    return go(ty)


def type_data_to_text(data, type_var_names=None, indent: str = "  ") -> str:
    """A ``type Name[A] { Ctor(A), ... }`` definition, one constructor a line."""
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
