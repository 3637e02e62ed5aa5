"""``onnx.cumprod(data, axis, exclusive, reverse)``: ONNX CumProd along an axis given as a
run-time tensor, with a numpy reference (the run-time-axis form of ``cumsum`` is
``dyn.cumsum``, in :mod:`irlib.op.frontend.dynamic_shape`).
"""

from __future__ import annotations

import numpy as np

from ..registry import register_opaque
from ..type_relations import expect_tensor

__all__ = []


def _cumprod_ref(data, axis, exclusive=False, reverse=False):
    axis = int(axis.reshape(-1)[0]) % data.ndim
    work = np.flip(data, axis) if reverse else data
    out = np.cumprod(work, axis=axis, dtype=data.dtype)
    if exclusive:
        shifted = np.ones_like(out)
        index = [slice(None)] * data.ndim
        index[axis] = slice(1, None)
        source = [slice(None)] * data.ndim
        source[axis] = slice(None, -1)
        shifted[tuple(index)] = out[tuple(source)]
        out = shifted
    return (np.array(np.flip(out, axis) if reverse else out),)


register_opaque("onnx.cumprod", ("data", "axis"), ("onnx.attrs.CumProdAttrs",
                                             [("exclusive", False), ("reverse", False)]),
                lambda arg_types, attrs: expect_tensor(arg_types[0], "onnx.cumprod: data"),
                _cumprod_ref, "ONNX CumProd along a run-time axis (exclusive, reverse)")
