"""Helpers shared by the nn-layer op modules (:mod:`._op_nn`, :mod:`._op_attention`):
errors naming the module path, emission with builder errors converted, constants and
argument checks."""

from __future__ import annotations

from typing import Tuple

import numpy as np

from ...errors import IRError
from ...ir import expr as E
from ._builder import current_where
from ._op_common import check_tensor
from .core import Tensor, wrap_nested
from .errors import OpError



def fail(name: str, message: str) -> OpError:
    """An OpError naming the module path and the op."""
    return OpError(f"{current_where()}: {name}: {message}")


def emit_op(build, name: str) -> Tensor:
    """Emit the expression ``build()`` returns; builder-time attribute errors become OpError."""
    try:
        expr = build()
    except IRError as error:
        raise fail(name, str(error)) from error
    return wrap_nested(expr, name)


def const(value, dtype: str) -> E.Constant:
    """A constant (scalar or array) of ``dtype``."""
    return E.Constant(np.asarray(value, dtype=dtype))


def check_float(x: Tensor, name: str) -> None:
    """OpError unless ``x`` has a float dtype (``name``: the op, for the message)."""
    if not x.dtype.startswith(("float", "bfloat")):
        raise fail(name, f"the input must have a float dtype, got {x.dtype}")


def same_dtype(name: str, x: Tensor, **others) -> None:
    """OpError unless every tensor in ``others`` (None skipped) has ``x``'s dtype."""
    for what, tensor in others.items():
        if tensor is None:
            continue
        check_tensor(tensor, what, name)
        if tensor.dtype != x.dtype:
            raise fail(name, f"{what} has dtype {tensor.dtype} but the input has {x.dtype}")


def ints(value, count: int, what: str, name: str) -> Tuple[int, ...]:
    """``value`` (an int or a sequence of ints) as a tuple of ``count`` ints."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),) * count
    try:
        values = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise fail(name, f"{what} must be an int or {count} ints, got {value!r}") from None
    if len(values) == 1:
        return values * count
    if len(values) != count:
        raise fail(name, f"{what} must have 1 or {count} values, got {value!r}")
    return values
