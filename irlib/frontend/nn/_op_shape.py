"""Shape and indexing ops of the nn builder: reshape, permute_dims, broadcast_to, squeeze,
unsqueeze, concat, split, chunk, pad, repeat, take, triu.

Symbolic dims stay symbolic: ``reshape`` expresses a symbolic target dim with Relay's copy
(``0``) and infer (``-1``) codes where they say it, so the ``reshape`` attributes stay
static, and writes the symbolic dim into the attributes otherwise (bound when the exported
function is called).
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Union

import numpy as np

from ... import op as _op
from ...errors import TypeInferenceError
from ...ir import expr as E
from ...ir.dims import DimExpr
from ...op.transform import reshape_output_shape
from ._op_common import check_tensor
from ._op_create import fail, shape_arg
from .core import Tensor, wrap_nested

__all__ = ["reshape", "permute_dims", "broadcast_to", "squeeze", "unsqueeze", "concat",
           "split", "chunk", "pad", "repeat", "take", "triu"]


def _axis(axis, ndim: int, name: str, what: str = "axis") -> int:
    """``axis`` in ``[0, ndim)`` (negative counts from the end), or an OpError."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise fail(name, f"{what} must be an int, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise fail(name, f"{what} {axis} is out of range for a tensor of rank {ndim}")
    return int(axis) % ndim


def _is_static(dim) -> bool:
    return isinstance(dim, int)


# -- reshape ------------------------------------------------------------------------------------

def reshape_codes(in_shape: Sequence, target: Sequence):
    """Relay ``newshape`` codes (and ``allowzero``) that reshape ``in_shape`` to ``target``.

    A symbolic target dim equal to the input dim at the same position becomes the copy code
    ``0``; a single other symbolic dim becomes ``-1`` when inference recovers exactly it;
    anything else stays a symbolic dim in the attributes. A literal 0-sized target dim
    switches to ``allowzero`` with the dims written out.

    Args:
        in_shape: the input's dims.
        target: the wanted dims (ints, at most one -1, symbolic dims).
    """
    target = tuple(target)
    if any(_is_static(d) and d == 0 for d in target):
        return target, True
    codes = list(target)
    unresolved = []
    for index, dim in enumerate(target):
        if isinstance(dim, DimExpr):
            if index < len(in_shape) and in_shape[index] == dim:
                codes[index] = 0        # every code here consumes one input dim: positional
            else:
                unresolved.append(index)
    if len(unresolved) == 1 and -1 not in target:
        trial = list(codes)
        trial[unresolved[0]] = -1
        try:
            inferred = reshape_output_shape(in_shape, trial)
        except TypeInferenceError:
            inferred = None
        if inferred is not None and tuple(inferred) == target:
            codes = trial
    return tuple(codes), False


def reshape(x: Tensor, shape: Sequence, name: str = "reshape") -> Tensor:
    """Reshape ``x``; at most one dim may be -1 (inferred from the others), and a 0 copies
    the input's dim at the same position (Relax's reshape semantics).

    Args:
        x: the tensor.
        shape: the new dims: ints, -1, ``str`` size names or symbolic dims.
        name: name hint.

    Raises:
        OpError: the element counts differ, or more than one -1.
    """
    x = check_tensor(x, "x", name)
    target = shape_arg(shape, name, allow_minus_one=True)
    if sum(1 for d in target if _is_static(d) and d == -1) > 1:
        raise fail(name, f"shape {target} has more than one -1")
    if any(_is_static(d) and d == 0 and i >= x.ndim for i, d in enumerate(target)):
        raise fail(name, f"shape {target}: a 0 (copy the input's dim) past the input's "
                         f"{x.ndim} dims")
    target = [x.shape[i] if _is_static(d) and d == 0 else d for i, d in enumerate(target)]
    codes, allowzero = reshape_codes(x.shape, target)
    return wrap_nested(_op.reshape(x._expr, codes, allowzero=allowzero), name)


