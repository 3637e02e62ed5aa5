"""Argument-type rules: the types of unannotated weights, from the data type and the attrs.

Relay's relations for convolutions, dense layers and normalisations assign a type to a
weight argument that has none (``reporter->Assign``), so a network can be written with bare
``relay.var("conv0_weight")`` weights. In irlib the rules live here, attached to the existing
ops by name with :meth:`~irlib.op.registry.OpDef.def_arg_types`; the type checker asks them
for the types of unknown arguments and then runs the op's type relation as usual (which
checks the result). Every rule follows the layout conventions of its op's relation::

    nn.conv2d(%x: Tensor[(1, 3, 8, 8), float32], %w, channels=4, kernel_size=[3, 3])
    /* %w : Tensor[(4, 3, 3, 3), float32]  (O, I/groups, KH, KW) in kernel_layout */

=======================  =========================================================  ==========
op                       derived argument types                                     needs
=======================  =========================================================  ==========
nn.conv1d/2d/3d          weight ``(channels, C/groups, *kernel_size)`` as O, I, ...  channels,
                         in ``kernel_layout``                                       kernel_size
nn.conv1d/2d_transpose   weight ``(C, channels/groups, *kernel_size)`` as I, O, ...  channels,
                         in ``kernel_layout`` (default ``IOW``/``IOHW``)            kernel_size
nn.dense                 weight ``(units, K)``                                      units
nn.matmul                tensor_b ``(K, units)``, ``(units, K)`` if transpose_b      units
nn.bias_add, nn.prelu    the vector ``(data.shape[axis],)``
nn.batch_norm            gamma, beta, moving_mean, moving_var ``(data.shape[axis],)``
nn.layer_norm,           gamma, beta ``(data.shape[axis],)``
nn.group_norm,
nn.instance_norm
=======================  =========================================================  ==========

``C`` is the data's channel count; derived types take the data's dtype. A rule proposes
nothing (None) while the data type or a needed attribute is missing. ``nn.batch_matmul`` has
no rule (Relay's relation needs both operands).
"""

from __future__ import annotations

from ..errors import TypeInferenceError
from ..ir.dims import floordiv
from ..ir.types import TensorType
from ._layouts import layout_positions
from ._windows import ntuple
from .registry import get_def
from .type_relations import normalize_axis

__all__ = ["conv_weight_shape", "conv_transpose_weight_shape"]

_SPATIAL = {1: "W", 2: "HW", 3: "DHW"}


def _divide(total, parts, what: str):
    """``total / parts`` for dims, or a TypeInferenceError when ints do not divide."""
    if isinstance(total, int) and isinstance(parts, int) and (parts <= 0 or total % parts):
        raise TypeInferenceError(f"{what}: {total} does not divide into groups={parts}")
    return floordiv(total, parts)


def _in_layout(sizes: dict, layout: str, canonical: str, what: str) -> tuple:
    """The shape with ``sizes[letter]`` at each letter's position in ``layout``."""
    positions = layout_positions(layout, canonical, what)
    shape = [None] * len(canonical)
    for letter, position in positions.items():
        shape[position] = sizes[letter]
    return tuple(shape)


def conv_weight_shape(name: str, n: int, data: TensorType, attrs) -> tuple:
    """The weight shape of an n-D convolution ``name``, in its ``kernel_layout``.

    Args:
        name: the op name (for messages).
        n: the number of spatial axes.
        data: the data type.
        attrs: the call's attrs (``channels`` and ``kernel_size`` must be set).

    Returns:
        ``(channels, C/groups, *kernel_size)`` permuted to the kernel layout.

    Raises:
        TypeInferenceError: for an unsupported layout or indivisible groups.
    """
    spatial = _SPATIAL[n]
    d_pos = layout_positions(attrs["data_layout"], "NC" + spatial, f"{name}: data_layout")
    if data.ndim != n + 2:
        raise TypeInferenceError(f"{name}: data must be {n + 2}-D, got {data}")
    groups = attrs["groups"]
    kernel = ntuple(attrs["kernel_size"], n, f"{name}: kernel_size")
    sizes = {"O": attrs["channels"],
             "I": _divide(data.shape[d_pos["C"]], groups, f"{name}: the data's channels")}
    sizes.update(zip(spatial, kernel))
    return _in_layout(sizes, attrs["kernel_layout"], "OI" + spatial, f"{name}: kernel_layout")


