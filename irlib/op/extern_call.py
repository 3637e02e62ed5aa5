"""``call_dps_packed``: call a function registered by name, in destination-passing style.

Relax's ``R.call_dps_packed("f", args, out_sinfo)`` calls an opaque function: the system
allocates the outputs and passes them after the inputs, ``f(*inputs, *outputs)``; the
function writes them and returns nothing. irlib has one op for it::

    %0 = call_dps_packed((%x, %w), func_name="scale_shift",
                         out_shapes=[[n, 8]], out_dtypes=["float32"]);
    %0.0

* ``args``: one tuple of tensors (the tensor arguments, in order);
* ``func_name``: a key into the process-wide table of :class:`ExternFunc` objects filled by
  :func:`register_func` (``tvm.register_func``'s counterpart) and by the nn builder
  (``tensor_ir_op``, ``tensor_expr_op``, ``ExternModule`` symbols). Functions live in the
  table, not in the IR, so the IR stays printable and parseable; a program naming a function
  this process has not registered type-checks but fails when it runs
  (:class:`~irlib.errors.UnknownNameError`);
* ``out_shapes`` / ``out_dtypes``: the output types. Dims may be size expressions (``n``,
  ``2*n``): executors bind them from the function's arguments, as for any symbolic attribute;
* ``scalar_positions`` / ``scalar_values``: non-tensor arguments (ints, floats, strings, size
  expressions) and where they go in the argument list; the tensors fill the other positions.

The result is always a tuple of the outputs (``%0.0`` picks the only one).

Calling conventions (chosen by how the function was registered):

* :class:`PythonFunc` (``"dps"``): ``fn(*args, *outputs)`` with numpy arrays for tensors and
  Python scalars for scalars; outputs are fresh ``np.empty`` arrays of the declared
  types (contents undefined until ``fn`` writes them). Plain Python functions and numba
  ``@njit`` functions both work. ``fn`` must not write its inputs.
* :class:`ValueFunc` (``"value"``): ``fn(*args)`` returns the output array (or a
  tuple/list of them), whose shapes must equal the declared ones; values are cast to the
  declared dtypes.
* :class:`CFunc` (``"dltensor"``): a C symbol loaded with ctypes, called with one
  ``DLTensor*`` per tensor (:mod:`irlib.op.dltensor`), ``int64_t`` for ints and size
  expressions, ``double`` for floats, ``const char*`` for strings. It returns an ``int``:
  0 for success, anything else is reported as an error.

The op is ``OPAQUE`` (never fused) and marked ``TOpIsStateful`` so FoldConstant,
PartialEvaluate and EliminateCommonSubexpr leave its calls alone (an extern function may
have effects, e.g. a random number generator). It has no gradient.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Callable, Optional, Sequence

import numpy as np

from ..errors import IRError, OpImplError, TypeInferenceError, UnknownNameError
from ..ir import expr as E
from ..ir.dims import DimExpr
from ..ir.types import TensorType, TupleType
from .dltensor import to_dltensor
from .registry import OpPattern, make_call, register_op

__all__ = []   # builders stay under irlib.op.extern_call (not star-exported to irlib)

OP_NAME = "call_dps_packed"


class ExternFuncError(IRError, ValueError):
    """Misuse of the extern function table: a name registered twice, a function that is not
    callable, or a scalar argument of an unsupported type."""


# -- the function table -----------------------------------------------------------------------

class ExternFunc:
    """A function ``call_dps_packed`` can call; subclasses fix the calling convention.

    Args:
        fn: the underlying callable.
    """

    convention = "abstract"

    def __init__(self, fn):
        self.fn = fn

    def invoke(self, args: list, outputs: list) -> None:
        """Run the function: ``args`` (arrays and scalars, in order) in, ``outputs`` written."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({getattr(self.fn, '__name__', self.fn)!r})"


class PythonFunc(ExternFunc):
    """A Python or numba function in destination-passing style: ``fn(*args, *outputs)``."""

    convention = "dps"

    def invoke(self, args: list, outputs: list) -> None:
        """Call ``fn(*args, *outputs)``; its return value is ignored."""
        self.fn(*args, *outputs)


