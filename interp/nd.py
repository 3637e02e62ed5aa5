"""``interp.nd``: tensors (``tvm.nd``): :func:`array`, :func:`empty` and :class:`NDArray`."""

from __future__ import annotations

import numpy as np

from irlib.ndarray import Device, NDArray, cpu

__all__ = ["NDArray", "array", "empty"]


def array(data, device: Device | None = None) -> NDArray:
    """An NDArray holding a copy of ``data`` (``tvm.nd.array``).

    Args:
        data: a numpy array, NDArray or anything ``np.array`` accepts.
        device: where it lives (``interp.cpu(0)`` by default).
    """
    if isinstance(data, NDArray):
        data = data.numpy()
    return NDArray(np.array(data), device or cpu(0))


def empty(shape, dtype: str = "float32", device: Device | None = None) -> NDArray:
    """An uninitialised NDArray (``tvm.nd.empty``).

    Args:
        shape: the shape.
        dtype: the dtype name.
        device: where it lives (``interp.cpu(0)`` by default).
    """
    return NDArray(np.empty(tuple(shape), dtype=dtype), device or cpu(0))
