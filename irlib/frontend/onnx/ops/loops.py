"""``Loop`` and ``Scan`` as IR control flow: a let-bound recursive function per node.

::

    let %loop = fn (%i, %cond, %v..., %acc...) {
      if (%i < %M && %cond) {
        <body>; %loop(%i + 1, %cond_out, %v_out..., concat(%acc, [%scan_out]))
      } else { (%v..., %acc...) }
    };
    %loop(0i64, %cond0, %v0..., <empty>...)

Loop-carried values keep their static types when the body preserves them (the body is first
converted with exactly the initial types); otherwise they get ``?`` dims. Scan outputs are
accumulated by concatenation along a new leading axis (they need a static per-iteration
shape); Scan then moves that axis and reverses it as its attributes ask.
"""

from __future__ import annotations

import numpy as np

from ....ir import expr as E
from ....ir.dims import Any
from ....ir.types import FuncType, TensorType, TupleType
from .. import OpNotImplemented
from ..registry import converter
from .common import normalize_axis, unsupported
from .sequence import refine_empty_sequences


def _loose(ty):
    if isinstance(ty, TensorType):
        return TensorType([Any] * len(ty.shape), ty.dtype)
    return ty


def _scalar_bool(ctx, value):
    if ctx.ndim(value) > 0:
        value = ctx.emit("reshape", value, newshape=[])
    return value if ctx.dtype(value) == "bool" else ctx.emit("cast", value, dtype="bool")


def _convert_body(ctx, graph, bindings):
    from ..importer import GraphContext, convert_graph
    child = GraphContext(ctx.importer, parent=ctx)
    for info, value in zip(graph.input, bindings):
        child.bind(info.name, value)
    return convert_graph(child, graph)


def build_loop(ctx, state_init, make_body, trip_limit=None, name="loop"):
    """A recursive loop over ``state_init`` (tensors).

    Args:
        ctx: the graph context.
        state_init: initial loop-carried values.
        make_body: ``make_body(i, cond, states) -> (cond_out or None, new_states, scan_outs)``
            building one iteration from the counter ``i`` (int64 scalar), the condition and
            the state variables.
        trip_limit: the int64 scalar trip count, or None.
        name: a name hint for the function variable.

    Returns:
        ``(final_states, scan_outputs)`` where each scan output is stacked on a new axis 0.
    """
    counter_type = TensorType((), "int64")
    cond_type = TensorType((), "bool")
    loose = False
    for _attempt in range(3):  # exact types; SequenceEmpty states refined; loose dims
        state_types = [_loose(ctx.type_of(v)) if loose else ctx.type_of(v) for v in state_init]
        i_var = E.Var("i", counter_type)
        cond_var = E.Var("cond", cond_type)
        state_vars = [E.Var(f"v{k}", ty) for k, ty in enumerate(state_types)]
        try:
            cond_out, new_states, scan_outs = make_body(i_var, cond_var, state_vars)
        except OpNotImplemented:
            if loose:
                raise
            loose = True
            continue
        if all(ctx.type_of(new) == ty for new, ty in zip(new_states, state_types)):
            break
        if refine_empty_sequences(ctx, state_init, new_states):
            continue
        if loose:
            unsupported(f"{name}: loop-carried values change rank or dtype")
        loose = True
    scan_types = []
    for out in scan_outs:
        # NOTE: a shape only known at run time starts from a (0, 0, ...) placeholder that
        # the first iteration replaces (so a zero-trip loop yields that placeholder).
        shape = ctx.static_shape(out)
        scan_types.append((shape if shape is not None else (0,) * ctx.ndim(out),
                           ctx.dtype(out), shape is not None))
    acc_types = [TensorType((Any,) + (shape if static else (Any,) * len(shape)), dtype)
                 for shape, dtype, static in scan_types]
    acc_vars = [E.Var(f"acc{k}", ty) for k, ty in enumerate(acc_types)]
    ret_type = TupleType(list(state_types) + acc_types)
    fn_var = E.Var(name, FuncType([counter_type, cond_type] + state_types + acc_types,
                                  ret_type))
    go = cond_var
    if trip_limit is not None:
        go = ctx.emit("logical_and", ctx.emit("less", i_var, trip_limit), cond_var)
    next_cond = cond_var if cond_out is None else _scalar_bool(ctx, cond_out)
    next_accs = []
    for acc, out, (_, _, static) in zip(acc_vars, scan_outs, scan_types):
        row = ctx.emit("expand_dims", out, axis=0)
        grown = ctx.emit("concatenate", ctx.make_tuple([acc, row]), axis=0)
        if not static:
            first = ctx.emit("equal", i_var, ctx.const(np.int64(0)))
            row = ctx.emit("dyn.reshape", row, ctx.emit("shape_of", row, dtype="int64"))
            grown = ctx.set_type(E.If(first, row, grown), ctx.type_of(acc))
        next_accs.append(grown)
    step = ctx.emit("add", i_var, ctx.const(np.int64(1)))
    recurse = ctx.set_type(E.Call(fn_var, tuple([step, next_cond] + list(new_states) +
                                                 next_accs)), ret_type)
    done = ctx.make_tuple(list(state_vars) + acc_vars)
    body = ctx.set_type(E.If(go, recurse, done), ret_type)
    function = E.Function(tuple([i_var, cond_var] + state_vars + acc_vars), body, ret_type)
    return fn_var, function, ret_type, scan_types


