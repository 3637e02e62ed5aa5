"""``onnx.unique(data, axis=None, sorted=True)`` -> ``(values, indices, inverse, counts)``:
ONNX Unique (int64 indices; values in ascending order or in order of first occurrence), with
a numpy reference. Its result shapes depend on the data (``?``).
"""

from __future__ import annotations

import numpy as np

from ...ir.dims import Any
from ...ir.types import TensorType, TupleType
from ..registry import register_opaque
from ..type_relations import expect_tensor

__all__ = []


# -- Unique -----------------------------------------------------------------------------------

def _unique_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "onnx.unique: data")
    axis = attrs["axis"]
    if axis is None:
        values = TensorType((Any,), data.dtype)
    else:
        shape = list(data.shape)
        shape[axis % data.ndim] = Any
        values = TensorType(shape, data.dtype)
    vector = TensorType((Any,), "int64")
    inverse = TensorType((Any,), "int64")
    return TupleType([values, vector, inverse, vector])


def _unique_ref(data, axis=None, sorted=True):  # noqa: A002 - ONNX's attribute name
    flat = data.reshape(-1) if axis is None else data
    values, first, inverse, counts = np.unique(flat, return_index=True, return_inverse=True,
                                               return_counts=True, axis=axis)
    inverse = inverse.reshape(-1)
    if not sorted:
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        values = np.take(values, order, axis=0 if axis is None else axis)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    return (values, first.astype("int64"), inverse.astype("int64"), counts.astype("int64"))


register_opaque("onnx.unique", ("data",), ("onnx.attrs.UniqueAttrs", [("axis", None),
                                                               ("sorted", True)]),
                _unique_rel, _unique_ref, "ONNX Unique: unique values (or slices along axis) with "
                "first indices, inverse indices and counts", tuple_output=True)
