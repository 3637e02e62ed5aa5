"""Building blocks of the program generator: operands (entries), scopes, oracle evaluation.

An :class:`Entry` is a generated expression usable as an operand, with its type, the interval
its values lie in, and a ``compute(env)`` function that is its numpy oracle. ``env`` maps Vars
(inputs, let variables, parameters) and Entries (memoised results) to values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..ir.types import TensorType


class Entry:
    """A generated expression usable as an operand: its type, value interval and oracle.

    Args:
        expr: the expression.
        ty: its type.
        bounds: its value interval ``(lo, hi)`` (a tuple of those for a tuple; ``FnBounds`` for a
            function).
        compute: the oracle, ``env -> value`` (env maps Vars and Entries to values).
    """

    __slots__ = ("expr", "ty", "bounds", "compute")

    def __init__(self, expr, ty, bounds, compute):
        self.expr = expr
        self.ty = ty
        self.bounds = bounds       # (lo, hi); a tuple of those for tuples; FnBounds
        self.compute = compute     # env -> value; env maps Vars and Entries to values


@dataclass(frozen=True)
class FnBounds:
    """Value intervals of a function's arguments (assumed) and result (guaranteed)."""

    arg_bounds: tuple
    ret_bounds: tuple


def value_of(entry: Entry, env: dict):
    """The memoised oracle value of ``entry`` in ``env``."""
    if entry in env:
        return env[entry]
    value = entry.compute(env)
    env[entry] = value
    return value


class Scope:
    """Operands visible at one place in the program, and the lets bound there.

    Args:
        visible: the entries visible from the enclosing scope.
        depth: the nesting depth.
    """

    def __init__(self, visible, depth: int):
        self.entries = list(visible)
        self.bindings: list = []
        self.depth = depth

    def tensors(self, numeric: Optional[bool] = None, dtype: Optional[str] = None) -> list:
        """Visible tensor operands; ``numeric`` False selects bool tensors, True the others.

        Args:
            numeric: None for all tensors, False for bool tensors only, True for the others.
            dtype: only tensors of this dtype, when given.
        """
        return self._tensors(numeric, dtype)

    def _tensors(self, numeric: Optional[bool] = None, dtype: Optional[str] = None):
        found = [e for e in self.entries if isinstance(e.ty, TensorType)]
        if numeric is not None:
            found = [e for e in found if (e.ty.dtype != "bool") == numeric]
        if dtype is not None:
            found = [e for e in found if e.ty.dtype == dtype]
        return found


def as_array(value, dtype):
    """``value`` as a numpy array of ``dtype`` (numpy ufuncs return scalars for 0-d inputs)."""
    return np.asarray(value, dtype=dtype)
