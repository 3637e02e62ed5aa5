"""ONNX sequences and optionals on the Prelude's ``List`` and ``Option`` ADTs.

A sequence of tensors is a ``List[Tensor[(?, ...), dtype]]`` (elements may differ in shape,
so their dims are ``?``; a tensor going into a sequence is re-typed that way with a
``dyn.reshape`` to its own shape). SequenceAt/Insert/Erase/Length use the Prelude's ``nth``,
``length``, ``concat`` and two small polymorphic helpers this module adds to the output
module; ConcatFromSequence is a ``foldl`` of ``concatenate``; SequenceMap is ``map`` over the
(zipped) sequences with the body graph as a closure. An optional is ``Option[T]``.

SequenceEmpty declares only a dtype: it is ``Nil`` whose element type stays a hole until the
first SequenceInsert, or the Loop carrying it, tells its rank. SplitToSequence with a
run-time scalar chunk size unfolds the list (Prelude ``unfoldr``) at run time.
"""

from __future__ import annotations

import numpy as np

from ....ir import expr as E
from ....ir.dims import Any
from ....ir.types import FuncType, IncompleteType, TensorType, TupleType, TypeCall
from ..registry import converter
from .common import constant_ints, normalize_axis, unsupported

_HELPERS = """#[version = "0.0.5"]
def @onnx_seq_insert[A](%xs: List[A], %n: Tensor[(), int32], %v: A) -> List[A] {
  if (%n == 0) {
    Cons(%v, %xs)
  } else {
    Cons(@hd(%xs), @onnx_seq_insert(@tl(%xs), %n - 1, %v))
  }
}

def @onnx_seq_erase[A](%xs: List[A], %n: Tensor[(), int32]) -> List[A] {
  if (%n == 0) {
    @tl(%xs)
  } else {
    Cons(@hd(%xs), @onnx_seq_erase(@tl(%xs), %n - 1))
  }
}
"""


def _prelude(ctx):
    importer = ctx.importer
    prelude = importer.prelude
    if not getattr(importer, "_sequence_helpers", False):
        from ....text.parser import parse
        importer.module.update(parse(_HELPERS, source_name="onnx_sequence_helpers",
                                     init_module=importer.module))
        importer._sequence_helpers = True
    return prelude


def _list_type(ctx, element):
    return TypeCall(_prelude(ctx).mod.get_global_type_var("List"), [element])


def _element_type(ctx, seq):
    element = ctx.type_of(seq).args[0]
    if isinstance(element, IncompleteType):
        unsupported("the element rank of a sequence is unknown here (an untyped sequence "
                    "input, or a SequenceEmpty nothing was inserted into yet)")
    return element


def loosen(ctx, value):
    """``value`` re-typed with ``?`` dims (same data) so that sequences may mix shapes."""
    ty = ctx.type_of(value)
    if all(d is Any for d in ty.shape):
        return value
    shape = ctx.emit("shape_of", value, dtype="int64")
    return ctx.emit("dyn.reshape", value, shape)


def _call(ctx, name, args, ty):
    gvar = _prelude(ctx).mod.get_global_var(name)
    return ctx.set_type(E.Call(gvar, tuple(args)), ty)


def _cons_chain(ctx, items, element):
    prelude = _prelude(ctx)
    list_ty = _list_type(ctx, element)
    result = ctx.set_type(E.Call(prelude.nil, ()), list_ty)
    for item in reversed(items):
        result = ctx.set_type(E.Call(prelude.cons, (item, result)), list_ty)
    return result


def _index32(ctx, seq, position, default_last=False):
    """``position`` (possibly negative) as a non-negative int32 scalar index into ``seq``."""
    length = _call(ctx, "length", [seq], TensorType((), "int32"))
    if position is None:
        return ctx.emit("subtract", length, ctx.const(np.int32(1))) if default_last else length
    index = ctx.emit("cast", ctx.emit("reshape", position, newshape=[]), dtype="int32")
    negative = ctx.emit("less", index, ctx.const(np.int32(0)))
    return ctx.emit("where", negative, ctx.emit("add", index, length), index)


