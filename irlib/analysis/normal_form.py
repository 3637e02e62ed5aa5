"""Normal-form checks: basic block normal form and A-normal form.

*Scopes* are function bodies, ``if`` branches and ``match`` clauses. A program is in
**basic block normal form** when no expression is shared between different scopes: every
node's uses all lie in one scope, so each node can be evaluated at one place. ToANormalForm
produces it (it binds shared nodes in the innermost scope containing all their uses).
Example::

    %0 = exp(%x); if (%c) { %0 } else { log(%0) }     # not in BBNF: %0 is used in two branches
    let %y = exp(%x); if (%c) { %y } else { log(%y) }  # in BBNF
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir.functor import children, post_order

ATOMS = (E.Var, E.GlobalVar, E.Constant, E.Op, E.Constructor)


def scoped_children(node) -> list:
    """``(child, opens_scope)`` for each expression child of ``node`` (binders excluded);
    ``opens_scope`` is a key naming the new scope, or None for the node's own scope."""
    kind = type(node)
    if kind is E.If:
        return [(node.cond, None), (node.true_branch, (node, 1)), (node.false_branch, (node, 2))]
    if kind is E.Match:
        return [(node.data, None)] + [(c.rhs, (node, i)) for i, c in enumerate(node.clauses)]
    if kind is E.Function:
        return [] if node.get_attr("Primitive") else [(node.body, (node, 0))]
    if kind is E.Let:
        return [(node.value, None), (node.body, None)]
    return [(child, None) for child in children(node)]


def check_basic_block_normal_form(expr) -> bool:
    """Whether ``expr`` is in basic block normal form (see the module docstring).

    Args:
        expr: an expression (a Function is checked from its body).

    Returns:
        True if no non-atomic node is used from two different scopes.
    """
    scope_of: dict = {expr: "root"}
    for node in reversed(post_order(expr)):
        if isinstance(node, ATOMS):
            continue
        scope = scope_of[node]
        for child, opened in scoped_children(node):
            if isinstance(child, ATOMS):
                continue
            child_scope = scope if opened is None else opened
            old = scope_of.setdefault(child, child_scope)
            if old != child_scope:
                return False
    return True


def is_a_normal_form(expr) -> bool:
    """Whether every operand in ``expr`` is an atom and no node is shared.

    Args:
        expr: an expression.

    Returns:
        True if ``expr`` is in A-normal form (let values and branch results may be
        compound; call, tuple, projection, reference and condition operands may not).
    """
    uses: dict = {}
    for node in post_order(expr):
        kind = type(node)
        if kind in (E.Call, E.Tuple, E.TupleGetItem, E.RefCreate, E.RefRead, E.RefWrite):
            operands = node.args if kind is E.Call else children(node)
            if not all(isinstance(op, ATOMS) or isinstance(op, E.Function) and kind is E.Call
                       and op is node.op and op.get_attr("Primitive") for op in operands):
                return False
        if kind is E.If and not isinstance(node.cond, ATOMS):
            return False
        if kind is E.Match and not isinstance(node.data, ATOMS):
            return False
        for child in children(node):
            if not isinstance(child, ATOMS):
                uses[child] = uses.get(child, 0) + 1
                if uses[child] > 1:
                    return False
    return True
