"""Op counting: how many calls of each operator a program holds.

Each call node is counted once, even when it is shared (a DAG), so the count is the number
of op calls a graph executor would run. Example::

    count_ops(add(exp(%x), exp(%x)))     # {"add": 1, "exp": 2}
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir.functor import post_order
from ..ir.module import IRModule


def count_ops(expr) -> dict:
    """Count the op calls in ``expr``.

    Args:
        expr: an expression, or an IRModule (every function is counted).

    Returns:
        A dict op name -> number of call nodes of that op.

    Raises:
        TypeError: if ``expr`` is neither an expression nor a module.
    """
    if isinstance(expr, IRModule):
        roots = [func for _, func in expr.items()]
    elif isinstance(expr, E.Expr):
        roots = [expr]
    else:
        raise TypeError(f"count_ops expects an Expr or IRModule, got {type(expr).__name__}")
    counts: dict = {}
    for root in roots:
        for node in post_order(root):
            if type(node) is E.Call and type(node.op) is E.Op:
                counts[node.op.name] = counts.get(node.op.name, 0) + 1
    return counts


def count_op(expr, op_name: str) -> int:
    """How many calls of ``op_name`` ``expr`` holds (Relay's "count the times an op is
    called").

    Args:
        expr: an expression or IRModule.
        op_name: the op name, e.g. ``"nn.dense"``.

    Returns:
        The number of call nodes of that op.
    """
    return count_ops(expr).get(op_name, 0)
