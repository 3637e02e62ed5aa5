"""Special functions CHLO keeps as single ops: ``chlo.lgamma`` and ``chlo.digamma``, by the
Lanczos approximation (g = 7, nine terms; the approximation XLA also expands them into),
computed in float64 and cast back, with the reflection formula below 1/2.
"""

from __future__ import annotations

import numpy as np

from ..registry import converter

_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028,
            771.32342877765313, -176.61502916214059, 12.507343278686905,
            -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)


def _lanczos_sums(ctx, z):
    """``(a, da)``: the Lanczos series at ``z = x - 1`` and its derivative."""
    series = ctx.scalar(_LANCZOS[0], "float64")
    derivative = ctx.scalar(0.0, "float64")
    for k, coefficient in enumerate(_LANCZOS[1:], start=1):
        shifted = ctx.emit("add", z, ctx.scalar(float(k), "float64"))
        c = ctx.scalar(coefficient, "float64")
        series = ctx.emit("add", series, ctx.emit("divide", c, shifted))
        derivative = ctx.emit("subtract", derivative, ctx.emit(
            "divide", c, ctx.emit("multiply", shifted, shifted)))
    return series, derivative


def _reflected(ctx, x):
    """``(use_reflection, y)``: ``x < 1/2`` and the argument the series is evaluated at
    (``1 - x`` there, ``x`` elsewhere)."""
    reflect = ctx.emit("less", x, ctx.scalar(0.5, "float64"))
    y = ctx.emit("where", reflect, ctx.emit("subtract", ctx.scalar(1.0, "float64"), x), x)
    return reflect, y


@converter("chlo.lgamma", maps_to="log, sin, Lanczos series (float64)",
           note="reflection below 1/2; +inf at the poles")
def _lgamma(ctx, op, inputs, attrs):
    dtype = ctx.dtype(inputs[0])
    x = ctx.cast(inputs[0], "float64")
    reflect, y = _reflected(ctx, x)
    z = ctx.emit("subtract", y, ctx.scalar(1.0, "float64"))
    series, _ = _lanczos_sums(ctx, z)
    t = ctx.emit("add", z, ctx.scalar(_G + 0.5, "float64"))
    value = ctx.emit("add", ctx.scalar(0.5 * np.log(2 * np.pi), "float64"), ctx.emit(
        "subtract", ctx.emit("multiply", ctx.emit("add", z, ctx.scalar(0.5, "float64")),
                             ctx.emit("log", t)), t))
    value = ctx.emit("add", value, ctx.emit("log", series))
    sine = ctx.emit("abs", ctx.emit("sin", ctx.emit("multiply", ctx.scalar(np.pi, "float64"),
                                                     x)))
    mirrored = ctx.emit("subtract", ctx.emit("subtract", ctx.scalar(np.log(np.pi), "float64"),
                                             ctx.emit("log", sine)), value)
    return ctx.cast(ctx.emit("where", reflect, mirrored, value), dtype)


@converter("chlo.digamma", maps_to="log, tan, Lanczos series (float64)",
           note="reflection below 1/2")
def _digamma(ctx, op, inputs, attrs):
    dtype = ctx.dtype(inputs[0])
    x = ctx.cast(inputs[0], "float64")
    reflect, y = _reflected(ctx, x)
    z = ctx.emit("subtract", y, ctx.scalar(1.0, "float64"))
    series, derivative = _lanczos_sums(ctx, z)
    t = ctx.emit("add", z, ctx.scalar(_G + 0.5, "float64"))
    value = ctx.emit("add", ctx.emit("log", t), ctx.emit("divide", derivative, series))
    value = ctx.emit("subtract", value, ctx.emit("divide", ctx.scalar(_G, "float64"), t))
    cotangent = ctx.emit("divide", ctx.scalar(np.pi, "float64"), ctx.emit(
        "tan", ctx.emit("multiply", ctx.scalar(np.pi, "float64"), x)))
    mirrored = ctx.emit("subtract", value, cotangent)
    return ctx.cast(ctx.emit("where", reflect, mirrored, value), dtype)
