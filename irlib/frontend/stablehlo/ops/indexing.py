"""Indexing: ``gather``, ``scatter``, ``sort`` and ``chlo.top_k``.

The forms jnp indexing emits, where every indexed operand dim is indexed by a point (slice
size 1; a full-size slice along an indexed dim ignores its index, as StableHLO's clamping
makes it 0) and every other dim is taken whole, are fast: batching dims (``take_along_axis``)
are indexed by an iota, the operand is transposed so its indexed dims come first, and the
index vectors (clamped into bounds, as StableHLO clamps gather starts) feed ``take`` (one
indexed dim) or ``gather_nd``, and ``scatter_nd`` (update and add bodies). Any other gather
(windows of run-time start, as ``vmap`` of ``dynamic_slice`` emits) builds one full index per
output element for ``gather_nd`` (and ``scatter_nd``). Out-of-bounds scatter updates are
skipped, as StableHLO says: they go to a slot one past the end of the (grown) operand, which
is cut off afterwards.

``sort`` with a comparator that compares one operand (JAX's comparators, NaN handling
included) becomes ``argsort`` of that key, and every operand is reordered by it (``gather``
along the axis); an ascending sort of one operand is ``sort``. Any other elementwise
comparator (``jnp.lexsort``, ``num_keys > 1``) is applied to every pair of elements: each
element's position is the number of elements that sort before it.
"""

from __future__ import annotations

import numpy as np

from ..errors import StableHLOOpNotImplemented
from ..mlir import attributes, dim_numbers, int_list, int_value, tensor_info
from ..registry import converter
from . import bodies
from .shape import pad, reshape, slice_axes, transpose


def _is_int(dim) -> bool:
    return isinstance(dim, (int, np.integer)) and not isinstance(dim, bool)


def _index_vectors(ctx, indices, index_vector_dim):
    """``indices`` with the index vector as its last axis (added when implicit)."""
    rank = ctx.ndim(indices)
    if index_vector_dim >= rank:
        return ctx.emit("expand_dims", indices, axis=rank)
    order = [a for a in range(rank) if a != index_vector_dim] + [index_vector_dim]
    return transpose(ctx, indices, order)


def _point_indices(ctx, operand, indices, index_map, batching, batching_index_dims,
                   index_vector_dim, window_sizes, clamp=True):
    """The index vectors of a point gather/scatter: ``(vectors, indexed_dims)``.

    ``vectors`` has shape ``batch + (M,)`` (int64, clamped into bounds) and ``indexed_dims``
    lists the M operand dims they index, in order. Components along a dim whose window is the
    whole dim are dropped; batching dims get an iota along their index batch dim.
    """
    operand_shape = ctx.shape(operand)
    vectors = ctx.cast(_index_vectors(ctx, indices, index_vector_dim), "int64")
    batch_shape = list(ctx.shape(vectors)[:-1])
    keep, dims = [], []
    for k, d in enumerate(index_map):
        if window_sizes[d] == 1:
            keep.append(k)
            dims.append(d)
        elif window_sizes[d] != operand_shape[d]:
            raise StableHLOOpNotImplemented("a slice of run-time start along an indexed dim "
                                            "that is neither a point nor the whole dim", [])
    if len(keep) != len(index_map):
        vectors = ctx.emit("take", vectors, ctx.const(np.array(keep, dtype=np.int64)),
                           axis=-1, mode="clip")
    parts = [vectors] if keep else []
    # the batch dims of the index tensor, numbered without the index vector dim
    for operand_dim, index_dim in zip(batching, batching_index_dims):
        position = index_dim - (1 if index_dim > index_vector_dim else 0)
        ramp = np.arange(batch_shape[position], dtype=np.int64).reshape(
            [-1 if i == position else 1 for i in range(len(batch_shape))] + [1])
        parts.append(ctx.emit("broadcast_to", ctx.const(ramp), shape=batch_shape + [1]))
        dims.append(operand_dim)
    if not parts:
        raise StableHLOOpNotImplemented("a gather/scatter that indexes no dim", [])
    vectors = parts[0] if len(parts) == 1 else ctx.emit(
        "concatenate", ctx.make_tuple(parts), axis=-1)
    if not clamp:
        return vectors, dims
    if all(_is_int(operand_shape[d]) for d in dims):
        highs = ctx.const(np.array([operand_shape[d] - 1 for d in dims], dtype=np.int64))
    else:  # a symbolic dim: its size at run time
        sizes = ctx.emit("shape_of", operand, dtype="int64")
        highs = ctx.emit("subtract", ctx.emit("take", sizes, ctx.const(np.array(
            dims, dtype=np.int64))), ctx.scalar(1, "int64"))
    vectors = ctx.emit("minimum", ctx.emit("maximum", vectors, ctx.scalar(0, "int64")), highs)
    return vectors, dims


