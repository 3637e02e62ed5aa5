"""Attribute normalisation and array reshaping shared by the cpu and cuda kernels (numpy only).

The kernels work on a few canonical forms:

* convolution and pooling: channels-first with three spatial axes, ``(N, C, D, H, W)``; a
  1-D or 2-D op gets unit leading spatial axes (a free reshape);
* reductions, softmax and the norms: ``(A, R, B)`` where ``R`` is the reduced (normalised)
  extent, ``A`` the product of the axes before it and ``B`` of those after it.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

FLOAT_DTYPES = (np.dtype("float32"), np.dtype("float64"))

SPATIAL = {1: "W", 2: "HW", 3: "DHW"}


def is_float(*arrays) -> bool:
    """True when every array is float32, or every array is float64."""
    dtypes = {np.asarray(a).dtype for a in arrays}
    return len(dtypes) == 1 and dtypes.pop() in FLOAT_DTYPES


def reference(op_name: str, inputs, attrs: dict) -> tuple:
    """Run the op's numpy reference implementation (the kernels' fallback)."""
    from irlib.op import get_def
    return get_def(op_name).impl(*inputs, **attrs)


def ntuple(value, n: int) -> tuple:
    """An int or a 1/n-sequence as an n-tuple of ints."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    value = tuple(int(v) for v in value)
    return value * n if len(value) == 1 else value


class Padding(NamedTuple):
    """A window's padding: the ``before`` and ``after`` amounts, one per spatial axis."""

    before: tuple
    after: tuple


class Window3(NamedTuple):
    """A window's geometry in the canonical three-spatial-axes form (each field a 3-tuple;
    a 1-D or 2-D op gets unit leading axes): extent, strides, dilation and padding."""

    window: tuple
    strides: tuple
    dilation: tuple
    before: tuple
    after: tuple

    def flat(self, *extra: int) -> np.ndarray:
        """The fields (then ``extra`` ints) as one int64 array, the form the CUDA kernels
        take; they index it with :data:`WINDOW`, :data:`STRIDES`, :data:`DILATION`,
        :data:`BEFORE`, :data:`AFTER` (+ axis) and :data:`EXTRA` (+ i)."""
        return np.array(sum(self, ()) + tuple(int(e) for e in extra), np.int64)


WINDOW, STRIDES, DILATION, BEFORE, AFTER, EXTRA = 0, 3, 6, 9, 12, 15
"""Offsets of the :class:`Window3` fields (and of the extra ints) in :meth:`Window3.flat`."""


def padding_pairs(padding, n: int) -> Padding:
    """Relay padding (1, n or 2n ints) as :class:`Padding` (``before``, ``after``), each an
    n-tuple."""
    if isinstance(padding, (int, np.integer)):
        padding = (int(padding),)
    padding = tuple(int(p) for p in padding)
    if len(padding) == 1:
        padding = padding * (2 * n)
    elif len(padding) == n:
        padding = padding * 2
    return Padding(padding[:n], padding[n:])


def to3(values: tuple, fill: int) -> tuple:
    """An n-tuple (n <= 3) left-padded with ``fill`` to length 3."""
    return (fill,) * (3 - len(values)) + tuple(int(v) for v in values)


def to_canonical(array: np.ndarray, layout: str, canonical: str) -> np.ndarray:
    """``array`` (in ``layout``) with axes reordered to ``canonical``, C-contiguous."""
    if layout != canonical:
        array = np.transpose(array, [layout.index(letter) for letter in canonical])
    return np.ascontiguousarray(array)


def from_canonical(array: np.ndarray, canonical: str, layout: str) -> np.ndarray:
    """``array`` (in ``canonical``) with axes reordered to ``layout``, C-contiguous."""
    if layout == canonical:
        return array
    return np.ascontiguousarray(np.transpose(array, [canonical.index(c) for c in layout]))


def as_ncdhw(array: np.ndarray) -> np.ndarray:
    """A channels-first array with 1-3 spatial axes viewed as ``(N, C, D, H, W)``."""
    return array.reshape(array.shape[:2] + (1,) * (5 - array.ndim) + array.shape[2:])


def conv_out(size: int, kernel: int, stride: int, dilation: int, before: int,
             after: int) -> int:
    """Output length of a convolution window along one axis."""
    return (size + before + after - dilation * (kernel - 1) - 1) // stride + 1


def pool_out(size, pool, stride, dilation, before, after, ceil_mode) -> int:
    """Output length of a pooling window along one axis (Relay's ceil_mode rule)."""
    extra = stride - 1 if ceil_mode else 0
    return (size + before + after - dilation * (pool - 1) - 1 + extra) // stride + 1


