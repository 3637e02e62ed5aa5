"""``onnx.center_crop_pad(data, shape, axes)``: crop or zero-pad the given axes to a run-time
shape, centered (ONNX CenterCropPad), with a numpy reference.
"""

from __future__ import annotations

import numpy as np

from ...ir.dims import Any
from ...ir.types import TensorType
from ..registry import register_opaque
from ..type_relations import expect_tensor

__all__ = []


# -- CenterCropPad ------------------------------------------------------------------------------

def _center_crop_pad_ref(data, shape, axes=()):
    axes = [a % data.ndim for a in axes] if axes else list(range(data.ndim))
    out = data
    for axis, target in zip(axes, (int(s) for s in np.asarray(shape).reshape(-1))):
        size = out.shape[axis]
        if target < size:
            start = (size - target) // 2
            out = np.take(out, np.arange(start, start + target), axis=axis)
        elif target > size:
            widths = [(0, 0)] * out.ndim
            before = (target - size) // 2
            widths[axis] = (before, target - size - before)
            out = np.pad(out, widths)
    return (np.array(out),)


register_opaque("onnx.center_crop_pad", ("data", "shape"),
                ("onnx.attrs.CenterCropPadAttrs", [("axes", ())]),
                lambda arg_types, attrs: TensorType(
              [Any] * expect_tensor(arg_types[0], "onnx.center_crop_pad: data").ndim,
              arg_types[0].dtype),
                _center_crop_pad_ref, "crop or zero-pad the given axes to a run-time shape, "
                "centered")