@converter("SequenceConstruct", since=11)
def _sequence_construct(ctx, inputs, attrs):
    items = [loosen(ctx, value) for value in inputs]
    return _cons_chain(ctx, items, ctx.type_of(items[0]))


@converter("SequenceEmpty", since=11)
def _sequence_empty(ctx, inputs, attrs):
    # ONNX declares only the dtype; the element rank comes from the first tensor inserted
    # (SequenceInsert) or from what a Loop body makes of it (refine_empty_sequences)
    return ctx.set_type(E.Call(_prelude(ctx).nil, ()), _list_type(ctx, IncompleteType()))


def _unknown_element(ctx, seq) -> bool:
    ty = ctx.type_of(seq)
    return isinstance(ty, TypeCall) and isinstance(ty.args[0], IncompleteType)


def refine_empty_sequences(ctx, initial, produced) -> bool:
    """Give each SequenceEmpty in ``initial`` (a loop's initial carried values) the list type
    that the loop body made of it (``produced``, the body's new values).

    Returns:
        Whether any type changed (the body must then be converted again).
    """
    changed = False
    for value, new in zip(initial, produced):
        new_type = ctx.type_of(new)
        if _unknown_element(ctx, value) and isinstance(new_type, TypeCall) and \
                not isinstance(new_type.args[0], IncompleteType):
            ctx.set_type(value, new_type)
            changed = True
    return changed


@converter("SequenceInsert", since=11)
def _sequence_insert(ctx, inputs, attrs):
    seq, value = inputs[0], loosen(ctx, inputs[1])
    position = inputs[2] if len(inputs) > 2 else None
    list_ty = ctx.type_of(seq)
    if _unknown_element(ctx, seq):  # an empty sequence takes the type of its first element
        list_ty = _list_type(ctx, ctx.type_of(value))
        if isinstance(seq, E.Call) and seq.op is _prelude(ctx).nil:
            ctx.set_type(seq, list_ty)
    if position is None:
        tail = _cons_chain(ctx, [value], list_ty.args[0])
        return _call(ctx, "concat", [seq, tail], list_ty)
    return _call(ctx, "onnx_seq_insert", [seq, _index32(ctx, seq, position), value], list_ty)


@converter("SequenceAt", since=11)
def _sequence_at(ctx, inputs, attrs):
    seq = inputs[0]
    return _call(ctx, "nth", [seq, _index32(ctx, seq, inputs[1])], _element_type(ctx, seq))


@converter("SequenceErase", since=11)
def _sequence_erase(ctx, inputs, attrs):
    seq = inputs[0]
    position = inputs[1] if len(inputs) > 1 else None
    return _call(ctx, "onnx_seq_erase", [seq, _index32(ctx, seq, position, True)],
                 ctx.type_of(seq))


@converter("SequenceLength", since=11)
def _sequence_length(ctx, inputs, attrs):
    length = _call(ctx, "length", [inputs[0]], TensorType((), "int32"))
    return ctx.emit("cast", length, dtype="int64")


def _lambda(ctx, param_types, build):
    params = [E.Var(f"x{k}", ty) for k, ty in enumerate(param_types)]
    body = build(*params)
    fn = E.Function(tuple(params), body, ctx.type_of(body))
    return ctx.set_type(fn, FuncType(param_types, ctx.type_of(body)))


