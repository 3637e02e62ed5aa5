"""Symbolic dims as source text, and the size variables a fused group needs.

A group whose types carry symbolic dims (``Tensor[(n, 768), float32]``) is compiled once
for every size: its generated kernel takes the values of the size variables it mentions as
trailing integer arguments (``kernel(a0, a1, out0, sz_n)``), and its loop bounds, strides
and offsets are expressions over them. numba specialises on argument types only (an int is
an int64 whatever its value), so running at a new size compiles nothing.

* :func:`dim_source` writes one dim (an int or a :class:`~irlib.ir.dims.DimExpr`) as a
  Python/numba expression over those arguments;
* :func:`function_size_names` lists the size variables a primitive function mentions (in
  its parameter, body and result types, and in op attributes such as ``reshape``'s
  ``newshape``), sorted: the order in which the graph executor passes their values.
"""

from __future__ import annotations

import ast

from irlib.ir import expr as E
from irlib.ir.dims import AnyDim, DimExpr, format_dim
from irlib.ir.types import TensorType, TupleType

__all__ = ["SIZE_PREFIX", "dim_source", "dims_free_vars", "function_size_names",
           "is_symbolic_shape"]

SIZE_PREFIX = "sz_"
"""Prefix of the generated argument holding a size variable (``n`` -> ``sz_n``), so that a
size variable never collides with the generator's own names (``a0``, ``i0``, ``t3``...)."""


class _Rename(ast.NodeTransformer):
    """Prefix variable names and turn ``floordiv(a, b)`` into ``(a // b)``."""

    def __init__(self, prefix: str):
        self.prefix = prefix

    def visit_Name(self, node):
        return ast.copy_location(ast.Name(self.prefix + node.id, ast.Load()), node)

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == self.prefix + "floordiv" \
                and len(node.args) == 2:
            return ast.copy_location(ast.BinOp(node.args[0], ast.FloorDiv(), node.args[1]),
                                     node)
        raise ValueError(f"unexpected call in a dim: {ast.unparse(node)}")


def dim_source(dim, prefix: str = SIZE_PREFIX) -> str:
    """``dim`` as a Python expression over the size arguments.

    Args:
        dim: an int (written as is) or a :class:`DimExpr` (``2*n + 1`` ->
            ``(2 * sz_n + 1)``; ``floordiv(n, 2)`` -> ``(sz_n // 2)``).
        prefix: prepended to every size variable's name.

    Raises:
        ValueError: for ``Any`` (a dim with no value to compute).
    """
    if isinstance(dim, AnyDim):
        raise ValueError("an Any dim has no source expression")
    if not isinstance(dim, DimExpr):
        return str(int(dim))
    tree = ast.parse(format_dim(dim), mode="eval")
    tree = ast.fix_missing_locations(_Rename(prefix).visit(tree))
    text = ast.unparse(tree)
    return text if text.isidentifier() else f"({text})"


def is_symbolic_shape(shape) -> bool:
    """True if a dim of ``shape`` is a :class:`DimExpr`."""
    return any(isinstance(d, DimExpr) for d in shape)


def dims_free_vars(dims) -> set:
    """Names of the size variables the dims of ``dims`` mention."""
    names: set = set()
    for dim in dims:
        if isinstance(dim, DimExpr):
            names |= dim.free_vars()
    return names


def _type_vars(ty, names: set) -> None:
    stack = [ty]
    while stack:
        current = stack.pop()
        if isinstance(current, TensorType):
            names |= dims_free_vars(current.shape)
        elif isinstance(current, TupleType):
            stack.extend(current.fields)


def _value_vars(value, names: set) -> None:
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, DimExpr):
            names |= current.free_vars()
        elif isinstance(current, (tuple, list)):
            stack.extend(current)
        elif isinstance(current, dict):
            stack.extend(current.values())


def function_size_names(func: E.Function) -> tuple:
    """Sorted names of the size variables a (primitive) function mentions anywhere.

    Args:
        func: a typed function (its parameters' and nodes' types are read, and the
            attributes of its op calls).

    Returns:
        A tuple of names; empty for a fully static function.
    """
    names: set = set()
    for param in func.params:
        _type_vars(param._checked_type or param.type_annotation, names)
    seen, stack = set(), [func.body]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        _type_vars(getattr(node, "_checked_type", None), names)
        if isinstance(node, E.Call):
            if node.attrs is not None:
                _value_vars(dict(node.attrs), names)
            stack.extend(node.args)
        elif isinstance(node, E.Tuple):
            stack.extend(node.fields)
        elif isinstance(node, E.TupleGetItem):
            stack.append(node.tuple_value)
        elif isinstance(node, E.Let):
            stack.extend((node.value, node.body))
    return tuple(sorted(names))
