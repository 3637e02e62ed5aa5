"""Helpers for the zoo tests: run a workload's ``main`` and read its parameter types.

Models run on the reference interpreter once ``interp.create_executor`` exists, and until
then on ``irlib.testing.dataflow_eval`` (calls of inner functions, the LSTM's cells, are
first inlined as let bindings, which keeps the meaning since each cell is called once).
"""

import numpy as np

import irlib
from irlib.ir import expr as E
from irlib.ir.functor import ExprMutator
from irlib.testing.dataflow_eval import evaluate


class _InlineCalls(ExprMutator):
    def visit_call(self, node, original):
        if not isinstance(node.op, E.Function):
            return node
        body = node.op.body
        for param, arg in reversed(list(zip(node.op.params, node.args))):
            body = E.Let(param, arg, body)
        return body


def run_main(mod, params, inputs):
    """Evaluate ``mod["main"]`` on ``params`` plus ``inputs``.

    Args:
        mod: the workload's module.
        params: name -> array (NDArray or numpy).
        inputs: name -> array; a list of arrays feeds several parameters sharing the name
            (the LSTM's ``data`` vars), in parameter order.

    Returns:
        The output as a numpy array (or tuple of arrays).
    """
    main = mod["main"]
    values = {name: np.asarray(value) for name, value in params.items()}
    queues = {name: list(value) for name, value in inputs.items() if isinstance(value, list)}
    values.update({name: value for name, value in inputs.items() if name not in queues})
    args = [queues[p.name_hint].pop(0) if p.name_hint in queues else values[p.name_hint]
            for p in main.params]
    try:
        import interp
        create_executor = interp.create_executor
    except (ImportError, AttributeError):
        create_executor = None
    if create_executor is not None:
        result = create_executor("debug", mod).evaluate()(*args)
        return result.numpy() if hasattr(result, "numpy") else result
    env = dict(zip(main.params, args))
    return evaluate(_InlineCalls().visit(main.body), env)


def param_shapes(mod) -> dict:
    """``{name: shape}`` of ``main``'s parameters after type inference, in order."""
    return {p.name_hint: tuple(p.checked_type.shape) for p in mod["main"].params}


def output_type(mod):
    """The checked return type of ``main``."""
    return mod["main"].checked_type.ret_type


def random_input(mod, seed=1):
    """A seeded random array for the parameter ``data`` of ``main``."""
    data = next(p for p in mod["main"].params if p.name_hint == "data")
    ty = data.checked_type
    return np.random.default_rng(seed).standard_normal(tuple(ty.shape)).astype(ty.dtype)
