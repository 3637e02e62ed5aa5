"""Run-time shape arguments: the ``dyn.*`` ops for shape-like inputs that are not constants.

The ops' relations know the rank but not the dims (``?``); the importer's own types get the
entries of the shape vector that are constants (:mod:`.shape_values`), so converters further on
see ``Concat(N, [2, 3])`` expand to ``(?, 2, 3)``.
"""

from __future__ import annotations

import numpy as np

from . import shape_values
from .common import normalize_axis, unsupported


def int64(ctx, expr):
    """``expr`` cast to int64 (shape arguments may come as int32)."""
    return expr if ctx.dtype(expr) == "int64" else ctx.emit("cast", expr, dtype="int64")


def reshape(ctx, data, shape, allowzero):
    """``Reshape`` with a run-time target shape."""
    call = ctx.emit("dyn.reshape", data, int64(ctx, shape), allowzero=allowzero)
    target = shape_values.partial_ints(ctx, shape)
    if target is None:
        return call
    return shape_values.refine(ctx, call, shape_values.reshape_dims_of(
        ctx.shape(data), target, bool(allowzero)))


def expand(ctx, data, shape):
    """``Expand`` (bidirectional broadcast) to a run-time shape."""
    call = ctx.emit("dyn.broadcast_to", data, int64(ctx, shape))
    target = shape_values.partial_ints(ctx, shape)
    if target is None:
        return call
    return shape_values.refine(ctx, call, shape_values.expand_dims_of(ctx.shape(data), target))


def tile(ctx, data, reps):
    """``Tile`` by run-time repeats."""
    return ctx.emit("dyn.tile", data, int64(ctx, reps))


def full(ctx, value, shape):
    """``ConstantOfShape`` with a run-time shape."""
    call = ctx.emit("dyn.full", ctx.const(value), int64(ctx, shape), dtype=str(value.dtype))
    target = shape_values.partial_ints(ctx, shape)
    if target is None:
        return call
    return shape_values.refine(ctx, call, [d if d is not None and d >= 0 else shape_values.Any
                                          for d in target])


def slice_(ctx, data, starts, ends, axes, steps):
    """``Slice`` (opset 10+) with run-time starts/ends (and optionally axes/steps)."""
    count = ctx.shape(starts)[0]
    if axes is None:
        axes = ctx.const(np.arange(count, dtype="int64"))
    if steps is None:
        steps = ctx.const(np.ones(count, dtype="int64"))
    ndim = ctx.ndim(data)
    axes = int64(ctx, axes)
    # negative axes count from the end: (axis + ndim) % ndim
    axes = ctx.emit("floor_mod", ctx.emit("add", axes, ctx.const(np.int64(ndim))),
                    ctx.const(np.int64(ndim)))
    return ctx.emit("dyn.strided_slice", data, int64(ctx, starts), int64(ctx, ends),
                    int64(ctx, steps), axes)


def _scatter_pads(ctx, pads, axes, ndim):
    # run-time axes: pads[i] goes to (axis_i + ndim) % ndim, pads[i + k] to that plus ndim
    axes = int64(ctx, axes)
    rank = ctx.const(np.int64(ndim))
    axes = ctx.emit("floor_mod", ctx.emit("add", axes, rank), rank)
    positions = ctx.emit("concatenate", ctx.make_tuple([axes, ctx.emit("add", axes, rank)]),
                         axis=0)
    return ctx.emit("onnx.scatter_nd", ctx.const(np.zeros(2 * ndim, "int64")),
                    ctx.emit("expand_dims", positions, axis=1), pads, reduction="none")


def pad(ctx, data, pads, value, mode, axes):
    """``Pad`` (opset 11+) with run-time pads; ``axes`` is None, a list of ints, or a
    run-time tensor."""
    ndim = ctx.ndim(data)
    if mode not in ("constant", "edge", "reflect", "wrap"):
        unsupported(f"Pad mode {mode!r} is not supported")
    pads = int64(ctx, pads)
    if axes is not None and not isinstance(axes, (list, tuple)):
        pads = _scatter_pads(ctx, pads, axes, ndim)
    elif axes is not None:
        # scatter the per-axis pads into a full (begin..., end...) vector
        axes = [normalize_axis(a, ndim) for a in axes]
        index = np.full(2 * ndim, len(axes) * 2, dtype="int64")
        for i, axis in enumerate(axes):
            index[axis] = i
            index[axis + ndim] = i + len(axes)
        padded = ctx.emit("concatenate", ctx.make_tuple([pads, ctx.const(np.zeros(1, "int64"))]),
                          axis=0)
        pads = ctx.emit("take", padded, ctx.const(index), axis=0, mode="clip")
    widths = ctx.emit("transpose", ctx.emit("reshape", pads, newshape=[2, ndim]), axes=[1, 0])
    if value is None:
        value = ctx.const(np.zeros((), dtype=ctx.dtype(data)))
    return ctx.emit("dyn.nn.pad", data, widths, value, pad_mode=mode)


def topk(ctx, data, k, axis, largest, dtype="int64"):
    """``TopK`` with a run-time ``k``; returns ``[values, indices]``."""
    tup = ctx.emit("dyn.topk", data, int64(ctx, k), axis=axis, ret_type="both",
                   is_ascend=not largest, dtype=dtype)
    return [ctx.tuple_get(tup, 0), ctx.tuple_get(tup, 1)]
