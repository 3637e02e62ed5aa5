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
from ..ir.functor import children
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
    values: dict = dict(env or {})
    # Explicit stack of (node, stage): stage 0 = schedule children, 1 = combine. A Let is
    # scheduled as value first, then (once the var is bound) its body.
    stack = [(expr, 0)]
    while stack:
        node, stage = stack.pop()
        if node in values and stage == 0:
            continue
        kind = type(node)
        if kind is E.Var:
            raise InterpreterError(f"variable %{node.name_hint} has no value")
        if kind is E.Constant:
            values[node] = node.data.numpy()
        elif kind is E.Let:
            if stage == 0:
                stack.append((node, 1))
                stack.append((node.value, 0))
            elif stage == 1:
                values[node.var] = values[node.value]
                stack.append((node, 2))
                stack.append((node.body, 0))
            else:
                values[node] = values[node.body]
        elif kind in (E.Tuple, E.TupleGetItem) or (kind is E.Call and isinstance(node.op, E.Op)):
            operands = node.args if kind is E.Call else children(node)
            if stage == 0:
                stack.append((node, 1))
                stack.extend((c, 0) for c in reversed(operands) if c not in values)
            elif kind is E.Tuple:
                values[node] = tuple(values[f] for f in node.fields)
            elif kind is E.TupleGetItem:
                values[node] = values[node.tuple_value][node.index]
            else:
                args = [values[a] for a in node.args]
                values[node] = registry.evaluate(node.op.name, args, node.attrs)
        else:
            raise InterpreterError(f"dataflow_eval cannot evaluate a {kind.__name__} node")
    return values[expr]
