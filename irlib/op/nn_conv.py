"""Convolutions: ``nn.conv1d``/``conv2d``/``conv3d`` and their transposes
``nn.conv1d_transpose``/``conv2d_transpose``/``conv3d_transpose``.

One definition serves all six ops, parameterised by the number of spatial axes ``n`` and by
whether the op is the transpose: the attribute schema (:func:`conv_fields`), the type relation
(:func:`conv_rel`, :func:`conv_transpose_rel`), the numpy reference (:func:`conv_ref`,
:func:`conv_transpose_ref`) and the builder. The gradient rules (each built from 2-D ops) are
in :mod:`irlib.op.nn_conv_grad`.

Before/after in the text format::

    nn.conv2d(%x, %w, padding=[1, 1, 1, 1])    /* x: (1, 3, 8, 8), w: (4, 3, 3, 3) */
    -> Tensor[(1, 4, 8, 8), float32]
    nn.conv1d(%x, %w, padding=[1, 1])          /* x: (1, 3, 8), w: (4, 3, 3) */
    -> Tensor[(1, 4, 8), float32]
    nn.conv3d_transpose(%x, %w, strides=[2, 2, 2])   /* x: (1, 4, 3, 3, 3), w: (4, 2, 3, 3, 3) */
    -> Tensor[(1, 2, 7, 7, 7), float32]

Layouts are permutations of ``NC`` + the spatial letters (``NCW``, ``NCHW``, ``NCDHW``) for
data and output, and of ``OI`` + spatial letters for a kernel (``IO`` + spatial letters by
default for a transpose, so a convolution's weight is directly the weight of its transpose).
Padding is normalised to ``2 * n`` ints: all "before" amounts, then all "after" amounts
(Relay's ``(top, left, bottom, right)`` in 2-D). ``groups`` splits channels; ``groups ==
channels`` is a depthwise convolution. The reference is im2col plus one batched matmul per
group; a transpose runs the equivalent forward convolution (I/O swapped in each group, kernel
flipped) over the stride-dilated input. A transpose's output extent is ``(in - 1) * stride -
pad_before - pad_after + dilation * (kernel - 1) + 1 + output_padding``.
"""

from __future__ import annotations

import numpy as np

from ..errors import TypeInferenceError
from ..ir.dims import Any, AnyDim
from ..ir.types import TensorType, normalize_dtype
from ._layouts import from_canonical, layout_positions, to_canonical
from ._windows import conv_out_size, ntuple, pad_n, padding_n, window_geometry, windows_n
from .registry import OpPattern, make_call, register_op
from .type_relations import dims_differ, expect_tensor

__all__ = ["conv1d", "conv2d", "conv3d", "conv1d_transpose", "conv2d_transpose",
           "conv3d_transpose"]

SPATIAL = {1: "W", 2: "HW", 3: "DHW"}
"""The spatial layout letters of an ``n``-D convolution."""


def conv_fields(n: int, transpose: bool) -> list:
    """The attribute schema (``(field, default)`` pairs, Relay's order) of the ``n``-D
    convolution or, with ``transpose``, of its transpose."""
    spatial = SPATIAL[n]
    geometry = [("strides", (1,) * n), ("padding", (0,) * (2 * n)), ("dilation", (1,) * n)]
    layouts = [("data_layout", "NC" + spatial),
               ("kernel_layout", ("IO" if transpose else "OI") + spatial),
               ("out_layout", ""), ("out_dtype", "")]
    if transpose:
        return ([("channels", None), ("kernel_size", None), geometry[0],
                 ("output_padding", (0,) * n)] + geometry[1:] + [("groups", 1)] + layouts)
    return geometry + [("groups", 1), ("channels", None), ("kernel_size", None)] + layouts


def _out_dtype(attrs, data: TensorType) -> str:
    return normalize_dtype(attrs["out_dtype"]) if attrs["out_dtype"] else data.dtype


