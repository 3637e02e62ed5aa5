"""``interp.testing``: the facade mirroring ``tvm.relay.testing``.

* nat helpers: :func:`count`, :func:`make_nat_value`, :func:`make_nat_expr`
  (from :mod:`interp.nat`);
* :func:`run_opt_pass`, :func:`run_infer_type`, :func:`rand`, :func:`count_ops`.

Other helpers (``to_python``, ``check_grad``, ``create_workload``, ...) join as they are
written.
"""

from __future__ import annotations

import collections

import numpy as np

from irlib.ir import expr as E
from irlib.ir.functor import post_order
from irlib.ir.module import IRModule
from irlib.transform import InferType

from . import nd
from .nat import count, make_nat_expr, make_nat_value

__all__ = ["count", "make_nat_value", "make_nat_expr", "run_opt_pass", "run_infer_type",
           "rand", "count_ops"]


def run_opt_pass(expr, opt_pass, import_prelude: bool = False):
    """Run ``InferType`` and then ``opt_pass`` on ``expr`` wrapped as ``main`` of a module.

    Args:
        expr: an expression (its free variables become parameters of ``main``).
        opt_pass: a pass (or a list of passes, run in order).
        import_prelude: load the Prelude into the module first.

    Returns:
        The new ``main`` if ``expr`` was a Function, else the body of the new ``main``.
    """
    mod = IRModule.from_expr(expr)
    if import_prelude:
        from irlib.prelude import Prelude
        Prelude(mod)
    mod = InferType()(mod)
    passes = opt_pass if isinstance(opt_pass, (list, tuple)) else [opt_pass]
    for each in passes:
        mod = each(mod)
    main = mod["main"]
    return main if isinstance(expr, E.Function) else main.body


def run_infer_type(expr):
    """``run_opt_pass(expr, InferType())``: the type-annotated copy of ``expr``."""
    return run_opt_pass(expr, InferType())


def rand(dtype: str, *shape):
    """An NDArray of uniform random numbers in [0, 1) (``np.random.rand``) of ``dtype``."""
    return nd.array(np.random.rand(*shape).astype(dtype))


def count_ops(expr) -> collections.Counter:
    """How many calls of each op ``expr`` contains (shared subexpressions counted once).

    Args:
        expr: an expression (or Function).

    Returns:
        A Counter from op name to count.

    Raises:
        TypeError: if a call's callee is not an op (as Relay's helper, which assumes so).
    """
    counter = collections.Counter()
    for node in post_order(expr):
        if type(node) is E.Call:
            if not isinstance(node.op, E.Op):
                raise TypeError(f"count_ops expects only op calls, found a call of "
                                f"{type(node.op).__name__}")
            counter[node.op.name] += 1
    return counter
