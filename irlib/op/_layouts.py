"""Helpers for ops with a layout attribute (``"NCHW"``, ``"NHWC"``, ``"OIHW"``, ``"HWIO"``...).

Only plain layouts are understood: a permutation of the op's axis letters, each once. Packed
layouts such as ``NCHW16c`` raise a TypeInferenceError naming the op.
"""

from __future__ import annotations

import numpy as np

from ..errors import TypeInferenceError


def layout_positions(layout: str, letters: str, what: str) -> dict:
    """Map each of ``letters`` to its axis index in ``layout``.

    Args:
        layout: the layout string.
        letters: the axis letters it must be a permutation of.
        what: what the layout belongs to, for the message.

    Raises:
        TypeInferenceError: if ``layout`` is not a permutation of ``letters``.
    """
    if not isinstance(layout, str) or sorted(layout) != sorted(letters):
        raise TypeInferenceError(f"{what} {layout!r} is not supported; use a permutation "
                                 f"of {letters!r} (e.g. {letters!r})")
    return {letter: layout.index(letter) for letter in letters}


def to_canonical(array: np.ndarray, layout: str, canonical: str) -> np.ndarray:
    """``array`` (in ``layout``) with its axes reordered to ``canonical``."""
    if layout == canonical:
        return array
    return np.transpose(array, [layout.index(letter) for letter in canonical])


def from_canonical(array: np.ndarray, canonical: str, layout: str) -> np.ndarray:
    """``array`` (in ``canonical``) with its axes reordered to ``layout``."""
    if layout == canonical:
        return array
    return np.ascontiguousarray(np.transpose(array, [canonical.index(c) for c in layout]))


def pair(value, what: str) -> tuple:
    """An int or a 1/2-sequence as a pair of ints (Relay builders accept both).

    Args:
        value: the int or sequence.
        what: the attribute name, for the message.
    """
    if isinstance(value, (int, np.integer)):
        return (int(value), int(value))
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * 2
    if len(value) != 2:
        raise TypeInferenceError(f"{what} must have 1 or 2 values, got {value}")
    return value


def padding4(padding, what: str = "padding") -> tuple:
    """Relay's ``get_pad_tuple2d``: 1, 2 or 4 ints as ``(top, left, bottom, right)``.

    Args:
        padding: the int, or 1, 2 or 4 ints.
        what: the attribute name, for the message.
    """
    if isinstance(padding, (int, np.integer)):
        padding = (int(padding),)
    padding = tuple(int(p) for p in padding)
    if len(padding) == 1:
        return padding * 4
    if len(padding) == 2:
        return padding * 2
    if len(padding) == 4:
        return padding
    raise TypeInferenceError(f"{what} must have 1, 2 or 4 values, got {padding}")


def pad_spatial(array: np.ndarray, pads, value=0) -> np.ndarray:
    """Pad (or crop, for negative amounts) axes 2 and 3 of an NCHW array.

    Args:
        array: the NCHW array.
        pads: ``(top, left, bottom, right)``.
        value: the fill value.
    """
    top, left, bottom, right = pads
    crop = (slice(None), slice(None),
            slice(max(-top, 0), array.shape[2] - max(-bottom, 0)),
            slice(max(-left, 0), array.shape[3] - max(-right, 0)))
    array = array[crop]
    widths = ((0, 0), (0, 0), (max(top, 0), max(bottom, 0)), (max(left, 0), max(right, 0)))
    if not any(any(w) for w in widths):
        return array
    return np.pad(array, widths, constant_values=value)


def windows(padded: np.ndarray, kernel: tuple, strides: tuple, dilation: tuple,
            out_size: tuple) -> np.ndarray:
    """The ``(N, C, out_h, out_w, kernel_h, kernel_w)`` view of sliding windows of an NCHW
    array, without copying.

    Args:
        padded: the padded NCHW input.
        kernel: the window's ``(kernel_h, kernel_w)``.
        strides: the window's strides.
        dilation: the window's dilation.
        out_size: the ``(out_h, out_w)`` output size.
    """
    extent = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    view = np.lib.stride_tricks.sliding_window_view(padded, extent, axis=(2, 3))
    view = view[:, :, ::strides[0], ::strides[1], ::dilation[0], ::dilation[1]]
    return view[:, :, :out_size[0], :out_size[1]]
