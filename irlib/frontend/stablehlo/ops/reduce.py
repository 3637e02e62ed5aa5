"""Reductions: ``reduce`` and ``reduce_window``.

``reduce`` bodies that apply one of add/multiply/max/min/and/or to each operand's pair become
``sum``/``prod``/``max``/``min``/``all``/``any`` (the init value is combined in unless it is
the identity); JAX's argmax/argmin reducer over ``(values, iota)`` becomes
``max``/``min`` + ``argmax``/``argmin``.

``reduce_window`` with a max/min/add body over 1 to 3 windowed axes becomes
``nn.max_pool{1,2,3}d`` (min as ``-max_pool(-x)``) or ``nn.avg_pool{1,2,3}d`` with
``count_include_pad`` times the window size (sum pooling); the other axes are folded into the
pool's channel axis. The cumulative-sum window JAX emits for ``jnp.cumsum`` (and
``cumprod``) becomes ``cumsum``/``cumprod``.

Other elementwise bodies (``lax.cumlogsumexp``, variadic reductions, ``logaddexp``
reducers, base dilation) go through :mod:`irlib.frontend.stablehlo.ops.generic`.
"""

from __future__ import annotations

import numpy as np

from ..errors import StableHLOOpNotImplemented
from ..mlir import attributes, int_list, padding_pairs, tensor_info
from ..registry import converter
from . import bodies, generic
from .shape import pad, reshape, slice_axes, transpose

_REDUCE_OPS = {"add": "sum", "mul": "prod", "max": "max", "min": "min", "and": "all",
               "or": "any"}
_COMBINE = {"add": "add", "mul": "multiply", "max": "maximum", "min": "minimum",
            "and": "logical_and", "or": "logical_or"}


def _identity(kind: str, dtype: str):
    np_dtype = np.dtype(dtype) if dtype != "bfloat16" else np.dtype("float32")
    if kind == "add":
        return 0
    if kind == "mul":
        return 1
    if kind == "and":
        return True
    if kind == "or":
        return False
    if np_dtype.kind == "f":
        return -np.inf if kind == "max" else np.inf
    if np_dtype.kind == "b":
        return kind == "min"
    info = np.iinfo(np_dtype)
    return info.min if kind == "max" else info.max


def _is_identity(ctx, init, kind: str) -> bool:
    value = ctx.const_value(init)
    return value is not None and value.size == 1 and \
        bool(value.reshape(()) == _identity(kind, str(value.dtype)))


def _check_reduce(op):
    count = len(op.operands) // 2
    region = op.regions[0]
    if bodies.pairwise_kinds(region, count) is not None:
        return None
    if count == 2 and bodies.arg_reducer(region) is not None:
        return None
    if bodies.elementwise_body(region):
        return None
    return "a reducer body that is not elementwise"


def _combine(ctx, kind, value, init):
    if _is_identity(ctx, init, kind):
        return value
    name = _COMBINE[kind]
    if ctx.dtype(value) == "bool" and kind in ("max", "min"):
        name = "logical_or" if kind == "max" else "logical_and"
    return ctx.emit(name, value, init)


def _reduce_one(ctx, kind, x, init, axes):
    name = _REDUCE_OPS[kind]
    if ctx.dtype(x) == "bool" and kind in ("add", "max", "min", "mul"):
        name = {"add": "any", "max": "any", "min": "all", "mul": "all"}[kind]
    if not axes:
        out = x
    else:
        out = ctx.emit(name, x, axis=list(axes), keepdims=False)
    return _combine(ctx, kind, out, init)


@converter("stablehlo.reduce", maps_to="sum/prod/max/min/all/any, argmax/argmin",
           note="one add/multiply/max/min/and/or per operand, JAX's argmax/argmin body; "
                "other elementwise bodies as a pairwise tree",
           check=_check_reduce)
