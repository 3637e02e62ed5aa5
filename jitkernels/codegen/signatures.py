"""Compiling a graph's generated kernels ahead of its first run, one signature at a time.

numba compiles a ``@njit`` function on its first call, for the argument types of that call.
The graph executor knows those types before running: each node calls its library function
on fixed entry arrays. :func:`call_signatures` says which numba functions a call
``fn(*arrays)`` will run and with which argument types, and :func:`compile_signature`
compiles one (loading it from numba's on-disk cache when it is there) and says whether
real compiling happened, so the caller can show progress only for a cold cache.
"""

from __future__ import annotations

import numpy as np

__all__ = ["call_signatures", "compile_signature", "is_compiled"]


def _dispatcher_type():
    try:
        from numba.core.registry import CPUDispatcher
    except ImportError:         # numba missing: nothing is compiled ahead
        return None
    return CPUDispatcher        # CPU ``@njit`` functions only (CUDA kernels are not ours here)


def _array_type(dtype, ndim: int):
    import numba
    return numba.types.Array(numba.from_dtype(np.dtype(dtype)), ndim, "C")


def call_signatures(fn, arrays) -> list:
    """The numba functions a graph call ``fn(*arrays)`` runs, with their argument types.

    Args:
        fn: a node's library function: a jitted function called directly, or a
            :class:`~jitkernels.codegen.FusedKernel`; anything else runs no generated code
            (an empty list).
        arrays: the arguments the graph passes (inputs, outputs, size values).

    Returns:
        A list of ``(dispatcher, argument types)``. A group whose anchor result's type is
        not known before running (an ``Any`` dim), or whose anchor kernel applies the
        epilogue itself (``fused_epilogue``: the generated loop is only its fallback), gives
        an empty list: it compiles on its first call, as before.
    """
    dispatcher_type = _dispatcher_type()
    if dispatcher_type is None:
        return []
    import numba
    if isinstance(fn, dispatcher_type):
        return [(fn, tuple(numba.typeof(a) for a in arrays))]
    from . import FusedKernel
    if not isinstance(fn, FusedKernel) or fn.small_dense is not None:
        return []
    if getattr(fn, "fused_epilogue", None) is not None:
        # the anchor's kernel applies the epilogue itself (into_fused); the generated
        # loop only runs if it declines, so it compiles then, not ahead for nothing
        return []
    count = len(arrays) - len(fn.size_names)
    tensors = [a.reshape(1) if a.ndim == 0 else a for a in arrays[:count]]
    types = [numba.typeof(a) for a in tensors]
    if fn.anchor is not None:
        anchor_type = fn._anchor_type
        if anchor_type is None or any(not isinstance(d, int) for d in anchor_type.shape):
            return []
        types.insert(fn.num_inputs, _array_type(anchor_type.dtype, len(anchor_type.shape)))
    types += [numba.typeof(s) for s in arrays[count:]]
    return [(fn.jit_fn, tuple(types))]


def is_compiled(dispatcher, types: tuple) -> bool:
    """Whether ``dispatcher`` already has machine code for ``types`` in this process."""
    return tuple(types) in dispatcher.overloads


def compile_signature(dispatcher, types: tuple, on_compile=None) -> bool:
    """Make ``dispatcher`` ready for ``types``: from this process, numba's disk cache, or
    by compiling.

    Args:
        dispatcher: a numba ``@njit`` function.
        types: its argument types.
        on_compile: called (no arguments) just before numba starts real compiling, i.e.
            on a cache miss; None for nothing.

    Returns:
        True when it compiled, False when the code came from a cache.
    """
    from numba.core import event

    class _Listener(event.Listener):
        def __init__(self):
            self.started = False

        def on_start(self, event_):
            if not self.started and on_compile is not None:
                on_compile()
            self.started = True

        def on_end(self, event_):
            pass

    if is_compiled(dispatcher, types):
        return False
    listener = _Listener()
    with event.install_listener("numba:compile", listener):
        dispatcher.compile(tuple(types))
    return listener.started
