"""Shared pieces of the nn extern forms: their errors and how a ``call_dps_packed`` call is
emitted from nn-level arguments (see :mod:`irlib.frontend.nn.extern`)."""

from __future__ import annotations

import numpy as np

from ...ir.dims import DimExpr
from ...op import extern_call as _ec
from ._builder import current_where
from .core import Tensor, wrap_nested
from .errors import NNError, OpError

__all__ = ["ExternError", "ExternCompileError", "ExternSymbolError", "ExternInferenceError"]


class ExternError(NNError):
    """Misuse of an extern module or custom kernel (see the module docstring)."""


class ExternCompileError(ExternError):
    """The C/C++ compiler (or linker) is missing or failed; the message holds its command
    line and output."""


class ExternSymbolError(ExternError, LookupError):
    """A symbol the extern module does not declare in ``symbols``, or declares but its
    shared object does not define."""


class ExternInferenceError(ExternError, TypeError):
    """A shape/dtype inference function raised, or returned something other than a
    placeholder Tensor or a non-empty list/tuple of them."""


def _scalar(value, where: str, name_hint: str, index):
    if isinstance(value, Tensor):
        return value._expr
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, (str, DimExpr)):
        return value
    raise OpError(f"{where}: {name_hint}: argument {index} is a {type(value).__name__}; "
                  "arguments are nn Tensors, ints, floats, strs or size expressions (or "
                  "lists of them, passed one by one)")


def _convert_args(args, name_hint: str) -> list:
    """nn-level arguments as ``call_dps_packed`` arguments (lists/tuples flattened)."""
    where = current_where()
    if isinstance(args, Tensor):
        args = [args]
    if not isinstance(args, (list, tuple)):
        raise OpError(f"{where}: {name_hint}: args must be a Tensor or a list of arguments, "
                      f"got {type(args).__name__}")
    converted = []
    for index, arg in enumerate(args):
        if isinstance(arg, (list, tuple)):
            converted.extend(_scalar(item, where, name_hint, f"{index}.{j}")
                             for j, item in enumerate(arg))
        else:
            converted.append(_scalar(arg, where, name_hint, index))
    return converted


def _out_types(out, what: str, error=OpError):
    """``(types, container)`` for an ``out`` spec: container is None for a single Tensor.

    Args:
        out: a placeholder Tensor or a list/tuple of them.
        what: the message's subject, completed by "must be ...".
        error: the error class raised for anything else.
    """
    if isinstance(out, Tensor):
        return [out._type], None
    if isinstance(out, (list, tuple)) and out and all(isinstance(o, Tensor) for o in out):
        return [o._type for o in out], type(out)
    shown = repr(out) if len(repr(out)) < 200 else type(out).__name__
    raise error(f"{current_where()}: {what} must be a placeholder nn.Tensor or a non-empty "
                f"list/tuple of them (nn.Tensor.placeholder(shape, dtype)), got {shown}")


def _emit(key: str, name_hint: str, args: list, types: list, container):
    call = _ec.call_dps_packed(key, args, types)
    results = wrap_nested(call, name_hint)
    if container is None:
        return results[0]
    return container(results)
