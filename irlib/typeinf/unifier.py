"""Unification of types: a union-find over holes (:class:`~irlib.ir.types.IncompleteType`).

Type inference gives every expression a type that may contain *holes*, then learns what the
holes stand for by unifying types that must agree (an argument with a parameter, the two
branches of an ``if``, ...). The :class:`Unifier` keeps the knowledge in two tables:

* ``_parent`` links a hole to another hole it has been unified with (union-find, with path
  compression); the hole at the end of a chain is the *root* of its class;
* ``_binding`` maps a root to the non-hole type its class stands for (that type may itself
  contain holes, still to be learnt).

Unifying two non-hole types computes their *merge*, which differs from both only through
``Any`` dims: ``Tensor[(?, 3)]`` and ``Tensor[(4, 3)]`` merge to ``Tensor[(?, 3)]``, as in
Relay, so a value that may have any size is never assumed to have a fixed one. Holes that
were bound to one of the two are rebound to the merge.

Unification is iterative (an explicit stack of pending pairs), so deeply nested types cost no
Python recursion. A failure raises :class:`UnificationError`; bindings already made are kept
(as in Relay; the caller reports the error and moves on).
"""

from __future__ import annotations

from ..ir.dims import Any, AnyDim
from ..ir.type_functor import iter_types, rebuild_type, type_children
from ..ir.types import (FuncType, GlobalTypeVar, IncompleteType, RefType, TensorType,
                        TupleType, Type, TypeCall, TypeVar)


class UnificationError(Exception):
    """Two types cannot be made equal.

    Args:
        detail: what differs (``"dtype float32 vs int32"``, ``"dimension 1: 3 vs 4"``).
    """

    def __init__(self, detail: str):
        super().__init__(detail)
        self.detail = detail


def fresh_hole() -> IncompleteType:
    """A new, unconstrained hole."""
    return IncompleteType()


def instantiate(func_type: FuncType, type_args=None) -> tuple:
    """A monomorphic copy of a polymorphic function type.

    Args:
        func_type: a :class:`FuncType` with ``type_params``.
        type_args: the types to put for the type parameters; fresh holes when None.

    Returns:
        ``(FuncType without type_params, the type arguments used)``.
    """
    if type_args is None:
        type_args = tuple(fresh_hole() for _ in func_type.type_params)
    mapping = dict(zip(func_type.type_params, type_args))
    arg_types = tuple(substitute(t, mapping) for t in func_type.arg_types)
    ret_type = substitute(func_type.ret_type, mapping)
    return FuncType(arg_types, ret_type), tuple(type_args)


def substitute(ty: Type, mapping: dict) -> Type:
    """``ty`` with the type variables (or holes) in ``mapping`` replaced.

    A faster equivalent of :func:`irlib.ir.type_functor.substitute_type` (instantiation
    runs once per call of a polymorphic function): shallow types take a bounded recursive
    path, deep ones an explicit stack.

    Args:
        ty: the type.
        mapping: TypeVar (or hole) -> replacement type.
    """
    if not mapping or type(ty) is TensorType:
        return ty
    try:
        return _substitute_shallow(ty, mapping, 0)
    except _TooDeep:
        pass
    done: dict = {}
    stack = [(ty, False)]
    while stack:
        node, expanded = stack.pop()
        key = id(node)
        if key in done and not expanded:
            continue
        kids = type_children(node)
        if not kids:
            done[key] = mapping.get(node, node) if isinstance(node, (TypeVar, IncompleteType)) \
                else node
        elif not expanded:
            stack.append((node, True))
            stack.extend((k, False) for k in kids if id(k) not in done)
        else:
            done[key] = rebuild_type(node, tuple(done[id(k)] for k in kids))
    return done[id(ty)]