def run_loop(ctx, fn_var, function, ret_type, scan_types, state_init, cond_init):
    """``let fn_var = function; fn_var(0, cond_init, state_init..., empty...)`` unpacked
    into ``(states, scan_stacks)``."""
    empties = [ctx.const(np.zeros((0,) + tuple(shape), dtype)) for shape, dtype, _ in scan_types]
    call = ctx.set_type(E.Call(fn_var, tuple([ctx.const(np.int64(0)), cond_init] +
                                             list(state_init) + empties)), ret_type)
    result = ctx.set_type(E.Let(fn_var, function, call), ret_type)
    fields = [ctx.tuple_get(result, k) for k in range(len(ret_type.fields))]
    count = len(state_init)
    return fields[:count], fields[count:]


@converter("Loop", since=1)
def _loop(ctx, inputs, attrs):
    graph = attrs["body"]
    limit = inputs[0] if inputs and inputs[0] is not None else None
    cond0 = inputs[1] if len(inputs) > 1 and inputs[1] is not None else None
    states0 = list(inputs[2:])
    if limit is None and cond0 is None:
        unsupported("Loop without a trip count or condition never ends")
    if limit is not None:
        limit = ctx.emit("cast", ctx.emit("reshape", limit, newshape=[]), dtype="int64")
    cond_init = ctx.const(np.bool_(True)) if cond0 is None else _scalar_bool(ctx, cond0)

    def make_body(i, cond, states):
        counter = i
        declared = graph.input[0].type.tensor_type
        if declared.shape.dim and len(declared.shape.dim) == 1:
            counter = ctx.emit("reshape", i, newshape=[1])
        outputs = _convert_body(ctx, graph, [counter, cond] + list(states))
        count = len(states)
        return outputs[0], outputs[1:1 + count], outputs[1 + count:]

    parts = build_loop(ctx, states0, make_body, limit, "loop")
    states, stacks = run_loop(ctx, *parts, states0, cond_init)
    return states + stacks


def _scan(ctx, graph, states0, scan_inputs, attrs):
    count = len(scan_inputs)
    in_axes = list(attrs.get("scan_input_axes", [0] * count))
    in_dirs = list(attrs.get("scan_input_directions", [0] * count))
    axes = [normalize_axis(a, ctx.ndim(x)) for a, x in zip(in_axes, scan_inputs)]
    length = ctx.shape(scan_inputs[0])[axes[0]]
    if not isinstance(length, (int, np.integer)):
        unsupported("Scan needs a static sequence length")
    length = int(length)
    limit = ctx.const(np.int64(length))

    def make_body(i, cond, states):
        slices = []
        for x, axis, direction in zip(scan_inputs, axes, in_dirs):
            index = i if not direction else ctx.emit(
                "subtract", ctx.const(np.int64(length - 1)), i)
            slices.append(ctx.emit("take", x, index, axis=axis, mode="clip"))
        outputs = _convert_body(ctx, graph, list(states) + slices)
        return None, outputs[:len(states)], outputs[len(states):]

    parts = build_loop(ctx, states0, make_body, limit, "scan")
    states, stacks = run_loop(ctx, *parts, states0, ctx.const(np.bool_(True)))
    out_axes = list(attrs.get("scan_output_axes", [0] * len(stacks)))
    out_dirs = list(attrs.get("scan_output_directions", [0] * len(stacks)))
    results = []
    for stack, axis, direction in zip(stacks, out_axes + [0] * len(stacks),
                                      out_dirs + [0] * len(stacks)):
        stack = ctx.emit("reshape", stack, newshape=[length] + list(ctx.shape(stack)[1:]))
        if direction:
            stack = ctx.emit("reverse", stack, axis=0)
        axis = normalize_axis(axis, ctx.ndim(stack))
        if axis:
            order = list(range(1, ctx.ndim(stack)))
            order.insert(axis, 0)
            stack = ctx.emit("transpose", stack, axes=order)
        results.append(stack)
    return states + results


@converter("Scan", since=9)
def _scan_v9(ctx, inputs, attrs):
    count = attrs["num_scan_inputs"]
    states0 = list(inputs[:len(inputs) - count])
    return _scan(ctx, attrs["body"], states0, list(inputs[len(inputs) - count:]), attrs)


@converter("Scan", since=8)
def _scan_v8(ctx, inputs, attrs):
    if inputs[0] is not None:
        unsupported("Scan-8 with sequence_lens is not supported")
    count = attrs["num_scan_inputs"]
    rest = list(inputs[1:])
    states0, scans = rest[:len(rest) - count], rest[len(rest) - count:]
    batch = ctx.shape(scans[0])[0]
    if not isinstance(batch, (int, np.integer)):
        unsupported("Scan-8 needs a static batch size")
    directions = list(attrs.get("directions", [0] * count))
    per_batch = []
    for b in range(int(batch)):
        pick = [ctx.emit("take", v, ctx.const(np.int64(b)), axis=0) for v in states0 + scans]
        per_batch.append(_scan(ctx, attrs["body"], pick[:len(states0)], pick[len(states0):],
                               {"scan_input_directions": directions}))
    return [ctx.emit("stack", ctx.make_tuple([row[k] for row in per_batch]), axis=0)
            for k in range(len(per_batch[0]))]
