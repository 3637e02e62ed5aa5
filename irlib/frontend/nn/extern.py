"""Custom kernels and extern modules in the nn builder (Relax's ``nn.extern`` family).

Every form below emits one ``call_dps_packed`` call (:mod:`irlib.op.extern_call`): the
function is registered in the process-wide extern function table and the IR names it by its
key, with the output types as attributes. The interpreter, the graph executor and
``Module.jit`` run such a call like any opaque op, through the op's reference implementation,
which allocates the outputs and calls the function in destination-passing style (DPS):
``func(*inputs, *outputs)``.

* :func:`tensor_ir_op` ``(func, name_hint, args, out)``: Relax takes a TIR PrimFunc; irlib
  takes a Python or numba (``@numba.njit``) function in DPS. ``out`` is a placeholder
  :class:`~irlib.frontend.nn.Tensor` (or a list of them) giving the output shapes and dtypes;
  symbolic dims (an input's ``shape[0]``, a ``str`` size name) are bound from the function's
  arguments when it runs.
* :func:`tensor_expr_op` ``(tensor_expr_func, name_hint, args, *, attrs=None)``: Relax takes
  a TE function; irlib takes a value-returning function ``(*numpy arrays) -> array(s)``. The
  output types come from ``attrs["out"]`` (placeholders, as ``tensor_ir_op``'s ``out``) or,
  without it, from one dry run of the function on zero-filled arrays of the inputs' static
  shapes (inputs with symbolic dims then need ``attrs["out"]``). Other ``attrs`` entries are
  accepted and ignored (Relax attaches them to the PrimFunc it generates).
* :func:`extern` ``(name, args, out)``: calls the function registered under ``name`` with
  :func:`register_extern_func` (``tvm.register_func``'s counterpart), in DPS; a name that is
  not registered when the program runs is an error then.
* :class:`SourceModule` (C or C++ source compiled with the system compiler into a shared
  object) and :class:`ObjectModule` (a prebuilt ``.so``, or a ``.o`` linked into one), both
  :class:`ExternModule` s: ``symbols`` maps each C symbol to its shape/dtype inference
  function, which receives the call's arguments (nn Tensors, ints, ...) and returns a
  placeholder Tensor (or a list of them). In ``forward``, ``nn.add_extern(mod)`` (once per
  export) and then ``mod["symbol"](*args)``. The module compiles and loads (ctypes) on its
  first run, or at ``mod.load()``. ``export_tvm(..., allow_extern=True)`` returns the modules.

The C calling convention: one ``DLTensor*`` per tensor (inputs then outputs), ``int64_t``
for ints and size expressions, ``double`` for floats, ``const char*`` for strings; the
function returns ``int`` (0 = success). ``#include <dlpack/dlpack.h>`` (irlib ships its own
DLPack-compatible header) and mark the symbol ``IRLIB_EXTERN_C`` (from
``<irlib/extern.h>``)::

    #include <irlib/extern.h>
    IRLIB_EXTERN_C int scale_shift(DLTensor* x, DLTensor* b, DLTensor* y) { ...; return 0; }

In C++17, ``TVM_DLL_EXPORT_TYPED_FUNC(symbol, impl)`` from the same header exports ``impl``
(DLTensor*/integer/float/``const char*`` parameters, ``int`` or ``void`` result) under
``symbol`` with packed arguments, which irlib recognises (see :class:`irlib.op.extern_call.CFunc`).

Errors (all :class:`~irlib.frontend.nn.errors.NNError` s): :class:`ExternError` (misuse:
a module not added with ``add_extern``, a missing source file, an unsupported format),
:class:`ExternCompileError` (the compiler is missing or failed; the message shows its
command and output), :class:`ExternSymbolError` (a symbol the module does not declare, or
declares but the library lacks), :class:`ExternInferenceError` (a shape/dtype inference
function failed or returned something other than placeholder Tensors), and
:class:`~irlib.frontend.nn.errors.OpError` for bad ``args``/``out``. Registering one symbol
in two modules of an export is an ``NNError`` from ``add_extern``. See docs/nn_extern.md.

Layout: this module has the functional forms; :mod:`._extern_modules` the extern module
classes (compiling, linking, loading); :mod:`._extern_common` the errors and the emission
of the call.
"""

from __future__ import annotations

from typing import Callable, Dict, Optional, Sequence

import numpy as np

from ...ir.dims import DimExpr
from ...ir.types import TensorType
from ...op import extern_call as _ec
from ._builder import current_where, infer_expr_type
from ._extern_common import (ExternCompileError, ExternError, ExternInferenceError,
                             ExternSymbolError, _convert_args, _emit, _out_types)
from ._extern_modules import ExternLibrary, ExternModule, ObjectModule, SourceModule
from .errors import OpError

__all__ = ["tensor_ir_op", "tensor_expr_op", "extern", "register_extern_func",
           "ExternModule", "ObjectModule", "SourceModule", "ExternLibrary", "ExternError",
           "ExternCompileError", "ExternSymbolError", "ExternInferenceError"]