def permute_dims(x: Tensor, axes: Optional[List[int]] = None,
                 name: Optional[str] = None) -> Tensor:
    """Permute the dims of ``x`` (reverse them when ``axes`` is None).

    Args:
        x: the tensor.
        axes: the new order of the dims (a permutation of ``range(x.ndim)``; negative axes
            count from the end).
        name: name hint (``permute_dims`` when None).
    """
    name = name or "permute_dims"
    x = check_tensor(x, "x", name)
    if axes is not None:
        axes = list(axes)
        if len(axes) != x.ndim:
            raise fail(name, f"axes {axes} must list all {x.ndim} dims of a tensor of shape "
                             f"{x.shape}")
        normalized = [_axis(a, x.ndim, name, "axes entry") for a in axes]
        if len(set(normalized)) != len(normalized):
            raise fail(name, f"axes {axes} repeat a dim")
        axes = normalized
    return wrap_nested(_op.transpose(x._expr, axes), name)


def broadcast_to(x: Tensor, shape: Sequence, name: str = "broadcast_to") -> Tensor:
    """Broadcast ``x`` to ``shape`` (numpy rules).

    Args:
        x: the tensor.
        shape: the target dims (ints, ``str`` size names, symbolic dims).
        name: name hint.
    """
    x = check_tensor(x, "x", name)
    return wrap_nested(_op.broadcast_to(x._expr, shape_arg(shape, name)), name)


def unsqueeze(x: Tensor, dim: int, name: str = "unsqueeze") -> Tensor:
    """Insert a size-1 dim at position ``dim`` of the result.

    Args:
        x: the tensor.
        dim: the new dim's position, in ``[-x.ndim - 1, x.ndim]``.
        name: name hint.
    """
    x = check_tensor(x, "x", name)
    dim = _axis(dim, x.ndim + 1, name, "dim")
    return wrap_nested(_op.expand_dims(x._expr, dim), name)


def squeeze(x: Tensor, axis: Union[int, List[int], None] = -1, name: str = "squeeze") -> Tensor:
    """Remove size-1 dims.

    Args:
        x: the tensor.
        axis: the dim(s) to remove (each must have size 1); None removes every size-1 dim.
        name: name hint.
    """
    x = check_tensor(x, "x", name)
    if axis is not None:
        axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
        axis = [_axis(a, x.ndim, name) for a in axes]
    return wrap_nested(_op.squeeze(x._expr, axis), name)


# -- joining and splitting ----------------------------------------------------------------------

def concat(x: List[Tensor], dim: int, name: str = "concat") -> Tensor:
    """Join tensors along ``dim``.

    Args:
        x: the tensors (one rank and dtype; equal sizes except along ``dim``).
        dim: the dim to join along.
        name: name hint.
    """
    tensors = [check_tensor(t, f"element {i} of x", name) for i, t in enumerate(x)]
    if not tensors:
        raise fail(name, "needs at least one tensor")
    for i, tensor in enumerate(tensors[1:], 1):
        if tensor.dtype != tensors[0].dtype:
            raise fail(name, f"tensor {i} has dtype {tensor.dtype} but tensor 0 has "
                             f"{tensors[0].dtype}")
    dim = _axis(dim, tensors[0].ndim, name, "dim")
    return wrap_nested(_op.concatenate([t._expr for t in tensors], dim), name)


