"""``onnx.det(data)``: determinants of the trailing square matrices (ONNX Det), with a numpy
reference.
"""

from __future__ import annotations

import numpy as np

from ...errors import TypeInferenceError
from ...ir.types import TensorType
from ..registry import register_opaque
from ..type_relations import expect_tensor

__all__ = []


# -- Det ----------------------------------------------------------------------------------------

def _det_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "onnx.det: data")
    if data.ndim < 2:
        raise TypeInferenceError(f"onnx.det: expected [..., M, M], got {data}")
    return TensorType(tuple(data.shape[:-2]), data.dtype)


register_opaque("onnx.det", ("data",), None, _det_rel,
                lambda data: (np.asarray(np.linalg.det(data)).astype(data.dtype),),
                "determinants of the trailing square matrices")
