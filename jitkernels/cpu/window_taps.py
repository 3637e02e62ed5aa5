"""Which taps of a pooling or convolution window fall inside the image, for the vector
kernels of :mod:`jitkernels.cpu.simd` (scalar numba helpers, no arrays).

The run intrinsics move every tap by one step per output pixel, so a tap outside the image
cannot simply be skipped: its bit is cleared in a mask and its offset is replaced by that of
an inside tap on the same row or column (:func:`inside_index`), which keeps every load
inside the array (and, for a max, leaves the result unchanged).
"""

from __future__ import annotations

from numba import njit

__all__ = ["inside_bits", "inside_index", "tap_mask"]


@njit(cache=True, inline="always")
def inside_bits(start, step, taps, size):
    """Bit ``k`` (``k < taps``) set where ``start + k*step`` lies in ``[0, size)``."""
    bits = 0
    for k in range(taps):
        position = start + k * step
        if 0 <= position < size:
            bits |= 1 << k
    return bits


@njit(cache=True, inline="always")
def inside_index(bits, k):
    """``k`` where bit ``k`` of ``bits`` is set, else the lowest set bit's index (``bits``
    must not be 0)."""
    if (bits >> k) & 1:
        return k
    first = 0
    while not (bits >> first) & 1:
        first += 1
    return first


@njit(cache=True, inline="always")
def tap_mask(row_bits, col_bits, rows, cols):
    """Bit ``b*cols + e`` set where row bit ``b`` and column bit ``e`` are both set."""
    mask = 0
    for b in range(rows):
        if (row_bits >> b) & 1:
            mask |= col_bits << (b * cols)
    return mask
