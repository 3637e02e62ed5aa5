"""``debug_io.call``: call a registered Python debug function at run time (nn's IO effect).

The nn builder's :class:`~irlib.frontend.nn.IOEffect` threads an *IO token* through the
methods it exports (``export_tvm(debug=True)``). ``nn.print_(x)`` and ``nn.debug_func(name,
*args)`` each emit one call of this op::

    %io1 = debug_io.call(%io, (%x,), func_name="irlib.builtin.debug_print",
                         line_info="model.py:12", arg_kinds=["tensor"], scalars=[])

It takes the current token and returns the next one, so the calls run in program order on
every executor (each one depends on the previous one's token), and the last token is a result
of the function, so nothing is dead.

**The IO token** is a scalar ``Tensor[(), int64]``: the number of IO calls made so far on
this token chain (``_initialize_effect`` makes ``0``; each call returns its input plus one).
Its value carries no meaning beyond ordering; it is never folded away:

* the op is registered ``OPAQUE`` (FuseOps never fuses it with anything) and
  ``TOpIsStateful`` (FoldConstant, PartialEvaluate and EliminateCommonSubexpr leave its
  calls alone: two prints of the same tensor are two prints);
* DeadCodeElimination keeps the calls because the chain ends in a function result.

**Arguments.** ``data`` is a tuple of the tensor arguments; the non-tensor ones (ints,
floats, strs and size expressions such as ``total_seq_len``) are attributes: ``arg_kinds``
gives the kind of each positional argument of the debug function (``"tensor"``, ``"int"``,
``"float"``, ``"str"`` or ``"dim"``), ``scalars`` the non-tensor values in order. A ``"dim"``
value is a size expression that the executor replaces by its run-time value (like
``reshape``'s symbolic ``newshape``).

**Debug functions** are Python callables registered by name with
:func:`register_debug_func`; the op calls ``func(line_info, *args)`` with tensors as
:class:`~irlib.ndarray.NDArray` (copies: the executor may reuse the memory afterwards),
ints, floats and strs. The built-in ``"irlib.builtin.debug_print"`` (what ``nn.print_``
uses) writes ``repr(numpy_array)`` -- numpy's own repr, e.g.
``array([[1., 2.]], dtype=float32)`` -- and a newline to ``sys.stdout``.

A call of an unregistered name raises :class:`~irlib.errors.UnknownNameError` when it runs.
"""

from __future__ import annotations

import sys
from typing import Callable, Optional

import numpy as np

from ..errors import TypeInferenceError, UnknownNameError
from ..ir.dims import DimExpr
from ..ir.types import TensorType, TupleType
from .registry import OpPattern, make_call, register_op

__all__ = ["debug_call", "register_debug_func", "get_debug_func", "list_debug_funcs",
           "TOKEN_TYPE", "DEBUG_PRINT", "ARG_KINDS"]

TOKEN_TYPE = TensorType((), "int64")
"""The IR type of the IO token (a scalar int64 tensor counting the IO calls made)."""

DEBUG_PRINT = "irlib.builtin.debug_print"
"""The name of the built-in debug function ``nn.print_`` calls."""

ARG_KINDS = ("tensor", "int", "float", "str", "dim")
"""The kinds of debug-function arguments (the values of the ``arg_kinds`` attribute)."""

_DEBUG_FUNCS: dict = {}


def register_debug_func(name: str, func: Optional[Callable] = None, override: bool = False):
    """Register a Python function that ``nn.debug_func(name, ...)`` calls at run time.

    Usable as a decorator (``@register_debug_func("my.dump")``) or directly
    (``register_debug_func("my.dump", fn)``). The function is called as
    ``func(line_info, *args)``: ``line_info`` is ``"file:line"`` of the ``debug_func`` call
    (or the ``_line_info`` given), tensors arrive as :class:`~irlib.ndarray.NDArray`, ints,
    floats, strs and size expressions as Python ints/floats/strs. Its return value is
    ignored.

    Args:
        name: the name ``debug_func`` uses.
        func: the function; omit it to get a decorator.
        override: replace an existing registration instead of raising.

    Raises:
        ValueError: ``name`` is taken and ``override`` is False, or ``func`` is not callable.
    """
    def register(fn: Callable) -> Callable:
        if not callable(fn):
            raise ValueError(f"register_debug_func({name!r}): {fn!r} is not callable")
        if name in _DEBUG_FUNCS and not override:
            raise ValueError(f"debug function {name!r} is already registered (pass "
                             "override=True to replace it)")
        _DEBUG_FUNCS[name] = fn
        return fn
    if not isinstance(name, str) or not name:
        raise ValueError(f"register_debug_func: the name must be a non-empty str, got {name!r}")
    return register(func) if func is not None else register


