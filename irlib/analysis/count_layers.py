"""``count_layers(expr_or_mod, valid_ops)``: how many "layers" a network has (Relay's
``relay.analysis.count_layers``).

A layer is a call to one of ``valid_ops`` (``["nn.conv2d", "nn.dense"]`` for a CNN). The
count is the largest number of such calls on one dataflow path, so parallel branches
count once: resnet-18 gives 18 and resnet-50 gives 50 (its 1x1 shortcut convolutions run
beside the main path).
"""

from __future__ import annotations

from ..errors import IRError
from ..ir import expr as E
from ..ir.functor import children, post_order
from ..ir.module import IRModule


def count_layers(expr, valid_ops) -> int:
    """The length of the longest chain of calls to ``valid_ops`` in ``expr``.

    Args:
        expr: an expression, or an :class:`IRModule` (its ``main`` is counted).
        valid_ops: op names (``"nn.conv2d"``) or ops whose calls count as layers.

    Returns:
        The largest number of counted calls on any path from an input to the result.

    Raises:
        IRError: if ``expr`` is a module without ``main``.
    """
    if isinstance(expr, IRModule):
        if "main" not in expr:
            raise IRError("count_layers: the module has no main function")
        expr = expr["main"]
    names = {op.name if isinstance(op, E.Op) else str(op) for op in valid_ops}
    depth: dict = {}
    for node in post_order(expr):   # children first; shared nodes once
        deepest = max((depth[child] for child in children(node) if child in depth),
                      default=0)
        if type(node) is E.Call and type(node.op) is E.Op and node.op.name in names:
            deepest += 1
        depth[node] = deepest
    return depth[expr]
