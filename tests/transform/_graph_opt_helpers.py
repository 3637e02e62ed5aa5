"""Shared helpers of the graph-optimisation pass tests: run a module on the interpreter."""

from helpers import assert_close, to_numpy  # noqa: F401  (re-exported to the pass tests)
from helpers import run as run_value


def run(mod, args):
    """``mod["main"](*args)`` on the reference interpreter, as numpy values."""
    return to_numpy(run_value(mod, *args))


def op_names(expr):
    """The names of every op called in ``expr``."""
    from irlib.ir import expr as E
    from irlib.ir.functor import post_order
    return [n.op.name for n in post_order(expr)
            if isinstance(n, E.Call) and isinstance(n.op, E.Op)]
