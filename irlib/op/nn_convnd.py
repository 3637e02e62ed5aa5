"""1-D and 3-D convolutions: ``nn.conv1d``, ``nn.conv3d`` and ``nn.conv1d_transpose``.

Before/after in the text format::

    nn.conv1d(%x, %w, padding=[1, 1])          /* x: (1, 3, 8), w: (4, 3, 3) */
    -> Tensor[(1, 4, 8), float32]
    nn.conv3d(%x, %w, data_layout="NDHWC", kernel_layout="DHWIO")

Layouts are permutations of ``NCW``/``OIW`` (1-D) and ``NCDHW``/``OIDHW`` (3-D). Padding is
normalised to ``2 * ndim`` ints: all "before" amounts, then all "after" amounts (Relay's
``(front, top, left, back, bottom, right)`` for 3-D). The reference implementation is the
same im2col + batched matmul as conv2d, over n spatial axes.
"""

from __future__ import annotations

import numpy as np

from ..errors import GradientError, TypeInferenceError
from ..ir.dims import Any, AnyDim
from ..ir.expr import const
from ..ir.types import TensorType, normalize_dtype
from ._layouts import from_canonical, layout_positions, to_canonical
from .nn_conv import conv2d, conv2d_backward_weight, conv2d_transpose
from ._composite import composite_grad
from .registry import OpPattern, make_call, register_op
from .transform import checked_type_for_grad
from .type_relations import dims_differ, expect_tensor

__all__ = ["conv1d", "conv3d", "conv1d_transpose"]

_SPATIAL = {1: "W", 3: "DHW"}


