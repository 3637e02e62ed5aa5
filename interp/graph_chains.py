"""Which of a graph's node calls run as one chain (:mod:`jitkernels.codegen.chain`).

The graph executor calls each op node's function from Python. For a generated kernel on a
few hundred floats that call costs more than the kernel's work (~0.5-0.7 us of argument
checks and unboxing, against ~0.2-1 us of arithmetic), so a small model such as
silero-vad's (an 8-step LSTM: ~50 nodes on vectors of 64-256 floats) is dominated by it.
:func:`chain_calls` replaces every run of at least :data:`CHAIN_MIN_CALLS` consecutive calls
of generated kernels whose arrays all hold at most :data:`CHAIN_MAX_ELEMENTS` elements by
one call of a generated chain function taking the run's distinct arrays as one tuple
(at most :data:`CHAIN_MAX_CALLS` calls per chain).

Cost rule: a chain is compiled once per distinct run (numba, a fraction of a second to a
few seconds for ~50 kernels; cached on disk like the kernels), so the runtime chains a
graph on its second run, never on its first (a graph run once pays nothing); big arrays
are left alone because there the call overhead is a small share. ``IRLIB_GRAPH_CHAINS=0``
(``off``/``false``/``no``) turns chaining off.

Calls that are not generated kernels join a chain as the *steps*
:func:`jitkernels.codegen.chain_steps.steps_of` gives for them (a tiny model's direct-kernel
conv layers, small reductions and softmaxes, with their per-run preparation done once;
that module's cost rule and its switch ``IRLIB_CHAIN_STEPS=0``): a small conv net such as
keyword spotting then runs as a few calls from Python per inference. A *standalone* step
(a conv layer's direct kernel: tens of microseconds of work) is called on its own, prepared
but outside any chain: linked into one module with the rest of a chain, the kws layers
ran 20-25% slower than the same compiled kernels called one by one (99 against 79 us for
the whole model; a code-placement effect of compiling them into one module, not of the
call), while a call from Python costs ~1 us.
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["chain_calls", "enabled", "CHAIN_MIN_CALLS", "CHAIN_MAX_CALLS", "CHAIN_MAX_ELEMENTS",
           "ENV_SWITCH"]

CHAIN_MIN_CALLS = 3
"""Fewest consecutive chainable calls worth a chain."""

CHAIN_MAX_CALLS = 64
"""Most calls in one chain (a longer run becomes several chains): numba compiles a chain
as one function, in time that grows with its length (~4 s for 50 small kernels on the
2-core dev machine, once: cached on disk), so an unrolled 1000-step recurrence must not
become one function. Chains of a periodic graph repeat (the slots are numbered within each
chain), so its distinct chain sources stay few."""

CHAIN_MAX_ELEMENTS = 16384
"""Largest array (elements) a chained call may touch: above it a kernel's work is tens of
microseconds and the ~0.5 us call overhead is no longer worth a compile."""

ENV_SWITCH = "IRLIB_GRAPH_CHAINS"
"""Environment variable: ``0`` (``off``/``false``/``no``) disables chains (read per call of
:func:`chain_calls`)."""


def enabled() -> bool:
    """Whether the graph executor chains small generated kernels (:data:`ENV_SWITCH`)."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "off", "false", "no")


def _digest(fn, args) -> str | None:
    """The kernel digest of a call that may be chained, else None."""
    from jitkernels.codegen.chain import kernel_digest
    digest = kernel_digest(fn)
    if digest is None:
        return None
    for array in args:
        if type(array) is not np.ndarray or array.size > CHAIN_MAX_ELEMENTS \
                or array.ndim == 0:
            return None
    return digest


def _steps(fn, args) -> list | None:
    """The chain steps ``[(callee, values)]`` of one node call, or None: a generated kernel
    is one step; other calls are asked :func:`jitkernels.codegen.chain_steps.steps_of`."""
    digest = _digest(fn, args)
    if digest is not None:
        return [(digest, args)]
    from jitkernels.codegen.chain_steps import steps_of
    try:
        return steps_of(fn, args)
    except Exception:       # noqa: BLE001 - a step that cannot be prepared: keep the call
        return None


def _chain(run: list):
    """One ``(chain function, (arrays,))`` call for ``run`` (``[(callee, values)]``), or
    None when it cannot be compiled."""
    import numba
    from jitkernels.codegen.chain import Literal, compile_chain
    arrays, position = [], {}
    arguments = []
    for _, values in run:
        slots = []
        for value in values:
            if isinstance(value, Literal):
                slots.append(value)
                continue
            key = id(value)
            if key not in position:
                position[key] = len(arrays)
                arrays.append(value)
            slots.append(position[key])
        arguments.append(tuple(slots))
    try:
        fn = compile_chain([callee for callee, _ in run], arguments)
    except ValueError:
        return None
    if fn is None:
        return None
    values = tuple(arrays)
    try:
        fn.compile((numba.typeof(values),))
    except Exception:       # noqa: BLE001 - any numba failure: keep the separate calls
        return None
    return fn, (values,)


def chain_calls(calls: list) -> list:
    """``calls`` (``[(fn, args)]``, the graph's node calls in order) with every run of
    chainable calls (see the module docstring) replaced by one chain call.

    Args:
        calls: the node calls; not modified.

    Returns:
        A new list doing the same work in the same order (``calls`` itself when chaining
        is off, numba or the code generator is missing, or nothing is chained).
    """
    if not enabled():
        return calls
    try:
        import jitkernels.codegen.chain  # noqa: F401
    except ImportError:
        return calls
    from jitkernels.codegen.chain_steps import resolve, standalone
    result, run = [], []

    def flush():
        chained = _chain(run) if len(run) >= CHAIN_MIN_CALLS else None
        if chained is None:
            result.extend(resolve(callee, values) for callee, values in run)
        else:
            result.append(chained)
        run.clear()

    for fn, args in calls:
        steps = _steps(fn, args)
        if steps is None:
            flush()
            result.append((fn, args))
            continue
        if len(run) + len(steps) > CHAIN_MAX_CALLS:
            flush()
        for callee, values in steps:
            if standalone(callee):
                flush()
                result.append(resolve(callee, values))
            else:
                run.append((callee, values))
    flush()
    if len(result) == len(calls) and all(
            new[0] is old[0] and new[1] is old[1] for new, old in zip(result, calls)):
        return calls
    return result