def _gather_points(ctx, data, vectors, count):
    """``data`` (indexed dims first) gathered at ``vectors`` (``batch + (count,)``): shape
    ``batch + data.shape[count:]``."""
    if count == 1:
        squeezed = ctx.emit("squeeze", vectors, axis=[ctx.ndim(vectors) - 1])
        return ctx.emit("take", data, squeezed, axis=0, mode="clip")
    rank = ctx.ndim(vectors)
    moved = transpose(ctx, vectors, [rank - 1] + list(range(rank - 1)))
    return ctx.emit("gather_nd", data, moved)


@converter("stablehlo.gather", maps_to="take / gather_nd (+ transpose, reshape)",
           note="any dimension numbers (batching dims too); windows of run-time start need a "
                "static operand shape")
def _gather(ctx, op, inputs, attrs):
    numbers = dim_numbers(attrs["dimension_numbers"], "GatherDimensionNumbers")
    return gather(ctx, inputs[0], inputs[1], numbers, int_list(attrs["slice_sizes"]))


@converter("stablehlo.dynamic_gather", maps_to="take / gather_nd (+ transpose, reshape)",
           note="as gather; slice sizes known from the argument shapes")
def _dynamic_gather(ctx, op, inputs, attrs):
    numbers = dim_numbers(attrs["dimension_numbers"], "GatherDimensionNumbers")
    sizes = ctx.sym_dims(inputs[2])
    if sizes is None:
        raise StableHLOOpNotImplemented("slice sizes not known at import time", [])
    return gather(ctx, inputs[0], inputs[1], numbers, sizes)


def gather(ctx, operand, indices, numbers, sizes):
    """StableHLO ``gather`` of ``operand`` at ``indices`` with dimension numbers ``numbers``
    (the binding's ``GatherDimensionNumbers``) and slice sizes ``sizes``: point gathers as
    ``take``/``gather_nd`` of whole slices, other windows through :func:`_window_gather`."""
    shape = ctx.shape(operand)
    rank = len(shape)
    offset_dims = list(numbers.offset_dims)
    collapsed = list(numbers.collapsed_slice_dims)
    batching = list(numbers.operand_batching_dims)
    index_map = list(numbers.start_index_map)
    vector_dim = int(numbers.index_vector_dim)
    window = [d for d in range(rank) if d not in collapsed and d not in batching]
    points = all(sizes[d] == 1 or sizes[d] == shape[d] for d in index_map) and \
        all(sizes[d] == shape[d] for d in range(rank) if d not in index_map and
            d not in batching)
    if points and not batching and all(sizes[d] == shape[d] for d in index_map):
        # every index is clamped to 0: each batch element reads the whole operand
        batch_shape = list(ctx.shape(_index_vectors(ctx, indices, vector_dim))[:-1])
        out = reshape(ctx, operand, [1] * len(batch_shape) + list(shape))
        out = ctx.emit("broadcast_to", out, shape=batch_shape + list(shape))
        out = reshape(ctx, out, batch_shape + [shape[d] for d in window])
    elif points:
        vectors, dims = _point_indices(ctx, operand, indices, index_map, batching,
                                       list(numbers.start_indices_batching_dims), vector_dim,
                                       sizes)
        rest = [d for d in range(rank) if d not in dims]
        data = transpose(ctx, operand, dims + rest)
        out = _gather_points(ctx, data, vectors, len(dims))
        batch_shape = list(ctx.shape(vectors)[:-1])
        out = reshape(ctx, out, batch_shape + [1 if d in dims else shape[d] for d in window])
    else:
        out, batch_shape = _window_gather(ctx, operand, indices, numbers, sizes, window)
    out_rank = len(batch_shape) + len(window)
    order, batch_next = [], 0
    for axis in range(out_rank):
        if axis in offset_dims:
            order.append(len(batch_shape) + offset_dims.index(axis))
        else:
            order.append(batch_next)
            batch_next += 1
    return transpose(ctx, out, order)


