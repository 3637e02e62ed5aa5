"""Control flow and structure: ``while``, ``case``, ``if``, ``func.call``, ``composite``,
``custom_call`` of known targets, tuples and ``optimization_barrier``.

``while`` becomes a let-bound recursive function over the loop-carried values::

    let %while = fn (%s0, %s1, ...) {
      if (<cond region>(%s...)) { %while(<body region>(%s...)...) } else { (%s0, %s1, ...) }
    };
    %while(<initial values>...)

The loop keeps the carried values' types when the body preserves them (JAX's loops do);
dims that change become ``?``. ``case`` becomes a chain of ``If`` on the index (an index out
of range takes the last branch, as StableHLO says); ``if`` one ``If``. A call of a private
function (and a ``composite``'s decomposition) is inlined.
"""

from __future__ import annotations

from ....ir import expr as E
from ....ir.dims import Any
from ....ir.types import FuncType, TensorType, TupleType
from ..errors import StableHLOOpNotImplemented
from ..mlir import attributes, str_value
from ..registry import converter

#: custom_call targets that pass their operands through (sharding annotations).
IDENTITY_TARGETS = frozenset({"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape",
                              "annotate_device_placement", "mhlo.sharding"})
#: custom_call targets with no results that checks run-time facts only (dropped).
DROPPED_TARGETS = frozenset({"shape_assertion"})
#: custom_call targets that are StableHLO operations with dynamic parameters.
DYNAMIC_TARGETS = frozenset({"stablehlo.dynamic_reduce_window"})


def _loose(ty):
    if isinstance(ty, TensorType):
        return TensorType([Any] * len(ty.shape), ty.dtype)
    return ty


def _scalar_bool(ctx, value):
    if ctx.ndim(value) > 0:
        value = ctx.emit("reshape", value, newshape=[])
    return ctx.cast(value, "bool")


@converter("stablehlo.while", maps_to="let-bound recursive function + If",
           note="any number of carried values; the cond and body regions see outer values")
def _while(ctx, op, inputs, attrs):
    cond_region, body_region = op.regions[0], op.regions[1]
    loose = False
    for _attempt in range(2):
        types = [_loose(ctx.type_of(v)) if loose else ctx.type_of(v) for v in inputs]
        params = [E.Var(f"w{k}", ty) for k, ty in enumerate(types)]
        cond = _scalar_bool(ctx, ctx.convert_region(cond_region, params)[0])
        new = ctx.convert_region(body_region, params)
        if all(ctx.type_of(n) == t for n, t in zip(new, types)):
            break
        if loose:
            raise StableHLOOpNotImplemented("a while body that changes the rank or dtype of "
                                            "a carried value", [])
        loose = True
    ret_type = TupleType(types)
    fn_var = E.Var("while_loop", FuncType(types, ret_type))
    again = ctx.set_type(E.Call(fn_var, tuple(new)), ret_type)
    done = ctx.make_tuple(params)
    body = ctx.set_type(E.If(cond, again, done), ret_type)
    function = E.Function(tuple(params), body, ret_type)
    start = ctx.set_type(E.Call(fn_var, tuple(inputs)), ret_type)
    result = ctx.set_type(E.Let(fn_var, function, start), ret_type)
    return [ctx.tuple_get(result, k) for k in range(len(types))]


def _branch(ctx, region):
    outs = ctx.convert_region(region, [])
    return outs[0] if len(outs) == 1 else ctx.make_tuple(outs)


def _unpack(ctx, node, count):
    if count == 1:
        return [node]
    return [ctx.tuple_get(node, k) for k in range(count)]


def _select_branch(ctx, cond, then_value, else_value):
    then_type, else_type = ctx.type_of(then_value), ctx.type_of(else_value)
    ty = then_type
    if then_type != else_type:
        from ....typeinf.join import join_types
        ty = join_types(then_type, else_type)
        if ty is None:
            raise StableHLOOpNotImplemented(
                f"branches of types {then_type} and {else_type}", [])
    return ctx.set_type(E.If(cond, then_value, else_value), ty)


@converter("stablehlo.case", maps_to="If chain",
           note="an out-of-range index takes the last branch")
def _case(ctx, op, inputs, attrs):
    index = ctx.cast(inputs[0], "int32")
    if ctx.ndim(index):
        index = ctx.emit("reshape", index, newshape=[])
    regions = list(op.regions)
    value = ctx.const_value(index)
    if value is not None:
        chosen = int(value)
        chosen = chosen if 0 <= chosen < len(regions) else len(regions) - 1
        return _unpack(ctx, _branch(ctx, regions[chosen]), len(op.results))
    node = _branch(ctx, regions[-1])
    for position in range(len(regions) - 2, -1, -1):
        hit = ctx.emit("equal", index, ctx.scalar(position, "int32"))
        node = _select_branch(ctx, hit, _branch(ctx, regions[position]), node)
    return _unpack(ctx, node, len(op.results))


@converter("stablehlo.if", maps_to="If")
def _if(ctx, op, inputs, attrs):
    cond = _scalar_bool(ctx, inputs[0])
    value = ctx.const_value(cond)
    regions = list(op.regions)
    if value is not None:
        return _unpack(ctx, _branch(ctx, regions[0 if bool(value) else 1]), len(op.results))
    node = _select_branch(ctx, cond, _branch(ctx, regions[0]), _branch(ctx, regions[1]))
    return _unpack(ctx, node, len(op.results))


@converter("func.call", maps_to="the callee inlined", note="private functions of the module")
def _call(ctx, op, inputs, attrs):
    return ctx.call_function(str_value(attrs["callee"]), inputs)


@converter("stablehlo.composite", maps_to="its decomposition inlined")
def _composite(ctx, op, inputs, attrs):
    return ctx.call_function(str_value(attrs["decomposition"]), inputs)


def _check_custom_call(op):
    target = str_value(attributes(op).get("call_target_name"))
    if target in IDENTITY_TARGETS or target in DROPPED_TARGETS or target in DYNAMIC_TARGETS:
        return None
    return f"target @{target}"


@converter("stablehlo.custom_call", maps_to="identity / dropped / reduce_window",
           note="targets: " + ", ".join(sorted(IDENTITY_TARGETS | DROPPED_TARGETS |
                                                DYNAMIC_TARGETS)),
           check=_check_custom_call)
def _custom_call(ctx, op, inputs, attrs):
    target = str_value(attrs.get("call_target_name"))
    if target in DROPPED_TARGETS:
        return []
    if target in IDENTITY_TARGETS:
        return list(inputs)
    if target == "stablehlo.dynamic_reduce_window":
        from .reduce import dynamic_reduce_window
        return dynamic_reduce_window(ctx, op, inputs, ctx.functions)
    raise StableHLOOpNotImplemented(f"custom_call target @{target}", [])


@converter("stablehlo.tuple", maps_to="Tuple")
def _tuple(ctx, op, inputs, attrs):
    return ctx.make_tuple(inputs)


@converter("stablehlo.get_tuple_element", maps_to="TupleGetItem")
def _get_tuple_element(ctx, op, inputs, attrs):
    from ..mlir import int_value
    return ctx.tuple_get(inputs[0], int_value(attrs["index"]))


@converter("stablehlo.optimization_barrier", maps_to="identity")
def _optimization_barrier(ctx, op, inputs, attrs):
    return list(inputs)
