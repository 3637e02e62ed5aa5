"""``nn.pad``: pad a tensor (constant, edge or reflect), with its gradient.

Before/after in the text format::

    nn.pad(%x, 0f, pad_width=[[0, 0], [1, 2]])   /* x: (2, 3) */ -> Tensor[(2, 6), float32]
"""

from __future__ import annotations

import numpy as np

from ..errors import GradientError, TypeInferenceError
from ..ir.expr import Expr, Tuple, const
from ..ir.types import TensorType
from . import reduce as _reduce
from . import tensor as _tensor
from ._composite import arg_types, composite_grad
from .indexing import strided_slice
from .registry import OpPattern, make_call, register_op
from .type_relations import dim_add, expect_tensor

__all__ = ["pad"]


# -- pad ------------------------------------------------------------------------------------------

_PAD_MODES = {"constant": "constant", "edge": "edge", "reflect": "reflect"}


def _pad_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.pad: data")
    value = expect_tensor(arg_types[1], "nn.pad: pad_value")
    widths = attrs["pad_width"]
    if value.ndim != 0:
        raise TypeInferenceError(f"nn.pad: pad_value must be a scalar, got {value}")
    if len(widths) != data.ndim or any(len(w) != 2 for w in widths):
        raise TypeInferenceError(f"nn.pad: pad_width needs one (before, after) pair per axis "
                                 f"({data.ndim}), got {widths}")
    if attrs["pad_mode"] not in _PAD_MODES:
        raise TypeInferenceError(f"nn.pad: pad_mode must be one of {sorted(_PAD_MODES)}, got "
                                 f"{attrs['pad_mode']!r}")
    return TensorType([dim_add(d, before, after) for d, (before, after) in zip(data.shape, widths)],
                      data.dtype)


_PAD = register_op("nn.pad", ("data", "pad_value"),
                   attrs=("relay.attrs.PadAttrs", [("pad_width", None),
                                                   ("pad_mode", "constant")]),
                   type_rel=_pad_rel, pattern=OpPattern.INJECTIVE,
                   description="pad each axis with (before, after) elements")


@_PAD.def_impl
def _pad_ref(data, pad_value, pad_width, pad_mode="constant"):
    if pad_mode == "constant":
        return (np.pad(data, pad_width, mode="constant",
                       constant_values=pad_value.astype(data.dtype)),)
    return (np.pad(data, pad_width, mode=_PAD_MODES[pad_mode]),)


@_PAD.def_grad
def _pad_grad(call, out_grad):
    if call.attrs["pad_mode"] != "constant":
        return _pad_copy_grad(call, out_grad)
    widths = call.attrs["pad_width"]
    begin = [before for before, _ in widths]
    end = [-after if after else 2 ** 31 - 1 for _, after in widths]
    inner = strided_slice(out_grad, begin, end)
    # The pad value appears everywhere outside the data: its adjoint is the rest of the sum.
    border = _tensor.subtract(_reduce.sum(out_grad), _reduce.sum(inner))
    return [inner, _tensor.cast_like(border, call.args[1])]


def _pad_copy_forward(data, pad_value, pad_width, pad_mode):
    """Edge/reflect padding as slices of the data concatenated onto it, axis by axis."""
    from ._composite import arg_types
    from ..ir.expr import Tuple
    shape = list(arg_types([data], "nn.pad")[0].shape)
    out = data
    for axis, (before, after) in enumerate(pad_width):
        size = shape[axis]
        if not (before or after):
            continue
        if not isinstance(size, int):
            raise GradientError("the gradient of edge/reflect nn.pad needs static sizes")

        def piece(start, stop, reverse_it):
            part = strided_slice(out, [start], [stop], [1], axes=[axis])
            return make_call("reverse", (part,), {"axis": axis}) if reverse_it else part

        pieces = []
        if before:
            pieces.append(make_call("repeat", (piece(0, 1, False),),
                                    {"repeats": before, "axis": axis})
                          if pad_mode == "edge" else piece(1, before + 1, True))
        pieces.append(out)
        if after:
            pieces.append(make_call("repeat", (piece(size - 1, size, False),),
                                    {"repeats": after, "axis": axis})
                          if pad_mode == "edge" else piece(size - 1 - after, size - 1, True))
        out = make_call("concatenate", (Tuple(pieces),), {"axis": axis})
        shape[axis] = size + before + after
    return out


def _pad_copy_grad(call, out_grad):
    from ._composite import composite_grad
    return composite_grad(_pad_copy_forward)(call, out_grad)


def pad(data, pad_width, pad_value=0.0, pad_mode="constant"):
    """Pad ``data`` by ``pad_width[i] = (before, after)`` along each axis.

    Args:
        data: the input tensor.
        pad_width: one ``(before, after)`` pair per axis.
        pad_value: a number or a scalar expression (for ``"constant"`` mode).
        pad_mode: ``"constant"``, ``"edge"`` or ``"reflect"``.

    Returns:
        A Call of ``nn.pad``.
    """
    if not isinstance(pad_value, Expr):
        pad_value = const(pad_value)
    widths = tuple((int(before), int(after)) for before, after in pad_width)
    return make_call("nn.pad", (data, pad_value), {"pad_width": widths, "pad_mode": pad_mode})
