"""``onnx.bitcast(data, dtype)``: reinterpret the bits of each element as another dtype (the
last axis grows or shrinks when the element sizes differ), with a numpy reference. The
StableHLO importer maps ``bitcast_convert`` onto it too.
"""

from __future__ import annotations

import numpy as np

from ...errors import TypeInferenceError
from ...ir.types import TensorType, normalize_dtype
from ..registry import register_opaque
from ..type_relations import expect_tensor

__all__ = []


# -- BitCast ------------------------------------------------------------------------------------

def _bitcast_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "onnx.bitcast: data")
    dtype = normalize_dtype(attrs["dtype"])
    source, target = np.dtype(data.dtype).itemsize, np.dtype(dtype).itemsize
    if source == target:
        return TensorType(data.shape, dtype)
    if source > target:
        return TensorType(tuple(data.shape) + (source // target,), dtype)
    if not data.ndim or data.shape[-1] != target // source:
        raise TypeInferenceError(f"onnx.bitcast: the last dim of {data} must be "
                                 f"{target // source} to cast to {dtype}")
    return TensorType(tuple(data.shape[:-1]), dtype)


def _bitcast_ref(data, dtype):
    target = np.dtype(normalize_dtype(dtype))
    source = data.dtype.itemsize
    contiguous = np.array(data, copy=True, order="C")  # keeps 0-d arrays 0-d
    if source > target.itemsize:
        return (contiguous.view(target).reshape(data.shape + (source // target.itemsize,)),)
    if source < target.itemsize:
        return (contiguous.view(target).reshape(data.shape[:-1]),)
    return (contiguous.view(target),)


register_opaque("onnx.bitcast", ("data",), ("onnx.attrs.BitCastAttrs", [("dtype", "")]),
                _bitcast_rel, _bitcast_ref, "reinterpret the bits of each element as another dtype")
