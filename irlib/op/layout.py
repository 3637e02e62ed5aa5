"""``layout_transform``: convert a tensor between data layouts, including packed ones.

A layout names each axis with a letter: upper case for a whole (primal) axis, and a number
followed by the lower-case letter for an inner block of that axis. ``NCHW16c`` splits ``C``
into ``C // 16`` outer blocks (axis ``C``) and an inner axis of 16 (``16c``).

Before/after in the text format::

    layout_transform(%x, src_layout="NCHW", dst_layout="NCHW16c")   /* x: (1, 32, 8, 8) */
    -> Tensor[(1, 2, 8, 8, 16), float32]
"""

from __future__ import annotations

import re

import numpy as np

from ..errors import TypeInferenceError
from ..ir.dims import AnyDim
from ..ir.types import TensorType
from .registry import OpPattern, make_call, register_op
from .type_relations import dim_mul, expect_tensor

__all__ = ["layout_transform"]

_TOKEN = re.compile(r"(\d*)([A-Za-z])")


def parse_layout(layout: str) -> list:
    """``[(letter, factor)]`` per axis: factor None for a primal axis, an int for a block.

    Raises:
        TypeInferenceError: on a malformed layout.
    """
    tokens = []
    position = 0
    for match in _TOKEN.finditer(layout):
        if match.start() != position:
            break
        digits, letter = match.groups()
        if letter.isupper() == bool(digits):
            raise TypeInferenceError(f"layout {layout!r}: a primal axis is one capital letter, "
                                     f"a block axis is a number and a lower-case letter")
        tokens.append((letter, int(digits) if digits else None))
        position = match.end()
    letters = [letter for letter, _ in tokens]
    if position != len(layout) or not layout or len(set(letters)) != len(letters):
        raise TypeInferenceError(f"layout {layout!r} is malformed")
    for letter, factor in tokens:
        if factor is not None and letter.upper() not in letters:
            raise TypeInferenceError(f"layout {layout!r}: block axis {letter} has no primal "
                                     f"axis {letter.upper()}")
    return tokens


def _blocks(tokens) -> dict:
    return {letter.upper(): factor for letter, factor in tokens if factor is not None}


def _primal_sizes(shape, tokens) -> dict:
    blocks = _blocks(tokens)
    sizes = {}
    for (letter, factor), dim in zip(tokens, shape):
        if factor is None:
            sizes[letter] = dim_mul(dim, blocks.get(letter, 1))
    return sizes


def _check_pair(data_ndim, src, dst, src_layout, dst_layout):
    if len(src) != data_ndim:
        raise TypeInferenceError(f"layout_transform: src_layout {src_layout!r} has {len(src)} "
                                 f"axes but data has rank {data_ndim}")
    primal_src = sorted(letter for letter, factor in src if factor is None)
    primal_dst = sorted(letter for letter, factor in dst if factor is None)
    if primal_src != primal_dst:
        raise TypeInferenceError(f"layout_transform: {src_layout!r} and {dst_layout!r} do not "
                                 f"have the same primal axes")


def _layout_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "layout_transform: data")
    src = parse_layout(attrs["src_layout"])
    dst = parse_layout(attrs["dst_layout"])
    _check_pair(data.ndim, src, dst, attrs["src_layout"], attrs["dst_layout"])
    primal = _primal_sizes(data.shape, src)
    blocks = _blocks(dst)
    shape = []
    for letter, factor in dst:
        if factor is not None:
            shape.append(factor)
            continue
        size = primal[letter]
        block = blocks.get(letter, 1)
        if isinstance(size, int) and size % block:
            raise TypeInferenceError(f"layout_transform: axis {letter} of size {size} does not "
                                     f"split into blocks of {block}")
        shape.append(size if isinstance(size, AnyDim) else size // block)
    return TensorType(shape, data.dtype)


def _layout_ref(data, src_layout, dst_layout):
    src = parse_layout(src_layout)
    dst = parse_layout(dst_layout)
    letters = [letter for letter, _ in src]
    # 1. Unpack to primal axes, in src's primal order.
    primal_order = [letter for letter, factor in src if factor is None]
    axes = []
    for letter in primal_order:
        axes.append(letters.index(letter))
        if letter.lower() in letters:
            axes.append(letters.index(letter.lower()))
    sizes = _primal_sizes(data.shape, src)
    primal = np.transpose(data, axes).reshape([sizes[letter] for letter in primal_order])
    # 2. Split the blocked axes of dst and move every axis into dst's order.
    blocks = _blocks(dst)
    expanded, names = [], []
    for letter in primal_order:
        if letter in blocks:
            expanded += [sizes[letter] // blocks[letter], blocks[letter]]
            names += [letter, letter.lower()]
        else:
            expanded.append(sizes[letter])
            names.append(letter)
    split = primal.reshape(expanded)
    return (np.ascontiguousarray(np.transpose(split, [names.index(letter)
                                                      for letter, _ in dst])),)


_LAYOUT_TRANSFORM = register_op(
    "layout_transform", ("data",),
    attrs=("relay.attrs.LayoutTransformAttrs", [("src_layout", ""), ("dst_layout", "")]),
    type_rel=_layout_rel, pattern=OpPattern.INJECTIVE,
    description="move data between layouts (e.g. NCHW <-> NHWC <-> NCHW16c)")
_LAYOUT_TRANSFORM.def_impl(_layout_ref)
_LAYOUT_TRANSFORM.def_grad(lambda call, out_grad: [
    layout_transform(out_grad, call.attrs["dst_layout"], call.attrs["src_layout"])])


def layout_transform(data, src_layout, dst_layout):
    """Convert ``data`` from ``src_layout`` to ``dst_layout``.

    Args:
        data: the input tensor, laid out as ``src_layout``.
        src_layout: e.g. ``"NCHW"``.
        dst_layout: e.g. ``"NHWC"`` or ``"NCHW16c"``.

    Returns:
        A Call of ``layout_transform``.
    """
    return make_call("layout_transform", (data,), {"src_layout": src_layout,
                                                   "dst_layout": dst_layout})