def get_debug_func(name: str) -> Callable:
    """The debug function registered as ``name``.

    Raises:
        UnknownNameError: nothing is registered under ``name``.
    """
    func = _DEBUG_FUNCS.get(name)
    if func is None:
        raise UnknownNameError(f"debug function {name!r} is not registered; register it with "
                               f"@irlib.frontend.nn.register_debug_func({name!r})")
    return func


def list_debug_funcs() -> list:
    """The names of the registered debug functions, sorted."""
    return sorted(_DEBUG_FUNCS)


def _debug_print(line_info: str, array) -> None:
    """The built-in print: numpy's repr of the value, then a newline, on ``sys.stdout``."""
    sys.stdout.write(repr(array.numpy()) + "\n")
    sys.stdout.flush()


register_debug_func(DEBUG_PRINT, _debug_print)


def _call_rel(arg_types, attrs):
    token, data = arg_types
    if not (isinstance(token, TensorType) and tuple(token.shape) == ()
            and token.dtype == "int64"):
        raise TypeInferenceError(f"debug_io.call: the IO token must be {TOKEN_TYPE}, got {token}")
    if not isinstance(data, TupleType) or not all(isinstance(f, TensorType)
                                                  for f in data.fields):
        raise TypeInferenceError(f"debug_io.call: data must be a tuple of tensors, got {data}")
    kinds = tuple(attrs["arg_kinds"])
    scalars = tuple(attrs["scalars"])
    unknown = [k for k in kinds if k not in ARG_KINDS]
    if unknown:
        raise TypeInferenceError(f"debug_io.call: unknown arg_kinds {unknown} (known: "
                                 f"{list(ARG_KINDS)})")
    num_tensors = sum(1 for k in kinds if k == "tensor")
    if num_tensors != len(data.fields) or len(kinds) - num_tensors != len(scalars):
        raise TypeInferenceError(
            f"debug_io.call: arg_kinds {list(kinds)} name {num_tensors} tensor(s) and "
            f"{len(kinds) - num_tensors} scalar(s), but data has {len(data.fields)} "
            f"tensor(s) and scalars {len(scalars)} value(s)")
    return TOKEN_TYPE


_DEF = register_op("debug_io.call", ("token", "data"),
                   attrs=("irlib.attrs.DebugCallAttrs", [("func_name", DEBUG_PRINT),
                                                         ("line_info", ""),
                                                         ("arg_kinds", ()),
                                                         ("scalars", ())]),
                   type_rel=_call_rel, pattern=OpPattern.OPAQUE,
                   description="call a registered Python debug function; returns the next "
                               "IO token",
                   support_level=10)
_DEF.set_attr("TOpIsStateful", True)


def _runtime_scalar(kind: str, value):
    if kind == "dim":
        if isinstance(value, DimExpr):
            raise ValueError(f"size expression {value} has no run-time value here (this "
                             "executor did not bind its size variables)")
        return int(value)
    if kind == "int":
        return int(value)
    if kind == "float":
        return float(value)
    return str(value)


@_DEF.def_impl
def _debug_call_impl(token, data, func_name=DEBUG_PRINT, line_info="", arg_kinds=(),
                     scalars=()):
    from ..ndarray import NDArray
    func = get_debug_func(func_name)
    tensors = iter(data)
    values = iter(scalars)
    args = []
    for kind in arg_kinds:
        if kind == "tensor":
            args.append(NDArray(np.array(next(tensors), copy=True)))
        else:
            args.append(_runtime_scalar(kind, next(values)))
    func(line_info, *args)
    return (np.asarray(np.asarray(token).astype(np.int64) + 1, dtype=np.int64),)


def debug_call(token, data, func_name: str = DEBUG_PRINT, line_info: str = "",
               arg_kinds=(), scalars=()):
    """A call of ``debug_io.call`` (see the module docstring).

    Args:
        token: the current IO token (an expression of type ``Tensor[(), int64]``).
        data: a tuple expression of the tensor arguments.
        func_name: the registered debug function's name.
        line_info: ``"file:line"`` passed as the function's first argument.
        arg_kinds: the kind of each positional argument (see :data:`ARG_KINDS`).
        scalars: the non-tensor argument values, in order.

    Returns:
        The call (its value is the next IO token).
    """
    return make_call("debug_io.call", (token, data),
                     dict(func_name=func_name, line_info=line_info, arg_kinds=tuple(arg_kinds),
                          scalars=tuple(scalars)))