def _window_gather(ctx, operand, indices, numbers, sizes, window):
    """Any gather of a static-shaped operand (``vmap`` of ``dynamic_slice`` emits windows of
    run-time start): one full index per output element, ``start + offset`` per operand dim
    with each start clamped to ``[0, dim - size]``, read by ``gather_nd``.

    Returns:
        ``(out, batch_shape)``: ``out`` has shape ``batch_shape + [sizes[d] for d in window]``.
    """
    shape = ctx.static_shape(operand)
    if shape is None:
        raise StableHLOOpNotImplemented("a windowed gather from a dynamic shape", [])
    vector_dim = int(numbers.index_vector_dim)
    vectors = ctx.cast(_index_vectors(ctx, indices, vector_dim), "int64")
    stacked = _full_indices(ctx, shape, vectors, list(numbers.start_index_map),
                            list(numbers.operand_batching_dims),
                            list(numbers.start_indices_batching_dims), vector_dim, window,
                            [int(sizes[d]) for d in window], clamp_sizes=sizes)
    return ctx.emit("gather_nd", operand, stacked), list(ctx.shape(vectors)[:-1])


def _full_indices(ctx, shape, vectors, index_map, batching, index_batching, vector_dim,
                  window, window_sizes, clamp_sizes=None):
    """The full operand index of every element of a gather/scatter window:
    ``(rank,) + batch + window_sizes`` int64, ``start + offset`` per operand dim (the start
    of an indexed dim from ``vectors``, clamped to ``[0, dim - size]`` when ``clamp_sizes``
    is given; of a batching dim its batch position; otherwise 0)."""
    batch_shape = list(ctx.shape(vectors)[:-1])
    nb = len(batch_shape)
    full = batch_shape + list(window_sizes)
    components = []
    for d in range(len(shape)):
        term = None
        if d in index_map:
            start = ctx.emit("take", vectors, ctx.scalar(index_map.index(d), "int64"), axis=-1,
                             mode="clip")
            if clamp_sizes is not None:
                start = ctx.emit("maximum", ctx.emit("minimum", start, ctx.scalar(
                    shape[d] - int(clamp_sizes[d]), "int64")), ctx.scalar(0, "int64"))
            term = reshape(ctx, start, batch_shape + [1] * len(window))
        elif d in batching:
            index_dim = index_batching[batching.index(d)]
            position = index_dim - (1 if index_dim > vector_dim else 0)
            ramp = np.arange(batch_shape[position], dtype=np.int64).reshape(
                [-1 if i == position else 1 for i in range(nb)] + [1] * len(window))
            term = ctx.const(ramp)
        if d in window:
            axis = nb + window.index(d)
            ramp = ctx.const(np.arange(window_sizes[window.index(d)], dtype=np.int64).reshape(
                [-1 if i == axis else 1 for i in range(len(full))]))
            term = ramp if term is None else ctx.emit("add", term, ramp)
        if term is None:
            term = ctx.scalar(0, "int64")
        components.append(ctx.emit("broadcast_to", term, shape=full)
                          if list(ctx.shape(term)) != full else term)
    return ctx.emit("stack", ctx.make_tuple(components), axis=0)


def _check_scatter(op):
    count = (len(op.operands) - 1) // 2
    if count != 1:
        return f"{count} operands"
    region = op.regions[0]
    if bodies.is_update_body(region):
        return None
    kinds = bodies.pairwise_kinds(region, 1)
    if kinds is None or kinds[0] != "add":
        return "a body other than overwrite or add"
    return None


@converter("stablehlo.scatter", maps_to="scatter_nd (+ transpose, reshape)",
           note="overwrite and add bodies, any dimension numbers (windows need static "
                "shapes); out-of-bounds updates skipped",
           check=_check_scatter)