def _reduce(ctx, op, inputs, attrs):
    count = len(inputs) // 2
    operands, inits = inputs[:count], inputs[count:]
    axes = int_list(attrs["dimensions"])
    region = op.regions[0]
    kinds = bodies.pairwise_kinds(region, count)
    if kinds is not None:
        return [_reduce_one(ctx, kind, x, init, axes)
                for kind, x, init in zip(kinds, operands, inits)]
    kind = bodies.arg_reducer(region) if count == 2 and len(axes) == 1 else None
    if kind is None or not _is_iota_along(ctx, operands[1], axes[0]):
        return generic.reduce_tree(ctx, region, operands, inits, axes)
    values, indices = operands
    axis = axes[0]
    best = ctx.emit(_REDUCE_OPS[kind], values, axis=[axis], keepdims=False)
    where = ctx.emit("argmax" if kind == "max" else "argmin", values, axis=[axis],
                     keepdims=False)
    return [_combine(ctx, kind, best, inits[0]), ctx.cast(where, ctx.dtype(indices))]


def _is_iota_along(ctx, indices, axis) -> bool:
    """Whether ``indices`` is an iota along ``axis`` (JAX's argmax/argmin index operand)."""
    if ctx.iotas.get(indices) == axis:
        return True
    value = ctx.const_value(indices)
    if value is None:
        return False
    expected = np.arange(value.shape[axis]).reshape(
        [-1 if i == axis else 1 for i in range(value.ndim)])
    return bool(np.array_equal(value, np.broadcast_to(expected, value.shape)))


# -- reduce_window ---------------------------------------------------------------------------
def _window_attrs(op, rank):
    attrs = attributes(op)
    window = int_list(attrs["window_dimensions"])
    strides = int_list(attrs.get("window_strides")) or [1] * rank
    base = int_list(attrs.get("base_dilations")) or [1] * rank
    dilations = int_list(attrs.get("window_dilations")) or [1] * rank
    padding = padding_pairs(attrs.get("padding"), rank)
    return window, strides, base, dilations, padding


def _check_reduce_window(op):
    rank = len(tensor_info(op.operands[0].type)[0])
    if _pooling_kind(op, rank) is not None:
        return None
    if not bodies.elementwise_body(op.regions[0]):
        return "a body that is not elementwise"
    window = _window_attrs(op, rank)[0]
    if generic.window_positions(window) > generic.MAX_WINDOW:
        return f"a window of more than {generic.MAX_WINDOW} positions with a generic body"
    return None


