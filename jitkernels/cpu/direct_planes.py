"""The direct convolution's input arrangement: zero-padded row planes (issue #17, #24).

:mod:`jitkernels.cpu.direct_conv` reads its input from *planes*, one per (image, input
channel, row phase, column phase): with strides ``(sh, sw)``, plane ``(py, px)`` holds the
padded rows ``py, py + sh, ...`` and in each of them the padded columns ``px, px + sw, ...``,
zeros where the window leaves the image. :func:`arrange` (serial) and
:func:`arrange_parallel` (one ``prange`` task per plane) write them; the geometry and
layout vectors are the ones :func:`jitkernels.cpu.direct_conv.plan` makes.

Writes run in order and reads are strided. Unit and 2-element steps are spelled out (and
a stride-2 row writes both column phases in one pass), because LLVM vectorises a copy, or
a stride-2 gather as an interleaved load, only with the step known at compile time.
"""

from __future__ import annotations

from numba import njit, prange, uint64

__all__ = ["arrange", "arrange_parallel"]

@njit(cache=True, inline="always")
def _columns(width, left, sw, px, length):
    """The plane columns ``[lo, hi)`` that hold image columns (``0 <= t*sw + px - left <
    width``) of phase ``px``."""
    lo = min(max(0, (left - px + sw - 1) // sw), length)
    hi = min(max(lo, (width - 1 + left - px) // sw + 1), length)
    return lo, hi


@njit(cache=True, inline="always")
def _arrange_rows(xf, planes, dst, src, py, lo, hi, geometry, layout):
    """The ``Hq`` rows of one plane (row phase ``py``, columns ``[lo, hi)`` from the image)
    from flat ``dst`` on; ``src`` is the flat index of the plane's channel at image column
    ``lo*sw + px - left`` of row 0."""
    height, sh, sw, top = geometry[0], geometry[8], geometry[9], geometry[12]
    rows_q, length = geometry[15], geometry[16]
    xsh, xsw = layout[2], layout[3]
    zero = planes.dtype.type(0)
    count = uint64(length)
    step = uint64(sw * xsw)
    for yq in range(rows_q):
        y = yq * sh + py - top
        if y < 0 or y >= height:
            for t in range(count):
                planes[dst + t] = zero
        else:
            for t in range(uint64(lo)):
                planes[dst + t] = zero
            for t in range(uint64(hi), count):
                planes[dst + t] = zero
            start = uint64(src + y * xsh)
            into = dst + uint64(lo)
            # unit and 2-element steps spelled out: LLVM vectorises a copy (and a stride-2
            # gather, as an interleaved load) only with the step known at compile time
            if step == 1:
                for t in range(uint64(hi - lo)):
                    planes[into + t] = xf[start + t]
            elif step == 2:
                for t in range(uint64(hi - lo)):
                    planes[into + t] = xf[start + 2 * t]
            else:
                for t in range(uint64(hi - lo)):
                    planes[into + t] = xf[start + t * step]
        dst += count


@njit(cache=True, inline="always")
def _arrange_row_pairs(xf, planes, dst, src, py, geometry, layout):
    """The two column phases (``sw == 2``) of one (image, channel, row phase) from rows of
    unit column step, written together: image columns ``2u`` and ``2u + 1`` go to the two
    planes' rows side by side, so the loop reads the row contiguously (an interleaved load
    LLVM vectorises) instead of gathering every other element twice (kws' 8-channel
    stride-2 layer: 17 -> 6 us). ``dst`` is the phase-0 plane, ``src`` the channel's first
    element."""
    height, width, sh, top, left = geometry[0], geometry[1], geometry[8], geometry[12], \
        geometry[13]
    rows_q, length = geometry[15], geometry[16]
    xsh = layout[2]
    zero = planes.dtype.type(0)
    count = uint64(length)
    lo0, hi0 = _columns(width, left, 2, 0, length)
    lo1, hi1 = _columns(width, left, 2, 1, length)
    # column 2u goes to phase ``pa`` at ``ta + u``, column 2u + 1 to phase 1 - pa at tb + u
    pa = left % 2
    ta, tb = left // 2, (left + 1) // 2
    hia, hib = (hi0, hi1) if pa == 0 else (hi1, hi0)
    pairs = max(0, min(width // 2, hia - ta, hib - tb))
    da = uint64(pa) * uint64(rows_q * length)
    db = uint64(1 - pa) * uint64(rows_q * length)
    for yq in range(rows_q):
        y = yq * sh + py - top
        row0 = dst + uint64(yq) * count
        row1 = row0 + uint64(rows_q * length)
        if y < 0 or y >= height:
            for t in range(count):
                planes[row0 + t] = zero
                planes[row1 + t] = zero
            continue
        for t in range(uint64(lo0)):
            planes[row0 + t] = zero
        for t in range(uint64(hi0), count):
            planes[row0 + t] = zero
        for t in range(uint64(lo1)):
            planes[row1 + t] = zero
        for t in range(uint64(hi1), count):
            planes[row1 + t] = zero
        start = uint64(src + y * xsh)
        into_a = row0 + da + uint64(ta)
        into_b = row0 + db + uint64(tb)
        two, one = uint64(2), uint64(1)
        pa_row = planes[into_a:]
        pb_row = planes[into_b:]
        x_row = xf[start:]
        for u in range(uint64(pairs)):
            pa_row[u] = x_row[two * u]
            pb_row[u] = x_row[two * u + one]
        for col in range(2 * pairs, width):         # the tail past the last whole pair
            phase = (col + left) % 2
            t = (col + left) // 2
            if t < (hi0 if phase == 0 else hi1):
                planes[row0 + uint64(phase) * uint64(rows_q * length) + uint64(t)] = \
                    xf[start + uint64(col)]


@njit(cache=True)
def arrange(x, planes, geometry, layout):
    """Rearrange the input into row planes (see the module docstring), zero padded.

    ``planes`` is C-contiguous ``(N, C, sh, sw, Hq, L)`` (then spare elements): element
    ``(n, c, py, px, yq, t)`` is input pixel ``(yq*sh + py - top, t*sw + px - left)`` of
    channel ``c``, zero outside the image. Writes run in order; reads are strided.

    Args:
        x: the data, C-contiguous, read through ``layout``'s first four strides.
        planes: the destination (flat, ``N*C*sh*sw*Hq*L`` elements then spare ones,
            zeroed).
        geometry, layout: as :func:`conv2d_direct_rows`'.
    """
    width, channels, sh, sw = geometry[1], geometry[2], geometry[8], geometry[9]
    left, rows_q, length = geometry[13], geometry[15], geometry[16]
    xf = x.reshape(-1)
    dst = uint64(0)
    plane = uint64(rows_q * length)
    for n in range(x.shape[0]):
        for c in range(channels):
            for py in range(sh):
                if sw == 2 and layout[3] == 1:      # both column phases of unit-step rows
                    _arrange_row_pairs(xf, planes, dst, n * layout[0] + c * layout[1], py,
                                       geometry, layout)
                    dst += plane + plane
                    continue
                for px in range(sw):
                    lo, hi = _columns(width, left, sw, px, length)
                    src = n * layout[0] + c * layout[1] + (lo * sw + px - left) * layout[3]
                    _arrange_rows(xf, planes, dst, src, py, lo, hi, geometry, layout)
                    dst += uint64(rows_q * length)
    planes[dst:] = 0                                    # the spare zeros


@njit(cache=True, parallel=True)
def arrange_parallel(x, planes, geometry, layout):
    """:func:`arrange`, each plane a ``prange`` task."""
    width, channels, sh, sw = geometry[1], geometry[2], geometry[8], geometry[9]
    left, rows_q, length = geometry[13], geometry[15], geometry[16]
    xf = x.reshape(-1)
    parts = x.shape[0] * channels * sh * sw
    for part in prange(parts):
        px = part % sw
        py = (part // sw) % sh
        c = (part // (sw * sh)) % channels
        n = part // (sw * sh * channels)
        lo, hi = _columns(width, left, sw, px, length)
        src = n * layout[0] + c * layout[1] + (lo * sw + px - left) * layout[3]
        _arrange_rows(xf, planes, uint64(part * rows_q * length), src, py, lo, hi, geometry,
                      layout)
    planes[parts * rows_q * length:] = 0