def _check_kernel_attrs(name: str, n: int, attrs, out_channels, kernel) -> None:
    channels = attrs["channels"]
    if channels is not None and dims_differ(channels, out_channels):
        raise TypeInferenceError(f"{name}: channels={channels} but weight has {out_channels} "
                                 f"output channels")
    if attrs["kernel_size"] is not None:
        expected = ntuple(attrs["kernel_size"], n, f"{name}: kernel_size")
        if any(dims_differ(a, b) for a, b in zip(expected, kernel)):
            raise TypeInferenceError(f"{name}: kernel_size={expected} but weight has spatial "
                                     f"size {tuple(kernel)}")


class _Operands:
    """The checked data/weight types of a convolution call and their layout positions."""

    def __init__(self, name: str, n: int, arg_types, attrs):
        spatial = SPATIAL[n]
        self.data = expect_tensor(arg_types[0], f"{name}: data")
        self.weight = expect_tensor(arg_types[1], f"{name}: weight")
        self.d_pos = layout_positions(attrs["data_layout"], "NC" + spatial,
                                      f"{name}: data_layout")
        # IO... is OI...'s letters in another order; layout_positions only needs the set.
        self.k_pos = layout_positions(attrs["kernel_layout"], "OI" + spatial,
                                      f"{name}: kernel_layout")
        self.o_pos = layout_positions(attrs["out_layout"] or attrs["data_layout"],
                                      "NC" + spatial, f"{name}: out_layout")
        if self.data.ndim != n + 2 or self.weight.ndim != n + 2:
            raise TypeInferenceError(f"{name}: data and weight must be {n + 2}-D, got "
                                     f"{self.data} and {self.weight}")
        self.kernel = tuple(self.weight.shape[self.k_pos[c]] for c in spatial)

    def data_dim(self, letter: str):
        """The data's extent along layout letter ``letter``."""
        return self.data.shape[self.d_pos[letter]]

    def weight_dim(self, letter: str):
        """The weight's extent along layout letter ``letter``."""
        return self.weight.shape[self.k_pos[letter]]

    def output(self, dims: dict, attrs) -> TensorType:
        """The result type: ``dims`` (letter -> extent) in the output layout."""
        shape = [None] * len(dims)
        for letter, position in self.o_pos.items():
            shape[position] = dims[letter]
        return TensorType(shape, _out_dtype(attrs, self.data))


def conv_rel(name: str, n: int):
    """The type relation of ``name``, the ``n``-D convolution."""
    spatial = SPATIAL[n]

    def relation(arg_types, attrs):
        ops = _Operands(name, n, arg_types, attrs)
        groups = attrs["groups"]
        in_channels, out_channels, per_group = (ops.data_dim("C"), ops.weight_dim("O"),
                                                ops.weight_dim("I"))
        if dims_differ(in_channels, per_group * groups):
            raise TypeInferenceError(f"{name}: data has {in_channels} input channels but "
                                     f"weight expects {per_group * groups} ({per_group} per "
                                     f"group x groups={groups})")
        if isinstance(out_channels, int) and out_channels % groups:
            raise TypeInferenceError(f"{name}: weight's {out_channels} output channels do not "
                                     f"divide into groups={groups}")
        _check_kernel_attrs(name, n, attrs, out_channels, ops.kernel)
        strides, dilation, pads = window_geometry(attrs, n, name)
        dims = {"N": ops.data_dim("N"), "C": out_channels}
        for i, letter in enumerate(spatial):
            size = conv_out_size(ops.data_dim(letter), ops.kernel[i], strides[i], dilation[i],
                                 pads[i], pads[n + i])
            if isinstance(size, int) and size <= 0:
                raise TypeInferenceError(f"{name}: kernel {ops.kernel} (dilation {dilation}) "
                                         f"is larger than the padded input {ops.data}")
            dims[letter] = size
        return ops.output(dims, attrs)
    return relation


