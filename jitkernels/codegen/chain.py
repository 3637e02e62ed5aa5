"""Call chains: consecutive generated kernels of a graph run by one numba function.

A small model's graph (silero-vad's LSTM steps: ~50 generated kernels on vectors of 64-256
floats) spends more time calling its kernels than in them: each call of a numba dispatcher
from Python costs ~0.5-0.7 us (type checks and unboxing of every array argument, the
result boxed), against well under 1 us of work. :func:`compile_chain` turns a run of such
calls into one generated function::

    k0 = generated_kernel("<digest of kernel 0>")
    ...
    @njit(cache=True, nogil=True)
    def kernel(t):
        k0(t[0], t[1], t[2])
        k1(t[2], t[3])
        ...

called once with a tuple of the distinct arrays of the whole run (each array is unboxed
once, ~0.1 us): measured on 50 four-array kernels, 37 us as separate calls against 7 us
chained. The kernels are the ones the code generator wrote (``k_<digest>.py`` in
:func:`jitkernels.codegen.cache_dir`), so the chain's source names them by digest and is
cached on disk the same way (a later process loads its machine code).

A chain may also call compiled functions that are not generated kernels: a *step*'s callee
is then ``(module, function name)`` of any numba function that module defines (the direct
convolution of a tiny model's conv layer, a small reduction: see
:mod:`jitkernels.codegen.chain_steps`), imported by name in the chain's source; an argument
may be a :class:`Literal` (a bool or int written into the source) instead of a tuple slot.

The caller (:mod:`interp.graph_chains`) decides which calls to chain; this module only
writes and compiles the chain.
"""

from __future__ import annotations

import importlib.util
import os
import sys

__all__ = ["kernel_digest", "generated_kernel", "chain_source", "compile_chain", "Literal"]

_PREFIX = "irlib_codegen_k_"


class Literal:
    """A constant argument of a chained call, written into the chain's source.

    Args:
        value: a bool or an int.
    """

    __slots__ = ("value",)

    def __init__(self, value):
        if not isinstance(value, (bool, int)):
            raise TypeError(f"a chain literal is a bool or an int, got {value!r}")
        self.value = value

    def source(self) -> str:
        """The value as Python source."""
        return repr(self.value)


def kernel_digest(fn):
    """The source digest of a kernel the code generator compiled, or None for anything
    else (a hand-written kernel, a Python callable).

    Args:
        fn: a library function of the graph executor.
    """
    py_func = getattr(fn, "py_func", None)
    module = getattr(py_func, "__module__", "") or ""
    if not module.startswith(_PREFIX) or getattr(py_func, "__name__", "") != "kernel":
        return None
    return module[len(_PREFIX):]


def generated_kernel(digest: str):
    """The generated kernel ``k_<digest>.py`` (already imported in this process, or loaded
    from the cache directory).

    Args:
        digest: from :func:`kernel_digest`.

    Raises:
        ImportError: when no such kernel was generated (its file is gone).
    """
    from . import _COMPILED, cache_dir
    fn = _COMPILED.get(digest)
    if fn is not None:
        return fn
    name = _PREFIX + digest
    module = sys.modules.get(name)
    if module is None:
        path = os.path.join(cache_dir(), f"k_{digest}.py")
        if not os.path.exists(path):
            raise ImportError(f"generated kernel {digest} is not in {cache_dir()}")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    _COMPILED[digest] = module.kernel
    return module.kernel


def chain_source(digests: list, arguments: list) -> str:
    """The source of a chain (see the module docstring).

    Args:
        digests: per call, its kernel's digest, or ``(module, function name)`` of another
            numba function.
        arguments: per call, the positions of its arrays in the chain's tuple (an int) or
            :class:`Literal` constants.
    """
    lines = ['"""A chain of generated irlib kernels (jitkernels.codegen.chain)."""',
             "from numba import njit",
             "from jitkernels.codegen.chain import generated_kernel", ""]
    names: dict = {}
    for digest in digests:
        if digest in names:
            continue
        names[digest] = f"k{len(names)}"
        if isinstance(digest, tuple):
            module, function = digest
            if not (module.replace(".", "").replace("_", "").isalnum()
                    and function.replace("_", "").isalnum()):
                raise ValueError(f"not a module and function name: {digest!r}")
            lines.append(f"from {module} import {function} as {names[digest]}")
        else:
            lines.append(f'{names[digest]} = generated_kernel("{digest}")')
    lines += ["", "", "@njit(cache=True, nogil=True)", "def kernel(t):"]
    for digest, slots in zip(digests, arguments):
        items = ", ".join(s.source() if isinstance(s, Literal) else f"t[{s}]" for s in slots)
        lines.append(f"    {names[digest]}({items})")
    return "\n".join(lines) + "\n"


def compile_chain(digests: list, arguments: list):
    """The chain function ``fn(arrays_tuple)`` of these calls (compiled by numba on its
    first call), or None when a kernel's source is not available.

    Args:
        digests, arguments: as :func:`chain_source`.
    """
    from . import _load
    source = chain_source(digests, arguments)
    try:
        return _load(source)
    except ImportError:
        return None
