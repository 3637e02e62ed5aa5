"""Compiling a graph's fused kernels when its executor is made, with progress on a cold cache.

``factory["default"](dev)`` (so ``interp.build`` + ``GraphModule``, ``create_executor
("graph")`` and ``irlib run``) calls :func:`precompile` on the new runtime: every node's
generated numba kernel is compiled for the argument types that node will pass (its entry
arrays), before the first run instead of inside it. Kernels already in numba's on-disk cache
(``cache=True``: next to the generated sources under ``$IRLIB_CACHE_DIR/codegen``, or under
``NUMBA_CACHE_DIR`` when set) load in milliseconds; when one must really be compiled, a
progress bar opens (:mod:`irlib.progress`: ``compiling kernels 12/31`` and the function's
name, on a terminal or with ``IRLIB_PROGRESS=1``), so a warm cache shows nothing.

Anchor kernels that run from Python (``jitkernels.cpu``'s conv, pool, ... wrappers) still
compile on their first call: their argument types are only known inside the wrapper. The
first run of a static graph runs under :func:`watch_compiles`, so on a cold cache those
show too (``compiling kernels 3 jitkernels.cpu.conv_core.im2col_chw``: a count without a
total, since which functions a wrapper calls is only known as it runs).
"""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager

from irlib.progress import task

from .graph_runtime import GraphRuntime

__all__ = ["CompileStats", "precompile", "watch_compiles", "DESCRIPTION"]

logger = logging.getLogger("irlib.build")

DESCRIPTION = "compiling kernels"
"""The progress bar's label."""


class CompileStats:
    """What :func:`precompile` did.

    Attributes:
        kernels: distinct (kernel, argument types) pairs the graph runs.
        compiled: how many of them numba really compiled (cache misses).
        loaded: how many came from numba's disk cache.
        failed: how many numba could not compile ahead (left to the first run, which
            compiles them or raises as it would have without this step).
        seconds: wall time of the whole step.
    """

    __slots__ = ("kernels", "compiled", "loaded", "failed", "seconds")

    def __init__(self, kernels=0, compiled=0, loaded=0, seconds=0.0, failed=0):
        self.kernels, self.compiled, self.loaded = kernels, compiled, loaded
        self.failed, self.seconds = failed, seconds

    def __repr__(self) -> str:
        return (f"CompileStats(kernels={self.kernels}, compiled={self.compiled}, "
                f"loaded={self.loaded}, failed={self.failed}, seconds={self.seconds:.2f})")


def _pending(runtime) -> list:
    """``(function name, dispatcher, types)`` of every kernel the runtime's calls need and
    this process does not have yet, each once, in graph order."""
    try:
        from jitkernels.codegen.signatures import call_signatures, is_compiled
    except ImportError:             # numba (or jitkernels) missing: nothing to compile
        return []
    graph = runtime.graph
    names = [graph.nodes[nid]["attrs"]["func_name"]
             for nid, fn in enumerate(runtime.functions) if fn is not None]
    pending, seen = [], set()
    for name, (fn, args) in zip(names, runtime.calls):
        for dispatcher, types in call_signatures(fn, args):
            key = (id(dispatcher), types)
            if key in seen or is_compiled(dispatcher, types):
                continue
            seen.add(key)
            pending.append((name, dispatcher, types))
    return pending


def precompile(runtime) -> CompileStats:
    """Compile (or load from cache) every generated kernel ``runtime`` will call.

    Args:
        runtime: a static :class:`~interp.graph_runtime.GraphRuntime` (its ``calls`` hold
            the arrays each node passes). A symbolic runtime has no fixed arguments before
            its first binding and is left alone.

    Returns:
        A :class:`CompileStats`.
    """
    started = time.perf_counter()
    if type(runtime) is not GraphRuntime:
        return CompileStats()
    pending = _pending(runtime)
    if not pending:
        return CompileStats(seconds=time.perf_counter() - started)
    from jitkernels.codegen.signatures import compile_signature
    stats = CompileStats(kernels=len(pending))
    bar = None
    position = 0

    def open_bar():                 # the first real compile: from now on, show progress
        nonlocal bar
        if bar is None:
            bar = task(DESCRIPTION, total=len(pending), completed=position)
            bar.start(current)

    try:
        for position, (current, dispatcher, types) in enumerate(pending):
            if bar is not None:
                bar.start(current)
            try:
                if compile_signature(dispatcher, types, on_compile=open_bar):
                    stats.compiled += 1
                else:
                    stats.loaded += 1
            except Exception as error:  # noqa: BLE001 -- ahead of time only: the first
                # run compiles it (and reports any real error) as it always did
                logger.debug("precompile of %s for %s failed: %s", current, types, error)
                stats.failed += 1
            if bar is not None:
                bar.advance()
    finally:
        if bar is not None:
            bar.close()
    stats.seconds = time.perf_counter() - started
    return stats


@contextmanager
def watch_compiles(description: str = DESCRIPTION):
    """Show the numba compiles that happen inside the block (on any thread), one count per
    irlib kernel (numba's own helpers compiled inside it are not counted), with the
    function's name; nothing is shown when everything comes from the caches.

    Args:
        description: the progress label.
    """
    try:
        from numba.core import event
    except ImportError:             # numba missing: nothing compiles
        yield
        return
    state = {"bar": None}

    def is_ours(event_) -> bool:
        func = getattr(event_.data.get("dispatcher"), "py_func", None)
        return not (getattr(func, "__module__", "") or "").startswith("numba.")

    class _Listener(event.Listener):
        def on_start(self, event_):
            if not is_ours(event_):
                return
            if state["bar"] is None:
                state["bar"] = task(description, total=0)
            func = event_.data["dispatcher"].py_func
            state["bar"].start(f"{func.__module__}.{func.__qualname__}")

        def on_end(self, event_):
            if is_ours(event_) and state["bar"] is not None:
                state["bar"].advance()

    listener = _Listener()
    event.register("numba:compile", listener)
    try:
        yield
    finally:
        event.unregister("numba:compile", listener)
        if state["bar"] is not None:
            state["bar"].close()
