"""Structural equality and hashing of IR: ``structural_equal``, ``structural_hash``.

Two pieces of IR are structurally equal when they have the same shape and contents up to a
consistent renaming of *bound* variables, as ``tvm.ir.structural_equal``:

* bound variables (function parameters, let variables, match pattern variables, and type
  variables bound by a function's, a function type's or a type definition's type parameters)
  are matched pairwise at their binding site; their type annotations are compared there;
* free variables compare by identity, unless ``map_free_vars=True``: then a free variable of
  the left side is matched with the right side's variable at its first occurrence, and must
  correspond to it consistently from then on;
* constants compare by dtype, shape and raw bytes (so NaN equals an identical NaN);
* attributes compare by value; global variables, global type variables, ops and
  constructors by name (a constructor also by its type's name and arity);
* modules compare function by function and type definition by type definition, by name;
* spans, ``checked_type`` and variable names are ignored.

NOTE: [Sharing] Sharing is ignored: a DAG that uses one node twice equals a tree holding two
equal copies (TVM's "graph node" distinction is not reproduced). Bound-variable
correspondences are scoped to their binder's scope, so a shared function compared against two
separate copies matches each copy in turn. Pairs of nodes already found equal are memoised,
so comparing two DAGs is linear; the memo and the ``lhs is rhs`` shortcut assume well-formed
programs (every variable bound once and used only in its scope); the shortcut is taken only
while no bound variable is matched with a different one.

Both walks use explicit stacks, so 100,000-deep programs compare and hash without recursion.
:func:`assert_structural_equal` reports the first mismatch with its path, e.g.
``structural mismatch at body.args[1].data: 1.0 vs 2.0 (float32)``.
"""

from __future__ import annotations

import numpy as np

from ..ndarray import NDArray
from . import expr as E
from . import types as T
from .attrs import Attrs
from .dims import AnyDim, DimExpr
from .module import IRModule
from ._structural_messages import describe as _describe, render_path as _render_path, \
    small_text as _small_text


class StructuralMismatchError(AssertionError, ValueError):
    """Raised by :func:`assert_structural_equal`; the message names the first mismatch.

    Attributes:
        path: where the mismatch is (``"body.args[1]"``).
        lhs, rhs: the two mismatching values.
    """

    def __init__(self, message: str, path: str = "", lhs=None, rhs=None):
        super().__init__(message)
        self.path = path
        self.lhs = lhs
        self.rhs = rhs


def structural_equal(lhs, rhs, map_free_vars: bool = False) -> bool:
    """Whether ``lhs`` and ``rhs`` are structurally equal (see the module docstring).

    Args:
        lhs: an Expr, Type, TypeData, Attrs, IRModule, pattern, or plain value.
        rhs: the same.
        map_free_vars: match free variables on first occurrence instead of by identity.

    Returns:
        True if they are equal up to renaming of bound (and, if asked, free) variables.
    """
    return _Comparer(map_free_vars).run(lhs, rhs)


def assert_structural_equal(lhs, rhs, map_free_vars: bool = False) -> None:
    """Raise if ``lhs`` and ``rhs`` are not structurally equal.

    Args:
        lhs: left value.
        rhs: right value.
        map_free_vars: match free variables on first occurrence instead of by identity.

    Raises:
        StructuralMismatchError: (an AssertionError and a ValueError) naming the path of the
            first mismatch and both sides there.
    """
    comparer = _Comparer(map_free_vars)
    if comparer.run(lhs, rhs):
        return
    path, left, right, reason = comparer.failure
    where = _render_path(path)
    message = f"structural mismatch at {where}: {_describe(left)} vs {_describe(right)}"
    if reason:
        message += f" ({reason})"
    for side, value in (("lhs", left), ("rhs", right)):
        text = _small_text(value)
        if text:
            message += f"\n  {side}: " + text.replace("\n", "\n       ")
    raise StructuralMismatchError(message, where, left, right)


def structural_hash(node, map_free_vars: bool = False) -> int:
    """A hash consistent with :func:`structural_equal` (equal values hash alike).

    Invariant under renaming of bound variables; deterministic across processes; linear in
    the number of distinct nodes of a DAG.

    Args:
        node: an Expr, Type, TypeData, Attrs, IRModule or plain value.
        map_free_vars: hash free variables by their type only (as equality with
            ``map_free_vars=True`` needs) instead of also by name.

    Returns:
        A non-negative int.
    """
    from ._structural_hash import Hasher
    return Hasher(map_free_vars).hash(node) & 0xFFFFFFFFFFFFFFFF