class ValueFunc(ExternFunc):
    """A Python function returning its output(s): ``fn(*args) -> array | (array, ...)``."""

    convention = "value"

    def invoke(self, args: list, outputs: list) -> None:
        """Call ``fn(*args)`` and copy its results into ``outputs`` (shapes must agree)."""
        result = self.fn(*args)
        results = list(result) if isinstance(result, (tuple, list)) else [result]
        if len(results) != len(outputs):
            raise OpImplError(f"{OP_NAME}: {self!r} returned {len(results)} value(s), "
                              f"{len(outputs)} declared", op=OP_NAME)
        for index, (value, out) in enumerate(zip(results, outputs)):
            value = np.asarray(value)
            if value.shape != out.shape:
                raise OpImplError(f"{OP_NAME}: {self!r} returned shape {value.shape} for "
                                  f"output {index}, declared {out.shape}", op=OP_NAME)
            np.copyto(out, value, casting="unsafe")


class CFunc(ExternFunc):
    """A C function called through ctypes with ``DLTensor*`` arguments (see the module
    docstring); it returns an ``int`` status, 0 meaning success.

    Args:
        fn: a ctypes function pointer, or a zero-argument callable returning one or a
            ``(pointer, packed)`` pair (resolved at the first call: extern modules compile
            and load lazily).
        name: the symbol's name, for messages.
        packed: the symbol takes its arguments packed, ``int f(void** values, int32_t*
            codes, int32_t num)`` with codes 0 int64, 1 double, 2 ``const char*``,
            3 ``DLTensor*`` (what ``TVM_DLL_EXPORT_TYPED_FUNC`` of ``<irlib/extern.h>``
            exports); otherwise it takes them as plain C arguments.
    """

    convention = "dltensor"

    def __init__(self, fn, name: str = "", packed: bool = False):
        super().__init__(fn)
        self.name = name or getattr(fn, "__name__", "extern")
        self.packed = packed
        self._resolved = fn if isinstance(fn, ctypes._CFuncPtr) else None
        self._lock = threading.Lock()

    def resolve(self):
        """The ctypes function (loading it on first use)."""
        resolved = self._resolved
        if resolved is not None and resolved.restype is ctypes.c_int:
            return resolved
        with self._lock:
            if self._resolved is None:
                resolved = self.fn()
                if isinstance(resolved, tuple):
                    resolved, self.packed = resolved
                self._resolved = resolved
            self._resolved.restype = ctypes.c_int
            return self._resolved

    def invoke(self, args: list, outputs: list) -> None:
        """Call the symbol with DLTensor pointers and C scalars; raise on a non-zero status."""
        cfunc = self.resolve()
        keep, boxes, codes = [], [], []    # boxes: the DLTensor structs and C scalars
        for value in list(args) + list(outputs):
            if isinstance(value, np.ndarray):
                holder = to_dltensor(value if value.flags.c_contiguous
                                     else np.ascontiguousarray(value))
                keep.append(holder)
                boxes.append(holder.tensor)
                codes.append(3)
            elif isinstance(value, (bool, int, np.integer)):
                boxes.append(ctypes.c_int64(int(value)))
                codes.append(0)
            elif isinstance(value, (float, np.floating)):
                boxes.append(ctypes.c_double(float(value)))
                codes.append(1)
            elif isinstance(value, str):
                boxes.append(ctypes.c_char_p(value.encode()))
                codes.append(2)
            else:
                raise OpImplError(f"{OP_NAME}: cannot pass a {type(value).__name__} to C "
                                  f"symbol {self.name!r}", op=OP_NAME)
        if self.packed:            # value pointers (a DLTensor* for tensors) and type codes
            count = len(boxes)
            values = (ctypes.c_void_p * max(count, 1))(*[ctypes.addressof(b) for b in boxes])
            status = cfunc(values, (ctypes.c_int32 * max(count, 1))(*codes),
                           ctypes.c_int32(count))
        else:
            status = cfunc(*[ctypes.byref(b) if code == 3 else b
                             for b, code in zip(boxes, codes)])
        if status != 0:
            hint = {-1: " (the packed adapter: wrong number of arguments)",
                    -2: " (the packed adapter: an argument of the wrong kind)"}.get(status, "") \
                if self.packed else ""
            raise OpImplError(f"{OP_NAME}: C symbol {self.name!r} returned error status "
                              f"{status}{hint}", op=OP_NAME)

    def __repr__(self) -> str:
        return f"CFunc({self.name!r})"


