"""CPU kernels of ``take`` and ``strided_slice`` with destination-passing ``into`` forms.

Both are numpy one-liners; what the kernels add is writing straight into the graph
executor's output array (``kernel.into(out, *inputs, **attrs)``, True once written): a
transformer's token embedding (``take``) and its KV-cache slices (``strided_slice``) run
once per layer and step, and the op-by-op path's result copy and bookkeeping cost more
than the copy itself. Cases with no direct numpy spelling (``take`` with ``batch_dims``
or a flattened ``axis=None``) go to the reference implementation.
"""

from __future__ import annotations

import numpy as np

from irlib.op.indexing import slice_plan

from .. import register_kernel
from .._geometry import reference

_TAKE_MODES = {"clip": "clip", "wrap": "wrap", "fast": "raise"}
"""irlib's ``take`` modes as ``np.take`` modes (``fast``: plain indexing, as the reference
does, which accepts negative indices Python's way)."""


def _take_axis(data, indices, batch_dims, axis, mode):
    """The normalised axis when ``np.take`` computes this ``take`` exactly, else None."""
    if axis is None or batch_dims or data.ndim == 0 or mode not in _TAKE_MODES \
            or indices.dtype.kind not in "iu":
        return None
    return int(axis) % data.ndim


@register_kernel("take")
def take(data, indices, batch_dims=0, axis=None, mode="clip", **_):
    """``take`` on CPU: ``np.take`` along ``axis`` (other forms: the reference)."""
    indices = np.asarray(indices)
    position = _take_axis(data, indices, batch_dims, axis, mode)
    if position is None or data.shape[position] == 0:
        return reference("take", (data, indices),
                         dict(batch_dims=batch_dims, axis=axis, mode=mode))
    return (np.take(data, indices, axis=position, mode=_TAKE_MODES[mode]),)


def _take_into(out, data, indices, batch_dims=0, axis=None, mode="clip", **_) -> bool:
    """``take`` into ``out``; False (nothing written) where the kernel would not use
    ``np.take``."""
    position = _take_axis(data, indices, batch_dims, axis, mode)
    if position is None or data.shape[position] == 0 or out.dtype != data.dtype \
            or not out.flags.c_contiguous:
        return False
    shape = data.shape[:position] + indices.shape + data.shape[position + 1:]
    if out.shape != shape:
        return False
    np.take(data, indices, axis=position, out=out, mode=_TAKE_MODES[mode])
    return True


take.into = _take_into


def _slices(data, begin, end, strides, slice_mode, axes) -> tuple:
    plan = slice_plan(data.ndim, begin, end, strides, axes, slice_mode)
    return tuple(slice(None) if p is None else slice(*p) for p in plan)


@register_kernel("strided_slice")
def strided_slice(data, begin, end, strides=None, slice_mode="end", axes=None, **_):
    """``strided_slice`` on CPU: a numpy basic slice, copied."""
    return (np.array(data[_slices(data, begin, end, strides, slice_mode, axes)]),)


def _strided_slice_into(out, data, begin, end, strides=None, slice_mode="end", axes=None,
                        **_) -> bool:
    """Copy the slice into ``out``; False if ``out`` has another shape or dtype."""
    view = data[_slices(data, begin, end, strides, slice_mode, axes)]
    if view.shape != out.shape or out.dtype != data.dtype:
        return False
    np.copyto(out, view)
    return True


strided_slice.into = _strided_slice_into