def _scatter(ctx, op, inputs, attrs):
    operand, indices, updates = inputs
    numbers = dim_numbers(attrs["scatter_dimension_numbers"], "ScatterDimensionNumbers")
    mode = "update" if bodies.is_update_body(op.regions[0]) else "add"
    shape = ctx.shape(operand)
    rank = len(shape)
    window_dims = list(numbers.update_window_dims)
    inserted = list(numbers.inserted_window_dims)
    batching = list(numbers.input_batching_dims)
    index_map = list(numbers.scattered_dims_to_operand_dims)
    vector_dim = int(numbers.index_vector_dim)
    window = [d for d in range(rank) if d not in inserted and d not in batching]
    ushape = ctx.shape(updates)
    sizes = [1] * rank
    for d, u in zip(window, window_dims):
        sizes[d] = ushape[u]
    scatter_dims = [a for a in range(len(ushape)) if a not in window_dims]
    upd = transpose(ctx, updates, scatter_dims + window_dims)
    upd = ctx.cast(upd, ctx.dtype(operand))
    points = all(sizes[d] == 1 for d in index_map) and \
        all(sizes[d] == shape[d] for d in range(rank) if d not in index_map and
            d not in batching)
    static = ctx.static_shape(operand)
    if not points:
        # windows: one full index per update element
        if static is None or ctx.static_shape(updates) is None:
            raise StableHLOOpNotImplemented("a windowed scatter of dynamic shapes", [])
        vectors = ctx.cast(_index_vectors(ctx, indices, vector_dim), "int64")
        stacked = _full_indices(ctx, static, vectors, index_map, batching,
                                list(numbers.scatter_indices_batching_dims), vector_dim,
                                window, [int(sizes[d]) for d in window])
        valid = _in_bounds(ctx, vectors, [static[d] - int(sizes[d]) for d in index_map])
        valid = reshape(ctx, valid, [1] + list(ctx.shape(valid)) + [1] * len(window))
        trash = ctx.const(np.array(static, np.int64).reshape([-1] + [1] * (
            ctx.ndim(stacked) - 1)))
        stacked = ctx.emit("where", valid, stacked, trash)
        return _scatter_dropping(ctx, operand, list(range(rank)), stacked, upd, mode)
    vectors, dims = _point_indices(ctx, operand, indices, index_map, batching,
                                   list(numbers.scatter_indices_batching_dims), vector_dim,
                                   sizes, clamp=static is None)
    rest = [d for d in range(rank) if d not in dims]
    batch_shape = list(ctx.shape(vectors)[:-1])
    upd = reshape(ctx, upd, batch_shape + [shape[d] for d in rest])
    data = transpose(ctx, operand, dims + rest)
    vrank = ctx.ndim(vectors)
    if static is not None:
        # StableHLO skips out-of-bounds updates: they go to a slot past the end, cut off
        valid = ctx.emit("expand_dims", _in_bounds(ctx, vectors, [static[d] - 1 for d in dims]),
                         axis=vrank - 1)
        vectors = ctx.emit("where", valid, vectors,
                           ctx.const(np.array([static[d] for d in dims], np.int64)))
    moved = transpose(ctx, vectors, [vrank - 1] + list(range(vrank - 1)))
    if static is not None:
        out = _scatter_dropping(ctx, data, list(range(len(dims))), moved, upd, mode)
    else:
        out = ctx.emit("scatter_nd", data, moved, upd, mode=mode)
    order = dims + rest
    return transpose(ctx, out, [order.index(a) for a in range(rank)])


def _in_bounds(ctx, vectors, highs):
    """Whether every component ``k`` of the index vectors lies in ``[0, highs[k]]``."""
    low_ok = ctx.emit("greater_equal", vectors, ctx.scalar(0, "int64"))
    high_ok = ctx.emit("less_equal", vectors, ctx.const(np.array(highs, np.int64)))
    return ctx.emit("all", ctx.emit("logical_and", low_ok, high_ok),
                    axis=[ctx.ndim(vectors) - 1], keepdims=False)


def _scatter_dropping(ctx, data, axes, indices, updates, mode):
    """``scatter_nd`` into ``data`` grown by one slot along ``axes`` (where dropped updates
    land), the slot cut off afterwards."""
    shape = list(ctx.static_shape(data))
    high = [1 if a in axes else 0 for a in range(len(shape))]
    grown = pad(ctx, data, ctx.scalar(0, ctx.dtype(data)), [0] * len(shape), high)
    out = ctx.emit("scatter_nd", grown, indices, updates, mode=mode)
    return slice_axes(ctx, out, [0] * len(shape), shape)


