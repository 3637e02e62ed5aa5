"""A tiny numpy evaluator for the *dataflow* fragment of the IR.

It evaluates variables, constants, tuples, projections, lets and op calls through the op
registry's reference implementations. It exists so that op and type-inference tests have an
oracle-free way to run generated expressions before the full interpreter (``interp``) is in
place, and as the simplest possible reading of what those nodes mean. Control flow,
functions, ADTs and references are out of scope here: use ``interp.create_executor``.
"""

from __future__ import annotations

from ..errors import InterpreterError
from ..ir import expr as E
from ..ir.functor import ExprFunctor
from ..op import registry


def evaluate(expr: E.Expr, env: dict | None = None):
    """Evaluate ``expr`` with numpy.

    Args:
        expr: an expression built from Var, Constant, Tuple, TupleGetItem, Let and op Calls.
        env: values of the free variables (Var -> numpy array or tuple of arrays).

    Returns:
        A numpy array, or a tuple (possibly nested) of arrays.

    Raises:
        InterpreterError: on a node outside the dataflow fragment or an unbound variable.
    """
    evaluator = _Evaluator()
    evaluator.memo.update(env or {})
    return evaluator.visit(expr)


def _reject(self, node):
    raise InterpreterError(f"dataflow_eval cannot evaluate a {type(node).__name__} node")


class _Evaluator(ExprFunctor):
    """The fold: each node's result is its value; a let binds its variable to its value's
    result (``bind_let``) before the body is evaluated. Nodes outside the fragment are
    rejected on entry, before anything below them runs."""

    enter_global_var = enter_if = enter_function = enter_constructor = _reject
    enter_ref_create = enter_ref_read = enter_ref_write = enter_match = _reject

    def bind_let(self, let, value_result):
        self.memo[let.var] = value_result

    def enter_call(self, node):
        if not isinstance(node.op, E.Op):
            _reject(self, node)

    def visit_var(self, node, results):
        raise InterpreterError(f"variable %{node.name_hint} has no value")

    def visit_op(self, node, results):
        return node

    def visit_constant(self, node, results):
        return node.data.numpy()

    def visit_tuple(self, node, results):
        return tuple(results)

    def visit_tuple_get_item(self, node, results):
        return results[0][node.index]

    def visit_let(self, node, results):
        return results[2]

    def visit_call(self, node, results):
        return registry.evaluate(node.op.name, list(results[1:]), node.attrs)