_FUNCS: dict = {}
_LOCK = threading.Lock()


def _as_extern_func(func) -> ExternFunc:
    if isinstance(func, ExternFunc):
        return func
    if isinstance(func, ctypes._CFuncPtr):
        return CFunc(func)
    if not callable(func):
        raise ExternFuncError(f"an extern function must be callable, got "
                              f"{type(func).__name__}")
    return PythonFunc(func)


def register_func(name: str, func: Optional[Callable] = None, *, override: bool = False):
    """Register ``func`` under ``name`` for ``call_dps_packed`` (``tvm.register_func``).

    A Python/numba callable is called in destination-passing style (:class:`PythonFunc`), a
    ctypes function pointer with DLTensors (:class:`CFunc`); an :class:`ExternFunc` is
    stored as is. Usable as a decorator: ``@register_func("my.add")``.

    Args:
        name: the name programs call it by (``nn.extern(name, ...)``).
        func: the function; omitted, a decorator is returned.
        override: replace an existing registration instead of raising.

    Returns:
        ``func`` (or the decorator).

    Raises:
        ExternFuncError: ``name`` is taken and ``override`` is False, or ``func`` is not
            callable.
    """
    if not isinstance(name, str) or not name:
        raise ExternFuncError(f"an extern function name must be a non-empty str, got {name!r}")

    def register(fn):
        entry = _as_extern_func(fn)
        with _LOCK:
            if name in _FUNCS and not override:
                raise ExternFuncError(f"extern function {name!r} is already registered "
                                      f"({_FUNCS[name]!r}); pass override=True to replace it")
            _FUNCS[name] = entry
        return fn

    return register(func) if func is not None else register


def register_unique(hint: str, func) -> str:
    """Register ``func`` under ``hint``, or ``hint_1``, ``hint_2``... if that is taken by
    another function; the same function object registered twice keeps its first name.

    Args:
        hint: the preferred name.
        func: an :class:`ExternFunc` (or anything :func:`register_func` accepts).

    Returns:
        The name it is registered under.
    """
    entry = _as_extern_func(func)
    with _LOCK:
        for name, existing in _FUNCS.items():
            if existing is entry or (type(existing) is type(entry) and existing.fn is entry.fn):
                return name
        name, counter = hint, 0
        while name in _FUNCS:
            counter += 1
            name = f"{hint}_{counter}"
        _FUNCS[name] = entry
        return name


def get_func(name: str) -> ExternFunc:
    """The function registered under ``name``.

    Raises:
        UnknownNameError: nothing is registered under ``name`` in this process.
    """
    entry = _FUNCS.get(name)
    if entry is None:
        raise UnknownNameError(f"{OP_NAME}: no extern function named {name!r} is registered in "
                               "this process (register it with irlib.op.extern_call."
                               "register_func, or export the nn model that defines it)")
    return entry


def list_funcs() -> list:
    """The registered names, sorted."""
    return sorted(_FUNCS)


# -- the op -----------------------------------------------------------------------------------

def _scalar_ok(value) -> bool:
    return isinstance(value, (int, float, str, DimExpr)) and not isinstance(value, bool)