def conv_transpose_weight_shape(name: str, n: int, data: TensorType, attrs) -> tuple:
    """The weight shape of an n-D transposed convolution ``name``, in its ``kernel_layout``.

    The kernel's ``I`` axis is the data's channels and its ``O`` axis the output channels
    per group (the default ``IOHW`` layout puts the data's channels first).

    Args:
        name: the op name (for messages).
        n: the number of spatial axes.
        data: the data type.
        attrs: the call's attrs (``channels`` and ``kernel_size`` must be set).

    Returns:
        ``(C, channels/groups, *kernel_size)`` as ``I, O, *spatial`` in the kernel layout.

    Raises:
        TypeInferenceError: for an unsupported layout or indivisible groups.
    """
    spatial = _SPATIAL[n]
    d_pos = layout_positions(attrs["data_layout"], "NC" + spatial, f"{name}: data_layout")
    if data.ndim != n + 2:
        raise TypeInferenceError(f"{name}: data must be {n + 2}-D, got {data}")
    kernel = ntuple(attrs["kernel_size"], n, f"{name}: kernel_size")
    sizes = {"I": data.shape[d_pos["C"]],
             "O": _divide(attrs["channels"], attrs["groups"], f"{name}: channels")}
    sizes.update(zip(spatial, kernel))
    return _in_layout(sizes, attrs["kernel_layout"], "OI" + spatial, f"{name}: kernel_layout")


def _data_tensor(arg_types):
    data = arg_types[0]
    return data if isinstance(data, TensorType) else None


def _weight_rule(name: str, n: int, shape_fn):
    def rule(arg_types, attrs):
        data = _data_tensor(arg_types)
        if data is None or attrs["channels"] is None or attrs["kernel_size"] is None:
            return [None, None]
        return [None, TensorType(shape_fn(name, n, data, attrs), data.dtype)]
    return rule


def _dense_rule(arg_types, attrs):
    data = _data_tensor(arg_types)
    if data is None or attrs["units"] is None:
        return [None, None]
    if data.ndim < 1:
        raise TypeInferenceError(f"nn.dense: data must have rank >= 1, got {data}")
    return [None, TensorType((attrs["units"], data.shape[-1]), data.dtype)]


def _matmul_rule(arg_types, attrs):
    a = _data_tensor(arg_types)
    if a is None or attrs["units"] is None:
        return [None, None]
    if a.ndim < 1 or (attrs["transpose_a"] and a.ndim != 2):
        raise TypeInferenceError(f"nn.matmul: tensor_a must be at least 1-D (2-D when "
                                 f"transpose_a), got {a}")
    reduced = a.shape[0] if attrs["transpose_a"] else a.shape[-1]
    units = attrs["units"]
    shape = (units, reduced) if attrs["transpose_b"] else (reduced, units)
    return [None, TensorType(shape, a.dtype)]


def _channel_vectors(name: str, count: int):
    """A rule giving ``count`` arguments after the data the type ``(data.shape[axis],)``."""
    def rule(arg_types, attrs):
        data = _data_tensor(arg_types)
        if data is None:
            return [None] * (count + 1)
        axis = normalize_axis(attrs["axis"], data.ndim, f"{name}: axis")
        return [None] + [TensorType((data.shape[axis],), data.dtype)] * count
    return rule


def _register() -> None:
    conv_needs = ("channels", "kernel_size")
    for name, n in (("nn.conv1d", 1), ("nn.conv2d", 2), ("nn.conv3d", 3)):
        get_def(name).def_arg_types(_weight_rule(name, n, conv_weight_shape), needs=conv_needs)
    for name, n in (("nn.conv1d_transpose", 1), ("nn.conv2d_transpose", 2)):
        get_def(name).def_arg_types(_weight_rule(name, n, conv_transpose_weight_shape),
                                    needs=conv_needs)
    get_def("nn.dense").def_arg_types(_dense_rule, needs=("units",))
    get_def("nn.matmul").def_arg_types(_matmul_rule, needs=("units",))
    for name, count in (("nn.bias_add", 1), ("nn.prelu", 1), ("nn.batch_norm", 4),
                        ("nn.layer_norm", 2), ("nn.group_norm", 2), ("nn.instance_norm", 2)):
        get_def(name).def_arg_types(_channel_vectors(name, count))


_register()
