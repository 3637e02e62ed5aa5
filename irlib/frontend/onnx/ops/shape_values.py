"""What is known at import time about a run-time shape vector, entry by entry.

ONNX graphs often build a shape argument from pieces, some constant and some computed at run
time: ``Concat(N, [2, 3])`` feeding ``Expand`` (AffineGrid's expanded form), or
``Concat(Shape(x)[0:1], [-1, 64])`` feeding ``Reshape``. The ``dyn.*`` ops that take such a
vector type their result with ``?`` dims, losing the constant entries; a later converter that
needs a dim (``Squeeze`` without axes, ``Split``) then guesses wrong. :func:`partial_ints`
reads the constant entries back from the expression that computes the vector, and
:func:`refine` gives the ``dyn.*`` call the dims they determine.

The walk follows at most :data:`MAX_DEPTH` calls, so it never recurses deeply.
"""

from __future__ import annotations

import numpy as np

from ....ir import expr as E
from ....ir.dims import Any
from ....ir.types import TensorType
from ....op.indexing import slice_plan

#: How many nested calls :func:`partial_ints` looks through.
MAX_DEPTH = 12


def _is_int(dim) -> bool:
    return isinstance(dim, (int, np.integer)) and not isinstance(dim, bool)


def _vector_length(ctx, expr):
    try:
        shape = ctx.shape(expr)
    except Exception:  # noqa: BLE001  (not a tensor: nothing known)
        return None
    if len(shape) == 0:
        return 1
    if len(shape) == 1 and _is_int(shape[0]):
        return int(shape[0])
    return None


def partial_ints(ctx, expr, depth: int = 0):
    """The entries of 1-D (or 0-d) integer tensor ``expr`` known at import time.

    Args:
        ctx: the converter's :class:`~irlib.frontend.onnx.importer.GraphContext`.
        expr: the expression computing the vector.
        depth: calls already looked through (the walk stops at :data:`MAX_DEPTH`).

    Returns:
        A list with one entry per element (an int, or None where the value is known only at
        run time), or None when the vector's length is not static.
    """
    length = _vector_length(ctx, expr)
    if length is None:
        return None
    value = ctx.const_value(expr)
    if value is not None:
        return [int(v) for v in np.asarray(value).reshape(-1)]
    unknown = [None] * length
    if depth >= MAX_DEPTH or not isinstance(expr, E.Call) or not isinstance(expr.op, E.Op):
        return unknown
    name, args, attrs = expr.op.name, expr.args, expr.attrs
    if name == "shape_of":
        return [int(d) if _is_int(d) else None for d in ctx.shape(args[0])]
    if name in ("cast", "reshape", "squeeze", "expand_dims", "copy"):
        inner = partial_ints(ctx, args[0], depth + 1)
        return inner if inner is not None and len(inner) == length else unknown
    if name == "concatenate" and isinstance(args[0], E.Tuple):
        pieces = [partial_ints(ctx, field, depth + 1) for field in args[0].fields]
        if any(piece is None for piece in pieces):
            return unknown
        joined = [entry for piece in pieces for entry in piece]
        return joined if len(joined) == length else unknown
    if name == "strided_slice":
        inner = partial_ints(ctx, args[0], depth + 1)
        if inner is None or ctx.ndim(args[0]) != 1:
            return unknown
        try:
            plan = slice_plan(1, attrs["begin"], attrs["end"], attrs["strides"],
                              attrs["axes"], attrs["slice_mode"])
        except Exception:  # noqa: BLE001  (symbolic bounds: nothing known)
            return unknown
        picked = inner if plan[0] is None else inner[slice(*plan[0])]
        return picked if len(picked) == length else unknown
    if name == "take" and ctx.ndim(args[0]) == 1:
        inner = partial_ints(ctx, args[0], depth + 1)
        indices = ctx.const_value(args[1])
        if inner is None or indices is None:
            return unknown
        picked = []
        for index in np.asarray(indices).reshape(-1):
            index = int(index)
            if not -len(inner) <= index < len(inner):
                return unknown
            picked.append(inner[index])
        return picked if len(picked) == length else unknown
    return unknown


def expand_dims_of(data_shape, target) -> list:
    """The result dims of ``Expand`` (two-way broadcast) of ``data_shape`` to ``target``,
    whose entries are ints or None (known only at run time); ``Any`` where not determined."""
    rank = max(len(data_shape), len(target))
    data = [1] * (rank - len(data_shape)) + list(data_shape)
    want = [1] * (rank - len(target)) + list(target)
    out = []
    for have, asked in zip(data, want):
        if asked is None:
            # the result is ``have`` unless have == 1 (then it is the unknown ``asked``)
            out.append(have if _is_int(have) and have != 1 else Any)
        elif asked == 1:
            out.append(have)
        elif asked < 0:
            out.append(Any)   # invalid: the run-time check reports it
        else:
            out.append(asked)
    return out


def reshape_dims_of(data_shape, target, allowzero: bool) -> list:
    """The result dims of ``Reshape`` of ``data_shape`` to ``target`` (ints or None): a
    positive entry is that dim, 0 copies the input's dim (unless ``allowzero``), and -1 or
    an unknown entry is ``Any``."""
    out = []
    for axis, asked in enumerate(target):
        if asked is None or asked < 0:
            out.append(Any)
        elif asked == 0 and not allowzero:
            out.append(data_shape[axis] if axis < len(data_shape) else Any)
        else:
            out.append(asked)
    return out


def refine(ctx, call, dims) -> object:
    """Record ``dims`` (ints, size variables or ``Any``) as the shape of the tensor ``call``
    when the rank agrees with its type; returns ``call``. Constants (already folded) are left
    alone."""
    if not isinstance(call, E.Call):
        return call
    ty = ctx.type_of(call)
    if isinstance(ty, TensorType) and len(ty.shape) == len(dims):
        ctx.set_type(call, TensorType(tuple(dims), ty.dtype))
    return call
