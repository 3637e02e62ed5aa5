"""FoldConstant: evaluate constant subgraphs at compile time (Relay's ``FoldConstant``).

Every call of an op whose arguments are all constants (or tuples of constants) is evaluated
with the op's numpy reference implementation (:func:`irlib.op.registry.evaluate`) and
replaced by the resulting constant (a tuple of constants for a multi-output op). Also: a let
bound to a constant is inlined, an ``if`` on a constant condition becomes the chosen branch,
``(a, b).1`` becomes ``b`` (when ``a`` has no effect), and ``shape_of`` / ``ndarray_size`` of a statically shaped
value become constants. Never folded: calls without arguments (``zeros(shape)``), stateful
ops, ``device_copy``, calls whose attributes mention size variables (``full(1f,
shape=[n, n])``: the size is known only when the function runs), anything inside a
``Primitive`` function, and non-op callees (so no effect and no reference is ever evaluated).

Before/after::

    add(%x, multiply(add(1f, 1f), 2f))
    add(%x, 4f)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import IRError
from ..ir import expr as E
from ..ir.dim_binding import has_symbolic_attrs
from ..ir.module import IRModule
from ..ir.types import TensorType, TupleType
from ..limits import check_type_size
from ..op import registry
from ..ir.functor import ExprMutator
from ._rewrite import is_primitive, known_type, map_functions
from .dead_code import may_have_effect
from .eliminate_common_subexpr import is_stateful
from .pass_infra import ModulePass

_NEVER_FOLD = frozenset({"device_copy"})


def _is_constant(expr) -> bool:
    if isinstance(expr, E.Constant):
        return True
    return isinstance(expr, E.Tuple) and all(_is_constant(f) for f in expr.fields)


def _value(expr):
    if isinstance(expr, E.Constant):
        return expr.data.numpy()
    return tuple(_value(f) for f in expr.fields)


def _static_shape(node):
    ty = known_type(node)
    if isinstance(ty, TensorType) and all(isinstance(d, int) for d in ty.shape):
        return tuple(ty.shape)
    if isinstance(node, E.Constant):
        return tuple(node.data.shape)
    return None


class _Fold(ExprMutator):
    def __init__(self):
        super().__init__()
        self.inlined: set = set()

    def enter_function(self, node):
        return not is_primitive(node)

    def bind_let(self, let, new_value):
        if isinstance(new_value, E.Constant):
            self.memo[let.var] = new_value
            self.inlined.add(let)

    def visit_let(self, node, original):
        return node.body if original in self.inlined else node

    def visit_if(self, node, original):
        if isinstance(node.cond, E.Constant):
            return node.true_branch if bool(node.cond.data.numpy()) else node.false_branch
        return node

    def visit_tuple_get_item(self, node, original):
        value = node.tuple_value
        if not isinstance(value, E.Tuple):
            return node
        # NOTE: Relay projects any tuple literal; the other fields are dropped, so only when
        # evaluating them can have no effect.
        dropped = [f for i, f in enumerate(value.fields) if i != node.index]
        if all(_is_constant(f) or not any(may_have_effect(f).values()) for f in dropped):
            return value.fields[node.index]
        return node

    def visit_call(self, node, original):
        op = node.op
        if not isinstance(op, E.Op) or not node.args or op.name in _NEVER_FOLD \
                or is_stateful(op):
            return node
        if op.name in ("shape_of", "ndarray_size"):
            return self._fold_shape(node, original)
        if not all(_is_constant(a) for a in node.args):
            return node
        if has_symbolic_attrs(node.attrs):
            return node   # e.g. full(1f, shape=[n, n]): its size is known only at run time
        _check_result_size(op.name, node)
        try:
            result = registry.evaluate(op.name, [_value(a) for a in node.args], node.attrs)
        except IRError:
            return node   # left for run time, where the error is reported with context
        return _to_expr(result, node)

    def _fold_shape(self, node, original):
        shape = _static_shape(node.args[0]) or _static_shape(original.args[0])
        if shape is None or len(shape) == 0:
            return node   # rank 0 is unspecified in Relay; keep the call
        dtype = (node.attrs or {}).get("dtype", "int32")
        if node.op.name == "shape_of":
            return E.Constant(np.array(shape, dtype=dtype), span=node.span)
        return E.Constant(np.array(int(np.prod(shape)), dtype=dtype), span=node.span)


def _check_result_size(op_name, node) -> None:
    """Raise TensorTooLargeError before evaluating a call whose result is over the limit of
    :mod:`irlib.limits` (the result type comes from the op's relation on the constants)."""
    op_def = registry.get_def(op_name)
    if op_def.type_rel is None:
        return
    arg_types = []
    for arg in node.args:
        if isinstance(arg, E.Tuple):
            arg_types.append(TupleType([_constant_type(f) for f in arg.fields]))
        else:
            arg_types.append(_constant_type(arg))
    try:
        ty = op_def.type_rel(arg_types, node.attrs)
    except Exception:  # noqa: BLE001 - an ill-typed call is reported by evaluation/inference
        return
    if ty is not None:
        check_type_size(ty, f"FoldConstant of {op_name}")


def _constant_type(const):
    array = const.data.numpy()
    return TensorType(array.shape, "string" if array.dtype.kind in "USO" else str(array.dtype))


def _to_expr(value, node):
    if isinstance(value, tuple):
        return E.Tuple(tuple(_to_expr(v, node) for v in value), span=node.span)
    return E.Constant(np.asarray(value), span=node.span)


def fold_constant(expr: E.Expr) -> E.Expr:
    """``expr`` with its constant subgraphs evaluated (see the module docstring).

    Args:
        expr: an expression (possibly with free variables).

    Returns:
        The new expression.
    """
    return _Fold().visit(expr)


@dataclass(frozen=True)
class FoldConstant(ModulePass):
    """Fold constant subgraphs of every function into constants."""

    name: ClassVar[str] = "FoldConstant"
    opt_level: ClassVar[int] = 2

    def transform_module(self, mod: IRModule, ctx=None) -> IRModule:
        """The module with constants folded."""
        return map_functions(mod, fold_constant)
