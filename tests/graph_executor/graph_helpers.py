"""Shared helpers for the graph executor tests."""

import numpy as np

import irlib
import interp
from interp import graph_executor


def flatten(value):
    """Nested tuples of arrays -> list of arrays, left to right."""
    if isinstance(value, (tuple, list)):
        out = []
        for item in value:
            out += flatten(item)
        return out
    return [np.asarray(value)]


def graph_module(mod, target="cpu", params=None):
    """(GraphModule, factory) of ``mod`` built for ``target``."""
    factory = interp.build(mod, target=target, params=params)
    return graph_executor.GraphModule(factory["default"](interp.cpu(0))), factory


def graph_function(mod, params=None):
    """The graph executor's callable for ``mod`` at opt level 3, checked to run on the graph
    executor itself (no interpreter fallback)."""
    with irlib.transform.PassContext(opt_level=3):
        mod = irlib.transform.InferType()(mod)
        executor = interp.create_executor("graph", mod=mod, device=interp.cpu(0),
                                          target="cpu", params=params or {})
        func = executor.evaluate()
    assert executor.fallback is None, executor.fallback
    return func


def outputs(gmod):
    return [gmod.get_output(i).numpy().copy() for i in range(gmod.get_num_outputs())]


def add_module(shape=(1, 10)):
    x = irlib.var("x", shape=shape)
    y = irlib.var("y", shape=shape)
    return irlib.IRModule.from_expr(irlib.Function([x, y], irlib.add(x, y)))
