"""Reading the small computations (``reduce``/``reduce_window``/``scatter`` bodies, ``sort``
comparators) that StableHLO passes as regions: which binary op each result applies, and which
block arguments a comparison orders.
"""

from __future__ import annotations

from ..mlir import attributes, cast, enum_value, tensor_info

#: body op -> the reduction kind it stands for.
KINDS = {"stablehlo.add": "add", "stablehlo.multiply": "mul", "stablehlo.maximum": "max",
         "stablehlo.minimum": "min", "stablehlo.and": "and", "stablehlo.or": "or"}


def _block(region):
    blocks = list(region.blocks)
    return blocks[0] if len(blocks) == 1 else None


def _returned(block):
    ops = [o.operation for o in block.operations]
    if not ops or ops[-1].name not in ("stablehlo.return", "func.return"):
        return None, ops
    return list(ops[-1].operands), ops


def _body(region):
    """``(returned values, operations, block arguments)`` of a one-block region ending in a
    return, or None for any other region."""
    block = _block(region)
    if block is None:
        return None
    results, ops = _returned(block)
    if results is None:
        return None
    return results, ops, list(block.arguments)


def _producer(value):
    result = cast(value, "OpResult")
    if result is None:
        return None  # a block argument
    return result.owner.operation


def pairwise_kinds(region, count: int):
    """For a reducer of ``count`` operands (block arguments ``acc_0..acc_{n-1}, x_0..x_{n-1}``):
    the kind (``"add"``, ``"max"``, ...) each result applies to its own pair, or None when
    the body does something else.

    Args:
        region: the reducer's region.
        count: the number of operands.
    """
    body = _body(region)
    if body is None:
        return None
    results, _, args = body
    if len(results) != count or len(args) != 2 * count:
        return None
    kinds = []
    for index, value in enumerate(results):
        producer = _producer(value)
        if producer is None or producer.name not in KINDS:
            return None
        operands = list(producer.operands)
        if {_arg_index(args, v) for v in operands} != {index, index + count}:
            return None
        kinds.append(KINDS[producer.name])
    return kinds


def is_update_body(region) -> bool:
    """Whether the scatter body ``region`` returns its second argument (a plain overwrite)."""
    body = _body(region)
    if body is None:
        return False
    results, _, args = body
    return len(results) == 1 and len(args) == 2 and results[0] == args[1]


def _arg_index(args, value):
    for index, arg in enumerate(args):
        if arg == value:
            return index
    return None


def _sources(args, value) -> set:
    """The block-argument indices ``value`` depends on (walking producers, no recursion)."""
    found, stack, seen = set(), [value], 0
    while stack and seen < 10_000:
        seen += 1
        current = stack.pop()
        index = _arg_index(args, current)
        if index is not None:
            found.add(index)
            continue
        producer = _producer(current)
        if producer is not None:
            stack.extend(producer.operands)
    return found


def comparison(region):
    """For a comparator (a ``sort`` body or JAX's argmax/argmin reducer): ``(direction,
    lhs_arg, rhs_arg)`` of the comparison that decides the result: the returned compare for a
    sort body, where the compared values come from one block argument each; None otherwise.

    Args:
        region: the comparator's region.
    """
    body = _body(region)
    if body is None or len(body[0]) != 1:
        return None
    results, _, args = body
    producer = _producer(results[0])
    if producer is None or producer.name != "stablehlo.compare":
        return None
    direction = enum_value(attributes(producer)["comparison_direction"],
                           "ComparisonDirectionAttr")
    lhs, rhs = (_sources(args, v) for v in producer.operands)
    if len(lhs) != 1 or len(rhs) != 1:
        return None
    return direction, lhs.pop(), rhs.pop()


def arg_reducer(region):
    """For ``region``, JAX's argmax/argmin reducer over ``(values, indices)`` (block arguments
    ``v_acc, i_acc, v_x, i_x``): ``"max"`` or ``"min"``, from the compare of the two values
    that picks the value result; None for other bodies."""
    body = _body(region)
    if body is None:
        return None
    results, ops, args = body
    if len(results) != 2 or len(args) != 4:
        return None
    select = _producer(results[0])
    if select is None or select.name != "stablehlo.select":
        return None
    chosen = [_arg_index(args, v) for v in list(select.operands)[1:]]
    if chosen != [0, 2] or _arg_index(args, results[1]) is not None:
        return None
    for op in ops:
        if op.name != "stablehlo.compare":
            continue
        direction = enum_value(attributes(op)["comparison_direction"], "ComparisonDirectionAttr")
        operands = [_arg_index(args, v) for v in op.operands]
        if operands == [0, 2] and direction in ("GT", "LT"):
            return "max" if direction == "GT" else "min"
    return None


def elementwise_body(region) -> bool:
    """Whether every operation of ``region``'s block is an elementwise operation on 0-d
    tensors (so the body can be applied to whole tensors, see
    :mod:`irlib.frontend.stablehlo.ops.generic`)."""
    from ..registry import entries
    block = _block(region)
    if block is None:
        return False
    allowed = {entry.name for entry in entries()
               if entry.function.__module__.endswith(".elementwise")}
    allowed |= {"stablehlo.shift_right_logical", "chlo.is_inf", "chlo.is_pos_inf",
                "chlo.is_neg_inf"}
    for operation in block.operations:
        op = operation.operation
        if op.name in ("stablehlo.return", "func.return"):
            continue
        if op.name not in allowed:
            return False
        for result in op.results:
            if tensor_info(result.type)[0] != ():
                return False
    return True