@converter("ConcatFromSequence", since=11)
def _concat_from_sequence(ctx, inputs, attrs):
    seq = inputs[0]
    element = _element_type(ctx, seq)
    rank = len(element.shape)
    new_axis = bool(attrs.get("new_axis", 0))
    axis = normalize_axis(attrs["axis"], rank + (1 if new_axis else 0))
    if new_axis:
        lifted = TensorType([Any] * (rank + 1), element.dtype)
        expand = _lambda(ctx, [element], lambda x: ctx.emit("expand_dims", x, axis=axis))
        seq = _call(ctx, "map", [expand, seq], _list_type(ctx, lifted))
        element = lifted

    def join(acc, x):
        return loosen(ctx, ctx.emit("concatenate", ctx.make_tuple([acc, x]), axis=axis))
    combine = _lambda(ctx, [element, element], join)
    first = _call(ctx, "hd", [seq], element)
    rest = _call(ctx, "tl", [seq], ctx.type_of(seq))
    return _call(ctx, "foldl", [combine, first, rest], element)


@converter("SplitToSequence", since=11)
def _split_to_sequence(ctx, inputs, attrs):
    data = inputs[0]
    shape = ctx.static_shape(data)
    if shape is None:
        unsupported("SplitToSequence needs a static input shape")
    axis = normalize_axis(attrs.get("axis", 0), len(shape))
    split = constant_ints(ctx, inputs[1]) if len(inputs) > 1 and inputs[1] is not None else None
    keepdims = bool(attrs.get("keepdims", 1))
    if len(inputs) > 1 and inputs[1] is not None and split is None:
        return _split_at_run_time(ctx, data, inputs[1], axis, shape[axis])
    if split is None:
        sizes = [1] * shape[axis]
    elif ctx.ndim(inputs[1]) == 0:
        chunk = split[0]
        sizes = [chunk] * (shape[axis] // chunk) + ([shape[axis] % chunk]
                                                     if shape[axis] % chunk else [])
    else:
        sizes = split
    pieces, start = [], 0
    for size in sizes:
        piece = ctx.emit("strided_slice", data, begin=[start], end=[start + size], strides=[1],
                         axes=[axis])
        if split is None and not keepdims:
            piece = ctx.emit("squeeze", piece, axis=[axis])
        pieces.append(loosen(ctx, piece))
        start += size
    return _cons_chain(ctx, pieces, ctx.type_of(pieces[0]))


def _split_at_run_time(ctx, data, split, axis, extent):
    """SplitToSequence by split sizes known only at run time: a 1-D ``split`` of static
    length gives that many pieces (``dyn.split``); a scalar chunk size gives
    ``ceil(extent / chunk)`` pieces, built by the Prelude's ``unfoldr`` from offset 0 (a
    chunk size below 1, which ONNX forbids, gives an empty list rather than no end)."""
    split = ctx.emit("cast", split, dtype="int64")
    if ctx.ndim(split) == 1:
        count = ctx.shape(split)[0]
        if not isinstance(count, (int, np.integer)):
            unsupported("SplitToSequence: a run-time split list needs a static length")
        tup = ctx.emit("dyn.split", data, split, axis=axis)
        pieces = [loosen(ctx, ctx.tuple_get(tup, i)) for i in range(int(count))]
        return _cons_chain(ctx, pieces, ctx.type_of(pieces[0]))
    chunk = ctx.emit("reshape", split, newshape=[])
    end_of_axis = ctx.const(np.int64(extent))
    offset_type = TensorType((), "int64")
    piece_type = TensorType([Any] * ctx.ndim(data), ctx.dtype(data))
    step_type = TupleType([offset_type, piece_type])
    option = _option_type(ctx, step_type)
    prelude = _prelude(ctx)

    def step(start):
        stop = ctx.emit("minimum", ctx.emit("add", start, chunk), end_of_axis)
        vector = lambda v: ctx.emit("reshape", v, newshape=[1])  # noqa: E731
        piece = ctx.emit("dyn.strided_slice", data, vector(start), vector(stop),
                         ctx.const(np.ones(1, "int64")), ctx.const(np.array([axis], "int64")))
        more = ctx.set_type(E.Call(prelude.some, (ctx.make_tuple([stop, piece]),)), option)
        done = ctx.set_type(E.Call(prelude.none, ()), option)
        go_on = ctx.emit("logical_and", ctx.emit("less", start, end_of_axis),
                         ctx.emit("less", ctx.const(np.int64(0)), chunk))
        return ctx.set_type(E.If(go_on, more, done), option)
    fn = _lambda(ctx, [offset_type], step)
    return _call(ctx, "unfoldr", [fn, ctx.const(np.int64(0))], _list_type(ctx, piece_type))