# -- the comparison machine -----------------------------------------------------------------------

_COMPARE, _UNBIND, _DONE = 0, 1, 2
_BINDERS = (E.Var, T.TypeVar, T.IncompleteType)


def var_annotation(var):
    """A variable's annotation for comparison: ``_`` (an IncompleteType) counts as no
    annotation, since both mean "to be inferred" (Relay's parser gives ``%x : _`` a hole,
    while ``relay.Var("x")`` has none, and its tests expect the two to be equal).

    Args:
        var: the variable.
    """
    annotation = var.type_annotation
    return None if isinstance(annotation, T.IncompleteType) else annotation


class _Comparer:
    """Explicit-stack comparison. Handlers return False (after :meth:`fail`), True (equal
    leaves), or ``(children, binds)``: pairs still to compare and variables bound for them."""

    def __init__(self, map_free_vars: bool):
        self.map_free_vars = map_free_vars
        self.lhs_map: dict = {}
        self.rhs_map: dict = {}
        self.memo: set = set()
        self.failure = None
        # Number of in-scope correspondences between two *different* variables; while it is
        # zero, an object compared with itself is equal without looking inside.
        self.renamed = 0

    def run(self, lhs, rhs) -> bool:
        stack = [(_COMPARE, lhs, rhs, None)]
        memo = self.memo
        while stack:
            task = stack.pop()
            if task[0] == _DONE:
                memo.add((id(task[1]), id(task[2])))
                continue
            if task[0] == _UNBIND:
                for left, right in task[1]:
                    del self.lhs_map[left]
                    del self.rhs_map[right]
                    self.renamed -= left is not right
                continue
            _, left, right, path = task
            # NOTE: ``fn (%x, %y) { B }`` vs ``fn (%y, %x) { B }`` with one shared body B must
            # differ, so the identity shortcut is only sound with no renaming in scope.
            if left is right and not self.renamed and not self.map_free_vars \
                    and not isinstance(left, _BINDERS):
                continue
            if (id(left), id(right)) in memo:
                continue
            result = self.compare(left, right, path)
            if result is True:
                continue
            if result is False:
                return False
            kids, binds = result
            if isinstance(left, E.Expr):
                stack.append((_DONE, left, right))
            if binds:
                stack.append((_UNBIND, binds))
            for kid_left, kid_right, segment in reversed(kids):
                stack.append((_COMPARE, kid_left, kid_right, (path, segment)))
        return True

    def fail(self, path, left, right, reason: str = "") -> bool:
        self.failure = (path, left, right, reason)
        return False

    def compare(self, left, right, path):
        kind = type(left)
        if kind is not type(right):
            if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
                return self.sequence(left, right, path, "", [])
            if isinstance(left, (E.Node, T.Type)) or isinstance(right, (E.Node, T.Type)):
                return self.fail(path, left, right, "different kinds of node")
            return self.fail(path, left, right)
        handler = _HANDLERS.get(kind)
        if handler is not None:
            return handler(self, left, right, path)
        if kind in (list, tuple):
            return self.sequence(left, right, path, "", [])
        if isinstance(left, (E.Node, T.Type)):
            return self.fail(path, left, right, f"cannot compare {kind.__name__}")
        return True if _same_value(left, right) else self.fail(path, left, right)

    # -- helpers for handlers --------------------------------------------------------------
    def sequence(self, left, right, path, segment: str, kids: list):
        """Queue element-wise comparison; False if the lengths differ."""
        if len(left) != len(right):
            where = (path, segment) if segment else path
            return self.fail(where, left, right, f"length {len(left)} vs {len(right)}")
        for index, (a, b) in enumerate(zip(left, right)):
            kids.append((a, b, f"{segment}[{index}]"))
        return (kids, [])

    def define(self, left, right, path, segment: str, kids: list, binds: list) -> bool:
        """Match two binders; queue their annotations (kinds for type variables)."""
        if left in self.lhs_map or right in self.rhs_map:
            if self.lhs_map.get(left) is not right:
                return self.fail((path, segment), left, right,
                                 "variable bound twice or bound to different variables")
        else:
            self.lhs_map[left] = right
            self.rhs_map[right] = left
            self.renamed += left is not right
            binds.append((left, right))
        if isinstance(left, E.Var):
            kids.append((var_annotation(left), var_annotation(right),
                         f"{segment}.type_annotation"))
        elif left.kind != right.kind:
            return self.fail((path, segment), left, right, "type variable kinds differ")
        return True

    def use(self, left, right, path):
        """A variable occurrence: bound ones must correspond, free ones per the mode."""
        mapped = self.lhs_map.get(left)
        if mapped is not None:
            return True if mapped is right else self.fail(
                path, left, right, "refers to a differently bound variable")
        if right in self.rhs_map:
            return self.fail(path, left, right, "refers to a differently bound variable")
        if not self.map_free_vars:
            return True if left is right else self.fail(path, left, right,
                                                        "different free variables")
        self.lhs_map[left] = right
        self.rhs_map[right] = left
        if isinstance(left, E.Var):
            return ([(var_annotation(left), var_annotation(right), "type_annotation")], [])
        if left.kind != right.kind:
            return self.fail(path, left, right, "type variable kinds differ")
        return True

    def fields(self, left, right, names) -> tuple:
        return ([(getattr(left, n), getattr(right, n), n) for n in names], [])


