"""Analyses of expressions (``relay.analysis``): variables, well-formedness, traversal.

* :func:`free_vars`, :func:`bound_vars`, :func:`all_vars`: local variables.
* :func:`free_type_vars`, :func:`bound_type_vars`, :func:`all_type_vars`: type variables.
* :func:`well_formed`, :func:`check_well_formed`: each variable bound once, used in scope.
* :func:`post_order_visit`: call a function on every node, children first.
* :func:`unmatched_cases`: the values a ``match`` does not handle.
* :func:`count_layers`: the length of the longest chain of calls to given ops.
* :func:`strongly_connected_components`: SCCs of a graph, callees first (iterative Tarjan).
"""

from ..ir.functor import post_order
from .free_vars import (all_type_vars, all_vars, bound_type_vars, bound_vars, free_type_vars,
                        free_vars)
from .well_formed import check_well_formed, well_formed
from .call_graph import CallGraph, call_graph
from .count_ops import count_op, count_ops
from .normal_form import check_basic_block_normal_form, is_a_normal_form
from .unmatched_cases import unmatched_cases
from .count_layers import count_layers
from .scc import strongly_connected_components


def post_order_visit(expr, fvisit) -> None:
    """Call ``fvisit(node)`` on every node reachable from ``expr``, children before parents,
    each node once (TVM's ``post_order_visit``).

    Args:
        expr: the root expression.
        fvisit: a function of one node; its result is ignored.
    """
    for node in post_order(expr):
        fvisit(node)


__all__ = ["free_vars", "bound_vars", "all_vars", "free_type_vars", "bound_type_vars",
           "all_type_vars", "well_formed", "check_well_formed", "post_order_visit",
           "CallGraph", "call_graph", "count_op", "count_ops", "check_basic_block_normal_form",
           "is_a_normal_form", "unmatched_cases", "count_layers",
           "strongly_connected_components"]
