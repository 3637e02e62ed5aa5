"""``differential``: run one module on several executors and require the same result.

Every executor that can run a module must compute the same thing: the reference
interpreter (``"debug"``), the graph executor with its numba kernels (``"graph"``), the
module compiled to Python (``"python"``, i.e. ``to_python`` / ``run_as_python``), and any
backend a user registers (:func:`irlib.testing.runners.register_runner`). The first
executor listed is the reference the others are compared with.

Example (in user code that has imported the runtime package ``interp``, which registers
``"debug"``, ``"graph"`` and ``"python"``; irlib itself never imports it)::

    from irlib.testing import differential
    results = differential(mod, executors=("debug", "graph", "python"))
    results["graph"]                    # the graph executor's result (plain form)
"""

from __future__ import annotations

import numpy as np

from ..errors import IRError
from ..ir.types import TensorType
from .runners import ValueMismatch, compare, get_runner, plain

__all__ = ["differential", "ExecutorMismatch", "random_inputs"]


class ExecutorMismatch(IRError, AssertionError):
    """Two executors disagree on a module, or one of them failed to run it.

    Args:
        message: what differs (the other arguments are the attributes below).

    Attributes:
        results: ``{executor name: plain result}`` of the executors that ran.
    """

    def __init__(self, message, results=None):
        super().__init__(message)
        self.results = dict(results or {})


def random_inputs(mod, seed: int = 0) -> list:
    """Random arguments for ``mod["main"]``, one numpy array per (statically typed) parameter.

    Floats are drawn from ``[-1, 1]``, integers from ``[-5, 5]``, booleans uniformly.

    Args:
        mod: the module.
        seed: the numpy random seed.

    Raises:
        IRError: for a parameter without a static tensor type (pass ``inputs=`` then).
    """
    rng = np.random.default_rng(seed)
    args = []
    for param in mod["main"].params:
        ty = param.type_annotation
        if not isinstance(ty, TensorType) or not all(isinstance(d, int) for d in ty.shape):
            raise IRError(f"differential: cannot draw a value for parameter %{param.name_hint} "
                          f"of type {ty}; pass inputs= explicitly")
        dtype = np.dtype(ty.dtype)
        if dtype == np.bool_:
            data = rng.integers(0, 2, size=ty.shape).astype(bool)
        elif np.issubdtype(dtype, np.integer):
            data = rng.integers(-5, 6, size=ty.shape).astype(dtype)
        else:
            data = rng.uniform(-1.0, 1.0, size=ty.shape).astype(dtype)
        args.append(np.asarray(data))
    return args


def _arguments(mod, inputs, seed):
    if inputs is None:
        return random_inputs(mod, seed)
    if isinstance(inputs, dict):
        params = mod["main"].params
        names = [p.name_hint for p in params]
        unknown = sorted(set(inputs) - set(names))
        missing = [n for n in names if n not in inputs]
        if unknown or missing:
            raise IRError(f"differential: inputs must name every parameter of main {names}; "
                          f"unknown {unknown}, missing {missing}")
        return [inputs[n] for n in names]
    return list(inputs)


def differential(mod, executors=("debug", "graph", "python"), inputs=None, *,
                 rtol: float = 1e-5, atol: float = 1e-6, exact: bool = False,
                 seed: int = 0) -> dict:
    """Run ``mod["main"]`` on every executor and require them all to agree.

    Args:
        mod: an :class:`~irlib.ir.module.IRModule` with a ``main``.
        executors: names registered in :mod:`irlib.testing.runners` or callables
            ``run(mod, args) -> value``; the first is the reference.
        inputs: the arguments: a list in parameter order, a dict by parameter name, or None
            for random ones (:func:`random_inputs` with ``seed``).
        rtol, atol: tolerance for floating-point results (kernels may round differently).
        exact: require bitwise-identical results.
        seed: the seed of the random inputs.

    Returns:
        ``{executor: result}`` in plain form (:func:`irlib.testing.runners.plain`); a
        callable executor is keyed by its ``__name__``.

    Raises:
        ExecutorMismatch: naming the executor that disagrees with the reference (or failed),
            the path of the first difference and the module's ``main``.
    """
    if not executors:
        raise IRError("differential: give at least one executor")
    args = _arguments(mod, inputs, seed)
    results: dict = {}
    reference = None
    for executor in executors:
        name = executor if isinstance(executor, str) else getattr(executor, "__name__",
                                                                   repr(executor))
        run = get_runner(executor)
        try:
            value = plain(run(mod, list(args)))
        except Exception as exc:  # noqa: BLE001 - an executor's failure is the finding
            raise ExecutorMismatch(f"differential: executor {name!r} failed: "
                                   f"{type(exc).__name__}: {exc}\n{_main_text(mod)}",
                                   results) from exc
        results[name] = value
        if reference is None:
            reference = name
            continue
        try:
            compare(value, results[reference], rtol=rtol, atol=atol, exact=exact,
                    label=f"{name}'s result")
        except ValueMismatch as exc:
            raise ExecutorMismatch(f"differential: {name!r} disagrees with {reference!r}: "
                                   f"{exc}\n{_main_text(mod)}", results) from None
    return results


def _main_text(mod) -> str:
    try:
        text = mod["main"].astext(show_meta_data=False)
        return "main: " + "\n".join(line for line in text.splitlines()
                                    if not line.startswith("#[version"))
    except Exception:  # noqa: BLE001 - never hide the mismatch behind a printer failure
        return "main: <unprintable>"