def call_dps_packed(func_name: str, args: Sequence, out_types) -> E.Call:
    """A ``call_dps_packed`` call (its value is the tuple of the outputs).

    Args:
        func_name: the registered function's name.
        args: tensor expressions and scalars (int, float, str, size expression), in the order
            the function takes them.
        out_types: one :class:`~irlib.ir.types.TensorType` or a sequence of them.

    Raises:
        ExternFuncError: an argument is neither an expression nor a supported scalar, or an
            output type is not a tensor type.
    """
    if isinstance(out_types, TensorType):
        out_types = [out_types]
    out_types = list(out_types)
    for ty in out_types:
        if not isinstance(ty, TensorType):
            raise ExternFuncError(f"{OP_NAME} {func_name!r}: outputs must be tensor types, "
                                  f"got {ty}")
    tensors, positions, values = [], [], []
    for index, arg in enumerate(args):
        if isinstance(arg, E.Expr):
            tensors.append(arg)
        elif _scalar_ok(arg):
            positions.append(index)
            values.append(arg)
        else:
            raise ExternFuncError(f"{OP_NAME} {func_name!r}: argument {index} is a "
                                  f"{type(arg).__name__}; arguments are tensors, ints, floats, "
                                  "strs or size expressions")
    return make_call(OP_NAME, [E.Tuple(tensors)],
                     {"func_name": func_name,
                      "out_shapes": [list(ty.shape) for ty in out_types],
                      "out_dtypes": [ty.dtype for ty in out_types],
                      "scalar_positions": positions, "scalar_values": values})


def _rel(arg_types, attrs):
    args = arg_types[0]
    if not isinstance(args, TupleType):
        raise TypeInferenceError(f"{OP_NAME}: args must be a tuple of tensors, got {args}")
    for index, field in enumerate(args.fields):
        if not isinstance(field, TensorType):
            raise TypeInferenceError(f"{OP_NAME}: args field {index} must be a tensor, got "
                                     f"{field}")
    if not attrs["func_name"]:
        raise TypeInferenceError(f"{OP_NAME}: func_name is empty")
    shapes, dtypes = attrs["out_shapes"], attrs["out_dtypes"]
    if len(shapes) != len(dtypes) or not shapes:
        raise TypeInferenceError(f"{OP_NAME}: out_shapes ({len(shapes)}) and out_dtypes "
                                 f"({len(dtypes)}) must describe the same, non-zero number of "
                                 "outputs")
    positions, values = attrs["scalar_positions"], attrs["scalar_values"]
    total = len(args.fields) + len(values)
    if len(positions) != len(values) or sorted(set(positions)) != list(positions) \
            or any(not 0 <= p < total for p in positions):
        raise TypeInferenceError(f"{OP_NAME}: scalar_positions {list(positions)} do not place "
                                 f"{len(values)} scalar(s) among {total} argument(s)")
    try:
        return TupleType([TensorType(tuple(shape), dtype) for shape, dtype in zip(shapes, dtypes)])
    except (TypeError, ValueError) as error:
        raise TypeInferenceError(f"{OP_NAME}: bad output type: {error}") from None


def _np_dtype(name: str):
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, name))


def _impl(args, func_name, out_shapes, out_dtypes, scalar_positions, scalar_values):
    func = get_func(func_name)
    outputs = []
    for shape, dtype in zip(out_shapes, out_dtypes):
        if any(not isinstance(dim, int) for dim in shape):
            raise OpImplError(f"{OP_NAME} {func_name!r}: output shape {list(shape)} has dims "
                              "no argument bound", op=OP_NAME)
        outputs.append(np.empty(tuple(shape), dtype=_np_dtype(dtype)))
    for value in scalar_values:
        if isinstance(value, DimExpr):
            raise OpImplError(f"{OP_NAME} {func_name!r}: scalar argument {value} is a size "
                              "expression no argument bound", op=OP_NAME)
    positional, tensors = [], iter(args)
    scalars = dict(zip(scalar_positions, scalar_values))
    for index in range(len(args) + len(scalar_values)):
        positional.append(scalars[index] if index in scalars else next(tensors))
    func.invoke(positional, outputs)
    return tuple(outputs)


_OP = register_op(OP_NAME, arg_names=("args",),
                  attrs=("irlib.attrs.CallDPSPackedAttrs",
                         [("func_name", ""), ("out_shapes", ()), ("out_dtypes", ()),
                          ("scalar_positions", ()), ("scalar_values", ())]),
                  type_rel=_rel, pattern=OpPattern.OPAQUE, tuple_output=True,
                  description="call a registered extern function in destination-passing "
                              "style (Relax's call_dps_packed); the tuple of its outputs")
_OP.def_impl(_impl)
_OP.set_attr("TOpIsStateful", True)