# -- expression handlers --------------------------------------------------------------------------

def _var(cmp, left, right, path):
    return cmp.use(left, right, path)


def _by_name(cmp, left, right, path):
    if left.name_hint != right.name_hint:
        return cmp.fail(path, left, right, "different names")
    return True


def _op(cmp, left, right, path):
    return True if left.name == right.name else cmp.fail(path, left, right)


def _constructor(cmp, left, right, path):
    if left.name_hint != right.name_hint or len(left.inputs) != len(right.inputs):
        return cmp.fail(path, left, right, "different constructors")
    left_type = getattr(left.belong_to, "name_hint", None)
    if left_type != getattr(right.belong_to, "name_hint", None):
        return cmp.fail(path, left, right, "constructors of different types")
    return True


def _constant(cmp, left, right, path):
    return _arrays(cmp, left.data.numpy(), right.data.numpy(), (path, "data"))


def _arrays(cmp, left, right, path):
    left, right = np.asarray(left), np.asarray(right)
    if left.dtype != right.dtype:
        return cmp.fail(path, left, right, f"dtype {left.dtype} vs {right.dtype}")
    if left.shape != right.shape:
        return cmp.fail(path, left, right, f"shape {left.shape} vs {right.shape}")
    if left.tobytes() != right.tobytes():
        return cmp.fail(path, left, right, "values differ")
    return True


def _ndarray(cmp, left, right, path):
    return _arrays(cmp, left.numpy(), right.numpy(), path)


def _tuple_expr(cmp, left, right, path):
    return cmp.sequence(left.fields, right.fields, path, "fields", [])


def _tuple_get_item(cmp, left, right, path):
    if left.index != right.index:
        return cmp.fail((path, "index"), left.index, right.index)
    return ([(left.tuple_value, right.tuple_value, "tuple_value")], [])


def _call(cmp, left, right, path):
    kids = [(left.op, right.op, "op")]
    if cmp.sequence(left.args, right.args, path, "args", kids) is False:
        return False
    kids.append((left.attrs, right.attrs, "attrs"))
    if cmp.sequence(left.type_args, right.type_args, path, "type_args", kids) is False:
        return False
    return (kids, [])


def _let(cmp, left, right, path):
    kids, binds = [], []
    if not cmp.define(left.var, right.var, path, "var", kids, binds):
        return False
    kids += [(left.value, right.value, "value"), (left.body, right.body, "body")]
    return (kids, binds)


def _function(cmp, left, right, path):
    kids, binds = [], []
    for name in ("type_params", "params"):
        left_vars, right_vars = getattr(left, name), getattr(right, name)
        if len(left_vars) != len(right_vars):
            return cmp.fail((path, name), left_vars, right_vars,
                            f"{len(left_vars)} vs {len(right_vars)} {name}")
        for index, (a, b) in enumerate(zip(left_vars, right_vars)):
            if not cmp.define(a, b, path, f"{name}[{index}]", kids, binds):
                return False
    kids += [(left.ret_type, right.ret_type, "ret_type"), (left.attrs, right.attrs, "attrs"),
             (left.body, right.body, "body")]
    return (kids, binds)


