"""The op table behind :mod:`irlib.testing.strategies`.

Each entry says, for one op the program generator may use: how to call it, the numpy code that
computes it (written here, independently of the op registry's reference implementations, so
generated programs come with their own oracle), how it maps a value interval of its inputs to
an interval of its output, and when it is safe (``log`` only on inputs bounded away from 0,
``exp`` only on inputs bounded above, ...). Intervals are conservative, so a generated program
evaluated on inputs drawn inside the input intervals stays finite.

An op is used only when ``irlib.op.is_registered(name)`` holds, so the generator grows as ops
are registered. To teach the generator a new elementwise op, add a line to :data:`UNARY` or
:data:`BINARY`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

# Results whose interval leaves [-LIMIT, LIMIT] are not generated: it keeps float32 values
# comfortably finite and the relative rounding error of chained ops small.
LIMIT = 1.0e4


@dataclass(frozen=True)
class UnaryOp:
    """An elementwise op of one tensor.

    Attributes:
        name: registry name.
        numpy_fn: the independent numpy oracle.
        bounds: ``(lo, hi) -> (lo, hi)`` of the result.
        safe: ``(lo, hi) -> bool``: whether the op is defined and well-conditioned there.
        integer_ok: whether the op is meaningful on integer tensors.
    """

    name: str
    numpy_fn: Callable
    bounds: Callable
    safe: Callable = lambda lo, hi: True
    integer_ok: bool = False


@dataclass(frozen=True)
class BinaryOp:
    """An elementwise broadcasting op of two tensors of the same dtype.

    Attributes:
        name: registry name.
        numpy_fn: the independent numpy oracle.
        bounds: ``(lhs_bounds, rhs_bounds) -> (lo, hi)`` of the result.
        safe: ``(lhs_bounds, rhs_bounds) -> bool``.
        integer_ok: whether the op is meaningful on integer tensors.
        comparison: whether the result is a bool tensor.
    """

    name: str
    numpy_fn: Callable
    bounds: Callable
    safe: Callable = lambda lhs, rhs: True
    integer_ok: bool = True
    comparison: bool = False


def _products(lhs, rhs):
    values = [a * b for a in lhs for b in rhs]
    return (min(values), max(values))


def _quotients(lhs, rhs):
    values = [a / b for a in lhs for b in rhs]
    return (min(values), max(values))


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _bool_bounds(lhs, rhs):
    return (0.0, 1.0)


UNARY = (
    UnaryOp("negative", np.negative, lambda lo, hi: (-hi, -lo), integer_ok=True),
    UnaryOp("exp", np.exp, lambda lo, hi: (math.exp(lo), math.exp(hi)),
            safe=lambda lo, hi: hi <= 4.0),
    UnaryOp("log", np.log, lambda lo, hi: (math.log(lo), math.log(hi)),
            safe=lambda lo, hi: lo >= 0.1),
    UnaryOp("sqrt", np.sqrt, lambda lo, hi: (math.sqrt(lo), math.sqrt(hi)),
            safe=lambda lo, hi: lo >= 0.0),
    UnaryOp("rsqrt", lambda x: 1.0 / np.sqrt(x), lambda lo, hi: (hi ** -0.5, lo ** -0.5),
            safe=lambda lo, hi: lo >= 0.1),
    UnaryOp("abs", np.abs, lambda lo, hi: (0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi)),
                                           max(abs(lo), abs(hi))), integer_ok=True),
    UnaryOp("nn.relu", lambda x: np.maximum(x, 0).astype(x.dtype),
            lambda lo, hi: (max(lo, 0.0), max(hi, 0.0)), integer_ok=True),
    UnaryOp("tanh", np.tanh, lambda lo, hi: (math.tanh(lo), math.tanh(hi))),
    UnaryOp("sigmoid", _sigmoid, lambda lo, hi: (1 / (1 + math.exp(-lo)),
                                                 1 / (1 + math.exp(-hi))),
            safe=lambda lo, hi: lo >= -30.0),
)

BINARY = (
    BinaryOp("add", np.add, lambda a, b: (a[0] + b[0], a[1] + b[1])),
    BinaryOp("subtract", np.subtract, lambda a, b: (a[0] - b[1], a[1] - b[0])),
    BinaryOp("multiply", np.multiply, _products),
    # NOTE: the divisor must keep away from zero: the quotient stays bounded and a pass that
    # reorders float arithmetic changes it only by rounding.
    BinaryOp("divide", np.true_divide, _quotients,
             safe=lambda a, b: b[0] >= 0.25 or b[1] <= -0.25, integer_ok=False),
    BinaryOp("maximum", np.maximum, lambda a, b: (max(a[0], b[0]), max(a[1], b[1]))),
    BinaryOp("minimum", np.minimum, lambda a, b: (min(a[0], b[0]), min(a[1], b[1]))),
    BinaryOp("less", np.less, _bool_bounds, comparison=True),
    BinaryOp("greater", np.greater, _bool_bounds, comparison=True),
    BinaryOp("less_equal", np.less_equal, _bool_bounds, comparison=True),
    BinaryOp("greater_equal", np.greater_equal, _bool_bounds, comparison=True),
    BinaryOp("equal", np.equal, _bool_bounds, comparison=True),
    BinaryOp("not_equal", np.not_equal, _bool_bounds, comparison=True),
)

# Ops with their own step in the generator (shape-changing or with attributes).
STRUCTURAL_OPS = ("where", "sum", "mean", "max", "min", "reshape", "transpose",
                  "concatenate", "expand_dims", "nn.dense", "nn.softmax", "cast")


def softmax_reference(x, axis):
    """Numerically stable softmax along ``axis`` (the oracle for ``nn.softmax``).

    Args:
        x: the array.
        axis: the axis.
    """
    shifted = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return (e / np.sum(e, axis=axis, keepdims=True)).astype(x.dtype)


def within(bounds, limit: float = LIMIT) -> bool:
    """Whether a value interval is finite and inside ``[-limit, limit]``.

    Args:
        bounds: the interval ``(lo, hi)``.
        limit: the magnitude bound.
    """
    lo, hi = bounds
    return (math.isfinite(lo) and math.isfinite(hi) and -limit <= lo <= hi <= limit)


def union(first, second):
    """The smallest interval holding both intervals.

    Args:
        first: an interval ``(lo, hi)``.
        second: another.
    """
    return (min(first[0], second[0]), max(first[1], second[1]))


def contains(outer, inner) -> bool:
    """Whether interval ``inner`` lies inside ``outer``."""
    return outer[0] <= inner[0] and inner[1] <= outer[1]


def broadcast(lhs: tuple, rhs: tuple) -> Optional[tuple]:
    """numpy broadcasting of two static shapes, or None if they do not broadcast.

    Args:
        lhs: one shape.
        rhs: the other.
    """
    ndim = max(len(lhs), len(rhs))
    lhs = (1,) * (ndim - len(lhs)) + tuple(lhs)
    rhs = (1,) * (ndim - len(rhs)) + tuple(rhs)
    out = []
    for a, b in zip(lhs, rhs):
        if a == b or b == 1:
            out.append(a)
        elif a == 1:
            out.append(b)
        else:
            return None
    return tuple(out)