# -- sorting -------------------------------------------------------------------------------
#: the longest axis a generic comparator sorts (it compares every pair).
MAX_PAIRWISE_SORT = 2048


def _one_key(op):
    """``(direction, lhs_arg, rhs_arg)`` when the comparator orders by one operand with one
    LT/GT comparison, else None."""
    found = bodies.comparison(op.regions[0])
    if found is None:
        return None
    direction, lhs, rhs = found
    if direction not in ("LT", "GT") or lhs // 2 != rhs // 2 or lhs == rhs:
        return None
    return found


def _check_sort(op):
    if _one_key(op) is not None:
        return None
    if not bodies.elementwise_body(op.regions[0]):
        return "a comparator that is not elementwise"
    shape, _ = tensor_info(op.operands[0].type)
    axis = int_value(attributes(op).get("dimension"), -1) % max(len(shape), 1)
    if shape and (shape[axis] is None or shape[axis] > MAX_PAIRWISE_SORT):
        return f"a generic comparator over more than {MAX_PAIRWISE_SORT} elements"
    return None


@converter("stablehlo.sort", maps_to="sort / argsort + gather",
           note="comparators ordering by one operand (LT or GT), any number of operands; "
                "other elementwise comparators (lexsort) by pairwise ranks",
           check=_check_sort)
def _sort(ctx, op, inputs, attrs):
    axis = int_value(attrs.get("dimension"), -1)
    if axis < 0:
        axis += ctx.ndim(inputs[0])
    found = _one_key(op)
    if found is None:
        return _sort_pairwise(ctx, op.regions[0], inputs, axis)
    direction, lhs, rhs = found
    key = lhs // 2
    ascending = (direction == "LT") == (lhs < rhs)
    if len(inputs) == 1 and ascending:
        return ctx.emit("sort", inputs[0], axis=axis, is_ascend=True)
    order = ctx.emit("argsort", inputs[key], axis=axis, is_ascend=ascending, dtype="int64")
    return [ctx.emit("gather", x, order, axis=axis) for x in inputs]


def _sort_pairwise(ctx, region, inputs, axis):
    """A stable sort with any elementwise comparator: element ``i`` goes to position
    ``#{j: less(j, i)} + #{j < i: neither less(j, i) nor less(i, j)}``, from the comparator
    applied to every pair (an ``n x n`` comparison per sorted row)."""
    rank = ctx.ndim(inputs[0])
    order = [a for a in range(rank) if a != axis] + [axis]
    moved = [transpose(ctx, x, order) for x in inputs]
    n = ctx.shape(moved[0])[-1]
    column = [ctx.emit("expand_dims", x, axis=rank) for x in moved]      # (..., n, 1): j
    row = [ctx.emit("expand_dims", x, axis=rank - 1) for x in moved]     # (..., 1, n): i
    from .generic import apply_body
    less_ji = apply_body(ctx, region, [v for pair in zip(column, row) for v in pair])[0]
    less_ij = apply_body(ctx, region, [v for pair in zip(row, column) for v in pair])[0]
    earlier = ctx.const(np.arange(n)[:, None] < np.arange(n)[None, :])  # j < i
    tied = ctx.emit("logical_not", ctx.emit("logical_or", less_ji, less_ij))
    before = ctx.emit("logical_or", less_ji, ctx.emit("logical_and", tied, earlier))
    position = ctx.emit("sum", ctx.cast(before, "int64"), axis=[rank - 1], keepdims=False)
    permutation = ctx.emit("argsort", position, axis=-1, is_ascend=True, dtype="int64")
    back = [order.index(a) for a in range(rank)]
    return [transpose(ctx, ctx.emit("gather", x, permutation, axis=rank - 1), back)
            for x in moved]


@converter("chlo.top_k", maps_to="topk", note="values and int32 indices along the last axis")
def _top_k(ctx, op, inputs, attrs):
    k = int_value(attrs["k"])
    _, index_dtype = tensor_info(op.results[1].type)
    result = ctx.emit("topk", inputs[0], k=k, axis=-1, ret_type="both", is_ascend=False,
                      dtype=index_dtype)
    return [ctx.tuple_get(result, 0), ctx.tuple_get(result, 1)]
