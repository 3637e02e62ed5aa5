"""Sliding-window geometry over ``n`` spatial axes, shared by the convolution and pooling ops.

Attribute tuples (``ntuple``, ``padding_n``), the output extent of a window (``conv_out_size``)
and the numpy helpers of the references: padding/cropping the spatial axes of an ``(N, C,
*S)`` array (``pad_n``) and the copy-free view of its windows (``windows_n``).
"""

from __future__ import annotations

import numpy as np

from ..errors import TypeInferenceError
from ..ir.dims import Any, AnyDim

__all__ = ["ntuple", "padding_n", "conv_out_size", "pad_n", "windows_n"]


def ntuple(value, n: int, what: str) -> tuple:
    """An int or a 1/n-sequence as an n-tuple of ints.

    Args:
        value: an int or a sequence of 1 or ``n`` ints.
        n: the number of spatial axes.
        what: the attribute, for the error message.

    Raises:
        TypeInferenceError: when the sequence has another length.
    """
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * n
    if len(value) != n:
        raise TypeInferenceError(f"{what} must have 1 or {n} values, got {value}")
    return value


def window_geometry(attrs, n: int, what: str = "") -> tuple:
    """``(strides, dilation, padding)`` of a windowed op's attrs as ``n``, ``n`` and ``2n``
    ints (the padding befores then afters).

    Args:
        attrs: the call's attrs (``strides``, ``dilation``, ``padding``).
        n: the number of spatial axes.
        what: the op name put before each attribute's name in error messages, if any.
    """
    prefix = f"{what}: " if what else ""
    return (ntuple(attrs["strides"], n, prefix + "strides"),
            ntuple(attrs["dilation"], n, prefix + "dilation"),
            padding_n(attrs["padding"], n, prefix + "padding"))


def padding_n(padding, n: int, what: str = "padding") -> tuple:
    """1, n or 2n ints as ``2n`` ints: the ``n`` "before" amounts then the ``n`` "after"
    (for ``n == 2`` Relay's ``(top, left, bottom, right)``).

    Args:
        padding: the int or ints.
        n: the number of spatial axes.
        what: the attribute name, for the message.

    Raises:
        TypeInferenceError: for any other number of values.
    """
    if isinstance(padding, (int, np.integer)):
        padding = (int(padding),)
    padding = tuple(int(p) for p in padding)
    if len(padding) == 1:
        return padding * (2 * n)
    if len(padding) == n:
        return padding * 2
    if len(padding) == 2 * n:
        return padding
    raise TypeInferenceError(f"{what} must have 1, {n} or {2 * n} values, got {padding}")


def conv_out_size(size, kernel, stride, dilation, before, after):
    """Output length of a convolution/pooling window along one axis.

    ``size`` and ``kernel`` may be ints, symbolic dims (the result is then the symbolic
    ``floordiv`` expression) or ``Any`` (the result is ``Any``: Any has no arithmetic).

    Args:
        size: the (padded-before) input length.
        kernel: the window length.
        stride: the stride.
        dilation: the dilation.
        before: the padding before.
        after: the padding after.
    """
    if isinstance(size, AnyDim) or isinstance(kernel, AnyDim):
        return Any
    return (size + before + after - dilation * (kernel - 1) - 1) // stride + 1


def pad_n(array: np.ndarray, pads, value=0) -> np.ndarray:
    """Pad (or crop, for negative amounts) the spatial axes (2...) of an NC... array.

    Args:
        array: the ``(N, C, *S)`` array.
        pads: ``2n`` amounts, befores then afters.
        value: the fill value.
    """
    n = array.ndim - 2
    crop = [slice(None), slice(None)]
    widths = [(0, 0), (0, 0)]
    for i in range(n):
        before, after = pads[i], pads[n + i]
        crop.append(slice(max(-before, 0), array.shape[2 + i] - max(-after, 0)))
        widths.append((max(before, 0), max(after, 0)))
    array = array[tuple(crop)]
    if any(any(w) for w in widths):
        array = np.pad(array, widths, constant_values=value)
    return array


def windows_n(padded: np.ndarray, kernel, strides, dilation, out_size) -> np.ndarray:
    """The ``(N, C, *out, *kernel)`` view of sliding windows over the spatial axes, without
    copying.

    Args:
        padded: the padded ``(N, C, *spatial)`` input.
        kernel: the window size per spatial axis.
        strides: the strides per spatial axis.
        dilation: the dilation per spatial axis.
        out_size: the output size per spatial axis.
    """
    n = len(kernel)
    extent = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    view = np.lib.stride_tricks.sliding_window_view(padded, extent, axis=tuple(range(2, 2 + n)))
    index = ((slice(None),) * 2 + tuple(slice(None, o * s, s) for o, s in zip(out_size, strides))
             + tuple(slice(None, None, d) for d in dilation))
    return view[index]
