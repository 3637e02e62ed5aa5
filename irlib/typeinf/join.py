"""The join of two tensor types: the type of a value that has one type or the other.

The two branches of an ``if`` must agree on a type. Relay requires them to be equal (up to
``Any``, which unification merges). irlib also accepts branches whose tensors have the same
dtype and rank but different dims, static or symbolic: the ``if`` gets the *join*, with
``Any`` where the branches differ::

    if (%c) { %a /* Tensor[(1, 4, 8), float32] */ } else { %b /* Tensor[(1, 4, n), float32] */ }
    -> Tensor[(1, 4, ?), float32]

This is what dynamic-shape Relay writes by hand (``Any`` dims) for an ONNX ``If`` whose
branches produce different lengths (silero-vad's 16 kHz and 8 kHz networks take 512- and
256-sample chunks). Ranks, dtypes and tuple structure must still agree.
"""

from __future__ import annotations

from ..ir.dims import Any
from ..ir.types import TensorType, TupleType, Type


def join_types(left: Type, right: Type) -> Type | None:
    """The join of two hole-free types built from tensors and tuples.

    Args:
        left: a type.
        right: another type.

    Returns:
        ``left`` when the two are equal; else the type with every differing dim ``Any``,
        when both are tensors of one dtype and rank, or tuples of the same length whose fields
        join; else None (other types, holes, or mismatched dtype/rank/structure).
    """
    if left == right:
        return left
    # Explicit stack: ("pair", l, r) joins a pair; ("tuple", n) packs the last n results.
    results: list = []
    stack: list = [("pair", left, right)]
    while stack:
        task = stack.pop()
        if task[0] == "tuple":
            count = task[1]
            fields = results[len(results) - count:]
            del results[len(results) - count:]
            results.append(TupleType(fields))
            continue
        _, a, b = task
        if isinstance(a, TensorType) and isinstance(b, TensorType):
            if a.dtype != b.dtype or a.ndim != b.ndim:
                return None
            results.append(a if a == b else TensorType(
                [x if x == y else Any for x, y in zip(a.shape, b.shape)], a.dtype))
        elif isinstance(a, TupleType) and isinstance(b, TupleType):
            if len(a.fields) != len(b.fields):
                return None
            stack.append(("tuple", len(a.fields)))
            # Pushed in reverse so the fields' results come out in order.
            stack.extend(("pair", x, y) for x, y in reversed(list(zip(a.fields, b.fields))))
        else:
            return None
    return results[-1]