class PoolWindow:
    """A pooling call's geometry, shared by the CPU and CUDA pools.

    Args:
        shape: the input's shape, in ``layout``.
        attrs: the call's attrs (pool_size, strides, dilation, padding, layout, out_layout,
            ceil_mode, count_include_pad).
        n: number of spatial dims.

    Attributes:
        canonical: ``"NC" + spatial``; ``channels_last``: ``"N" + spatial + "C"``.
        out_size: the output's spatial sizes; ``out_shape``: its shape in ``out_layout``.
    """

    def __init__(self, shape: tuple, attrs: dict, n: int):
        self.canonical = "NC" + SPATIAL[n]
        self.channels_last = "N" + SPATIAL[n] + "C"
        self.layout = attrs.get("layout") or self.canonical
        self.out_layout = attrs.get("out_layout") or self.layout
        self.pool = ntuple(attrs.get("pool_size", 1), n)
        self.strides = ntuple(attrs.get("strides", 1), n)
        self.dilation = ntuple(attrs.get("dilation", 1), n)
        self.before, self.after = padding_pairs(attrs.get("padding", 0), n)
        self.count_include_pad = bool(attrs.get("count_include_pad", False))
        ceil_mode = bool(attrs.get("ceil_mode", False))
        self.out_size = tuple(
            pool_out(shape[self.layout.index(letter)], self.pool[i], self.strides[i],
                     self.dilation[i], self.before[i], self.after[i], ceil_mode)
            for i, letter in enumerate(SPATIAL[n]))
        dims = dict(zip(SPATIAL[n], self.out_size), N=shape[self.layout.index("N")],
                    C=shape[self.layout.index("C")])
        self.out_shape = tuple(dims[letter] for letter in self.out_layout)

    def canonical_data(self, data: np.ndarray) -> np.ndarray:
        """``data`` (in ``layout``) as a C-contiguous canonical ``NC...`` array."""
        return to_canonical(data, self.layout, self.canonical)

    def as3(self) -> Window3:
        """The pool window, strides, dilation and padding, each padded to 3 spatial dims."""
        return Window3(to3(self.pool, 1), to3(self.strides, 1), to3(self.dilation, 1),
                       to3(self.before, 0), to3(self.after, 0))

    def finish(self, out: np.ndarray) -> np.ndarray:
        """``out`` (canonical layout) converted to the call's output layout."""
        return from_canonical(out, self.canonical, self.out_layout)


def normalize_axes(axes, ndim: int) -> tuple:
    """Sorted, non-negative reduction axes (None: all); ``exclude`` is handled by callers."""
    if axes is None:
        return tuple(range(ndim))
    if isinstance(axes, (int, np.integer)):
        return (int(axes) % ndim,)
    if len(axes) == 1:
        return (int(axes[0]) % ndim,)
    return tuple(sorted({int(a) % ndim for a in axes}))


def as_arb(data: np.ndarray, axes: tuple) -> np.ndarray:
    """``data`` as a C-contiguous ``(A, R, B)`` array reducing ``axes`` into ``R``.

    Contiguous axes (the common case: the last axis, the spatial axes, all axes) give a free
    reshape; scattered axes are moved last by a transpose copy (then ``B == 1``).
    """
    shape = data.shape
    if not axes:
        return np.ascontiguousarray(data).reshape(-1, 1, 1)
    first, last = axes[0], axes[-1]
    if last - first + 1 == len(axes):            # contiguous axes (sorted, distinct)
        outer = math.prod(shape[:first])
        inner = math.prod(shape[last + 1:])
        return np.ascontiguousarray(data).reshape(outer, -1, inner) if data.size else \
            data.reshape(outer, math.prod(shape[first:last + 1]), inner)
    kept = [a for a in range(data.ndim) if a not in axes]
    moved = np.ascontiguousarray(np.transpose(data, kept + list(axes)))
    reduced = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    return moved.reshape(-1, reduced, 1)


def reduced_shape(shape: tuple, axes: tuple, keepdims: bool) -> tuple:
    """The shape of a reduction's result."""
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def adaptive_bins(size: int, out: int) -> tuple:
    """``(starts, ends)`` (int64 arrays) of ``out`` adaptive pooling bins over ``size``."""
    index = np.arange(out, dtype=np.int64)
    return (index * size) // out, -((-(index + 1) * size) // out)


def reduce_arb_kinds() -> tuple:
    """The reduction kind codes the ``(A, R, B)`` kernels take: sum, mean, max, min, prod."""
    return (0, 1, 2, 3, 4)
