"""Rearranging space and depth: ``nn.depth_to_space`` and ``nn.space_to_depth``.

Before/after in the text format::

    nn.depth_to_space(%x, block_size=2)        /* Tensor[(1, 8, 3, 3), float32] */
    -> Tensor[(1, 2, 6, 6), float32]
"""

from __future__ import annotations


from ..errors import TypeInferenceError
from ..ir.types import TensorType
from ._composite import arg_types, call_op as _call, composite_grad
from ._layouts import from_canonical, layout_positions, to_canonical
from .registry import OpPattern, make_call, register_op
from .type_relations import expect_tensor

__all__ = ["depth_to_space", "space_to_depth"]


# -- depth_to_space / space_to_depth -------------------------------------------------------------

def _d2s_plan(shape, block, mode):
    """(reshape, transpose, final shape) of depth_to_space on an NCHW shape."""
    n, c, h, w = shape
    depth = c // (block * block)
    if mode == "DCR":
        return ((n, block, block, depth, h, w), (0, 3, 4, 1, 5, 2),
                (n, depth, h * block, w * block))
    return ((n, depth, block, block, h, w), (0, 1, 4, 2, 5, 3), (n, depth, h * block, w * block))


def _s2d_plan(shape, block):
    n, c, h, w = shape
    return ((n, c, h // block, block, w // block, block), (0, 3, 5, 1, 2, 4),
            (n, c * block * block, h // block, w // block))


def _space_rel(name: str):
    def relation(types, attrs):
        data = expect_tensor(types[0], f"{name}: data")
        if data.ndim != 4:
            raise TypeInferenceError(f"{name}: data must be 4-D, got {data}")
        pos = layout_positions(attrs["layout"], "NCHW", f"{name}: layout")
        block = attrs["block_size"]
        if not isinstance(block, int) or block < 1:
            raise TypeInferenceError(f"{name}: block_size must be a positive int, got {block!r}")
        n, c, h, w = (data.shape[pos[letter]] for letter in "NCHW")
        if name == "nn.depth_to_space":
            if attrs["mode"] not in ("DCR", "CRD"):
                raise TypeInferenceError(f"{name}: mode must be 'DCR' or 'CRD', got "
                                         f"{attrs['mode']!r}")
            if isinstance(c, int) and c % (block * block):
                raise TypeInferenceError(f"{name}: {c} channels are not divisible by "
                                         f"block_size**2 = {block * block}")
            dims = {"N": n, "C": c // (block * block), "H": h * block, "W": w * block}
        else:
            for size in (h, w):
                if isinstance(size, int) and size % block:
                    raise TypeInferenceError(f"{name}: spatial size {size} is not divisible "
                                             f"by block_size={block}")
            dims = {"N": n, "C": c * block * block, "H": h // block, "W": w // block}
        shape = [None] * 4
        for letter, position in pos.items():
            shape[position] = dims[letter]
        return TensorType(shape, data.dtype)
    return relation


def _space_ref(to_depth: bool):
    def reference(data, block_size, layout="NCHW", mode="DCR"):
        x = to_canonical(data, layout, "NCHW")
        if to_depth:
            reshape, perm, final = _s2d_plan(x.shape, block_size)
        else:
            reshape, perm, final = _d2s_plan(x.shape, block_size, mode)
        out = x.reshape(reshape).transpose(perm).reshape(final)
        return (from_canonical(out, "NCHW", layout),)
    return reference


def _space_forward(to_depth: bool):
    def forward(data, block_size, layout="NCHW", mode="DCR"):
        shape = tuple(arg_types([data], "nn.depth_to_space")[0].shape)
        nchw = tuple(shape[layout.index(c)] for c in "NCHW")
        if to_depth:
            reshape, perm, final = _s2d_plan(nchw, block_size)
        else:
            reshape, perm, final = _d2s_plan(nchw, block_size, mode)
        x = _call("transpose", data, axes=tuple(layout.index(c) for c in "NCHW"))
        x = _call("reshape", x, newshape=reshape, allowzero=False)
        x = _call("reshape", _call("transpose", x, axes=perm), newshape=final, allowzero=False)
        return _call("transpose", x, axes=tuple("NCHW".index(c) for c in layout))
    return forward


_D2S = register_op("nn.depth_to_space", ("data",),
                   attrs=("relay.attrs.SubPixelAttrs", [("block_size", 1), ("layout", "NCHW"),
                                                        ("mode", "DCR")]),
                   type_rel=_space_rel("nn.depth_to_space"), pattern=OpPattern.INJECTIVE,
                   description="move channel blocks into spatial blocks (mode DCR or CRD)")
_D2S.def_impl(_space_ref(False))
_D2S.def_grad(composite_grad(_space_forward(False)))
_S2D = register_op("nn.space_to_depth", ("data",),
                   attrs=("relay.attrs.SubPixelAttrs", [("block_size", 1), ("layout", "NCHW"),
                                                        ("mode", "DCR")]),
                   type_rel=_space_rel("nn.space_to_depth"), pattern=OpPattern.INJECTIVE,
                   description="move spatial blocks into channels")
_S2D.def_impl(_space_ref(True))
_S2D.def_grad(composite_grad(_space_forward(True)))


def depth_to_space(data, block_size, layout="NCHW", mode="DCR"):
    """Rearrange channel blocks into spatial blocks (``relay.nn.depth_to_space``).

    Args:
        data: 4-D input in ``layout`` (a permutation of ``NCHW``).
        block_size: the spatial block edge.
        layout: the data layout.
        mode: ``"DCR"`` (depth-column-row, ONNX default) or ``"CRD"``.

    Returns:
        A Call of ``nn.depth_to_space``.
    """
    return make_call("nn.depth_to_space", (data,), {"block_size": int(block_size),
                                                    "layout": layout, "mode": mode})


def space_to_depth(data, block_size, layout="NCHW"):
    """Rearrange spatial blocks into channels (``relay.nn.space_to_depth``), the inverse of
    ``depth_to_space`` in DCR mode.

    Args:
        data: the 4-D input.
        block_size: the side of the spatial blocks.
        layout: ``"NCHW"`` or ``"NHWC"``.

    Returns:
        A Call of ``nn.space_to_depth``.
    """
    return make_call("nn.space_to_depth", (data,), {"block_size": int(block_size),
                                                    "layout": layout})
