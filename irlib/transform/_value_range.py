"""Static value ranges of tensor expressions: sound bounds on every element, and whether every
element is an integer.

:class:`ValueRanges` walks a type-checked dataflow expression bottom-up (iteratively, one
result per node) and gives each tensor-valued node a :class:`Range` ``(lo, hi, integral)``:
every element ``v`` that is not NaN satisfies ``lo <= v <= hi``, and when ``integral`` is
true ``v`` is an integer or an infinity. Passes use it to prove that an integer computation
is exact in floating point (:mod:`irlib.transform.lower_integer_matmul`): a quantized
activation ``cast(clip(round(x / s) + zp, 0, 255), "uint8")`` lies in ``[0, 255]``, and an
int8 weight constant has known magnitudes.

The rules are the interval rules of each op; an integer dtype's range is the dtype's, unless
a narrower one follows from the operands without wrap-around; a float result that is not an
exact integer has its bounds widened by one unit of its precision (rounding). Ops without a
rule get their dtype's range (floats: unbounded). Nothing here looks at run-time values.

NaN is outside the analysis: a float -> integer ``cast`` of NaN has no defined result (ONNX
and C leave it open; numpy's depends on the platform), so ranges are those of programs whose
float -> integer casts see no NaN.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..ir import expr as E
from ..ir.functor import post_order
from ..ir.types import TensorType

__all__ = ["Range", "ValueRanges", "dtype_range", "exact_integer_limit"]

_INF = math.inf


class Range(NamedTuple):
    """Bounds of a tensor's elements (NaN aside): ``lo <= v <= hi``; ``integral``: every
    element is an integer (or an infinity)."""

    lo: float
    hi: float
    integral: bool

    @property
    def magnitude(self) -> float:
        """The largest ``|v|`` the range allows."""
        return max(abs(self.lo), abs(self.hi))

    def within(self, lo: float, hi: float) -> bool:
        """Whether the range lies inside ``[lo, hi]``."""
        return lo <= self.lo and self.hi <= hi


def exact_integer_limit(dtype: str) -> float:
    """The largest ``n`` such that every integer of magnitude up to ``n`` is exact in the
    float ``dtype`` (``2**24`` for float32), or 0 for a non-float dtype."""
    try:
        info = np.finfo(dtype)
    except (TypeError, ValueError):
        return 0
    return float(2 ** (info.nmant + 1))


def dtype_range(dtype: str) -> Range:
    """The range of every value of ``dtype`` (integers: the dtype's limits; floats: all)."""
    if dtype == "bool":
        return Range(0.0, 1.0, True)
    try:
        info = np.iinfo(dtype)
        return Range(float(info.min), float(info.max), True)
    except (TypeError, ValueError):
        return Range(-_INF, _INF, False)


def _constant_range(data: np.ndarray) -> Range:
    if data.dtype.kind == "b":
        return Range(0.0, 1.0, True)
    if data.dtype.kind in "iu":
        if data.size == 0:
            return dtype_range(data.dtype.name)
        return Range(float(data.min()), float(data.max()), True)
    if data.dtype.kind != "f" or data.size == 0:
        return dtype_range(str(data.dtype))
    finite = data[~np.isnan(data)]
    if finite.size == 0:
        return Range(-_INF, _INF, False)
    integral = bool(np.all((finite == np.floor(finite)) | np.isinf(finite)))
    return Range(float(finite.min()), float(finite.max()), integral)


def _fit(result: Range, dtype: str) -> Range:
    """``result`` (computed exactly) as the op's ``dtype`` holds it: integer dtypes wrap
    outside their range (then their whole range), inexact float results widen by a unit
    of the precision."""
    full = dtype_range(dtype)
    if full.integral:
        return result if result.within(full.lo, full.hi) and result.integral else full
    if any(math.isnan(b) for b in (result.lo, result.hi)):
        return full
    limit = exact_integer_limit(dtype)
    if result.integral and result.magnitude <= limit:
        return result
    step = 2.0 ** -(np.finfo(dtype).nmant if limit else 52)
    return Range(result.lo - abs(result.lo) * step, result.hi + abs(result.hi) * step,
                 result.integral)


def _products(a: Range, b: Range) -> list:
    """The four corner products of two finite ranges."""
    return [x * y for x in (a.lo, a.hi) for y in (b.lo, b.hi)]


def _binary(name: str, a: Range, b: Range):
    both = a.integral and b.integral
    if name == "add":
        return Range(a.lo + b.lo, a.hi + b.hi, both)
    if name == "subtract":
        return Range(a.lo - b.hi, a.hi - b.lo, both)
    if name == "multiply":
        if math.isinf(a.magnitude) or math.isinf(b.magnitude):
            return Range(-_INF, _INF, both)
        values = _products(a, b)
        return Range(min(values), max(values), both)
    if name == "maximum":
        return Range(max(a.lo, b.lo), max(a.hi, b.hi), both)
    if name == "minimum":
        return Range(min(a.lo, b.lo), min(a.hi, b.hi), both)
    return None


def _unary(name: str, a: Range, attrs):
    if name == "negative":
        return Range(-a.hi, -a.lo, a.integral)
    if name in ("round", "floor", "ceil", "trunc"):
        fn = {"round": np.round, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc}[name]
        return Range(float(fn(a.lo)), float(fn(a.hi)), True)
    if name == "abs":
        low = 0.0 if a.lo <= 0 <= a.hi else min(abs(a.lo), abs(a.hi))
        return Range(low, a.magnitude, a.integral)
    if name == "clip":
        low, high = float(attrs["a_min"]), float(attrs["a_max"])
        clamp = lambda v: min(max(v, low), high)   # noqa: E731
        integral = a.integral and float(low).is_integer() and float(high).is_integer()
        return Range(clamp(a.lo), clamp(a.hi), integral)
    return None


class ValueRanges:
    """The :class:`Range` of each tensor-valued node of type-checked expressions.

    Args:
        roots: expressions to analyse now (more can be added with :meth:`analyse`).
    """

    def __init__(self, *roots):
        self.ranges: dict = {}
        self.wrapped: set = set()
        for root in roots:
            self.analyse(root)

    def analyse(self, root) -> None:
        """Compute the range of every node below ``root`` not seen yet (iteratively)."""
        for node in post_order(root):
            if node not in self.ranges:
                self.ranges[node] = self._rule(node)

    def __getitem__(self, node) -> Range:
        """The range of ``node`` (analysed on demand)."""
        if node not in self.ranges:
            self.analyse(node)
        return self.ranges[node]

    def _rule(self, node):
        ty = getattr(node, "_checked_type", None)
        if not isinstance(ty, TensorType):
            return None
        full = dtype_range(ty.dtype)
        if isinstance(node, E.Constant):
            return _constant_range(node.data.numpy())
        if not (isinstance(node, E.Call) and isinstance(node.op, E.Op)):
            return full
        name = node.op.name
        args = [self.ranges.get(a) for a in node.args]
        if name == "cast" and args and args[0] is not None:
            return self._cast(args[0], ty.dtype)
        if name == "where" and len(args) == 3 and None not in args[1:]:
            x, y = args[1], args[2]
            return _fit(Range(min(x.lo, y.lo), max(x.hi, y.hi), x.integral and y.integral),
                        ty.dtype)
        if None in args:
            return full
        if len(args) == 2:
            result = _binary(name, args[0], args[1])
        elif len(args) == 1:
            result = _unary(name, args[0], node.attrs)
        else:
            result = None
        if result is None:
            return full
        if full.integral and not result.within(full.lo, full.hi):
            self.wrapped.add(node)          # the integer op wraps around (or may)
        return _fit(result, ty.dtype)

    def may_wrap(self, node) -> bool:
        """Whether the integer op ``node`` may compute a value outside its dtype (and wrap
        around): its exact interval leaves the dtype's range."""
        self[node]
        return node in self.wrapped

    @staticmethod
    def _cast(source: Range, dtype: str) -> Range:
        full = dtype_range(dtype)
        if dtype == "bool":
            return full
        if full.integral:
            low, high = np.trunc(source.lo), np.trunc(source.hi)
            if math.isinf(low) or math.isinf(high) or not (full.lo <= low and high <= full.hi):
                return full
            return Range(float(low), float(high), True)
        return _fit(source, dtype)
