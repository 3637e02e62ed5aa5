"""Shared driver of CombineParallelConv2D / Dense / BatchMatmul: find sibling calls of one
op on the same input, and replace one group per round until none is left."""

from __future__ import annotations

from ..ir.functor import children, post_order
from ..ir.functor import ExprMutator
from ._typed import op_name


def sibling_groups(func, op, key, min_branches: int) -> list:
    """Groups of calls of ``op`` that share their first argument and ``key(call)``.

    Args:
        func: a type-checked function.
        op: the op name.
        key: call -> hashable compatibility key, or None for an ineligible call.
        min_branches: the least group size kept (at least 2 in any case).

    Returns:
        Lists of calls (in post order), each of at least ``min_branches``.
    """
    buckets: dict = {}
    for node in post_order(func):
        if op_name(node) != op:
            continue
        k = key(node)
        if k is not None:
            buckets.setdefault((node.args[0], k), []).append(node)
    # A lone call has nothing to combine with; "combining" it would also produce a call that
    # matches again in the next round (min_branches=1 would never terminate).
    least = max(min_branches, 2)
    return [calls for calls in buckets.values() if len(calls) >= least]


def consumers(func) -> dict:
    """Node -> the nodes using it (once per use) in ``func``."""
    users: dict = {}
    for node in post_order(func):
        for child in children(node):
            users.setdefault(child, []).append(node)
    return users


class _Replace(ExprMutator):
    def __init__(self, replacements):
        super().__init__()
        self.memo.update(replacements)

    def enter_function(self, node):
        return not node.get_attr("Primitive")


def combine_rounds(func, find_groups, combine, mod=None):
    """Replace groups until none is left: ``find_groups(func)`` lists them and
    ``combine(calls, func)`` returns ``{node: replacement}`` built from the original nodes
    (``mod``: the module the function's globals live in, for type inference)."""
    from ..typeinf import infer_expr
    done = set()
    while True:
        groups = [g for g in find_groups(func) if tuple(g) not in done]
        if not groups:
            return func
        group = groups[0]
        done.add(tuple(group))
        replacements = combine(group, func)
        func = infer_expr(_Replace(replacements).visit(func), mod)

