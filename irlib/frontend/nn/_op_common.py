"""Helpers shared by the nn op modules: argument checks and binary-op emission."""

from __future__ import annotations

from ._builder import current_where
from .core import Tensor, wrap_nested
from .errors import OpError


def check_tensor(value, what: str, name: str) -> Tensor:
    """``value`` if it is an nn Tensor, else an OpError naming the op and module path.

    Args:
        value: the argument.
        what: how to call it in the message (``"x"``, ``"the first argument"``).
        name: the op's name hint.
    """
    if not isinstance(value, Tensor):
        raise OpError(f"{current_where()}: {name}: {what} must be an nn.Tensor, got "
                      f"{type(value).__name__}")
    return value


def binary(builder, a, b, name: str) -> Tensor:
    """Emit ``builder(a, b)`` after checking both are tensors of one dtype.

    Args:
        builder: the irlib op builder (``irlib.op.add``, ...).
        a: the first operand.
        b: the second operand.
        name: name hint.
    """
    a = check_tensor(a, "the first argument", name)
    b = check_tensor(b, "the second argument", name)
    if a.dtype != b.dtype:
        raise OpError(f"{current_where()}: {name}: operands have different dtypes "
                      f"{a.dtype} and {b.dtype} (cast one with astype)")
    return wrap_nested(builder(a._expr, b._expr), name)
