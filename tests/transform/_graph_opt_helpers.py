"""Shared helpers of the graph-optimisation pass tests: run a module on the interpreter."""

import numpy as np

import interp


def run(mod, args):
    """``mod["main"](*args)`` on the reference interpreter, as numpy values."""
    return to_numpy(interp.create_executor("debug", mod=mod).evaluate()(*args))


def to_numpy(value):
    if isinstance(value, tuple):
        return tuple(to_numpy(v) for v in value)
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


def assert_close(actual, expected, rtol=1e-5, atol=1e-6):
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_close(a, e, rtol, atol)
        return
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


def op_names(expr):
    """The names of every op called in ``expr``."""
    from irlib.ir import expr as E
    from irlib.ir.functor import post_order
    return [n.op.name for n in post_order(expr)
            if isinstance(n, E.Call) and isinstance(n.op, E.Op)]