class Unifier:
    """Union-find over holes plus the type each class of holes stands for."""

    def __init__(self):
        self._parent: dict = {}
        self._binding: dict = {}
        self._poisoned: set = set()

    # -- classes of holes --------------------------------------------------------------------
    def root(self, hole: IncompleteType) -> IncompleteType:
        """The representative hole of ``hole``'s class."""
        parent = self._parent
        top = hole
        while top in parent:
            top = parent[top]
        while hole is not top:  # path compression
            nxt = parent[hole]
            parent[hole] = top
            hole = nxt
        return top

    def shallow(self, ty: Type) -> Type:
        """``ty`` with an outermost hole replaced by what its class stands for.

        Returns the root hole itself when the class is still unconstrained.
        """
        if isinstance(ty, IncompleteType):
            top = self.root(ty)
            return self._binding.get(top, top)
        return ty

    def poison(self, hole: IncompleteType) -> None:
        """Mark a hole as standing for the type of an erroneous expression.

        Inference reports no follow-on errors ("cannot infer ...") about poisoned holes.
        """
        self._poisoned.add(self.root(hole))

    def is_poisoned(self, hole: IncompleteType) -> bool:
        """Whether ``hole``'s class was poisoned (see :meth:`poison`)."""
        return self.root(hole) in self._poisoned

    # -- unification -----------------------------------------------------------------------
    def unify(self, lhs: Type, rhs: Type) -> Type:
        """Make ``lhs`` and ``rhs`` equal; returns their merge.

        Args:
            lhs: a type (may contain holes); reported as "expected" by callers.
            rhs: another type.

        Returns:
            The merged type (see the module docstring about ``Any``).

        Raises:
            UnificationError: if they cannot be equal.
        """
        results: list = []
        stack: list = [("pair", lhs, rhs)]
        while stack:
            task = stack.pop()
            if task[0] == "pair":
                self._unify_pair(task[1], task[2], stack, results)
            else:
                self._finish(task, results)
        return results[-1]

    def _unify_pair(self, lhs, rhs, stack, results) -> None:
        lhs_root = self.root(lhs) if isinstance(lhs, IncompleteType) else None
        rhs_root = self.root(rhs) if isinstance(rhs, IncompleteType) else None
        left = self._binding.get(lhs_root, lhs_root) if lhs_root is not None else lhs
        right = self._binding.get(rhs_root, rhs_root) if rhs_root is not None else rhs
        if left is right:
            results.append(left)
            return
        # A bare ADT name used as a type means the ADT without arguments (``nat``).
        if type(left) is GlobalTypeVar:
            left = TypeCall(left, ())
        if type(right) is GlobalTypeVar:
            right = TypeCall(right, ())
        if isinstance(left, IncompleteType) and isinstance(right, IncompleteType):
            self._link(left, right)
            results.append(right)
            return
        if isinstance(left, IncompleteType):
            self._join(left, right, rhs_root)
            results.append(right)
            return
        if isinstance(right, IncompleteType):
            self._join(right, left, lhs_root)
            results.append(left)
            return
        if isinstance(left, TensorType) and isinstance(right, TensorType):
            merged = _merge_tensors(left, right)
            self._rebind(lhs_root, rhs_root, merged)
            results.append(merged)
            return
        if isinstance(left, FuncType) and isinstance(right, FuncType) and \
                (left.type_params or right.type_params):
            # Substitution for type parameters must see through holes.
            left, right = self.resolve(left), self.resolve(right)
        pairs, type_params = _component_pairs(left, right)
        stack.append(("finish", left, lhs_root, rhs_root, len(pairs), type_params))
        for pair in reversed(pairs):
            stack.append(("pair",) + pair)

    def _finish(self, task, results) -> None:
        _, left, lhs_root, rhs_root, count, type_params = task
        merged_children = tuple(results[len(results) - count:])
        del results[len(results) - count:]
        if isinstance(left, FuncType):
            # The pairs were (args..., ret); the merge is as polymorphic as the less
            # polymorphic side (see _function_pairs).
            merged = left
            old = left.arg_types + (left.ret_type,)
            if type_params != left.type_params or \
                    any(a is not b for a, b in zip(old, merged_children)):
                merged = FuncType(merged_children[:-1], merged_children[-1], type_params)
        elif isinstance(left, TypeCall):
            merged = rebuild_type(left, (left.func,) + merged_children)
        else:
            merged = rebuild_type(left, merged_children)
        self._rebind(lhs_root, rhs_root, merged)
        results.append(merged)

    def _link(self, lhs_root, rhs_root) -> None:
        self._parent[lhs_root] = rhs_root
        if lhs_root in self._poisoned:
            self._poisoned.add(rhs_root)

    def _join(self, hole_root, ty, ty_root) -> None:
        """Make the unconstrained class of ``hole_root`` stand for ``ty`` (whose own class
        is ``ty_root``, or None when ``ty`` is not a hole's binding)."""
        if self._occurs(hole_root, ty):
            raise UnificationError("a type cannot contain itself (recursive type)")
        if ty_root is not None:
            self._link(hole_root, ty_root)
        else:
            self._binding[hole_root] = ty

    def _rebind(self, lhs_root, rhs_root, merged) -> None:
        if lhs_root is not None and rhs_root is not None and lhs_root is not rhs_root:
            self._link(lhs_root, rhs_root)
            self._binding.pop(lhs_root, None)
        for top in (lhs_root, rhs_root):
            if top is not None:
                top = self.root(top)
                if self._binding.get(top) is not merged:
                    self._binding[top] = merged

    def _occurs(self, hole_root, ty) -> bool:
        if type(ty) is TensorType:
            return False
        def through_bindings(current):
            if isinstance(current, IncompleteType):
                bound = self._binding.get(self.root(current))
                return () if bound is None else (bound,)
            return type_children(current)

        return any(isinstance(current, IncompleteType) and self.root(current) is hole_root
                   for current in iter_types(ty, through_bindings))

    # -- reading results ---------------------------------------------------------------------
    def resolve(self, ty: Type, memo: dict | None = None, on_hole=None) -> Type:
        """``ty`` with every hole replaced by what it stands for, as far as known.

        Args:
            ty: the type.
            memo: an ``id -> (type, result)`` cache shared between calls; only valid while
                no new unification happens.
            on_hole: ``f(root_hole) -> Type`` for holes still unconstrained (default: keep
                the root hole).
        """
        try:
            return self._resolve_shallow(ty, memo, on_hole, 0)
        except _TooDeep:
            return self._resolve_deep(ty, {} if memo is None else memo, on_hole)

    def _resolve_shallow(self, ty, memo, on_hole, depth):
        # NOTE: recursion bounded by _FAST_DEPTH: the fast path for the (usual) shallow
        # types; deeper ones raise _TooDeep and go through the explicit-stack version.
        kind = type(ty)
        if kind is IncompleteType:
            ty = self.shallow(ty)
            kind = type(ty)
            if kind is IncompleteType:
                return on_hole(ty) if on_hole else ty
        if kind is TensorType:
            return ty
        if memo is not None:
            hit = memo.get(id(ty))
            if hit is not None:
                return hit[1]
        kids = type_children(ty)
        if not kids:
            return ty
        if depth >= _FAST_DEPTH:
            raise _TooDeep()
        result = rebuild_type(ty, tuple(self._resolve_shallow(k, memo, on_hole, depth + 1)
                                        for k in kids))
        if memo is not None:
            memo[id(ty)] = (ty, result)
        return result

    def _resolve_deep(self, ty, memo, on_hole):
        stack = [(ty, False)]
        while stack:
            node, expanded = stack.pop()
            if id(node) in memo and not expanded:
                continue
            if isinstance(node, IncompleteType):
                target = self.shallow(node)
                if isinstance(target, IncompleteType):
                    memo[id(node)] = (node, on_hole(target) if on_hole else target)
                elif not expanded:
                    stack.append((node, True))
                    stack.append((target, False))
                else:
                    memo[id(node)] = (node, memo[id(target)][1])
                continue
            kids = type_children(node)
            if not expanded:
                stack.append((node, True))
                stack.extend((k, False) for k in reversed(kids) if id(k) not in memo)
                continue
            memo[id(node)] = (node, rebuild_type(node, tuple(memo[id(k)][1] for k in kids)))
        return memo[id(ty)][1]

    def free_holes(self, ty: Type) -> list:
        """The unconstrained root holes in ``ty``, in order of first appearance."""
        if type(ty) is IncompleteType:
            ty = self.shallow(ty)
            if type(ty) is IncompleteType:
                return [ty]
        if type(ty) is TensorType:
            return []
        def through_bound_holes(current):
            if isinstance(current, IncompleteType):
                target = self.shallow(current)
                return () if isinstance(target, IncompleteType) else (target,)
            return type_children(current)

        found = []
        for current in iter_types(ty, through_bound_holes):
            if isinstance(current, IncompleteType):
                target = self.shallow(current)
                if isinstance(target, IncompleteType) and target not in found:
                    found.append(target)
        return found

    def is_resolved(self, ty: Type) -> bool:
        """True if ``ty`` contains no unconstrained hole."""
        return not self.free_holes(ty)