def _pooling_kind(op, rank):
    """The body kind when a pooling op or a cumulative op implements this reduce_window
    (one operand; add/max/min over at most 3 windowed axes without base dilation, or a
    cumulative add/multiply), else None."""
    return _window_kind(op.regions[0], len(op.operands) // 2, *_window_attrs(op, rank))


def _window_kind(region, count, window, strides, base, dilations, padding):
    """:func:`_pooling_kind` of a body ``region`` over ``count`` operands and window
    parameters (dims may be symbolic)."""
    rank = len(window)
    kinds = bodies.pairwise_kinds(region, count)
    if count != 1 or kinds is None or kinds[0] not in ("add", "max", "min", "mul"):
        return None
    if any(b != 1 for b in base):
        return None
    windowed = [a for a in range(rank) if window[a] != 1 or strides[a] != 1 or
                padding[a] != (0, 0)]
    if len(windowed) > 3:
        return None
    if kinds[0] == "mul" and windowed and not _is_cumulative(window, strides, dilations,
                                                              padding, windowed):
        return None
    return kinds[0]


def _cumulative_over_axis(ctx, x, window, strides, dilations, padding):
    """Whether the window is a cumulative one over a whole axis of ``x`` (or no window)."""
    windowed = [a for a in range(len(window)) if window[a] != 1 or strides[a] != 1 or
                padding[a] != (0, 0)]
    return not windowed or (_is_cumulative(window, strides, dilations, padding, windowed)
                            and window[windowed[0]] == ctx.shape(x)[windowed[0]])


def _is_cumulative(window, strides, dilations, padding, windowed):
    if len(windowed) != 1:
        return False
    axis = windowed[0]
    size = window[axis]
    return strides[axis] == 1 and dilations[axis] == 1 and padding[axis] == (size - 1, 0)


@converter("stablehlo.reduce_window",
           maps_to="nn.max_pool1d/2d/3d, nn.avg_pool1d/2d/3d (sum), cumsum/cumprod",
           note="max/min/add bodies over 1-3 windowed axes with strides, padding and window "
                "dilation as pools; cumulative add/multiply windows; other elementwise bodies "
                "(and base dilation) unrolled over the window positions",
           check=_check_reduce_window)
def _reduce_window(ctx, op, inputs, attrs):
    rank = ctx.ndim(inputs[0])
    return reduce_window(ctx, op.regions[0], inputs, *_window_attrs(op, rank))


def reduce_window(ctx, region, inputs, window, strides, base, dilations, padding):
    """StableHLO ``reduce_window`` of ``inputs`` (operands then init values) with body
    ``region`` and the window parameters (lists per axis; ``padding`` as ``(low, high)``
    pairs; a cumulative window may have symbolic dims).

    Args:
        region: the reducer's body.
        inputs: the operands then the init values.
        window: the window size per axis.
        strides: the window strides per axis.
        base: the base dilations per axis.
        dilations: the window dilations per axis.
        padding: ``(low, high)`` per axis.
    """
    count = len(inputs) // 2
    rank = ctx.ndim(inputs[0])
    kind = _window_kind(region, count, window, strides, base, dilations, padding)
    if kind is None or (kind == "mul" and not _cumulative_over_axis(
            ctx, inputs[0], window, strides, dilations, padding)):
        return generic.reduce_window_unrolled(ctx, region, inputs[:count], inputs[count:],
                                              window, strides, base, dilations, padding)
    x, init = inputs
    windowed = [a for a in range(rank) if window[a] != 1 or strides[a] != 1 or
                padding[a] != (0, 0)]
    if not windowed:
        return _combine(ctx, kind, x, init)
    if _is_cumulative(window, strides, dilations, padding, windowed) and \
            kind in ("add", "mul") and window[windowed[0]] == ctx.shape(x)[windowed[0]]:
        out = ctx.emit("cumsum" if kind == "add" else "cumprod", x, axis=windowed[0])
        return _combine(ctx, kind, out, init)
    shape = ctx.shape(x)
    rest = [a for a in range(rank) if a not in windowed]
    channels = 1
    for a in rest:
        channels = channels * shape[a]
    data = transpose(ctx, x, rest + windowed)
    data = reshape(ctx, data, [1, channels] + [shape[a] for a in windowed])
    if kind == "min":
        data = ctx.emit("negative", data)
    nsp = len(windowed)
    pool_attrs = dict(pool_size=[window[a] for a in windowed],
                      strides=[strides[a] for a in windowed],
                      dilation=[dilations[a] for a in windowed],
                      padding=[padding[a][0] for a in windowed] +
                              [padding[a][1] for a in windowed])
    if any(not isinstance(v, (int, np.integer)) for v in pool_attrs["pool_size"] +
           pool_attrs["strides"] + pool_attrs["padding"]):
        raise StableHLOOpNotImplemented("a pooling window of symbolic size", [])
    if kind in ("max", "min"):
        out = ctx.emit(f"nn.max_pool{nsp}d", data, **pool_attrs)
        if kind == "min":
            out = ctx.emit("negative", out)
    else:
        out = ctx.emit(f"nn.avg_pool{nsp}d", data, count_include_pad=True, **pool_attrs)
        size = int(np.prod([window[a] for a in windowed]))
        out = ctx.emit("multiply", out, ctx.scalar(size, ctx.dtype(out)))
    out_spatial = list(ctx.shape(out)[2:])
    out = reshape(ctx, out, [shape[a] for a in rest] + out_spatial)
    order = rest + windowed
    out = transpose(ctx, out, [order.index(a) for a in range(rank)])
    return _combine(ctx, kind, out, init)


# -- select_and_scatter (the gradient of max pooling) ---------------------------------------
_DIRECTIONS = {"GE": "greater_equal", "GT": "greater", "LE": "less_equal", "LT": "less"}


def _check_select_and_scatter(op):
    found = bodies.comparison(op.regions[0])
    if found is None or found[0] not in _DIRECTIONS or found[1:] != (0, 1):
        return "a select body other than one GE/GT/LE/LT comparison"
    kinds = bodies.pairwise_kinds(op.regions[1], 1)
    if kinds != ["add"]:
        return "a scatter body other than add"
    return None


@converter("stablehlo.select_and_scatter", maps_to="strided_slice, where, nn.pad (interior)",
           note="GE/GT/LE/LT select (max/min pooling gradients), add scatter, strides, padding",
           check=_check_select_and_scatter)
def _select_and_scatter(ctx, op, inputs, attrs):
    operand, source, init = inputs
    direction = bodies.comparison(op.regions[0])[0]
    shape, out = ctx.static_shape(operand), ctx.static_shape(source)
    if shape is None or out is None:
        raise StableHLOOpNotImplemented("select_and_scatter over a dynamic shape", [])
    rank = len(shape)
    window = int_list(attrs.get("window_dimensions")) or [1] * rank
    strides = int_list(attrs.get("window_strides")) or [1] * rank
    padding = padding_pairs(attrs.get("padding"), rank)
    dtype = ctx.dtype(operand)
    neutral = -np.inf if direction in ("GE", "GT") else np.inf
    lows, highs = [lo for lo, _ in padding], [hi for _, hi in padding]
    padded = pad(ctx, operand, ctx.scalar(neutral, dtype), lows, highs)
    padded_shape = ctx.static_shape(padded)
    offsets = list(np.ndindex(*window))
    best = chosen = None
    for k, offset in enumerate(offsets):
        end = [o + (n - 1) * s + 1 for o, n, s in zip(offset, out, strides)]
        candidate = slice_axes(ctx, padded, list(offset), end, strides)
        if best is None:
            best, chosen = candidate, ctx.const(np.zeros(out, np.int32))
            continue
        keep = ctx.emit(_DIRECTIONS[direction], best, candidate)
        best = ctx.emit("where", keep, best, candidate)
        chosen = ctx.emit("where", keep, chosen, ctx.scalar(k, "int32"))
    zero = ctx.scalar(0, ctx.dtype(source))
    total = None
    for k, offset in enumerate(offsets):
        part = ctx.emit("where", ctx.emit("equal", chosen, ctx.scalar(k, "int32")), source, zero)
        end = [o + (n - 1) * s + 1 for o, n, s in zip(offset, out, strides)]
        part = pad(ctx, part, zero, list(offset), [p - e for p, e in zip(padded_shape, end)],
                   [s - 1 for s in strides])
        total = part if total is None else ctx.emit("add", total, part)
    total = slice_axes(ctx, total, lows, [p - hi for p, hi in zip(padded_shape, highs)])
    return _combine(ctx, "add", total, init)


# -- jax.export: reduce_window with window parameters computed from symbolic dims -----------
def dynamic_reduce_window(ctx, op, inputs, functions):
    """The ``stablehlo.dynamic_reduce_window`` custom call (what ``jnp.cumsum`` over a
    symbolic axis lowers to): operands, init values, then window dimensions, strides, base
    dilations, window dilations and padding as tensors known from the argument shapes; the
    body is the called computation.

    Args:
        op: the custom call operation.
        inputs: its operands' converted values.
        functions: the module's functions by name (the body is looked up there).
    """
    from ..mlir import attributes, cast
    count = (len(inputs) - 5) // 2
    params = [ctx.sym_dims(v) for v in inputs[2 * count:]]
    if any(p is None for p in params):
        raise StableHLOOpNotImplemented("window parameters not known at import time", [])
    window, strides, base, dilations, flat = params
    padding = [(flat[2 * i], flat[2 * i + 1]) for i in range(len(window))]
    called = cast(attributes(op).get("called_computations"), "ArrayAttr")
    name = cast(called[0], "FlatSymbolRefAttr").value if called is not None and len(called) \
        else None
    if name not in functions:
        raise StableHLOOpNotImplemented("a dynamic_reduce_window without its body", [])
    return reduce_window(ctx, functions[name].regions[0], inputs[:2 * count], window, strides,
                         base, dilations, padding)
