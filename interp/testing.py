"""``interp.testing``: the facade mirroring ``tvm.relay.testing``.

* nat helpers: :func:`count`, :func:`make_nat_value`, :func:`make_nat_expr`
  (from :mod:`interp.nat`), and :class:`~irlib.prelude.Prelude` (``relay.testing.Prelude``);
* :func:`run_opt_pass`, :func:`run_infer_type`, :func:`rand`, :func:`count_ops`;
* :func:`check_grad` and :func:`gradient`;
* the model zoo: :func:`create_workload` and the model modules (``interp.testing.resnet``,
  ``mlp``, ``dcgan``, ``mobilenet``, ``lstm``, ``inception_v3``, ``squeezenet``, ``vgg``,
  ``densenet``, ``layers``), as ``relay.testing.<model>``;
* :func:`enabled_targets`;
* :func:`adt_values` (interpreter values over the Prelude's types) and
  :func:`runtime_value` (irlib.testing's plain values as interpreter values), from
  :mod:`interp.plain_values`;
* :func:`check_pass` and :func:`differential` (irlib's property-testing helpers, see
  docs/testing.md) with this package's executors: importing ``interp`` registers
  ``"debug"`` (the interpreter), ``"graph"`` (``build`` + the graph executor) and
  ``"python"`` (``run_as_python``) in :mod:`irlib.testing.runners`. The helpers live in
  ``irlib.testing`` and take the executor as a parameter because ``irlib`` never imports
  the runtime; this is the one place the runtime plugs itself in.
"""

from __future__ import annotations

import collections

import numpy as np

from irlib.ir import expr as E
from irlib.ir.functor import post_order
from irlib.ir.module import IRModule
from irlib.transform import InferType

from irlib.prelude import Prelude
from irlib.transform import gradient
from zoo import (create_workload, dcgan, densenet, inception_v3, layers, lstm, mlp, mobilenet,
                 resnet, squeezenet, vgg)

from . import nd
from .check_grad import check_grad
from .nat import count, make_nat_expr, make_nat_value
from .plain_values import adt_values, runtime_value
from .to_python import run_as_python, to_python
from irlib.ndarray import cpu, cuda

__all__ = ["Prelude", "count", "make_nat_value", "make_nat_expr", "run_opt_pass", "run_infer_type",
           "rand", "count_ops", "check_grad", "gradient", "create_workload", "enabled_targets",
           "mlp", "resnet", "dcgan", "mobilenet", "lstm", "inception_v3", "squeezenet", "vgg",
           "densenet", "layers", "check_pass", "differential", "adt_values", "runtime_value"]


def enabled_targets() -> list:
    """``(target, device)`` pairs this machine can run: always ``("cpu", cpu(0))``, plus
    ``("cuda", cuda(0))`` when numba finds a CUDA GPU (``relay.testing.enabled_targets``)."""
    targets = [("cpu", cpu(0))]
    try:
        from numba import cuda as numba_cuda
        if numba_cuda.is_available():
            targets.append(("cuda", cuda(0)))
    except Exception:  # noqa: BLE001 - numba missing or CUDA driver unusable: CPU only
        pass
    return targets


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


# -- irlib.testing's executors ---------------------------------------------------------------

# Arguments come in irlib.testing's plain form (Adt/Ref values): made runtime values here.

def _run_debug(mod, args):
    from .executor import create_executor
    return create_executor("debug", mod=mod).evaluate()(*_runtime_args(args, mod))


def _run_graph(mod, args):
    from .executor import create_executor
    return create_executor("graph", mod=mod).evaluate()(*_runtime_args(args, mod))


def _run_python(mod, args):
    return run_as_python(mod.get_global_var("main"), mod)(*_runtime_args(args, mod))


def _runtime_args(args, mod):
    return [runtime_value(arg, mod) for arg in args]


def _register_runners():
    from irlib.testing.runners import register_runner
    register_runner("debug", _run_debug)
    register_runner("graph", _run_graph)
    register_runner("python", _run_python)


_register_runners()


def check_pass(pass_or_fn, **options):
    """:func:`irlib.testing.check_pass` (property-test a pass; needs hypothesis).

    Args:
        pass_or_fn: the pass (or callable ``IRModule -> IRModule``) to check.
        options: the keyword arguments of :func:`irlib.testing.pass_checker.check_pass`.
    """
    from irlib.testing.pass_checker import check_pass as check
    return check(pass_or_fn, **options)


def differential(mod, **options):
    """:func:`irlib.testing.differential` (run ``mod`` on every executor and compare).

    Args:
        mod: the module whose ``main`` runs.
        options: the keyword arguments of :func:`irlib.testing.executor_diff.differential`.
    """
    from irlib.testing.executor_diff import differential as compare_executors
    return compare_executors(mod, **options)
