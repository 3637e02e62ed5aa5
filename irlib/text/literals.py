"""Spelling of scalar literals and attribute values in the text format.

Scalars print inline with a dtype suffix (``42``, ``42i16``, ``42i64``, ``3f``, ``0.5f16``,
``1e+10f64``, ``True``, ``inff``). Floats use the *shortest* digits that read back to the
same value in their own dtype (numpy's Dragon4 ``unique`` mode), laid out like C++ stream
output: positional unless the exponent is below -4 or at least ``max(6, digits)``, with an
at-least-two-digit signed exponent (``1e+10``, ``1e-05``). A value without an inline
spelling (NaN, ``inf`` outside float32, other dtypes, non-scalars) returns None and goes to
the metadata section.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir.dims import AnyDim, DimExpr, format_dim
from ..ir.types import Type
from ..ir.type_text import type_to_text

# dtype -> (kind, suffix) of the dtypes with an inline literal
_INLINE = {np.dtype("int32"): ("int", ""), np.dtype("int16"): ("int", "i16"),
           np.dtype("int64"): ("int", "i64"), np.dtype("float32"): ("float", "f"),
           np.dtype("float16"): ("float", "f16"), np.dtype("float64"): ("float", "f64"),
           np.dtype("bool"): ("bool", "")}


def format_float(value) -> str:
    """Shortest round-tripping digits of a finite float, C++-style layout, no suffix.

    Args:
        value: a numpy float16/float32/float64 scalar (digits are shortest *for that
            dtype*), or a Python float (treated as float64).

    Returns:
        E.g. ``"3"``, ``"0.5"``, ``"0.1"``, ``"1e+10"``, ``"1e-05"``, ``"-0"``.
    """
    if not isinstance(value, np.floating):
        value = np.float64(value)
    scientific = np.format_float_scientific(value, unique=True, trim="-", exp_digits=2)
    mantissa, exponent_text = scientific.split("e")
    exponent = int(exponent_text)
    digits = len(mantissa.lstrip("-").replace(".", ""))
    if exponent < -4 or exponent >= max(6, digits):
        return f"{mantissa}e{exponent_text}"
    return np.format_float_positional(value, unique=True, trim="-")


def scalar_literal(array: np.ndarray):
    """The inline literal of a 0-d array, or None if it needs the metadata section.

    Args:
        array: the constant's data.

    Returns:
        The literal text, or None (non-scalar, NaN, non-float32 infinity, or a dtype other
        than int16/int32/int64/float16/float32/float64/bool).
    """
    if array.ndim != 0:
        return None
    spec = _INLINE.get(array.dtype)
    if spec is None:
        return None
    kind, suffix = spec
    value = array.item()
    if kind == "int":
        return f"{value}{suffix}"
    if kind == "bool":
        return "True" if value else "False"
    if math.isnan(value):
        return None
    if math.isinf(value):
        if suffix != "f":
            return None
        return "-inff" if value < 0 else "inff"
    return format_float(array[()]) + suffix


def attr_value_text(value, other_text) -> str:
    """The text of one attribute value.

    ints ``3``, floats ``0.5f`` (shortest float64 digits: the parser reads attribute floats
    as Python floats), ``inff``/``-inff``/``nanf``, strings ``"NCHW"``, ``True``/``False``,
    ``None``, tuples and lists ``[1, 1]`` (nested), dims ``n + 1``/``?``, types by their text.

    Args:
        value: the (normalised) attribute value.
        other_text: called for values of no kind above (IR nodes, arrays, other objects);
            returns their text.
    """
    # Attribute values are shallow, but nested tuples are walked with a stack anyway.
    pieces: list = []
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is _Piece:
            pieces.append(item.text)
        elif isinstance(item, (tuple, list)):
            stack.append(_Piece("]"))
            for position in range(len(item) - 1, -1, -1):
                stack.append(item[position])
                if position:
                    stack.append(_Piece(", "))
            stack.append(_Piece("["))
        else:
            pieces.append(_scalar_attr_text(item, other_text))
    return "".join(pieces)


def string_text(value: str) -> str:
    """``value`` as a string literal: in quotes, with ``\\``, ``"``, newline and tab escaped
    (``\\\\``, ``\\"``, ``\\n``, ``\\t``) so that the lexer reads back exactly ``value``.

    Args:
        value: any Python string.
    """
    escaped = (value.replace("\\", "\\\\").replace('"', '\\"')
               .replace("\n", "\\n").replace("\t", "\\t"))
    return '"' + escaped + '"'


class _Piece:
    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


def _scalar_attr_text(value, other_text) -> str:
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nanf"
        if math.isinf(value):
            return "inff" if value > 0 else "-inff"
        return format_float(value) + "f"
    if isinstance(value, str):
        return string_text(value)
    if isinstance(value, (DimExpr, AnyDim)):
        return format_dim(value)
    if isinstance(value, Type):
        return type_to_text(value)
    return other_text(value)