def ntuple(value, n: int, what: str) -> tuple:
    """An int or a 1/n-sequence as an n-tuple of ints."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * n
    if len(value) != n:
        raise TypeInferenceError(f"{what} must have 1 or {n} values, got {value}")
    return value


def padding_n(padding, n: int, what: str = "padding") -> tuple:
    """1, n or 2n ints as ``2n`` ints: the ``n`` "before" amounts then the ``n`` "after"."""
    if isinstance(padding, (int, np.integer)):
        padding = (int(padding),)
    padding = tuple(int(p) for p in padding)
    if len(padding) == 1:
        return padding * (2 * n)
    if len(padding) == n:
        return padding * 2
    if len(padding) == 2 * n:
        return padding
    raise TypeInferenceError(f"{what} must have 1, {n} or {2 * n} values, got {padding}")


def conv_out_size(size, kernel, stride, dilation, before, after):
    """Output length of a convolution/pooling window along one axis.

    ``size`` and ``kernel`` may be ints, symbolic dims (the result is then the symbolic
    ``floordiv`` expression) or ``Any`` (the result is ``Any``: Any has no arithmetic).
    """
    if isinstance(size, AnyDim) or isinstance(kernel, AnyDim):
        return Any
    return (size + before + after - dilation * (kernel - 1) - 1) // stride + 1


def pad_n(array: np.ndarray, pads, value=0) -> np.ndarray:
    """Pad (or crop, for negative amounts) the spatial axes (2...) of an NC... array."""
    n = array.ndim - 2
    crop = [slice(None), slice(None)]
    widths = [(0, 0), (0, 0)]
    for i in range(n):
        before, after = pads[i], pads[n + i]
        crop.append(slice(max(-before, 0), array.shape[2 + i] - max(-after, 0)))
        widths.append((max(before, 0), max(after, 0)))
    array = array[tuple(crop)]
    if any(any(w) for w in widths):
        array = np.pad(array, widths, constant_values=value)
    return array


def windows_n(padded: np.ndarray, kernel, strides, dilation, out_size) -> np.ndarray:
    """The ``(N, C, *out, *kernel)`` view of sliding windows over the spatial axes."""
    n = len(kernel)
    extent = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    view = np.lib.stride_tricks.sliding_window_view(padded, extent, axis=tuple(range(2, 2 + n)))
    index = ((slice(None),) * 2 + tuple(slice(None, o * s, s) for o, s in zip(out_size, strides))
             + tuple(slice(None, None, d) for d in dilation))
    return view[index]


def conv_nd(data, weight, strides, padding, dilation, groups) -> np.ndarray:
    """Convolution of ``(N, C, *S)`` data with ``(O, C/groups, *K)`` weight."""
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


def _conv_fields(n: int, data_layout: str, kernel_layout: str) -> list:
    return [("strides", (1,) * n), ("padding", (0,) * (2 * n)), ("dilation", (1,) * n),
            ("groups", 1), ("channels", None), ("kernel_size", None),
            ("data_layout", data_layout), ("kernel_layout", kernel_layout),
            ("out_layout", ""), ("out_dtype", "")]


def _out_dtype(attrs, data) -> str:
    return normalize_dtype(attrs["out_dtype"]) if attrs["out_dtype"] else data.dtype


def _conv_rel(name: str, n: int):
    spatial = _SPATIAL[n]

    def relation(arg_types, attrs):
        data = expect_tensor(arg_types[0], f"{name}: data")
        weight = expect_tensor(arg_types[1], f"{name}: weight")
        d_pos = layout_positions(attrs["data_layout"], "NC" + spatial, f"{name}: data_layout")
        k_pos = layout_positions(attrs["kernel_layout"], "OI" + spatial,
                                 f"{name}: kernel_layout")
        o_pos = layout_positions(attrs["out_layout"] or attrs["data_layout"], "NC" + spatial,
                                 f"{name}: out_layout")
        if data.ndim != n + 2 or weight.ndim != n + 2:
            raise TypeInferenceError(f"{name}: data and weight must be {n + 2}-D, got {data} "
                                     f"and {weight}")
        groups = attrs["groups"]
        in_channels = data.shape[d_pos["C"]]
        out_channels = weight.shape[k_pos["O"]]
        per_group = weight.shape[k_pos["I"]]
        if dims_differ(in_channels, per_group * groups):
            raise TypeInferenceError(f"{name}: data has {in_channels} input channels but "
                                     f"weight expects {per_group * groups} ({per_group} per "
                                     f"group x groups={groups})")
        if isinstance(out_channels, int) and out_channels % groups:
            raise TypeInferenceError(f"{name}: weight's {out_channels} output channels do not "
                                     f"divide into groups={groups}")
        if attrs["channels"] is not None and dims_differ(attrs["channels"], out_channels):
            raise TypeInferenceError(f"{name}: channels={attrs['channels']} but weight has "
                                     f"{out_channels} output channels")
        kernel = tuple(weight.shape[k_pos[c]] for c in spatial)
        if attrs["kernel_size"] is not None:
            expected = ntuple(attrs["kernel_size"], n, f"{name}: kernel_size")
            if any(dims_differ(a, b) for a, b in zip(expected, kernel)):
                raise TypeInferenceError(f"{name}: kernel_size={expected} but weight has "
                                         f"spatial size {kernel}")
        strides = ntuple(attrs["strides"], n, f"{name}: strides")
        dilation = ntuple(attrs["dilation"], n, f"{name}: dilation")
        pads = padding_n(attrs["padding"], n, f"{name}: padding")
        dims = {"N": data.shape[d_pos["N"]], "C": out_channels}
        for i, c in enumerate(spatial):
            size = conv_out_size(data.shape[d_pos[c]], kernel[i], strides[i], dilation[i],
                                 pads[i], pads[n + i])
            if isinstance(size, int) and size <= 0:
                raise TypeInferenceError(f"{name}: kernel {kernel} (dilation {dilation}) is "
                                         f"larger than the padded input {data}")
            dims[c] = size
        shape = [None] * (n + 2)
        for letter, position in o_pos.items():
            shape[position] = dims[letter]
        return TensorType(shape, _out_dtype(attrs, data))
    return relation


def _conv_ref(n: int):
    spatial = _SPATIAL[n]

    def reference(data, weight, **attrs):
        x = to_canonical(data, attrs["data_layout"], "NC" + spatial)
        w = to_canonical(weight, attrs["kernel_layout"], "OI" + spatial)
        out = conv_nd(x, w, ntuple(attrs["strides"], n, "strides"),
                      padding_n(attrs["padding"], n), ntuple(attrs["dilation"], n, "dilation"),
                      attrs["groups"])
        out = from_canonical(out, "NC" + spatial, attrs["out_layout"] or attrs["data_layout"])
        return (out.astype(_out_dtype(attrs, data), copy=False),)
    return reference


_CONV1D = register_op("nn.conv1d", ("data", "weight"),
                      attrs=("relay.attrs.Conv1DAttrs", _conv_fields(1, "NCW", "OIW")),
                      type_rel=_conv_rel("nn.conv1d", 1), pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                      description="1-D convolution", support_level=2)
_CONV1D.def_impl(_conv_ref(1))
_CONV3D = register_op("nn.conv3d", ("data", "weight"),
                      attrs=("relay.attrs.Conv3DAttrs", _conv_fields(3, "NCDHW", "OIDHW")),
                      type_rel=_conv_rel("nn.conv3d", 3), pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                      description="3-D convolution", support_level=2)
_CONV3D.def_impl(_conv_ref(3))


def _permute(expr, source: str, target: str):
    if source == target:
        return expr
    return make_call("transpose", (expr,), {"axes": tuple(source.index(c) for c in target)})


@_CONV1D.def_grad
def _conv1d_grad(call, out_grad):
    # Lift to a conv2d over a unit height and reuse conv2d's adjoint ops.
    data, weight = call.args
    attrs = call.attrs
    out_layout = attrs["out_layout"] or attrs["data_layout"]
    stride = ntuple(attrs["strides"], 1, "strides")[0]
    dilation = ntuple(attrs["dilation"], 1, "dilation")[0]
    before, after = padding_n(attrs["padding"], 1)
    data_type = checked_type_for_grad(data, "nn.conv1d")
    weight_type = checked_type_for_grad(weight, "nn.conv1d")
    width = data_type.shape[attrs["data_layout"].index("W")]
    kernel = weight_type.shape[attrs["kernel_layout"].index("W")]
    if not (isinstance(width, int) and isinstance(kernel, int)):
        raise GradientError("the gradient of nn.conv1d needs static spatial sizes")
    extra = (width + before + after - dilation * (kernel - 1) - 1) % stride

    def lift(expr, source, canonical):
        return make_call("expand_dims", (_permute(expr, source, canonical),),
                         {"axis": 2, "num_newaxis": 1})

    x2 = lift(data, attrs["data_layout"], "NCW")
    w2 = lift(weight, attrs["kernel_layout"], "OIW")
    g2 = lift(out_grad, out_layout, "NCW")
    common = dict(strides=(1, stride), padding=(0, before, 0, after), dilation=(1, dilation),
                  groups=attrs["groups"])
    data_grad = conv2d_transpose(g2, w2, output_padding=(0, extra), **common)
    weight_grad = conv2d_backward_weight(g2, x2, kernel_size=(1, kernel), **common)

    def lower(expr, canonical, target):
        squeezed = make_call("squeeze", (expr,), {"axis": [2]})
        return make_call("cast_like", (_permute(squeezed, canonical, target), data))

    return [lower(data_grad, "NCW", attrs["data_layout"]),
            lower(weight_grad, "OIW", attrs["kernel_layout"])]


@_CONV3D.def_grad
def _conv3d_grad(call, out_grad):
    return composite_grad(_conv3d_as_conv2d)(call, out_grad)


def _conv3d_as_conv2d(data, weight, **attrs):
    """conv3d as a sum over the kernel's depth taps of conv2ds over depth-strided slices
    (the depth positions folded into the batch), for the gradient."""
    data_type, weight_type = (checked_type_for_grad(data, "nn.conv3d"),
                              checked_type_for_grad(weight, "nn.conv3d"))
    x = _permute(data, attrs["data_layout"], "NCDHW")
    w = _permute(weight, attrs["kernel_layout"], "OIDHW")
    batch, _, depth = (data_type.shape[attrs["data_layout"].index(c)] for c in "NCD")
    out_channels, _, kernel_depth = (weight_type.shape[attrs["kernel_layout"].index(c)]
                                     for c in "OID")
    if not all(isinstance(v, int) for v in (batch, depth, kernel_depth)):
        raise GradientError("the gradient of nn.conv3d needs static batch and depth")
    strides = ntuple(attrs["strides"], 3, "strides")
    dilation = ntuple(attrs["dilation"], 3, "dilation")
    pads = padding_n(attrs["padding"], 3)
    out_depth = conv_out_size(depth, kernel_depth, strides[0], dilation[0], pads[0], pads[3])
    if pads[0] or pads[3]:
        x = make_call("nn.pad", (x, make_call("cast_like", (const(0.0), x))),
                      {"pad_width": ((0, 0), (0, 0), (pads[0], pads[3]), (0, 0), (0, 0)),
                       "pad_mode": "constant"})
    total = None
    for tap in range(kernel_depth):
        start = tap * dilation[0]
        planes = _slice(x, 2, start, start + (out_depth - 1) * strides[0] + 1, strides[0])
        planes = make_call("reshape", (make_call("transpose", (planes,),
                                                 {"axes": (0, 2, 1, 3, 4)}),),
                           {"newshape": (-3, -2), "allowzero": False})  # (N*OD, C, H, W)
        kernel = make_call("squeeze", (_slice(w, 2, tap, tap + 1, 1),), {"axis": [2]})
        out = conv2d(planes, kernel, strides=strides[1:], dilation=dilation[1:],
                     padding=(pads[1], pads[2], pads[4], pads[5]), groups=attrs["groups"])
        total = out if total is None else make_call("add", (total, out))
    total = make_call("reshape", (total,), {"newshape": (-4, batch, out_depth, -2),
                                            "allowzero": False})
    total = make_call("transpose", (total,), {"axes": (0, 2, 1, 3, 4)})
    return _permute(total, "NCDHW", attrs["out_layout"] or attrs["data_layout"])


def _slice(expr, axis, begin, end, stride):
    return make_call("strided_slice", (expr,), {"begin": [begin], "end": [end],
                                                "strides": [stride], "axes": [axis],
                                                "slice_mode": "end"})


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


def _conv_builder(name: str, n: int, data_layout: str, kernel_layout: str):
    def builder(data, weight, strides=(1,) * n, padding=(0,) * n, dilation=(1,) * n, groups=1,
                channels=None, kernel_size=None, data_layout=data_layout,
                kernel_layout=kernel_layout, out_layout="", out_dtype=""):
        attrs = conv_attrs(n, strides, padding, dilation, groups, channels, kernel_size,
                           data_layout, kernel_layout, out_layout, out_dtype)
        return make_call(name, (data, weight), attrs)
    builder.__name__ = builder.__qualname__ = name.split(".")[-1]
    builder.__doc__ = f"""{n}-D convolution (``relay.{name}``).

    Args:
        data: the input, ``(N, C, {', '.join(_SPATIAL[n])})`` in ``data_layout``.
        weight: the kernel, ``(O, C/groups, {', '.join('K' + c for c in _SPATIAL[n])})`` in
            ``kernel_layout``.
        strides: an int or {n} ints.
        padding: 1, {n} or {2 * n} ints; stored as {2 * n} ints (befores, then afters).
        dilation: an int or {n} ints.
        groups: number of channel groups.
        channels: number of output channels (checked against the weight if given).
        kernel_size: the kernel's spatial size (checked if given).
        data_layout: ``"{data_layout}"`` or another permutation of its letters.
        kernel_layout: ``"{kernel_layout}"`` or another permutation of its letters.
        out_layout: the output layout (default: ``data_layout``).
        out_dtype: the output dtype (default: the data dtype).

    Returns:
        A Call of ``{name}``.
    """
    return builder


conv1d = _conv_builder("nn.conv1d", 1, "NCW", "OIW")
conv3d = _conv_builder("nn.conv3d", 3, "NCDHW", "OIDHW")


# -- conv1d_transpose ----------------------------------------------------------------------------

_T1_FIELDS = [("channels", None), ("kernel_size", None), ("strides", (1,)),
              ("output_padding", (0,)), ("padding", (0, 0)), ("dilation", (1,)), ("groups", 1),
              ("data_layout", "NCW"), ("kernel_layout", "IOW"), ("out_layout", ""),
              ("out_dtype", "")]


def conv_transpose_rel(name: str, n: int):
    """The type relation of ``name``, the transposed ``n``-D convolution.

    Each output extent is ``(in - 1) * stride - pad_before - pad_after + dilation *
    (kernel - 1) + 1 + output_padding``; ``Any`` in the input or kernel gives ``Any``.
    """
    spatial = "DHW"[3 - n:]
    data_canon, kernel_canon = "NC" + spatial, "OI" + spatial

    def relation(arg_types, attrs):
        data = expect_tensor(arg_types[0], f"{name}: data")
        weight = expect_tensor(arg_types[1], f"{name}: weight")
        d_pos = layout_positions(attrs["data_layout"], data_canon, f"{name}: data_layout")
        # IO... is OI...'s letters with I first; layout_positions only needs the letter set.
        k_pos = layout_positions(attrs["kernel_layout"], kernel_canon, f"{name}: kernel_layout")
        o_pos = layout_positions(attrs["out_layout"] or attrs["data_layout"], data_canon,
                                 f"{name}: out_layout")
        if data.ndim != n + 2 or weight.ndim != n + 2:
            raise TypeInferenceError(f"{name}: data and weight must be {n + 2}-D, got {data} "
                                     f"and {weight}")
        groups = attrs["groups"]
        if dims_differ(data.shape[d_pos["C"]], weight.shape[k_pos["I"]]):
            raise TypeInferenceError(f"{name}: data has {data.shape[d_pos['C']]} channels but "
                                     f"weight expects {weight.shape[k_pos['I']]}")
        out_channels = weight.shape[k_pos["O"]] * groups
        if attrs["channels"] is not None and dims_differ(attrs["channels"], out_channels):
            raise TypeInferenceError(f"{name}: channels={attrs['channels']} but the weight "
                                     f"gives {out_channels} output channels")
        strides = ntuple(attrs["strides"], n, f"{name}: strides")
        dilation = ntuple(attrs["dilation"], n, f"{name}: dilation")
        extra = ntuple(attrs["output_padding"], n, f"{name}: output_padding")
        pads = padding_n(attrs["padding"], n, f"{name}: padding")
        dims = {"N": data.shape[d_pos["N"]], "C": out_channels}
        for i, letter in enumerate(spatial):
            kernel, size = weight.shape[k_pos[letter]], data.shape[d_pos[letter]]
            if isinstance(size, AnyDim) or isinstance(kernel, AnyDim):  # no arithmetic on Any
                dims[letter] = Any
                continue
            size = ((size - 1) * strides[i] - pads[i] - pads[n + i]
                    + dilation[i] * (kernel - 1) + 1 + extra[i])
            if isinstance(size, int) and size <= 0:
                raise TypeInferenceError(f"{name}: padding {pads} leaves no output along "
                                         f"{letter}")
            dims[letter] = size
        shape = [None] * (n + 2)
        for letter, position in o_pos.items():
            shape[position] = dims[letter]
        return TensorType(shape, _out_dtype(attrs, data))
    return relation


def conv_transpose_ref(n: int):
    """The numpy implementation of the transposed ``n``-D convolution op (any layouts)."""
    spatial = "DHW"[3 - n:]

    def implementation(data, weight, **attrs):
        x = to_canonical(data, attrs["data_layout"], "NC" + spatial)
        w = to_canonical(weight, attrs["kernel_layout"], "IO" + spatial)
        out = conv_transpose_nd(x, w, ntuple(attrs["strides"], n, "strides"),
                                padding_n(attrs["padding"], n),
                                ntuple(attrs["dilation"], n, "dilation"), attrs["groups"],
                                ntuple(attrs["output_padding"], n, "output_padding"))
        out = from_canonical(out, "NC" + spatial, attrs["out_layout"] or attrs["data_layout"])
        return (out.astype(_out_dtype(attrs, data), copy=False),)
    return implementation


def conv_transpose_nd(data, weight, strides, padding, dilation, groups, output_padding):
    """Transposed convolution of ``(N, C, *S)`` data with ``(C, O/groups, *K)`` weight."""
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


_CONV1D_T = register_op("nn.conv1d_transpose", ("data", "weight"),
                        attrs=("relay.attrs.Conv1DTransposeAttrs", _T1_FIELDS),
                        type_rel=conv_transpose_rel("nn.conv1d_transpose", 1),
                        pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                        description="transposed 1-D convolution", support_level=2)
_CONV1D_T.def_impl(conv_transpose_ref(1))


@_CONV1D_T.def_grad
def _conv1d_transpose_grad(call, out_grad):
    # Lift to conv2d_transpose over a unit height (whose gradient rule does the work).
    attrs = call.attrs

    def forward(data, weight, **_):
        def lift(expr, source, canonical):
            return make_call("expand_dims", (_permute(expr, source, canonical),),
                             {"axis": 2, "num_newaxis": 1})
        before, after = padding_n(attrs["padding"], 1)
        lifted = conv2d_transpose(
            lift(data, attrs["data_layout"], "NCW"), lift(weight, attrs["kernel_layout"], "IOW"),
            strides=(1,) + ntuple(attrs["strides"], 1, "strides"),
            padding=(0, before, 0, after), dilation=(1,) + ntuple(attrs["dilation"], 1,
                                                                  "dilation"),
            groups=attrs["groups"], kernel_layout="IOHW",
            output_padding=(0,) + ntuple(attrs["output_padding"], 1, "output_padding"))
        out = make_call("squeeze", (lifted,), {"axis": [2]})
        return _permute(out, "NCW", attrs["out_layout"] or attrs["data_layout"])
    return composite_grad(forward)(call, out_grad)


def conv1d_transpose(data, weight, strides=(1,), padding=(0,), dilation=(1,), groups=1,
                     channels=None, kernel_size=None, data_layout="NCW", kernel_layout="IOW",
                     out_layout="", output_padding=(0,), out_dtype=""):
    """Transposed 1-D convolution (``relay.nn.conv1d_transpose``).

    ``weight`` is ``(C_in, C_out/groups, KW)`` in the default ``IOW`` layout (a conv1d's OIW
    weight is directly the weight of its transpose).

    Args:
        data: ``(N, C_in, W)`` in ``data_layout``.
        weight: the kernel in ``kernel_layout``.
        strides, padding, dilation: as :func:`conv1d`.
        output_padding: extra length added at the end of the output.
        groups, channels, kernel_size, out_layout, out_dtype: as :func:`conv1d`.

    Returns:
        A Call of ``nn.conv1d_transpose``.
    """
    attrs = conv_attrs(1, strides, padding, dilation, groups, channels, kernel_size,
                       data_layout, kernel_layout, out_layout, out_dtype, output_padding)
    return make_call("nn.conv1d_transpose", (data, weight), attrs)