@converter("SequenceMap", since=17)
def _sequence_map(ctx, inputs, attrs):
    from .control import convert_subgraph_with
    graph = attrs["body"]
    seqs = [v for v in inputs if isinstance(ctx.type_of(v), TypeCall)]
    extras = inputs[len(seqs):]
    elements = [_element_type(ctx, s) for s in seqs]
    if len(seqs) == 1:
        zipped, item_type = seqs[0], elements[0]
    else:
        zipped = seqs[0]
        item_type = elements[0]
        for seq, element in zip(seqs[1:], elements[1:]):
            item_type = TupleType([item_type, element])
            zipped = _call(ctx, "zip", [zipped, seq], _list_type(ctx, item_type))

    def unpack(item):
        values = []
        for _ in range(len(seqs) - 1):
            values.insert(0, ctx.tuple_get(item, 1))
            item = ctx.tuple_get(item, 0)
        return [item] + values

    def body(item):
        outputs = convert_subgraph_with(ctx, graph, unpack(item) + list(extras))
        outputs = [loosen(ctx, out) for out in outputs]
        return outputs[0] if len(outputs) == 1 else ctx.make_tuple(outputs)
    fn = _lambda(ctx, [item_type], body)
    out_type = fn.ret_type
    mapped = _call(ctx, "map", [fn, zipped], _list_type(ctx, out_type))
    if not isinstance(out_type, TupleType):
        return mapped
    results = []
    for k, field in enumerate(out_type.fields):
        pick = _lambda(ctx, [out_type], lambda t, k=k: ctx.tuple_get(t, k))
        results.append(_call(ctx, "map", [pick, mapped], _list_type(ctx, field)))
    return results


# -- optionals ----------------------------------------------------------------------------------

def _option_type(ctx, element):
    return TypeCall(_prelude(ctx).mod.get_global_type_var("Option"), [element])


@converter("Optional", since=15)
def _optional(ctx, inputs, attrs):
    prelude = _prelude(ctx)
    if inputs and inputs[0] is not None:
        value = inputs[0]
        return ctx.set_type(E.Call(prelude.some, (value,)),
                            _option_type(ctx, ctx.type_of(value)))
    element = ctx.importer.value_type(attrs["type"], "optional")
    return ctx.set_type(E.Call(prelude.none, ()), _option_type(ctx, element))


def _is_option(ctx, value):
    ty = ctx.type_of(value)
    return isinstance(ty, TypeCall) and ty.func.name_hint == "Option"


@converter("OptionalHasElement", since=15)
def _optional_has_element(ctx, inputs, attrs):
    value = inputs[0] if inputs else None
    if value is None:
        return ctx.const(np.bool_(False))
    if not _is_option(ctx, value):
        return ctx.const(np.bool_(True))
    prelude = _prelude(ctx)
    clauses = (E.Clause(E.PatternConstructor(prelude.some, (E.PatternWildcard(),)),
                        ctx.const(np.bool_(True))),
               E.Clause(E.PatternWildcard(), ctx.const(np.bool_(False))))
    return ctx.set_type(E.Match(value, clauses), TensorType((), "bool"))


@converter("OptionalGetElement", since=15)
def _optional_get_element(ctx, inputs, attrs):
    value = inputs[0]
    if not _is_option(ctx, value):
        return value
    prelude = _prelude(ctx)
    element = ctx.type_of(value).args[0]
    bound = E.Var("element", element)
    clauses = (E.Clause(E.PatternConstructor(prelude.some, (E.PatternVar(bound),)), bound),)
    return ctx.set_type(E.Match(value, clauses, complete=False), element)

