"""``check_grad``: compare a function's analytic gradient with finite differences.

Mirrors ``tvm.relay.testing.check_grad``: the gradient function built by
:func:`irlib.transform.gradient` is evaluated once, and each element of each tested input
is nudged by ``±eps`` to get the two-sided difference quotient of the sum of the output
elements the mode seeds (every leaf for ``first_order``, the first leaf for
``higher_order``). Use float64 inputs: float32 cannot resolve ``eps=1e-6``.

Example::

    x = irlib.var("x", shape=(3, 4), dtype="float64")
    check_grad(irlib.Function([x], irlib.tanh(x)), scale=1.0)
"""

from __future__ import annotations

import numpy as np

from irlib.ir import expr as E
from irlib.ir.types import TensorType, TupleType
from irlib.transform.gradient import gradient
from irlib.typeinf import infer_expr


def _evaluate(func: E.Function, args: list):
    """Run ``func`` on ``args`` with the reference interpreter (or, until it is there, the
    dataflow evaluator)."""
    try:
        from interp import create_executor
    except ImportError:
        create_executor = None
    if create_executor is not None:
        result = create_executor("debug").evaluate(func)(*args)
        return _to_numpy(result)
    from irlib.testing.dataflow_eval import evaluate
    return evaluate(func.body, dict(zip(func.params, args)))


def _to_numpy(value):
    if isinstance(value, (tuple, list)):
        return tuple(_to_numpy(v) for v in value)
    fields = getattr(value, "fields", None)
    if fields is not None:
        return tuple(_to_numpy(v) for v in fields)
    if hasattr(value, "numpy"):
        return value.numpy()
    return np.asarray(value)


def _leaves(value) -> list:
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in _leaves(v)]
    return [np.asarray(value, dtype=np.float64)]


def _seeded_sum(value, mode: str) -> float:
    leaves = _leaves(value)
    if mode == "higher_order":
        leaves = leaves[:1]
    return float(sum(np.sum(leaf) for leaf in leaves))


def _random_input(ty, mean, scale, rng):
    if isinstance(ty, TupleType):
        return tuple(_random_input(t, mean, scale, rng) for t in ty.fields)
    if not isinstance(ty, TensorType):
        raise TypeError(f"check_grad can only generate tensor inputs, not {ty}")
    data = mean + scale * rng.standard_normal(tuple(int(d) for d in ty.shape))
    return np.asarray(data, dtype=ty.dtype)


def check_grad(func, inputs=None, test_inputs=None, eps=1e-6, atol=1e-5, rtol=1e-3,
               scale=None, mean=0, mode="higher_order", target_devices=None,
               executor_kind="debug"):
    """Assert that the gradient of ``func`` matches two-sided finite differences.

    Args:
        func: a closed Function with tensor parameters.
        inputs: the argument arrays (default: ``mean + scale * randn`` per parameter).
        test_inputs: the inputs whose gradients are checked (a subset of ``inputs``, by
            identity; default: all).
        eps: the finite-difference step.
        atol: absolute tolerance.
        rtol: relative tolerance.
        scale: spread of the random inputs (default ``10 * eps``).
        mean: centre of the random inputs.
        mode: the :func:`~irlib.transform.gradient` mode.
        target_devices: accepted for Relay compatibility; the reference interpreter is used.
        executor_kind: accepted for Relay compatibility (``"debug"``, ``"graph"``, ``"vm"``);
            the reference interpreter is used whatever it says.

    Raises:
        AssertionError: if a gradient differs from the numerical estimate.
        ValueError: if no test input is one of the inputs.
    """
    del target_devices, executor_kind  # NOTE: only the reference interpreter evaluates here
    fwd = infer_expr(func)
    bwd = gradient(fwd, mode=mode) if mode == "higher_order" else _first_order(fwd)
    if scale is None:
        scale = 10 * eps
    if inputs is None:
        rng = np.random.default_rng(0)
        inputs = [_random_input(p.checked_type, mean, scale, rng) for p in fwd.params]
    inputs = [x if isinstance(x, np.ndarray) else np.asarray(x) for x in inputs]
    if test_inputs is None:
        test_inputs = inputs
    _, grads = _evaluate(bwd, inputs)
    chosen = [(x, grad) for x, grad in zip(inputs, grads)
              if any(x is t for t in test_inputs)]
    if not chosen:
        raise ValueError("check_grad: none of test_inputs is one of inputs (compared by "
                         "identity)")
    for x, grad in chosen:
        approx = np.zeros(x.shape, dtype=np.float64)
        for index in np.ndindex(x.shape):
            original = x[index].copy()
            x[index] = original + eps
            plus = _seeded_sum(_evaluate(fwd, inputs), mode)
            x[index] = original - eps
            minus = _seeded_sum(_evaluate(fwd, inputs), mode)
            x[index] = original
            approx[index] = (plus - minus) / (2 * eps)
        np.testing.assert_allclose(np.asarray(grad, dtype=np.float64), approx,
                                   atol=atol, rtol=rtol)


def _first_order(fwd):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return gradient(fwd, mode="first_order")