def split(ary: Tensor, indices_or_sections: Union[int, Sequence[int]], axis: int = 0,
          name: str = "split"):
    """Split ``ary`` along ``axis`` as ``numpy.split`` does.

    Args:
        ary: the tensor.
        indices_or_sections: an int ``k`` (``k`` equal pieces: the size must divide by
            ``k``), or ascending split indices (``[2, 5]`` gives ``[:2]``, ``[2:5]``,
            ``[5:]``; indices past the end give empty pieces, negative ones count from the
            end).
        axis: the axis to split.
        name: name hint.

    Returns:
        A tuple of tensors.
    """
    ary = check_tensor(ary, "ary", name)
    axis = _axis(axis, ary.ndim, name)
    size = ary.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)) and not isinstance(
            indices_or_sections, bool):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise fail(name, f"the number of sections must be positive, got {sections}")
        if _is_static(size) and size % sections:
            raise fail(name, f"axis {axis} of size {size} does not split into {sections} "
                             f"equal sections (shape {ary.shape})")
        return wrap_nested(_op.split(ary._expr, sections, axis).astuple(), name)
    indices = []
    for index in indices_or_sections:
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise fail(name, f"split indices must be ints, got {indices_or_sections!r}")
        index = int(index)
        if _is_static(size):
            index = min(max(index + size if index < 0 else index, 0), size)
        elif index < 0:
            raise fail(name, f"a negative split index needs a static size along axis {axis}, "
                             f"got {size}")
        indices.append(index)
    if any(b < a for a, b in zip(indices, indices[1:])):
        raise fail(name, f"split indices {list(indices_or_sections)} must be ascending")
    return wrap_nested(_op.split(ary._expr, indices, axis).astuple(), name)


def chunk(x: Tensor, chunks: int, dim: int = 0, name: str = "chunk"):
    """Split ``x`` along ``dim`` into at most ``chunks`` pieces, as ``torch.chunk`` does.

    Each piece has ``ceil(n / chunks)`` elements along ``dim`` except the last, which may be
    smaller; so fewer than ``chunks`` pieces come out when ``n`` is not a multiple (``n=6,
    chunks=4`` gives three pieces of 2). A symbolic size is split into ``chunks`` equal pieces
    (it is assumed to be a multiple of ``chunks``).

    Args:
        x: the tensor.
        chunks: the number of pieces wanted (positive).
        dim: the dim to split.
        name: name hint.

    Returns:
        A tuple of tensors.
    """
    x = check_tensor(x, "x", name)
    if isinstance(chunks, bool) or not isinstance(chunks, (int, np.integer)) or chunks <= 0:
        raise fail(name, f"chunks must be a positive int, got {chunks!r}")
    dim = _axis(dim, x.ndim, name, "dim")
    size = x.shape[dim]
    if not _is_static(size):
        return wrap_nested(_op.split(x._expr, int(chunks), dim).astuple(), name)
    if size == 0:
        indices = [0] * (int(chunks) - 1)
    else:
        piece = -(-size // chunks)
        count = -(-size // piece)
        indices = [piece * i for i in range(1, count)]
    return wrap_nested(_op.split(x._expr, indices, dim).astuple(), name)


# -- padding, repetition, gathering, triangles --------------------------------------------------

_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
              "edge": "edge"}


def pad(x: Tensor, pad: List[int], mode: str = "constant", value: int = 0,
        name: str = "pad") -> Tensor:
    """Pad every axis of ``x``.

    Args:
        x: the tensor.
        pad: ``[before_0, after_0, before_1, after_1, ...]``: two non-negative amounts per
            axis, first axis first (the reference's order; note that ``torch.nn.functional.pad``
            lists the *last* axis first).
        mode: ``"constant"`` (fill with ``value``), ``"reflect"`` (mirror without repeating
            the edge; each amount must be smaller than the axis) or ``"replicate"``
            (``"edge"``: repeat the edge element).
        value: the fill value in constant mode (cast to ``x``'s dtype).
        name: name hint.
    """
    x = check_tensor(x, "x", name)
    amounts = list(pad)
    if len(amounts) != 2 * x.ndim:
        raise fail(name, f"pad needs two amounts per axis ({2 * x.ndim} for shape {x.shape}), "
                         f"got {amounts}")
    for amount in amounts:
        if isinstance(amount, bool) or not isinstance(amount, (int, np.integer)) or amount < 0:
            raise fail(name, f"pad amounts must be non-negative ints, got {amounts}")
    if mode not in _PAD_MODES:
        raise fail(name, f"mode must be one of {sorted(_PAD_MODES)}, got {mode!r}")
    widths = [(int(amounts[2 * i]), int(amounts[2 * i + 1])) for i in range(x.ndim)]
    if mode == "reflect":
        for axis, (size, (before, after)) in enumerate(zip(x.shape, widths)):
            if _is_static(size) and max(before, after) >= max(size, 1):
                raise fail(name, f"reflect padding of axis {axis} by ({before}, {after}) needs "
                                 f"amounts smaller than its size {size}")
    fill = E.Constant(np.array(value).astype(x.dtype))
    return wrap_nested(_op.nn.pad(x._expr, widths, fill, _PAD_MODES[mode]), name)


def repeat(x: Tensor, repeats: int, axis: Optional[int] = None, name: str = "repeat") -> Tensor:
    """Repeat each element ``repeats`` times along ``axis``, as ``numpy.repeat`` does.

    Args:
        x: the tensor.
        repeats: how many copies of each element (positive).
        axis: the axis; None flattens ``x`` first and returns a 1-D tensor.
        name: name hint.
    """
    x = check_tensor(x, "x", name)
    if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)) or repeats < 1:
        raise fail(name, f"repeats must be a positive int, got {repeats!r}")
    if axis is None:
        flat = wrap_nested(_op.reshape(x._expr, (-1,)), name)
        return wrap_nested(_op.repeat(flat._expr, int(repeats), 0), name)
    axis = _axis(axis, x.ndim, name)
    return wrap_nested(_op.repeat(x._expr, int(repeats), axis), name)


