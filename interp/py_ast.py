"""Small builders of Python ``ast`` nodes for :mod:`interp.py_codegen`.

Generated expressions travel as ``(expr, depth)`` pairs: ``depth`` is how deeply the Python
expression nests (0 for a name or a literal), so the generator can bind deep ones to names.
"""

from __future__ import annotations

import ast
import math

from irlib.ir.types import TensorType, TupleType


def name(identifier: str, store: bool = False) -> ast.Name:
    """The name ``identifier``, read (or assigned when ``store``)."""
    return ast.Name(identifier, ast.Store() if store else ast.Load())


def call(function: str, args) -> ast.Call:
    """``function(*args)`` for a function named ``function``."""
    return ast.Call(name(function), list(args), [])


def assign(identifier: str, value) -> ast.Assign:
    """The statement ``identifier = value``."""
    return ast.Assign([name(identifier, store=True)], value)


def atom(identifier: str):
    """``(name, 0)``: a generated expression that is just a name."""
    return (name(identifier), 0)


def literal(value):
    """``value`` (None, bool, int, float, str, or tuples of them) as an AST, else None."""
    if value is None or isinstance(value, (bool, int, str)):
        return ast.Constant(value)
    if isinstance(value, float):
        if math.isfinite(value):
            return ast.Constant(value)
        return call("float", [ast.Constant(repr(value))])
    if isinstance(value, tuple):
        items = [literal(item) for item in value]
        if any(item is None for item in items):
            return None
        return ast.Tuple(items, ast.Load())
    return None


def dtype_spec(ty):
    """What ``op_caller`` needs of a result type: its dtype, a tuple of them, or None."""
    if type(ty) is TensorType:
        return ty.dtype
    if type(ty) is TupleType:
        return tuple(dtype_spec(field) for field in ty.fields)
    return None


def locate(tree):
    """Give every node line 1 (``ast.fix_missing_locations`` recurses; this does not)."""
    for node in ast.walk(tree):
        if "lineno" in node._attributes:
            node.lineno = node.end_lineno = 1
            node.col_offset = node.end_col_offset = 0
    return tree


def tuples(data):
    """``ndarray.tolist()`` output with lists turned into tuples (for :func:`literal`)."""
    if not isinstance(data, list):
        return data
    # NOTE: recursion in literal() and here is bounded by the array's rank, not by the
    # program's size.
    return tuple(tuples(item) for item in data)