def conv_transpose_rel(name: str, n: int):
    """The type relation of ``name``, the transposed ``n``-D convolution.

    ``Any`` in an input or kernel extent gives ``Any`` in the output.
    """
    spatial = SPATIAL[n]

    def relation(arg_types, attrs):
        ops = _Operands(name, n, arg_types, attrs)
        groups = attrs["groups"]
        if dims_differ(ops.data_dim("C"), ops.weight_dim("I")):
            raise TypeInferenceError(f"{name}: data has {ops.data_dim('C')} channels but "
                                     f"weight expects {ops.weight_dim('I')}")
        out_channels = ops.weight_dim("O") * groups
        _check_kernel_attrs(name, n, attrs, out_channels, ops.kernel)
        strides, dilation, pads = window_geometry(attrs, n, name)
        extra = ntuple(attrs["output_padding"], n, f"{name}: output_padding")
        dims = {"N": ops.data_dim("N"), "C": out_channels}
        for i, letter in enumerate(spatial):
            kernel, size = ops.kernel[i], ops.data_dim(letter)
            if isinstance(size, AnyDim) or isinstance(kernel, AnyDim):  # no arithmetic on Any
                dims[letter] = Any
                continue
            size = ((size - 1) * strides[i] - pads[i] - pads[n + i]
                    + dilation[i] * (kernel - 1) + 1 + extra[i])
            if isinstance(size, int) and size <= 0:
                raise TypeInferenceError(f"{name}: padding {pads} leaves no output along "
                                         f"{letter}")
            dims[letter] = size
        return ops.output(dims, attrs)
    return relation