def register_extern_func(name: str, func: Optional[Callable] = None, *, override: bool = False):
    """Register a function for :func:`extern` (``tvm.register_func``'s counterpart).

    A Python or numba function is called in DPS, ``func(*inputs, *outputs)`` with numpy
    arrays; a ctypes function pointer is called with ``DLTensor*`` arguments. Usable as a
    decorator: ``@nn.register_extern_func("my.add")``.

    Args:
        name: the name :func:`extern` calls it by.
        func: the function (omitted: a decorator is returned).
        override: replace an existing registration instead of raising.

    Raises:
        irlib.op.extern_call.ExternFuncError: the name is taken (without ``override``).
    """
    return _ec.register_func(name, func, override=override)

def tensor_ir_op(func: Callable, name_hint: str, args, out):
    """Call a Python or numba function in destination-passing style (Relax's call_tir).

    ``func(*inputs, *outputs)`` receives numpy arrays for tensors and Python scalars for
    ints/floats/strs/size expressions, and writes every output (they start uninitialised).

    Args:
        func: the function (a numba ``@njit`` dispatcher works too).
        name_hint: the name of the bound result, and the function's key in the extern table
            (suffixed ``_1``, ``_2``... if another function took it).
        args: a Tensor, or a list of Tensors, ints, floats, strs and size expressions (a
            nested list, e.g. a shape, is passed element by element).
        out: a placeholder Tensor giving the output's shape and dtype, or a list/tuple of
            them; dims may be symbolic.

    Returns:
        A Tensor for a single ``out``, else a list/tuple (as ``out``) of Tensors.

    Raises:
        OpError: bad ``func``, ``args`` or ``out``.
    """
    if not callable(func):
        raise OpError(f"{current_where()}: {name_hint}: tensor_ir_op needs a callable, got "
                      f"{type(func).__name__}")
    types, container = _out_types(out, f"{name_hint}: out")
    key = _ec.register_unique(name_hint, _ec.PythonFunc(func))
    return _emit(key, name_hint, _convert_args(args, name_hint), types, container)


def _dry_run_types(func, args: list, name_hint: str):
    inputs = []
    for arg in args:
        if isinstance(arg, (str, int, float)):
            inputs.append(arg)
            continue
        ty = None if isinstance(arg, DimExpr) else infer_expr_type(arg)
        if ty is None or not all(isinstance(d, int) for d in ty.shape):
            raise OpError(f"{current_where()}: {name_hint}: tensor_expr_op cannot infer the "
                          "output types of a call with symbolic arguments; give them as "
                          "attrs={'out': nn.Tensor.placeholder(shape, dtype)}")
        inputs.append(np.zeros(ty.shape, dtype=_ec._np_dtype(ty.dtype)))
    try:
        with np.errstate(all="ignore"):
            result = func(*inputs)
    except Exception as error:  # noqa: BLE001 - the user's function; reported with context
        raise OpError(f"{current_where()}: {name_hint}: tensor_expr_op ran the function on "
                      f"zero-filled inputs to infer its output types and it raised "
                      f"{type(error).__name__}: {error}; give attrs={{'out': ...}}") from error
    results = list(result) if isinstance(result, (list, tuple)) else [result]
    types = []
    for value in results:
        value = np.asarray(value)
        types.append(TensorType(value.shape, value.dtype.name))
    return types, (None if not isinstance(result, (list, tuple)) else tuple)


def tensor_expr_op(tensor_expr_func: Callable, name_hint: str, args, *,
                   attrs: Optional[Dict] = None):
    """Call a value-returning Python function ``f(*arrays) -> array(s)`` (Relax builds a TE
    function instead; see the module docstring).

    Args:
        tensor_expr_func: the function; it gets numpy arrays (and Python scalars for
            ints/floats/size expressions) and returns an array or a list/tuple of arrays.
        name_hint: the result's name and the function's key in the extern table.
        args: as :func:`tensor_ir_op`'s.
        attrs: ``{"out": placeholder(s)}`` declares the output types (needed when an input
            has symbolic dims); other entries are ignored.

    Returns:
        A Tensor, or a tuple of Tensors when the function returns several arrays (or
        ``out`` is a list/tuple, whose type is then kept).

    Raises:
        OpError: bad arguments, or output types that cannot be inferred.
    """
    if not callable(tensor_expr_func):
        raise OpError(f"{current_where()}: {name_hint}: tensor_expr_op needs a callable, got "
                      f"{type(tensor_expr_func).__name__}")
    converted = _convert_args(args, name_hint)
    out = (attrs or {}).get("out")
    if out is not None:
        types, container = _out_types(out, f"{name_hint}: attrs['out']")
    else:
        types, container = _dry_run_types(tensor_expr_func, converted, name_hint)
    key = _ec.register_unique(name_hint, _ec.ValueFunc(tensor_expr_func))
    return _emit(key, name_hint, converted, types, container)


def extern(name: str, args: Sequence, out):
    """Call the function registered under ``name`` (:func:`register_extern_func`) in DPS.

    Args:
        name: the registered name (looked up when the program runs).
        args: as :func:`tensor_ir_op`'s (Tensors, ints, floats, strs, size expressions).
        out: a placeholder Tensor or a list of them: the output types.

    Returns:
        A Tensor for a single ``out``, else a list/tuple (as ``out``) of Tensors.
    """
    if not isinstance(name, str) or not name:
        raise OpError(f"{current_where()}: extern: name must be a non-empty str, got {name!r}")
    types, container = _out_types(out, f"extern {name!r}: out")
    return _emit(name, name, _convert_args(args, name), types, container)
