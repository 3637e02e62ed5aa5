"""Rebuilding a checked function with its types filled in.

After the constraints of a function are solved, :class:`Resolver` rebuilds it bottom-up (one
pass over :func:`~irlib.ir.functor.post_order`, no recursion) as fresh nodes whose
``checked_type`` is the node's resolved type. The input is never touched. Like Relay's
resolver it also writes the inferred types into the program:

* a parameter, let variable or pattern variable without an annotation gets one;
* a function without ``ret_type`` gets one;
* a call of a polymorphic function or constructor gets its ``type_args``;
* the root function gets the type parameters generalisation produced.

Nodes keep their identity where identity is meaning: ``Op`` nodes are interned by the
registry, ``Constructor`` s are named by the module's type definitions and ``GlobalVar`` s are
the module's keys. They are shared with the input and get no ``checked_type`` here (the
driver sets the type of each GlobalVar).
"""

from __future__ import annotations

import dataclasses

from ..ir import expr as E
from ..ir.functor import pattern_vars, post_order, rename_pattern
from ..ir.type_functor import iter_types
from ..ir.types import FuncType, IncompleteType

_SHARED_KINDS = (E.Op, E.Constructor, E.GlobalVar)
_FIELD_NAMES: dict = {}


def fresh_copy(node, **changes):
    """A new node of ``node``'s class with the same fields except ``changes``, untyped.

    Fields are copied directly (the values come from a valid node), which skips
    ``__post_init__``: that matters for ``Constant``, whose constructor copies the data.
    """
    cls = type(node)
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(cls) if f.name != "_checked_type")
        _FIELD_NAMES[cls] = names
    new = object.__new__(cls)
    for name in names:
        object.__setattr__(new, name, changes[name] if name in changes else getattr(node, name))
    object.__setattr__(new, "_checked_type", None)
    return new


def has_holes(ty) -> bool:
    """Whether a type mentions an :class:`IncompleteType`.

    Args:
        ty: the type.
    """
    return any(isinstance(t, IncompleteType) for t in iter_types(ty))


class Resolver:
    """Rebuilds one top-level function with resolved types.

    Args:
        checker: the :class:`~irlib.typeinf.checker.Checker` that checked it.
        generalized: root hole -> TypeVar, the holes this function generalises.
        group_holes: GlobalVar -> the holes generalised for that global, for each member
            of the group of mutually recursive globals being checked; a call of one gets
            them (resolved here) appended to its type arguments.
    """

    def __init__(self, checker, generalized: dict, group_holes: dict | None = None):
        self.checker = checker
        self.generalized = generalized
        self.group_holes = group_holes or {}
        self.unresolved: dict = {}
        self._memo: dict = {}
        self._current = None

    def resolve(self, ty):
        """``ty`` with holes replaced (generalised holes by their type parameter)."""
        return self.checker.unifier.resolve(ty, self._memo, self._on_hole)

    def _on_hole(self, root):
        param = self.generalized.get(root)
        if param is not None:
            return param
        if root not in self.unresolved and not self.checker.unifier.is_poisoned(root):
            self.unresolved[root] = self._current
        return root

    def rebuild(self, func: E.Function, extra_type_params=()) -> E.Function:
        """The typed copy of top-level function ``func``.

        Args:
            func: the function (it and everything in it must have been checked).
            extra_type_params: type parameters to append to ``func``'s (generalisation).

        Returns:
            The new function. ``self.unresolved`` maps each hole that could not be resolved
            to the first node whose type mentions it; the caller reports them.
        """
        types = self.checker.types
        new: dict = {}
        for node in post_order(func):
            if isinstance(node, _SHARED_KINDS):
                new[node] = node
                continue
            self._current = node
            ty = self.resolve(types[node])
            if type(node) is E.Function:
                extra = extra_type_params if node is func else ()
                built, ty = self._build_function(node, new, ty, extra)
            else:
                built = _BUILDERS[type(node)](self, node, new, ty)
            new[node] = built.with_type(ty)
        return new[func]

    # -- per node kind ---------------------------------------------------------------------
    def _build_var(self, node, new, ty):
        annotation = node.type_annotation
        if annotation is None or has_holes(annotation):
            annotation = ty
        return fresh_copy(node, type_annotation=annotation)

    def _build_constant(self, node, new, ty):
        return fresh_copy(node)

    def _build_tuple(self, node, new, ty):
        return fresh_copy(node, fields=tuple(new[f] for f in node.fields))

    def _build_tuple_get_item(self, node, new, ty):
        return fresh_copy(node, tuple_value=new[node.tuple_value])

    def _build_call(self, node, new, ty):
        type_args = node.type_args
        instantiation = self.checker.type_args.get(node)
        extra = self.group_holes.get(node.op) if type(node.op) is E.GlobalVar else None
        if instantiation is not None or extra:
            type_args = tuple(self.resolve(t) for t in (instantiation or ()) + tuple(extra or ()))
        return fresh_copy(node, op=new[node.op], args=tuple(new[a] for a in node.args),
                          type_args=type_args)

    def _build_let(self, node, new, ty):
        return fresh_copy(node, var=new[node.var], value=new[node.value], body=new[node.body])

    def _build_if(self, node, new, ty):
        return fresh_copy(node, cond=new[node.cond], true_branch=new[node.true_branch],
                          false_branch=new[node.false_branch])

    def _build_function(self, node, new, ty, extra_type_params):
        ret_type = node.ret_type
        if ret_type is None or has_holes(ret_type):
            ret_type = ty.ret_type
        type_params = node.type_params + tuple(extra_type_params)
        params = tuple(new[p] for p in node.params)
        func_type = FuncType([p.checked_type for p in params], ty.ret_type, type_params)
        built = fresh_copy(node, params=params, body=new[node.body], ret_type=ret_type,
                           type_params=type_params)
        return built, func_type

    def _build_ref_create(self, node, new, ty):
        return fresh_copy(node, value=new[node.value])

    def _build_ref_read(self, node, new, ty):
        return fresh_copy(node, ref=new[node.ref])

    def _build_ref_write(self, node, new, ty):
        return fresh_copy(node, ref=new[node.ref], value=new[node.value])

    def _build_match(self, node, new, ty):
        clauses = []
        for clause in node.clauses:
            lhs = rename_pattern(clause.lhs, {v: new[v] for v in pattern_vars(clause.lhs)})
            clauses.append(fresh_copy(clause, lhs=lhs, rhs=new[clause.rhs]))
        return fresh_copy(node, data=new[node.data], clauses=tuple(clauses))


_BUILDERS = {
    E.Var: Resolver._build_var, E.Constant: Resolver._build_constant,
    E.Tuple: Resolver._build_tuple, E.TupleGetItem: Resolver._build_tuple_get_item,
    E.Call: Resolver._build_call, E.Let: Resolver._build_let, E.If: Resolver._build_if,
    E.RefCreate: Resolver._build_ref_create,
    E.RefRead: Resolver._build_ref_read, E.RefWrite: Resolver._build_ref_write,
    E.Match: Resolver._build_match,
}