def _if(cmp, left, right, path):
    return cmp.fields(left, right, ("cond", "true_branch", "false_branch"))


def _ref_create(cmp, left, right, path):
    return cmp.fields(left, right, ("value",))


def _ref_read(cmp, left, right, path):
    return cmp.fields(left, right, ("ref",))


def _ref_write(cmp, left, right, path):
    return cmp.fields(left, right, ("ref", "value"))


def _match(cmp, left, right, path):
    if left.complete != right.complete:
        return cmp.fail((path, "complete"), left.complete, right.complete)
    return cmp.sequence(left.clauses, right.clauses, path, "clauses",
                        [(left.data, right.data, "data")])


def _clause(cmp, left, right, path):
    kids, binds = [], []
    if not _patterns(cmp, left.lhs, right.lhs, path, "lhs", kids, binds):
        return False
    kids.append((left.rhs, right.rhs, "rhs"))
    return (kids, binds)


def _pattern(cmp, left, right, path):
    kids, binds = [], []
    if not _patterns(cmp, left, right, path, "", kids, binds):
        return False
    return (kids, binds)


def _patterns(cmp, left, right, path, segment, kids, binds) -> bool:
    """Compare two pattern trees, binding their variables pairwise."""
    pending = [(left, right, segment)]
    while pending:
        pattern_left, pattern_right, segment = pending.pop()
        where = (path, segment) if segment else path
        if type(pattern_left) is not type(pattern_right):
            return cmp.fail(where, pattern_left, pattern_right, "different patterns")
        if isinstance(pattern_left, E.PatternVar):
            if not cmp.define(pattern_left.var, pattern_right.var, path,
                              _join(segment, "var"), kids, binds):
                return False
            continue
        if isinstance(pattern_left, E.PatternConstructor):
            if _constructor(cmp, pattern_left.constructor, pattern_right.constructor,
                            (path, _join(segment, "constructor"))) is False:
                return False
        if isinstance(pattern_left, (E.PatternConstructor, E.PatternTuple)):
            subs_left, subs_right = pattern_left.patterns, pattern_right.patterns
            if len(subs_left) != len(subs_right):
                return cmp.fail(where, pattern_left, pattern_right,
                                f"{len(subs_left)} vs {len(subs_right)} sub-patterns")
            for index in reversed(range(len(subs_left))):
                pending.append((subs_left[index], subs_right[index],
                                _join(segment, f"patterns[{index}]")))
    return True


def _join(segment: str, field: str) -> str:
    return f"{segment}.{field}" if segment else field


# -- type handlers --------------------------------------------------------------------------------

def _tensor_type(cmp, left, right, path):
    if left.dtype != right.dtype:
        return cmp.fail((path, "dtype"), left, right, f"dtype {left.dtype} vs {right.dtype}")
    if left.shape != right.shape:
        return cmp.fail((path, "shape"), left, right, "shapes differ")
    return True


def _tuple_type(cmp, left, right, path):
    return cmp.sequence(left.fields, right.fields, path, "fields", [])


def _func_type(cmp, left, right, path):
    kids, binds = [], []
    if len(left.type_params) != len(right.type_params):
        return cmp.fail((path, "type_params"), left, right, "different type parameter counts")
    for index, (a, b) in enumerate(zip(left.type_params, right.type_params)):
        if not cmp.define(a, b, path, f"type_params[{index}]", kids, binds):
            return False
    for name in ("arg_types", "type_constraints"):
        if cmp.sequence(getattr(left, name), getattr(right, name), path, name, kids) is False:
            return False
    kids.append((left.ret_type, right.ret_type, "ret_type"))
    return (kids, binds)


def _type_var(cmp, left, right, path):
    return cmp.use(left, right, path)


def _global_type_var(cmp, left, right, path):
    if left.name_hint != right.name_hint or left.kind != right.kind:
        return cmp.fail(path, left, right, "different global type variables")
    return True


def _type_call(cmp, left, right, path):
    return cmp.sequence(left.args, right.args, path, "args", [(left.func, right.func, "func")])


def _ref_type(cmp, left, right, path):
    return ([(left.value, right.value, "value")], [])