_FAST_DEPTH = 24


class _TooDeep(Exception):
    """A type is deeper than the recursive fast paths handle."""


def _substitute_shallow(ty, mapping, depth):
    kind = type(ty)
    if kind is TypeVar or kind is IncompleteType:
        return mapping.get(ty, ty)
    kids = type_children(ty)
    if not kids:
        return ty
    if depth >= _FAST_DEPTH:
        raise _TooDeep()
    return rebuild_type(ty, tuple(_substitute_shallow(k, mapping, depth + 1) for k in kids))


def _merge_tensors(left: TensorType, right: TensorType) -> TensorType:
    if left.dtype != right.dtype:
        raise UnificationError(f"dtype {left.dtype} vs {right.dtype}")
    if len(left.shape) != len(right.shape):
        raise UnificationError(f"rank {len(left.shape)} vs {len(right.shape)}")
    merged, changed = [], False
    for axis, (a, b) in enumerate(zip(left.shape, right.shape)):
        if a == b:
            merged.append(a)
        elif isinstance(a, AnyDim) or isinstance(b, AnyDim):
            merged.append(Any)
            changed = True
        else:
            raise UnificationError(f"dimension {axis}: {a} vs {b}")
    return TensorType(merged, left.dtype) if changed else left


def _component_pairs(left: Type, right: Type) -> tuple:
    """The pairs of sub-types that must unify for ``left`` and ``right`` to be equal, and
    the type parameters the merge keeps (function types only, else None)."""
    if isinstance(left, TupleType) and isinstance(right, TupleType):
        if len(left.fields) != len(right.fields):
            raise UnificationError(f"a {len(left.fields)}-tuple vs a {len(right.fields)}-tuple")
        return list(zip(left.fields, right.fields)), None
    if isinstance(left, FuncType) and isinstance(right, FuncType):
        return _function_pairs(left, right)
    if isinstance(left, TypeCall) and isinstance(right, TypeCall):
        if left.func is not right.func:
            raise UnificationError(f"type {left.func.name_hint} vs {right.func.name_hint}")
        if len(left.args) != len(right.args):
            raise UnificationError(f"{left.func.name_hint} with {len(left.args)} vs "
                                   f"{len(right.args)} type argument(s)")
        return list(zip(left.args, right.args)), None
    if isinstance(left, RefType) and isinstance(right, RefType):
        return [(left.value, right.value)], None
    if isinstance(left, (TypeVar, GlobalTypeVar)) or isinstance(right, (TypeVar, GlobalTypeVar)):
        raise UnificationError(f"{left} is not {right}")
    raise UnificationError(f"{_kind_name(left)} vs {_kind_name(right)}")


