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
from ..ir.functor import children, post_order, rebuild
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


def _wrap(bindings: list, result: E.Expr) -> E.Expr:
    for var, value in reversed(bindings):
        result = E.Let(var, value, result)
    return result


class _Converter:
    """Converts one function body (analysis of scopes, then emission)."""

    def __init__(self, counter, atoms=_ATOMS):
        self.counter = counter
        self.atoms = atoms
        self.bind_only = None   # a set of nodes to bind (the others stay inline), or None
        self.scope_of: dict = {}
        self.branch_scopes: dict = {}
        self.memo: dict = {}
        self.hint: dict = {}
        self.stack: list = []   # the explicit work stack of (step, node)

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
        if self.bind_only is not None and node not in self.bind_only:
            self.hint.pop(node, None)
            self.memo[node] = compound
            return
        var = self.hint.pop(node, None)
        if var is None:
            var = E.Var(f"x_{next(self.counter)}")
        self.scope_of[node].bindings.append((var, compound))
        self.memo[node] = var

    def _schedule(self, node, stack):
        kind = type(node)
        if kind is E.Let:
            value = node.value
            if value not in self.memo and value not in self.hint \
                    and not isinstance(value, self.atoms):
                self.hint[value] = node.var
            stack.append(("let_body", node))
            stack.append(("visit", value))
        elif kind is E.Function and is_primitive(node):
            self.bind(node, node)
        elif kind is E.Function:
            stack.append(("build", node))
            stack.append(("visit", node.body))
        elif kind is E.Match:
            stack.append(("build", node))
            stack.extend(("visit", c.rhs) for c in reversed(node.clauses))
            stack.append(("visit", node.data))
        else:
            stack.append(("build", node))
            stack.extend(("visit", c) for c in reversed(children(node)))

    def _branch(self, node, index, expr):
        return _wrap(self.branch_scopes[(node, index)].bindings, self.memo[expr])

    def _finish(self, step, node):
        memo = self.memo
        if step == "let_body":
            value_atom = memo[node.value]
            if value_atom is not node.var:
                self.hint.pop(node.value, None)
                self.scope_of[node].bindings.append((node.var, value_atom))
            # The let itself is transparent: its value is its body's.
            self.stack.append(("let_done", node))
            self.stack.append(("visit", node.body))
            return
        if step == "let_done":
            memo[node] = memo[node.body]
            return
        kind = type(node)
        if kind is E.Function:
            compound = node.replace(body=self._branch(node, 0, node.body))
        elif kind is E.If:
            compound = node.replace(cond=memo[node.cond],
                                    true_branch=self._branch(node, 1, node.true_branch),
                                    false_branch=self._branch(node, 2, node.false_branch))
        elif kind is E.Match:
            clauses = tuple(c.replace(rhs=self._branch(node, i, c.rhs))
                            for i, c in enumerate(node.clauses))
            compound = node.replace(data=memo[node.data], clauses=clauses)
        else:
            compound = rebuild(node, tuple(memo[c] for c in children(node)))
        self.bind(node, compound)


def _to_anf_function(func: E.Function, counter, atoms=_ATOMS) -> E.Function:
    if is_primitive(func):
        return func
    return func.replace(body=_run(_Converter(counter, atoms), func.body))


def _run(converter, body, choose=None):
    stack = converter.stack
    root = _Scope(None)
    converter.analyse(body, root)
    if choose is not None:
        converter.bind_only = choose(converter, body)
    memo = converter.memo
    stack.append(("visit", body))
    while stack:
        step, node = stack.pop()
        if step == "visit":
            if node in memo:
                continue
            if isinstance(node, converter.atoms):
                memo[node] = node
                continue
            converter._schedule(node, stack)
        else:
            converter._finish(step, node)
    return _wrap(root.bindings, memo[body])


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