def _type_relation(cmp, left, right, path):
    if left.func is not right.func or left.num_inputs != right.num_inputs:
        return cmp.fail(path, left, right, "different type relations")
    return cmp.sequence(left.args, right.args, path, "args",
                        [(left.attrs, right.attrs, "attrs")])


def _type_data(cmp, left, right, path):
    kids, binds = [(left.header, right.header, "header")], []
    if len(left.type_vars) != len(right.type_vars):
        return cmp.fail((path, "type_vars"), left, right, "different type parameter counts")
    for index, (a, b) in enumerate(zip(left.type_vars, right.type_vars)):
        if not cmp.define(a, b, path, f"type_vars[{index}]", kids, binds):
            return False
    if len(left.constructors) != len(right.constructors):
        return cmp.fail((path, "constructors"), left, right, "different constructor counts")
    for index, (a, b) in enumerate(zip(left.constructors, right.constructors)):
        segment = f"constructors[{index}]"
        if _constructor(cmp, a, b, (path, segment)) is False:
            return False
        for arg_index, (x, y) in enumerate(zip(a.inputs, b.inputs)):
            kids.append((x, y, f"{segment}.inputs[{arg_index}]"))
    return (kids, binds)


# -- other values ---------------------------------------------------------------------------------

def _attrs(cmp, left, right, path):
    if left.type_key != right.type_key:
        return cmp.fail(path, left, right, f"attrs kind {left.type_key} vs {right.type_key}")
    if sorted(left) != sorted(right):
        return cmp.fail(path, left, right, f"attribute names {sorted(left)} vs {sorted(right)}")
    return ([(left[k], right[k], k) for k in sorted(left)], [])


def _dict(cmp, left, right, path):
    if set(left) != set(right):
        return cmp.fail(path, left, right, "different keys")
    return ([(left[k], right[k], f"[{k!r}]") for k in left], [])


def _module(cmp, left, right, path):
    kids = []
    for what, getter, prefix in (("global functions", "get_global_vars", "@"),
                                 ("type definitions", "get_global_type_vars", "type ")):
        left_keys, right_keys = getattr(left, getter)(), getattr(right, getter)()
        left_names = [g.name_hint for g in left_keys]
        right_names = [g.name_hint for g in right_keys]
        if left_names != right_names:
            only_left = sorted(set(left_names) - set(right_names))
            only_right = sorted(set(right_names) - set(left_names))
            return cmp.fail(path, left, right, f"{what} differ: only in lhs {only_left}, "
                                               f"only in rhs {only_right}")
        for a, b in zip(left_keys, right_keys):
            kids.append((left[a], right[b], f"{prefix}{a.name_hint}"))
    return (kids, [])


def _dim_or_value(cmp, left, right, path):
    return True if left == right else cmp.fail(path, left, right)


def _float(cmp, left, right, path):
    if left == right or (left != left and right != right):
        return True
    return cmp.fail(path, left, right)


_HANDLERS = {
    E.Var: _var, E.GlobalVar: _by_name, E.Op: _op, E.Constructor: _constructor,
    E.Constant: _constant, E.Tuple: _tuple_expr, E.TupleGetItem: _tuple_get_item,
    E.Call: _call, E.Let: _let, E.Function: _function, E.If: _if,
    E.RefCreate: _ref_create, E.RefRead: _ref_read, E.RefWrite: _ref_write,
    E.Match: _match, E.Clause: _clause, E.PatternVar: _pattern, E.PatternWildcard: _pattern,
    E.PatternConstructor: _pattern, E.PatternTuple: _pattern,
    T.TensorType: _tensor_type, T.TupleType: _tuple_type, T.FuncType: _func_type,
    T.TypeVar: _type_var, T.IncompleteType: _type_var, T.GlobalTypeVar: _global_type_var,
    T.TypeCall: _type_call, T.RefType: _ref_type, T.TypeRelation: _type_relation,
    T.TypeData: _type_data,
    Attrs: _attrs, dict: _dict, IRModule: _module, NDArray: _ndarray, np.ndarray: _arrays,
    DimExpr: _dim_or_value, AnyDim: _dim_or_value, float: _float,
}


def _same_value(left, right) -> bool:
    try:
        return bool(left == right)
    except Exception:  # noqa: BLE001 - exotic values compare by identity
        return left is right
