"""ToANormalForm: let-bind every intermediate result (Relay's ``ToANormalForm``).

Afterwards every argument of a call, tuple, projection, reference op, ``if`` condition and
``match`` scrutinee is an atom (a variable, global, op or constructor; constants are
let-bound too, as in Relay, except through ``to_a_normal_form``'s default), and the
program has no graph sharing: a node used several times is bound once, in the innermost
scope that contains all its uses. Scopes are function bodies, ``if`` branches and ``match``
clauses, so code inside a branch stays inside it. Bindings appear in post-order. The value
of an existing ``let`` is bound to that let's own variable. Global functions themselves are
not bound; ``Primitive`` functions are bound but not entered; functions marked ``Compiler``
are skipped. Fresh variables are named ``x_0, x_1, ...``.

Before/after::

    fn (%x) { %0 = add(%x, %x); multiply(%0, %0) }
    fn (%x) { let %x_0 = add(%x, %x); let %x_1 = multiply(%x_0, %x_0); %x_1 }
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import ClassVar

from ..ir import expr as E
from ..ir.functor import ExprMutator, children, post_order
from ..ir.rewrite import make_lets
from ..ir.module import IRModule
from ._rewrite import is_primitive, map_functions
from .pass_infra import ModulePass

_ATOMS = (E.Var, E.GlobalVar, E.Constant, E.Op, E.Constructor)
# NOTE: Relay's ToANormalForm let-binds constants too (only variables, globals, ops and
# constructors are atoms); the internal users (AD, CPS, PE) keep constants inline.
_STRICT_ATOMS = (E.Var, E.GlobalVar, E.Op, E.Constructor)


class _Scope:
    __slots__ = ("parent", "depth", "bindings")

    def __init__(self, parent):
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1
        self.bindings: list = []


def _common_scope(a: _Scope, b: _Scope) -> _Scope:
    while a.depth > b.depth:
        a = a.parent
    while b.depth > a.depth:
        b = b.parent
    while a is not b:
        a, b = a.parent, b.parent
    return a


def _child_scopes(node, scope, branch_scopes):
    """(child, scope the edge puts it in) for each expression child of ``node``."""
    kind = type(node)
    if kind is E.If:
        true_scope = branch_scopes.setdefault((node, 1), _Scope(scope))
        false_scope = branch_scopes.setdefault((node, 2), _Scope(scope))
        return ((node.cond, scope), (node.true_branch, true_scope),
                (node.false_branch, false_scope))
    if kind is E.Match:
        pairs = [(node.data, scope)]
        for index, clause in enumerate(node.clauses):
            pairs.append((clause.rhs, branch_scopes.setdefault((node, index), _Scope(scope))))
        return pairs
    if kind is E.Function:
        if is_primitive(node):
            return ()
        return ((node.body, branch_scopes.setdefault((node, 0), _Scope(scope))),)
    if kind is E.Let:
        return ((node.value, scope), (node.body, scope))
    return tuple((child, scope) for child in children(node))


class _Converter(ExprMutator):
    """Converts one function body: :meth:`analyse` finds each node's scope, then the
    mutator walk emits a binding per compound node into that scope, in post-order."""

    def __init__(self, counter, atoms=_ATOMS):
        super().__init__()
        self.counter = counter
        self.atoms = atoms
        self.bind_only = None   # a set of nodes to bind (the others stay inline), or None
        self.scope_of: dict = {}
        self.branch_scopes: dict = {}
        self.hint: dict = {}    # let value -> the let's variable (bound to it, not x_N)

    def analyse(self, body, root: _Scope):
        self.scope_of[body] = root
        for node in reversed(post_order(body)):
            if isinstance(node, self.atoms):
                continue
            scope = self.scope_of[node]
            for child, child_scope in _child_scopes(node, scope, self.branch_scopes):
                if isinstance(child, self.atoms):
                    continue
                old = self.scope_of.get(child)
                self.scope_of[child] = child_scope if old is None else \
                    _common_scope(old, child_scope)

    def bind(self, node, compound):
        """The atom standing for ``node`` (whose rewritten form is ``compound``) after
        binding it in its scope; ``compound`` itself when ``bind_only`` leaves it inline."""
        if self.bind_only is not None and node not in self.bind_only:
            self.hint.pop(node, None)
            return compound
        var = self.hint.pop(node, None)
        if var is None:
            var = E.Var(f"x_{next(self.counter)}")
        self.scope_of[node].bindings.append((var, compound))
        return var

    def _branch(self, node, index, new_expr):
        return make_lets(self.branch_scopes[(node, index)].bindings, new_expr)

    # -- the mutator hooks ------------------------------------------------------------

    def enter_let(self, node):
        value = node.value
        if value not in self.memo and value not in self.hint \
                and not isinstance(value, self.atoms):
            self.hint[value] = node.var

    def bind_let(self, let, new_value):
        if new_value is not let.var:
            self.hint.pop(let.value, None)
            self.scope_of[let].bindings.append((let.var, new_value))

    def visit_let(self, node, original):
        return node.body   # the let itself is transparent: its value is its body's

    def enter_function(self, node):
        return not is_primitive(node)

    def skip(self, node):
        return self.bind(node, node)   # a Primitive function: bound, not entered

    def visit_function(self, node, original):
        return self.bind(original, original.replace(body=self._branch(original, 0, node.body)))

    def visit_if(self, node, original):
        return self.bind(original, original.replace(
            cond=node.cond, true_branch=self._branch(original, 1, node.true_branch),
            false_branch=self._branch(original, 2, node.false_branch)))

    def visit_match(self, node, original):
        clauses = tuple(c.replace(rhs=self._branch(original, i, new.rhs))
                        for i, (c, new) in enumerate(zip(original.clauses, node.clauses)))
        return self.bind(original, original.replace(data=node.data, clauses=clauses))

    def visit_constant(self, node, original):
        return node if isinstance(node, self.atoms) else self.bind(original, node)

    def _compound(self, node, original):
        return self.bind(original, node)

    visit_call = visit_tuple = visit_tuple_get_item = _compound
    visit_ref_create = visit_ref_read = visit_ref_write = _compound


def _to_anf_function(func: E.Function, counter, atoms=_ATOMS) -> E.Function:
    if is_primitive(func):
        return func
    return func.replace(body=_run(_Converter(counter, atoms), func.body))


def _run(converter, body, choose=None):
    root = _Scope(None)
    converter.analyse(body, root)
    if choose is not None:
        converter.bind_only = choose(converter, body)
    return make_lets(root.bindings, converter.visit(body))


def to_a_normal_form(expr: E.Expr, bind_constants: bool = False) -> E.Expr:
    """``expr`` in A-normal form (see the module docstring).

    Args:
        expr: an expression; a Function is converted inside, anything else as a whole.
        bind_constants: let-bind constants too, as Relay's pass does (the pass sets it).

    Returns:
        The converted expression.
    """
    counter = itertools.count()
    atoms = _STRICT_ATOMS if bind_constants else _ATOMS
    if isinstance(expr, E.Function):
        return _to_anf_function(expr, counter, atoms)
    return _run(_Converter(counter, atoms), expr)


@dataclass(frozen=True)
class ToANormalForm(ModulePass):
    """Convert every function of the module to A-normal form.

    Args:
        bind_constants: let-bind constants as Relay does (irlib's own passes turn it off).
    """

    bind_constants: bool = True
    name: ClassVar[str] = "ToANormalForm"
    opt_level: ClassVar[int] = 1

    def transform_module(self, mod: IRModule, ctx=None) -> IRModule:
        """The module in A-normal form."""
        counter = itertools.count()
        atoms = _STRICT_ATOMS if self.bind_constants else _ATOMS
        return map_functions(mod, lambda f: _to_anf_function(f, counter, atoms))
