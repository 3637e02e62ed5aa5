"""Small helpers shared by the converter modules."""

from __future__ import annotations

import numpy as np

from ... import OpNotImplemented


def normalize_axis(axis: int, ndim: int) -> int:
    """``axis`` (possibly negative) as an index into ``ndim`` dims."""
    return axis + ndim if axis < 0 else axis


def constant_ints(ctx, expr, what: str = "value"):
    """The value of ``expr`` as a list of Python ints, or None when it is not a constant."""
    if expr is None:
        return None
    value = ctx.const_value(expr)
    if value is None:
        return None
    return [int(v) for v in np.asarray(value).reshape(-1)]


def require_ints(ctx, expr, what: str):
    """Like :func:`constant_ints` but raises when ``expr`` is only known at run time.

    Raises:
        OpNotImplemented: when ``expr`` is not an import-time constant.
    """
    values = constant_ints(ctx, expr, what)
    if values is None:
        raise OpNotImplemented(f"{what} must be known at import time")
    return values


def scalar(ctx, value, dtype: str):
    """A 0-d constant of ``dtype``."""
    return ctx.const(np.array(value, dtype=dtype))


def unsupported(message: str):
    """Raise :class:`OpNotImplemented` (for unsupported attribute values)."""
    raise OpNotImplemented(message)


def widened(ctx, inputs, build, float16: bool = False):
    """``build(*inputs)`` computed in float32 when the inputs are of an ml_dtypes float type
    (bfloat16, float8: numpy has no products for them), cast back to that type after.

    Args:
        ctx: the converter's context.
        inputs: the input expressions (the first one's dtype decides).
        build: makes the result from the (maybe widened) inputs.
        float16: widen float16 too. For ops whose result the references round once from a
            wider value: MatMul (numpy's and onnxruntime's float16 products accumulate in
            float32) and Elu (``alpha * expm1(x)``, where ``exp(x) - 1`` rounded step by step
            in float16 loses the low bits near 0).
    """
    dtype = ctx.dtype(inputs[0])
    narrow = ("bfloat16", "float8", "float4") + (("float16",) if float16 else ())
    if not dtype.startswith(narrow):
        return build(*inputs)
    wide = [ctx.emit("cast", value, dtype="float32") for value in inputs]
    return ctx.emit("cast", build(*wide), dtype=dtype)
