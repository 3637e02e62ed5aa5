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


def outputs(gmod):
    return [gmod.get_output(i).numpy().copy() for i in range(gmod.get_num_outputs())]


def add_module(shape=(1, 10)):
    x = irlib.var("x", shape=shape)
    y = irlib.var("y", shape=shape)
    return irlib.IRModule.from_expr(irlib.Function([x, y], irlib.add(x, y)))
