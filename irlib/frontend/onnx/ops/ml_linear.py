"""``ai.onnx.ml`` preprocessing and linear ops composed from elementwise ops, reductions and
``nn.dense``: Scaler, Normalizer, Imputer and LinearRegressor. Their outputs are float32 (as
the spec says) whatever the input's numeric type.
"""

from __future__ import annotations

import numpy as np

from ..registry import converter
from .common import scalar, unsupported

ML_DOMAIN = "ai.onnx.ml"


def _as_float32(ctx, x):
    return x if ctx.dtype(x) == "float32" else ctx.emit("cast", x, dtype="float32")


def _row_constant(ctx, values, name: str, columns, op: str):
    """``values`` (one, or one per column) as a float32 constant broadcasting over rows."""
    values = np.asarray(list(values), "float32")
    if values.size not in (1, columns) and columns is not None:
        unsupported(f"{op}: {name} has {values.size} entries for {columns} columns")
    return ctx.const(values)


def _columns(ctx, x):
    """The static size of ``x``'s last dim, or None when it is symbolic."""
    size = ctx.shape(x)[-1] if ctx.ndim(x) else None
    return size if isinstance(size, int) else None


@converter("Scaler", since=1, domain=ML_DOMAIN)
def _scaler(ctx, inputs, attrs):
    x = _as_float32(ctx, inputs[0])
    columns = _columns(ctx, x)
    offset = _row_constant(ctx, attrs.get("offset", [0.0]) or [0.0], "offset", columns,
                           "Scaler")
    scale = _row_constant(ctx, attrs.get("scale", [1.0]) or [1.0], "scale", columns, "Scaler")
    return ctx.emit("multiply", ctx.emit("subtract", x, offset), scale)


@converter("Normalizer", since=1, domain=ML_DOMAIN)
def _normalizer(ctx, inputs, attrs):
    norm = attrs.get("norm", "MAX")
    x = _as_float32(ctx, inputs[0])
    if ctx.ndim(x) not in (1, 2):
        unsupported(f"Normalizer takes [C] or [N, C] input, got rank {ctx.ndim(x)}")
    axis = ctx.ndim(x) - 1
    if norm == "MAX":
        divisor = ctx.emit("max", x, axis=[axis], keepdims=True)
    elif norm == "L1":
        divisor = ctx.emit("sum", ctx.emit("abs", x), axis=[axis], keepdims=True)
    elif norm == "L2":
        divisor = ctx.emit("sqrt", ctx.emit("sum", ctx.emit("multiply", x, x), axis=[axis],
                                            keepdims=True))
    else:
        unsupported(f"Normalizer norm {norm!r} is not 'MAX', 'L1' or 'L2'")
    return ctx.emit("divide", x, divisor)


@converter("Imputer", since=1, domain=ML_DOMAIN)
def _imputer(ctx, inputs, attrs):
    x = inputs[0]
    floats = attrs.get("imputed_value_floats")
    ints = attrs.get("imputed_value_int64s")
    if floats:
        values, replaced, dtype = floats, float(attrs.get("replaced_value_float", 0.0)), \
            "float32"
    elif ints:
        values, replaced, dtype = ints, int(attrs.get("replaced_value_int64", 0)), "int64"
    else:
        unsupported("Imputer needs imputed_value_floats or imputed_value_int64s")
    if ctx.dtype(x) != dtype and not (dtype == "float32" and ctx.dtype(x) == "float64"):
        unsupported(f"Imputer values of {dtype} do not fit input of {ctx.dtype(x)}")
    columns = _columns(ctx, x)
    if len(values) not in (1, columns) and columns is not None:
        unsupported(f"Imputer has {len(values)} imputed values for {columns} columns")
    fill = ctx.const(np.asarray(list(values), ctx.dtype(x)))
    if dtype == "float32" and np.isnan(replaced):
        missing = ctx.emit("isnan", x)
    else:
        missing = ctx.emit("equal", x, scalar(ctx, replaced, ctx.dtype(x)))
    return ctx.emit("where", missing, fill, x)


@converter("LinearRegressor", since=1, domain=ML_DOMAIN)
def _linear_regressor(ctx, inputs, attrs):
    x = _as_float32(ctx, inputs[0])
    if ctx.ndim(x) == 1:
        x = ctx.emit("reshape", x, newshape=[1, -1])
    if ctx.ndim(x) != 2:
        unsupported(f"LinearRegressor takes [N, C] input, got rank {ctx.ndim(x)}")
    if attrs.get("post_transform", "NONE") != "NONE":
        unsupported(f"LinearRegressor post_transform {attrs['post_transform']!r} is not "
                    "supported")
    targets = int(attrs.get("targets", 1))
    coefficients = np.asarray(attrs.get("coefficients", ()), "float32")
    if targets < 1 or coefficients.size % targets:
        unsupported(f"LinearRegressor has {coefficients.size} coefficients for {targets} "
                    "targets")
    weight = ctx.const(coefficients.reshape(targets, -1))  # [targets, C], as nn.dense takes
    score = ctx.emit("nn.dense", x, weight, units=targets)
    intercepts = attrs.get("intercepts")
    if intercepts:
        score = ctx.emit("add", score, _row_constant(ctx, intercepts, "intercepts", targets,
                                                     "LinearRegressor"))
    return score
