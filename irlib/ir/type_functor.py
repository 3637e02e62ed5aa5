"""Walking and rewriting types: :func:`iter_types`, :class:`TypeVisitor`, :class:`TypeMutator`.

Both are iterative (explicit stack) and memoised on the type object, like the expression
functors in :mod:`irlib.ir.functor`.
"""

from __future__ import annotations

from . import types as T


def type_children(ty) -> tuple:
    """The immediate sub-types of ``ty``, in printing order."""
    if isinstance(ty, T.TupleType):
        return ty.fields
    if isinstance(ty, T.FuncType):
        return ty.type_params + ty.arg_types + (ty.ret_type,)
    if isinstance(ty, T.TypeCall):
        return (ty.func,) + ty.args
    if isinstance(ty, T.RefType):
        return (ty.value,)
    if isinstance(ty, T.TypeRelation):
        return ty.args
    return ()


def rebuild_type(ty, new_children):
    """A copy of ``ty`` with ``new_children`` (as :func:`type_children` orders them);
    ``ty`` itself when every child is unchanged."""
    old = type_children(ty)
    if len(old) == len(new_children) and all(a is b for a, b in zip(old, new_children)):
        return ty
    if isinstance(ty, T.TupleType):
        return T.TupleType(new_children, span=ty.span)
    if isinstance(ty, T.FuncType):
        n_params, n_args = len(ty.type_params), len(ty.arg_types)
        return T.FuncType(new_children[n_params:n_params + n_args], new_children[-1],
                          new_children[:n_params], ty.type_constraints, span=ty.span)
    if isinstance(ty, T.TypeCall):
        return T.TypeCall(new_children[0], new_children[1:], span=ty.span)
    if isinstance(ty, T.RefType):
        return T.RefType(new_children[0], span=ty.span)
    if isinstance(ty, T.TypeRelation):
        return T.TypeRelation(ty.func, new_children, ty.num_inputs, ty.attrs, span=ty.span)
    return ty


def iter_types(ty, children_of=None):
    """Yield ``ty`` and every type inside it (pre-order, left to right, each object once).

    Args:
        ty: the root type.
        children_of: the function listing a type's children (default
            :func:`type_children`); pass another to see through something else too (the
            unifier's bound holes).
    """
    children_of = children_of or type_children
    seen = set()
    stack = [ty]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        stack.extend(reversed(children_of(current)))


class TypeVisitor:
    """Calls ``visit_<kind>(ty)`` on every type reachable from the root, children first.

    Override ``visit_tensor_type``, ``visit_type_var``, ... (snake-case class names);
    the default for each does nothing.
    """

    def visit(self, ty):
        """Visit ``ty`` and everything inside it."""
        for node in reversed(list(iter_types(ty))):
            handler = getattr(self, "visit_" + _snake(type(node).__name__), None)
            if handler is not None:
                handler(node)


class TypeMutator:
    """Rewrites a type bottom-up: ``visit_<kind>(ty)`` receives the type with its children
    already rewritten and returns its replacement (default: unchanged)."""

    def visit(self, ty):
        """Rewrite ``ty``; returns the new type (the same object if nothing changed)."""
        memo: dict = {}
        stack = [(ty, False)]
        while stack:
            node, expanded = stack.pop()
            if id(node) in memo:
                continue
            children = type_children(node)
            if not expanded:
                stack.append((node, True))
                stack.extend((c, False) for c in reversed(children) if id(c) not in memo)
                continue
            rebuilt = rebuild_type(node, tuple(memo[id(c)] for c in children))
            handler = getattr(self, "visit_" + _snake(type(node).__name__), None)
            memo[id(node)] = handler(rebuilt) if handler is not None else rebuilt
        return memo[id(ty)]


def substitute_type(ty, mapping: dict):
    """``ty`` with type variables replaced per ``mapping`` (TypeVar -> Type)."""
    if not mapping:
        return ty

    class _Substitute(TypeMutator):
        def visit_type_var(self, var):
            return mapping.get(var, var)

        def visit_incomplete_type(self, hole):
            return mapping.get(hole, hole)

    return _Substitute().visit(ty)


def _snake(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and not name[i - 1].isupper():
            out.append("_")
        out.append(ch.lower())
    return "".join(out)
