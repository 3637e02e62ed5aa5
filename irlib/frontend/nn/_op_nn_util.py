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
    """An OpError naming the running module's path and the op.

    Args:
        name: the op's name hint.
        message: what is wrong.
    """
    return OpError(f"{current_where()}: {name}: {message}")


def emit_op(build, name: str) -> Tensor:
    """Emit the expression ``build()`` returns and wrap it as a Tensor.

    Attribute errors the irlib op builders raise while ``build`` runs, and type errors of the
    emitted expression, become OpError naming the module path.

    Args:
        build: a function of no arguments returning the expression.
        name: the name hint of the bound variable.
    """
    try:
        expr = build()
    except IRError as error:
        raise fail(name, str(error)) from error
    return wrap_nested(expr, name)


def const(value, dtype: str) -> E.Constant:
    """A constant of ``dtype``.

    Args:
        value: a number or an array-like.
        dtype: the element dtype.
    """
    return E.Constant(np.asarray(value, dtype=dtype))


def check_float(x: Tensor, name: str) -> None:
    """Raise OpError unless ``x`` has a float dtype.

    Args:
        x: the tensor.
        name: the op's name hint, for the message.
    """
    if not x.dtype.startswith(("float", "bfloat")):
        raise fail(name, f"the input must have a float dtype, got {x.dtype}")


def same_dtype(name: str, x: Tensor, **others) -> None:
    """Raise OpError unless every tensor in ``others`` has ``x``'s dtype.

    Args:
        name: the op's name hint, for the message.
        x: the reference tensor (the op's input).
        **others: what-name -> tensor or None (None is skipped).
    """
    for what, tensor in others.items():
        if tensor is None:
            continue
        check_tensor(tensor, what, name)
        if tensor.dtype != x.dtype:
            raise fail(name, f"{what} has dtype {tensor.dtype} but the input has {x.dtype}")


def ints(value, count: int, what: str, name: str) -> Tuple[int, ...]:
    """``value`` as a tuple of ``count`` ints (an int or a 1-sequence is repeated).

    Args:
        value: an int or a sequence of ints.
        count: the number of values wanted.
        what: the argument's name, for the message.
        name: the op's name hint, for the message.
    """
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
