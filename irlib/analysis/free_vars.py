"""Variables and type variables of an expression: free, bound, all (``relay.analysis``).

Orders follow TVM's: variables in the order a left-to-right depth-first walk first meets them
(a binder counts where it binds: a function's parameters before its body, a let variable before
its value). Every walk is iterative and visits each node of a DAG once.

Example::

    x, y = var("x"), var("y")
    f = Function([x], x + y)
    free_vars(f)   == [y]
    bound_vars(f)  == [x]
    all_vars(f)    == [x, y]
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir import types as T
from ..ir.functor import binder_set, children, pattern_vars, post_order
from ..ir.functor import free_vars as _free_vars
from ..ir.type_functor import iter_types


def _var_leaves(expr) -> list:
    return [node for node in post_order(expr) if type(node) is E.Var]


def free_vars(expr) -> list:
    """Variables used in ``expr`` but bound nowhere in it, in first-occurrence order.

    Args:
        expr: an expression.

    Returns:
        A list of :class:`~irlib.ir.expr.Var` (the parameter order ``IRModule.from_expr``
        uses).
    """
    return _free_vars(expr)


def bound_vars(expr) -> list:
    """Variables bound in ``expr`` (parameters, let variables, pattern variables).

    Args:
        expr: an expression, or a pattern (then its pattern variables).

    Returns:
        A list of Vars in binding order.
    """
    if isinstance(expr, E.Pattern):
        return pattern_vars(expr)
    bound = binder_set(expr)
    return [v for v in _var_leaves(expr) if v in bound]


def all_vars(expr) -> list:
    """Every variable of ``expr``, bound or free, in first-occurrence order.

    Args:
        expr: an expression.
    """
    return _var_leaves(expr)


class _TypeVarCollector:
    """Type variables met in a pre-order walk, and those a binder binds (TVM's
    TypeVarEVisitor): function type parameters, function-type type parameters, and, when a
    module is given, the type parameters of the ADT each constructor belongs to."""

    def __init__(self, mod=None):
        self.mod = mod
        self.seen: dict = {}      # insertion-ordered set
        self.bound: dict = {}

    def add(self, type_var, bound: bool = False) -> None:
        self.seen.setdefault(type_var, None)
        if bound:
            self.bound.setdefault(type_var, None)

    def visit_type(self, ty) -> None:
        if ty is None:
            return
        for current in iter_types(ty):
            if isinstance(current, T.FuncType):
                for param in current.type_params:
                    self.add(param, bound=True)
            elif isinstance(current, T.TypeData):
                for param in current.type_vars:
                    self.add(param, bound=True)
            elif isinstance(current, T.TypeVar):
                self.add(current)

    def visit_expr(self, expr) -> None:
        seen_nodes = set()
        stack = [expr]
        while stack:
            node = stack.pop()
            if node in seen_nodes:
                continue
            seen_nodes.add(node)
            kind = type(node)
            if kind is E.Var:
                self.visit_type(node.type_annotation)
            elif kind is E.Function:
                for param in node.type_params:
                    self.add(param, bound=True)
                for param in node.params:
                    self.visit_type(param.type_annotation)
                self.visit_type(node.ret_type)
            elif kind is E.Call:
                for ty in node.type_args:
                    self.visit_type(ty)
            elif kind is E.Constructor:
                self.visit_constructor(node)
            elif kind is E.Match:
                for clause in node.clauses:
                    self.visit_pattern_constructors(clause.lhs)
            stack.extend(reversed(children(node)))

    def visit_pattern_constructors(self, pattern) -> None:
        stack = [pattern]
        while stack:
            current = stack.pop()
            if isinstance(current, E.PatternConstructor):
                self.visit_constructor(current.constructor)
            if isinstance(current, (E.PatternConstructor, E.PatternTuple)):
                stack.extend(reversed(current.patterns))

    def visit_constructor(self, ctor) -> None:
        # NOTE: without a module the ADT's definition (which binds the type variables in
        # the constructor's field types) is unknown, so constructors contribute nothing.
        if self.mod is None or ctor.belong_to not in self.mod:
            return
        data = self.mod[ctor.belong_to]
        for param in data.type_vars:
            self.add(param, bound=True)
        for ty in ctor.inputs:
            self.visit_type(ty)

    def run(self, expr_or_type) -> "_TypeVarCollector":
        if isinstance(expr_or_type, T.Type):
            self.visit_type(expr_or_type)
        else:
            self.visit_expr(expr_or_type)
        return self


def free_type_vars(expr_or_type, mod=None) -> list:
    """Type variables used in an expression or type but bound nowhere in it.

    Args:
        expr_or_type: an expression or a type.
        mod: the module defining the ADTs whose constructors the expression uses.

    Returns:
        A list of :class:`~irlib.ir.types.TypeVar` in first-occurrence order.
    """
    found = _TypeVarCollector(mod).run(expr_or_type)
    return [tv for tv in found.seen if tv not in found.bound]


def bound_type_vars(expr_or_type, mod=None) -> list:
    """Type variables bound in an expression or type (type parameters), in binding order.

    Args:
        expr_or_type: an expression or a type.
        mod: the module defining the ADTs whose constructors the expression uses.
    """
    return list(_TypeVarCollector(mod).run(expr_or_type).bound)


def all_type_vars(expr_or_type, mod=None) -> list:
    """Every type variable of an expression or type, bound or free, in first-occurrence order.

    Args:
        expr_or_type: an expression or a type.
        mod: the module defining the ADTs whose constructors the expression uses.
    """
    return list(_TypeVarCollector(mod).run(expr_or_type).seen)
