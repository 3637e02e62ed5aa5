"""Per-channel parameters of nn ops (a bias, a scale, batch-norm statistics, a PReLU slope):
the shape check of the type relations and the broadcast along the channel axis that the
numpy references and the gradient compositions share."""

from __future__ import annotations

import numpy as np

from ..errors import TypeInferenceError
from .registry import make_call
from .type_relations import dims_differ, expect_tensor

__all__ = ["check_param", "along", "along_expr"]


def check_param(op: str, name: str, ty, size) -> None:
    """Check that parameter ``name`` of ``op`` has type ``Tensor[(size,), ...]``.

    Args:
        op: the op name, for the message.
        name: the parameter's name.
        ty: its type.
        size: the length it must have (the channel count).

    Raises:
        TypeInferenceError: naming the op and the parameter otherwise.
    """
    param = expect_tensor(ty, f"{op}: {name}")
    if param.ndim != 1 or dims_differ(param.shape[0], size):
        raise TypeInferenceError(f"{op}: {name} must have shape ({size},), got {param.shape}")


def along(vector, axis: int, ndim: int):
    """numpy: a 1-D ``vector`` shaped to broadcast along ``axis`` of a rank-``ndim`` array."""
    shape = [1] * ndim
    shape[axis] = -1
    return np.reshape(vector, shape)


def along_expr(vector, axis: int, ndim: int):
    """The expression counterpart of :func:`along` (``expand_dims`` after the axis).

    Args:
        vector: the 1-D expression.
        axis: the axis of the result it runs along.
        ndim: the rank of the tensor it is broadcast against.
    """
    if ndim - 1 - axis == 0:
        return vector
    return make_call("expand_dims", (vector,), {"axis": 1, "num_newaxis": ndim - 1 - axis})
