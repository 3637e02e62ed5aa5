"""Reductions whose bodies are arbitrary elementwise computations, applied "lifted": the body
region is converted with whole tensors bound to its scalar arguments, which is exact because
every operation in it is elementwise (the importer checks only dtypes inside, see
:attr:`~irlib.frontend.stablehlo.importer.Context.lifted`).

* ``reduce``: a pairwise tree over the reduced elements (the reduced axes moved last and
  flattened; ``log2(n)`` applications of the body to the two halves), then the body once with
  the init values. StableHLO leaves the order of a reduction unspecified, so a body is
  expected to be associative, as a tree assumes.
* ``reduce_window``: the operand padded with the init values (interior padding for base
  dilation), then the body folded over one strided slice per window position, starting from
  the init values (at most :data:`MAX_WINDOW` positions).
"""

from __future__ import annotations

import numpy as np

from ..errors import StableHLOOpNotImplemented
from .shape import pad, reshape, slice_axes, transpose

#: the largest window (number of positions) a generic reduce_window unrolls.
MAX_WINDOW = 1024


def apply_body(ctx, region, args, shapes=None):
    """The results of elementwise ``region`` on the tensors ``args`` (broadcast to
    ``shapes[k]`` when given and the body left them smaller)."""
    ctx.lifted += 1
    saved_rank = ctx.lifted_rank
    args = list(args)
    ctx.lifted_rank = max([ctx.ndim(a) for a in args] + [0])
    args = [_keep_array(ctx, a, ctx.lifted_rank) for a in args]
    try:
        outs = ctx.convert_region(region, args)
    finally:
        ctx.lifted -= 1
        ctx.lifted_rank = saved_rank
    if shapes is not None:
        outs = [out if list(ctx.shape(out)) == list(shape) else
                ctx.emit("broadcast_to", out, shape=list(shape))
                for out, shape in zip(outs, shapes)]
    return outs


def _keep_array(ctx, expr, rank):
    """A non-finite 0-d constant as a ``(1,) * rank`` one (see ``Context.scalar_like``)."""
    value = ctx.const_value(expr)
    if value is None or value.ndim or value.dtype.kind != "f" or np.isfinite(value):
        return expr
    return ctx.const(value.reshape((1,) * rank))


def reduce_tree(ctx, region, operands, inits, axes):
    """StableHLO ``reduce`` of ``operands`` over ``axes`` with an elementwise body.

    Args:
        region: the reducer's body.
        operands: the reduced values.
        inits: their init values.
        axes: the reduced axes.
    """
    shape = ctx.shape(operands[0])
    rank = len(shape)
    keep = [a for a in range(rank) if a not in axes]
    count = 1
    for axis in axes:
        if not isinstance(shape[axis], int):
            raise StableHLOOpNotImplemented("a generic reduction over a dynamic axis", [])
        count *= shape[axis]
    kept = [shape[a] for a in keep]
    xs = [reshape(ctx, transpose(ctx, x, keep + list(axes)), kept + [count]) for x in operands]
    if count == 0:
        return [ctx.emit("broadcast_to", init, shape=kept) for init in inits]
    while count > 1:
        half = count // 2
        low = [_cut(ctx, x, 0, half) for x in xs]
        high = [_cut(ctx, x, half, 2 * half) for x in xs]
        combined = apply_body(ctx, region, low + high, [ctx.shape(x) for x in low])
        if count % 2:
            combined = [ctx.emit("concatenate", ctx.make_tuple([c, _cut(ctx, x, 2 * half,
                                                                          count)]),
                                 axis=len(kept)) for c, x in zip(combined, xs)]
        xs, count = combined, half + count % 2
    results = [reshape(ctx, x, kept) for x in xs]
    return apply_body(ctx, region, list(inits) + results, [kept] * len(results))


def _cut(ctx, x, begin, end):
    shape = list(ctx.shape(x))
    return slice_axes(ctx, x, [0] * (len(shape) - 1) + [begin], shape[:-1] + [end])


def window_positions(window) -> int:
    """How many positions a window of dims ``window`` has."""
    return int(np.prod(window)) if len(window) else 1


def reduce_window_unrolled(ctx, region, operands, inits, window, strides, base, dilations,
                           padding):
    """StableHLO ``reduce_window`` with an elementwise body, window positions unrolled.

    Args:
        region: the reducer's body.
        operands: the reduced values.
        inits: their init values.
        window: the window size per axis.
        strides: the window strides per axis.
        base: the base dilations per axis.
        dilations: the window dilations per axis.
        padding: ``(low, high)`` per axis.
    """
    if window_positions(window) > MAX_WINDOW:
        raise StableHLOOpNotImplemented(f"a generic window of more than {MAX_WINDOW} "
                                        "positions", [])
    padded = [pad(ctx, x, init, [lo for lo, _ in padding], [hi for _, hi in padding],
                  [b - 1 for b in base]) for x, init in zip(operands, inits)]
    shape = ctx.static_shape(padded[0])
    if shape is None:
        raise StableHLOOpNotImplemented("a generic reduce_window over a dynamic shape", [])
    extent = [(w - 1) * d + 1 for w, d in zip(window, dilations)]
    out = [(n - e) // s + 1 if n >= e else 0 for n, e, s in zip(shape, extent, strides)]
    acc = list(inits)
    for offset in np.ndindex(*window):
        begin = [o * d for o, d in zip(offset, dilations)]
        end = [b + (n - 1) * s + 1 if n else b for b, n, s in zip(begin, out, strides)]
        parts = [slice_axes(ctx, x, begin, end, strides) for x in padded]
        acc = apply_body(ctx, region, acc + parts, [out] * len(parts))
    return acc