def take(x: Tensor, indices: Tensor, axis: Optional[int] = None, name: str = "take") -> Tensor:
    """Gather elements of ``x`` along ``axis`` (``numpy.take``).

    The result's shape is ``x.shape[:axis] + indices.shape + x.shape[axis + 1:]``. With
    ``axis=None`` ``x`` is read flattened (the reference requires a 1-D ``x`` there, where
    both rules agree). Out-of-range indices are clipped into range.

    Args:
        x: the source tensor.
        indices: an integer tensor.
        axis: the axis to gather along, or None.
        name: name hint.
    """
    x = check_tensor(x, "x", name)
    indices = check_tensor(indices, "indices", name)
    if not indices.dtype.startswith(("int", "uint")):
        raise fail(name, f"indices must have an integer dtype, got {indices.dtype}")
    if axis is not None:
        axis = _axis(axis, x.ndim, name)
    return wrap_nested(_op.take(x._expr, indices._expr, axis=axis), name)


def triu(x: Tensor, diagonal: int = 0, name: str = "triu") -> Tensor:
    """The upper triangle of (each matrix in) ``x``; elements below the ``diagonal``-th
    diagonal become zero.

    Args:
        x: a tensor of rank >= 2 (the last two dims are the matrix).
        diagonal: 0 keeps the main diagonal; > 0 starts above it, < 0 below it.
        name: name hint.
    """
    x = check_tensor(x, "x", name)
    if x.ndim < 2:
        raise fail(name, f"needs a tensor of rank >= 2, got shape {x.shape}")
    if isinstance(diagonal, bool) or not isinstance(diagonal, (int, np.integer)):
        raise fail(name, f"diagonal must be an int, got {diagonal!r}")
    rows, cols = x.shape[-2:]
    if _is_static(rows) and _is_static(cols):
        # A constant mask and a select: one elementwise op the fused-kernel generator inlines.
        mask = np.triu(np.ones((rows, cols), dtype=bool), int(diagonal))
        zero = E.Constant(np.zeros((), dtype=x.dtype))
        return wrap_nested(_op.where(E.Constant(mask), x._expr, zero), name)
    k = E.Constant(np.array(int(diagonal), dtype="int64"))
    return wrap_nested(_op.make_call("dyn.trilu", (x._expr, k), {"upper": True}), name)
