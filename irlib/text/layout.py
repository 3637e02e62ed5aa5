"""Graph-form layout: which subexpressions get a ``%n = ...;`` binding, and in which scope.

The printer writes an expression DAG in *graph normal form*: every non-atomic node is
written once, either inline as the root of a scope or as a graph binding ``%n = ...;`` that
later text refers to by ``%n``. This module decides, before any text is produced:

* **Scopes.** The top level, each function body, each ``if`` branch, each match clause body
  and each ``let`` body is a scope; so is the parenthesised block ``( let ...; ... )`` that a
  ``let`` becomes when it is not a scope root. Scopes nest in a tree.
* **Inline or bound.** A node is inline when it is the root of a scope (a function body, a
  branch or clause body, a ``let`` body, a ``let`` value, the printed expression itself)
  and that is its only use. Atomic nodes (variables, globals, ops, constructors, constants,
  nullary constructor calls) are always written in place. Everything else is bound.
* **Placement.** A bound node goes to the innermost scope enclosing all its uses (the lowest
  common ancestor of the scopes its parents refer to it from). A node used only in one
  branch is therefore printed inside that branch, and a node that mentions a ``let`` or
  pattern variable lands inside that variable's scope (all its uses are there) -- after the
  binding.
* **Order.** Within a scope, bindings follow the DAG's post-order (children in evaluation
  order: a call's arguments, then its callee), so arguments come before their call and
  every binding precedes its uses.

Everything is a single pass over the nodes in reverse post-order (parents before children)
with an explicit table, no recursion. Lowest common ancestors use skew-binary jump pointers
(each scope keeps one extra pointer), so a node shared between a shallow and a 100,000-deep
scope costs O(log depth), not O(depth).
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir.functor import pattern_vars, post_order

# Root positions: the root of a block (flattened ``let`` chains allowed) or a ``let`` value
# (a ``let`` there must be parenthesised).
BLOCK = 1
VALUE = 2

_ATOMIC = frozenset({E.Var, E.GlobalVar, E.Op, E.Constructor, E.Constant})


def is_atomic(node) -> bool:
    """Whether ``node`` is always written in place (never bound to ``%n``)."""
    kind = type(node)
    if kind in _ATOMIC:
        return True
    return kind is E.Call and type(node.op) is E.Constructor and not node.args


class Scope:
    """One scope of the printed text.

    Attributes:
        parent: the enclosing scope (None at the top).
        depth: number of ancestors.
        jump: skew-binary jump pointer (an ancestor) for fast common-ancestor queries.
        root: the expression this scope ends with.
        flat: the root is a ``let`` written as ``let %x = ...;`` followed by its body scope.
        bindings: the bound nodes placed here, in *reverse* evaluation order.
    """

    __slots__ = ("parent", "depth", "jump", "root", "flat", "bindings")

    def __init__(self, parent, root):
        self.parent = parent
        self.root = root
        self.flat = False
        self.bindings = []
        if parent is None:
            self.depth = 0
            self.jump = self
        else:
            self.depth = parent.depth + 1
            up = parent.jump
            if parent.depth - up.depth == up.depth - up.jump.depth:
                self.jump = up.jump
            else:
                self.jump = parent


def _ancestor_at(scope: Scope, depth: int) -> Scope:
    while scope.depth > depth:
        scope = scope.jump if scope.jump.depth >= depth else scope.parent
    return scope


def common_scope(a: Scope, b: Scope) -> Scope:
    """The innermost scope enclosing both ``a`` and ``b``."""
    if a is b:
        return a
    if a.depth > b.depth:
        a = _ancestor_at(a, b.depth)
    elif b.depth > a.depth:
        b = _ancestor_at(b, a.depth)
    while a is not b:
        if a.jump is b.jump:
            a, b = a.parent, b.parent
        else:
            a, b = a.jump, b.jump
    return a


class Layout:
    """The layout of one printed expression (see module docstring).

    Attributes:
        root_scope: the top scope (its root is the expression).
        inline: the non-atomic nodes written inline.
        free_vars: the variables used but not bound in the expression, in first-use order.
        scopes_of: for each scope-making node, its scopes: a Function's ``(body,)``, an If's
            ``(then, else)``, a Match's clause scopes, a Let's ``(value_scope, body_scope)``
            (``value_scope`` is the scope holding the ``let`` line).
    """

    __slots__ = ("root_scope", "inline", "scopes_of", "free_vars")

    def __init__(self, root):
        self.root_scope = Scope(None, root)
        self.inline: set = set()
        self.scopes_of: dict = {}
        self.free_vars: list = []
        self._compute(root)

    def _compute(self, root) -> None:
        order = _evaluation_post_order(root)
        # Innermost scope enclosing the uses seen so far, and the root-position kind of the
        # use when there has been exactly one (None once a second use shows up). Atomic
        # nodes are never placed.
        place = {} if is_atomic(root) else {root: self.root_scope}
        position_of = {root: BLOCK}

        def refer(child, scope, position):
            kind = type(child)
            if kind in _ATOMIC or (kind is E.Call and not child.args
                                   and type(child.op) is E.Constructor):
                return
            seen = place.get(child)
            if seen is None:
                place[child] = scope
                position_of[child] = position
            else:
                position_of[child] = None
                if seen is not scope:
                    place[child] = common_scope(seen, scope)

        binders: set = set()
        inline, scopes_of = self.inline, self.scopes_of
        for node in reversed(order):   # parents before children
            scope = place.get(node)
            if scope is None:   # atomic: never placed
                continue
            # Every parent comes earlier in this order, so all uses have been seen.
            position = position_of[node]
            if position is None:
                scope.bindings.append(node)
            else:
                inline.add(node)
            kind = type(node)
            if kind is E.Let:
                binders.add(node.var)
                if position == BLOCK:
                    scope.flat = True
                    value_scope = scope
                else:
                    value_scope = Scope(scope, node)
                    value_scope.flat = True
                body_scope = Scope(value_scope, node.body)
                scopes_of[node] = (value_scope, body_scope)
                refer(node.value, value_scope, VALUE)
                refer(node.body, body_scope, BLOCK)
            elif kind is E.Function:
                binders.update(node.params)
                body_scope = Scope(scope, node.body)
                scopes_of[node] = (body_scope,)
                refer(node.body, body_scope, BLOCK)
            elif kind is E.If:
                refer(node.cond, scope, None)
                branches = (Scope(scope, node.true_branch), Scope(scope, node.false_branch))
                scopes_of[node] = branches
                refer(node.true_branch, branches[0], BLOCK)
                refer(node.false_branch, branches[1], BLOCK)
            elif kind is E.Match:
                refer(node.data, scope, None)
                clause_scopes = tuple(Scope(scope, clause.rhs) for clause in node.clauses)
                scopes_of[node] = clause_scopes
                for clause, clause_scope in zip(node.clauses, clause_scopes):
                    binders.update(pattern_vars(clause.lhs))
                    refer(clause.rhs, clause_scope, BLOCK)
            else:
                for child in _children(node):
                    refer(child, scope, None)
        # NOTE: post_order lists each node once; a Var is free when nothing in the expression
        # binds it (the rule of irlib.ir.functor.free_vars), in first-use order.
        self.free_vars = [node for node in order if type(node) is E.Var and node not in binders]


def _evaluation_post_order(root) -> list:
    """Every used node reachable from ``root``, each once, children before parents, children
    in evaluation order (a call's arguments before its callee, as Relay prints them)."""
    return post_order(root, _children)


def _children(node) -> tuple:
    """Sub-expressions that are *used* (binders left out), in evaluation order."""
    kind = type(node)
    if kind is E.Call:
        return node.args + (node.op,)
    if kind is E.Tuple:
        return node.fields
    if kind is E.TupleGetItem:
        return (node.tuple_value,)
    if kind is E.Let:
        return (node.value, node.body)
    if kind is E.Function:
        return (node.body,)
    if kind is E.If:
        return (node.cond, node.true_branch, node.false_branch)
    if kind is E.Match:
        return (node.data,) + tuple(clause.rhs for clause in node.clauses)
    if kind is E.RefCreate:
        return (node.value,)
    if kind is E.RefRead:
        return (node.ref,)
    if kind is E.RefWrite:
        return (node.ref, node.value)
    return ()