def _function_pairs(left: FuncType, right: FuncType) -> tuple:
    """Pairs of two function types, after lining up their type parameters.

    As in Relay, the side with more type parameters is specialised: its first parameters are
    renamed to the other side's, and the extra ones become fresh holes. So a polymorphic
    function (``Cons``, ``@id``) can be passed where a monomorphic one is expected.
    """
    if len(left.arg_types) != len(right.arg_types):
        raise UnificationError(f"a function of {len(left.arg_types)} argument(s) vs one "
                               f"of {len(right.arg_types)}")
    fewer, more = (left, right) if len(left.type_params) <= len(right.type_params) \
        else (right, left)
    mapping = dict(zip(more.type_params, fewer.type_params))
    for param in more.type_params[len(fewer.type_params):]:
        mapping[param] = fresh_hole()
    more_types = [substitute(t, mapping) for t in more.arg_types + (more.ret_type,)]
    fewer_types = list(fewer.arg_types + (fewer.ret_type,))
    if more is left:
        return list(zip(more_types, fewer_types)), fewer.type_params
    return list(zip(fewer_types, more_types)), fewer.type_params


def _kind_name(ty: Type) -> str:
    return {TensorType: "a tensor", TupleType: "a tuple", FuncType: "a function",
            TypeCall: "an ADT value", RefType: "a reference", TypeVar: "a type variable",
            GlobalTypeVar: "an ADT"}.get(type(ty), type(ty).__name__)