def conv_nd(data, weight, strides, padding, dilation, groups) -> np.ndarray:
    """Convolution of ``(N, C, *S)`` data with ``(O, C/groups, *K)`` weight (im2col and one
    batched matmul per group); ``padding`` is ``2n`` ints, befores then afters.

    Args:
        data: the input array.
        weight: the weight array.
        strides: the stride per spatial axis.
        padding: the padding, ``2n`` ints.
        dilation: the dilation per spatial axis.
        groups: the channel groups.
    """
    n = data.ndim - 2
    batch = data.shape[0]
    out_channels, per_group = weight.shape[:2]
    kernel = weight.shape[2:]
    out = tuple(conv_out_size(data.shape[2 + i], kernel[i], strides[i], dilation[i],
                              padding[i], padding[n + i]) for i in range(n))
    view = windows_n(pad_n(data, padding), kernel, strides, dilation, out)
    out_count, kernel_count = int(np.prod(out)), int(np.prod(kernel))
    view = view.reshape((batch, groups, per_group) + out + kernel)
    # -> (N, G, prod(out), I * prod(kernel)): the im2col matrix per group.
    perm = (0, 1) + tuple(range(3, 3 + n)) + (2,) + tuple(range(3 + n, 3 + 2 * n))
    columns = view.transpose(perm).reshape(batch, groups, out_count, per_group * kernel_count)
    matrix = weight.reshape(groups, out_channels // groups, per_group * kernel_count)
    result = np.matmul(columns, matrix.transpose(0, 2, 1))
    return result.transpose(0, 1, 3, 2).reshape((batch, out_channels) + out)


def conv_transpose_nd(data, weight, strides, padding, dilation, groups, output_padding):
    """Transposed convolution of ``(N, C, *S)`` data with ``(C, O/groups, *K)`` weight.

    Args:
        data: the input array.
        weight: the weight array.
        strides: the stride per spatial axis.
        padding: the padding removed from the output, ``2n`` ints (befores, then afters).
        dilation: the dilation per spatial axis.
        groups: the channel groups.
        output_padding: extra output length at the end of each spatial axis.
    """
    n = data.ndim - 2
    in_channels, per_group_out = weight.shape[:2]
    kernel = weight.shape[2:]
    # The equivalent forward kernel: swap I/O within each group and flip spatially.
    forward = weight.reshape((groups, in_channels // groups, per_group_out) + kernel)
    forward = forward.swapaxes(1, 2)[(Ellipsis,) + (slice(None, None, -1),) * n]
    forward = np.ascontiguousarray(forward.reshape((groups * per_group_out,
                                                    in_channels // groups) + kernel))
    dilated_shape = data.shape[:2] + tuple((s - 1) * st + 1 for s, st in zip(data.shape[2:],
                                                                           strides))
    dilated = np.zeros(dilated_shape, data.dtype)
    dilated[(slice(None),) * 2 + tuple(slice(None, None, st) for st in strides)] = data
    reach = [d * (k - 1) for d, k in zip(dilation, kernel)]
    pads = ([reach[i] - padding[i] for i in range(n)]
            + [reach[i] - padding[n + i] + output_padding[i] for i in range(n)])
    return conv_nd(pad_n(dilated, pads), forward, (1,) * n, (0,) * (2 * n), dilation, groups)


def conv_ref(n: int, transpose: bool = False):
    """The numpy implementation of the ``n``-D convolution op (or its transpose), any
    layouts."""
    spatial = SPATIAL[n]
    kernel_canonical = ("IO" if transpose else "OI") + spatial

    def implementation(data, weight, **attrs):
        x = to_canonical(data, attrs["data_layout"], "NC" + spatial)
        w = to_canonical(weight, attrs["kernel_layout"], kernel_canonical)
        strides, dilation, pads = window_geometry(attrs, n)
        geometry = (strides, pads, dilation, attrs["groups"])
        if transpose:
            out = conv_transpose_nd(x, w, *geometry,
                                    ntuple(attrs["output_padding"], n, "output_padding"))
        else:
            out = conv_nd(x, w, *geometry)
        out = from_canonical(out, "NC" + spatial, attrs["out_layout"] or attrs["data_layout"])
        return (out.astype(_out_dtype(attrs, data), copy=False),)
    return implementation


def conv_transpose_ref(n: int):
    """The numpy implementation of the transposed ``n``-D convolution op (any layouts)."""
    return conv_ref(n, transpose=True)


def conv_attrs(n: int, strides, padding, dilation, groups, channels, kernel_size,
               data_layout, kernel_layout, out_layout, out_dtype,
               output_padding=None) -> dict:
    """The normalised attributes of an ``n``-D (transposed) convolution call.

    Args:
        n: the number of spatial axes.
        strides, padding, dilation, groups, channels, kernel_size, data_layout,
            kernel_layout, out_layout, out_dtype: as the builders take them.
        output_padding: a transposed convolution's extra output length, else None.

    Raises:
        TypeInferenceError: when a tuple attribute has the wrong length.
    """
    attrs = {"strides": ntuple(strides, n, "strides"), "padding": padding_n(padding, n),
             "dilation": ntuple(dilation, n, "dilation"), "groups": int(groups),
             "channels": channels,
             "kernel_size": None if kernel_size is None else ntuple(kernel_size, n,
                                                                   "kernel_size"),
             "data_layout": data_layout, "kernel_layout": kernel_layout,
             "out_layout": out_layout}
    if output_padding is not None:
        attrs["output_padding"] = ntuple(output_padding, n, "output_padding")
    attrs["out_dtype"] = out_dtype
    return attrs


def _register(n: int, transpose: bool):
    name = f"nn.conv{n}d" + ("_transpose" if transpose else "")
    key = f"relay.attrs.Conv{n}D" + ("Transpose" if transpose else "") + "Attrs"
    op_def = register_op(name, ("data", "weight"), attrs=(key, conv_fields(n, transpose)),
                         type_rel=(conv_transpose_rel if transpose else conv_rel)(name, n),
                         pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                         description=("transposed " if transpose else "") + f"{n}-D convolution",
                         support_level=2)
    op_def.def_impl(conv_ref(n, transpose))
    return op_def


_OPS = {(n, transpose): _register(n, transpose) for n in (1, 2, 3) for transpose in (False, True)}


@_OPS[2, False].def_layout
def _conv2d_layout(attrs, desired_layouts):
    """Attrs of the same convolution with the data (and kernel) in the desired layouts.

    Args:
        attrs: the call's Conv2DAttrs.
        desired_layouts: a data layout (``"NHWC"``), or ``[data, kernel]`` where the kernel
            may be ``"default"`` (``OIHW`` for ``NCHW``, ``HWIO`` for ``NHWC``).
    """
    if isinstance(desired_layouts, str):
        desired_layouts = (desired_layouts, "default")
    data_layout, kernel_layout = desired_layouts
    if kernel_layout == "default":
        kernel_layout = {"NCHW": "OIHW", "NHWC": "HWIO"}.get(data_layout, "OIHW")
    return attrs.with_changes(data_layout=data_layout, kernel_layout=kernel_layout)


def _builder(n: int, transpose: bool):
    name = f"nn.conv{n}d" + ("_transpose" if transpose else "")
    spatial = SPATIAL[n]
    defaults = dict(conv_fields(n, transpose))

    if transpose:
        def builder(data, weight, strides=(1,) * n, padding=(0,) * n, dilation=(1,) * n,
                    groups=1, channels=None, kernel_size=None,
                    data_layout=defaults["data_layout"], kernel_layout=defaults["kernel_layout"],
                    out_layout="", output_padding=(0,) * n, out_dtype=""):
            return make_call(name, (data, weight), conv_attrs(
                n, strides, padding, dilation, groups, channels, kernel_size, data_layout,
                kernel_layout, out_layout, out_dtype, output_padding))
    else:
        def builder(data, weight, strides=(1,) * n, padding=(0,) * n, dilation=(1,) * n,
                    groups=1, channels=None, kernel_size=None,
                    data_layout=defaults["data_layout"], kernel_layout=defaults["kernel_layout"],
                    out_layout="", out_dtype=""):
            return make_call(name, (data, weight), conv_attrs(
                n, strides, padding, dilation, groups, channels, kernel_size, data_layout,
                kernel_layout, out_layout, out_dtype))
    builder.__name__ = builder.__qualname__ = name.split(".")[-1]
    kernel_letters = ", ".join("K" + c for c in spatial)
    weight_shape = (f"(C_in, C_out/groups, {kernel_letters})" if transpose
                    else f"(O, C/groups, {kernel_letters})")
    builder.__doc__ = f"""{'Transposed ' if transpose else ''}{n}-D convolution (``relay.{name}``).

    Args:
        data: the input, ``(N, C, {', '.join(spatial)})`` in ``data_layout``.
        weight: the kernel, ``{weight_shape}`` in ``kernel_layout``.
        strides: an int or {n} ints.
        padding: 1, {n} or {2 * n} ints; stored as {2 * n} ints (befores, then afters).
        dilation: an int or {n} ints.
        groups: number of channel groups (``groups == C`` is depthwise).
        channels: number of output channels (checked against the weight if given).
        kernel_size: the kernel's spatial size (checked if given).
        data_layout: ``"{defaults['data_layout']}"`` or another permutation of its letters.
        kernel_layout: ``"{defaults['kernel_layout']}"`` or another permutation of its letters.
        out_layout: the output layout (default: ``data_layout``).{'''
        output_padding: extra extent added at the end of each output axis.''' if transpose else ''}
        out_dtype: the output dtype (default: the data dtype).

    Returns:
        A Call of ``{name}``.

    Raises:
        TypeInferenceError: when a tuple attribute has the wrong length.
    """
    return builder


conv1d, conv2d, conv3d = (_builder(n, False) for n in (1, 2, 3))
conv1d_transpose, conv2d_transpose, conv3d_transpose = (_builder(n, True) for n in (1, 2, 3))
