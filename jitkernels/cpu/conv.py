"""CPU kernels of ``nn.conv1d``, ``nn.conv2d``, ``nn.conv3d`` and ``nn.conv2d_transpose``.

Each kernel picks one path (all in :mod:`jitkernels.cpu.conv_core`):

* NHWC data with an HWIO kernel and one group (conv2d): Winograd (:mod:`.winograd`, the
  weight transformed per call) for the stride-1 3x3 layers where its cost model says so
  even counting that transform; else the implicit per-tap GEMM or channels-last im2col +
  GEMM, both against the weight as stored (HWIO is already the ``[KH*KW*C, O]`` matrix);
  1x1 is a plain GEMM;
* a depthwise conv2d (one input channel per group): the direct ``prange`` kernels of
  :mod:`jitkernels.cpu.depthwise` (channels-first, or NHWC with one output channel per
  input channel);
* everything else in channels-first form ``(N, C, D, H, W)`` (other layouts are transposed
  in and out): a 1x1/stride-1/unpadded convolution is a GEMM per group; a 1-D or 2-D one
  the implicit per-tap GEMM or im2col + GEMM per group; a 3-D one im2col + GEMM.
"""

from __future__ import annotations

import math

import numpy as np

from .. import register_kernel
from .._geometry import (SPATIAL, as_ncdhw, conv_out, from_canonical, is_float, ntuple,
                         padding_pairs, reference, to3, to_canonical)
from . import conv_transpose
from . import conv_core, depthwise, direct_conv, implicit_conv, winograd


def prefers_channels_last(data_shape, weight_shape, groups: int, dtype) -> bool:
    """Whether an NCHW/OIHW ``nn.conv2d`` runs faster here converted to NHWC/HWIO.

    True for float32/float64 convolutions with one group or depthwise with one output
    channel per input channel: their channels-last paths copy runs of channels (im2col) or
    keep channels innermost (depthwise), measured 0-14% faster end to end on the zoo's conv
    nets (docs/graph_executor.md). Other grouped convolutions have no channels-last path
    (they would be transposed in and out) and stay channels-first.

    Args:
        data_shape, weight_shape: the NCHW data and OIHW weight shapes (ints).
        groups: the group count.
        dtype: the data (and weight) dtype.
    """
    if np.dtype(dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
        return False
    if len(data_shape) != 4 or len(weight_shape) != 4:
        return False
    if groups == 1:
        return True
    return weight_shape[1] == 1 and weight_shape[0] == groups == data_shape[1]


def _out_dtype(attrs, data):
    return np.dtype(attrs.get("out_dtype") or data.dtype)


_ATTRS: dict = {}


def _conv_attrs(attrs, n: int, data_canon: str, kernel_canon: str) -> tuple:
    """A conv call's attributes, normalised: ``(strides, dilation, before, after, groups,
    data_layout, kernel_layout, out_layout)`` (per-axis tuples; layouts default as Relay's).
    Memoised on the raw values when they are hashable (a graph calls a layer with the
    same attributes every run; normalising them cost ~2.5 us a call)."""
    try:
        key = (n, data_canon, kernel_canon, attrs.get("padding", 0), attrs.get("strides", 1),
               attrs.get("dilation", 1), attrs.get("groups", 1), attrs.get("data_layout"),
               attrs.get("kernel_layout"), attrs.get("out_layout"))
        found = _ATTRS.get(key)
    except TypeError:                   # a list-valued attribute: not hashable
        return _normalise_attrs(attrs, n, data_canon, kernel_canon)
    if found is None:
        if len(_ATTRS) > 1024:
            _ATTRS.clear()
        found = _ATTRS[key] = _normalise_attrs(attrs, n, data_canon, kernel_canon)
    return found


def _normalise_attrs(attrs, n: int, data_canon: str, kernel_canon: str) -> tuple:
    """:func:`_conv_attrs`, computed."""
    before, after = padding_pairs(attrs.get("padding", 0), n)
    data_layout = attrs.get("data_layout") or data_canon
    return (ntuple(attrs.get("strides", 1), n), ntuple(attrs.get("dilation", 1), n), before,
            after, int(attrs.get("groups", 1)), data_layout,
            attrs.get("kernel_layout") or kernel_canon,
            attrs.get("out_layout") or data_layout)


def _conv_nd(op_name: str, n: int):
    spatial = SPATIAL[n]
    data_canon, kernel_canon = "NC" + spatial, "OI" + spatial

    def kernel(data, weight, **attrs):
        if not is_float(data, weight) or data.ndim != n + 2 or weight.ndim != n + 2:
            return reference(op_name, (data, weight), attrs)
        (strides, dilation, before, after, groups, data_layout, kernel_layout,
         out_layout) = _conv_attrs(attrs, n, data_canon, kernel_canon)
        nhwc = n == 2 and data_layout == "NHWC" and out_layout == "NHWC"
        if nhwc and groups == 1 and kernel_layout == "HWIO":
            out = _conv2d_nhwc(data, weight, strides, dilation, before, after)
        elif (nhwc and groups > 1 and groups == data.shape[3]
              and weight.shape[kernel_layout.index("O")] == groups
              and weight.shape[kernel_layout.index("I")] == 1):
            out = _depthwise_nhwc(data, to_canonical(weight, kernel_layout, "HWOI"), strides,
                                  dilation, before, after)
        else:
            x = to_canonical(data, data_layout, data_canon)
            w = to_canonical(weight, kernel_layout, kernel_canon)
            if n == 2 and w.shape[1] == 1 and groups == x.shape[1] and groups > 1:
                out = _depthwise(x, w, strides, dilation, before, after)
            else:
                out = _conv_channels_first(x, w, strides, dilation, before, after, groups)
            out = from_canonical(out, data_canon, out_layout)
        return (out.astype(_out_dtype(attrs, data), copy=False),)
    def into(out, data, weight, **attrs) -> bool:
        """Convolve into ``out`` (C-contiguous, the result's shape and dtype), no allocation.

        Returns:
            False (and writes nothing) for what only :func:`kernel` handles: other dtypes,
            layouts other than the canonical channels-first one (and NHWC/HWIO for conv2d),
            an ``out_dtype`` different from the data's; True once ``out`` holds the result.
        """
        if (not is_float(data, weight) or data.ndim != n + 2 or weight.ndim != n + 2
                or out.dtype != data.dtype or weight.dtype != data.dtype
                or _out_dtype(attrs, data) != data.dtype or not out.flags.c_contiguous):
            return False
        data, weight = np.ascontiguousarray(data), np.ascontiguousarray(weight)
        (strides, dilation, before, after, groups, data_layout, kernel_layout,
         out_layout) = _conv_attrs(attrs, n, data_canon, kernel_canon)
        channels_last = n == 2 and data_layout == "NHWC" and out_layout == "NHWC"
        nhwc = channels_last and groups == 1 and kernel_layout == "HWIO"
        nhwc_depthwise = (channels_last and groups > 1 and groups == data.shape[3]
                          and sorted(kernel_layout) == sorted("HWIO")
                          and weight.shape[kernel_layout.index("O")] == groups
                          and weight.shape[kernel_layout.index("I")] == 1)
        if not (nhwc or nhwc_depthwise) and (data_layout, kernel_layout, out_layout) != (
                data_canon, kernel_canon, data_canon):
            return False
        if nhwc_depthwise:
            weight = to_canonical(weight, kernel_layout, "HWOI")
        spatial_axes = range(1, n + 1) if channels_last else range(2, n + 2)
        kernel_size = weight.shape[:n] if channels_last else weight.shape[2:]
        channels = (groups if nhwc_depthwise else weight.shape[-1] if nhwc
                    else weight.shape[0])
        sizes = tuple(conv_out(data.shape[a], kernel_size[i], strides[i], dilation[i],
                               before[i], after[i]) for i, a in enumerate(spatial_axes))
        expected = ((data.shape[0],) + sizes + (channels,) if channels_last
                    else (data.shape[0], channels) + sizes)
        if tuple(out.shape) != expected:
            return False
        if nhwc:
            _conv2d_nhwc(data, weight, strides, dilation, before, after, out)
        elif nhwc_depthwise:
            _depthwise_nhwc(data, weight, strides, dilation, before, after, out)
        elif n == 2 and weight.shape[1] == 1 and groups == data.shape[1] and groups > 1:
            _depthwise(data, weight, strides, dilation, before, after, out)
        else:
            _conv_channels_first(data, weight, strides, dilation, before, after, groups, out)
        return True
    def into_fused(out, data, weight, epilogue, **attrs) -> bool:
        """:func:`into` with a fused epilogue (:mod:`jitkernels.cpu.epilogue`) applied
        per block of output rows while in cache; only NHWC conv2d, ungrouped with an HWIO
        weight or depthwise with one output channel per input channel (False, writing
        nothing, otherwise)."""
        if n != 2 or attrs.get("data_layout") != "NHWC" or \
                (attrs.get("out_layout") or "NHWC") != "NHWC":
            return False
        kernel_layout, groups = attrs.get("kernel_layout") or "OIHW", int(attrs.get("groups", 1))
        if groups > 1:                  # depthwise, one output channel per input channel
            if (sorted(kernel_layout) != sorted("HWIO") or groups != data.shape[-1]
                    or weight.shape[kernel_layout.index("O")] != groups
                    or weight.shape[kernel_layout.index("I")] != 1
                    or not is_float(data, weight) or out.dtype != data.dtype
                    or _out_dtype(attrs, data) != data.dtype or not out.flags.c_contiguous
                    or epilogue.vectors.dtype != data.dtype):
                return False
            strides, dilation, before, after = _conv_attrs(attrs, 2, data_canon,
                                                           kernel_canon)[:4]
            hwoi = to_canonical(weight, kernel_layout, "HWOI")
            sizes = tuple(conv_out(data.shape[1 + i], hwoi.shape[i], strides[i], dilation[i],
                                   before[i], after[i]) for i in range(2))
            if tuple(out.shape) != (data.shape[0],) + sizes + (groups,):
                return False
            _depthwise_nhwc(data, hwoi, strides, dilation, before, after, out, epilogue)
            return True
        if kernel_layout != "HWIO":
            return False
        if (not is_float(data, weight) or data.ndim != 4 or weight.ndim != 4
                or out.dtype != data.dtype or weight.dtype != data.dtype
                or _out_dtype(attrs, data) != data.dtype or not out.flags.c_contiguous
                or epilogue.vectors.dtype != data.dtype):
            return False
        strides, dilation, before, after = _conv_attrs(attrs, 2, data_canon, kernel_canon)[:4]
        sizes = tuple(conv_out(data.shape[1 + i], weight.shape[i], strides[i], dilation[i],
                               before[i], after[i]) for i in range(2))
        if tuple(out.shape) != (data.shape[0],) + sizes + (weight.shape[3],) or \
                weight.shape[2] != data.shape[3]:
            return False
        _conv2d_nhwc(np.ascontiguousarray(data), np.ascontiguousarray(weight), strides,
                     dilation, before, after, out, epilogue)
        return True
    kernel.__name__ = op_name.replace(".", "_")
    kernel.__doc__ = f"``{op_name}`` on CPU (same contract as the reference implementation)."
    kernel.into = into
    kernel.into_fused = into_fused
    return kernel


def _conv_channels_first(x, w, strides, dilation, before, after, groups, result=None):
    """Convolution of canonical ``(N, C, *S)`` data with an ``(O, C/groups, *K)`` weight.

    ``result``: a C-contiguous ``(N, O, *out_size)`` array to write into (else allocated).
    """
    n = x.ndim - 2
    kernel = w.shape[2:]
    out_size = tuple(conv_out(x.shape[2 + i], kernel[i], strides[i], dilation[i], before[i],
                              after[i]) for i in range(n))
    batch, out_channels = x.shape[0], w.shape[0]
    positions = math.prod(out_size)
    out = (np.empty((batch, out_channels, positions), x.dtype) if result is None
           else result.reshape(batch, out_channels, positions))
    pointwise = (all(k == 1 for k in kernel) and all(s == 1 for s in strides)
                 and not any(before) and not any(after))
    if n in (1, 2) and out.size and not pointwise and direct_conv.direct_pays(
            x.shape[1], out_channels, kernel, batch * positions, groups):
        lead = (1,) * (2 - n)              # a 1-D convolution as height 1
        direct_conv.conv2d_direct(
            np.ascontiguousarray(x).reshape(x.shape[:2] + lead + x.shape[2:]),
            w.reshape(w.shape[:2] + lead + kernel),
            out.reshape((batch, out_channels) + lead + out_size), lead + kernel,
            (1,) * (2 - n) + tuple(strides), (1,) * (2 - n) + tuple(dilation),
            (0,) * (2 - n) + tuple(before), False,
            wpack=direct_conv.packed_weight(w, True))
    elif pointwise:
        conv_core.conv_pointwise(x.reshape(batch, x.shape[1], positions),
                                 w.reshape(out_channels, -1), out, groups)
    else:
        conv_core.conv_ncdhw(as_ncdhw(x), as_ncdhw(w), out, to3(kernel, 1),
                             to3(strides, 1), to3(dilation, 1), to3(before, 0),
                             to3(after, 0), to3(out_size, 1), groups)
    return out.reshape((batch, out_channels) + out_size)


def _depthwise(x, w, strides, dilation, before, after, out=None):
    kh, kw = w.shape[2:]
    oh = conv_out(x.shape[2], kh, strides[0], dilation[0], before[0], after[0])
    ow = conv_out(x.shape[3], kw, strides[1], dilation[1], before[1], after[1])
    if out is None:
        out = np.empty((x.shape[0], w.shape[0], oh, ow), x.dtype)
    depthwise.depthwise_nchw(x, w.reshape(w.shape[0], kh, kw), out, strides, dilation, before)
    return out


def _depthwise_nhwc(data, weight, strides, dilation, before, after, out=None, epilogue=None):
    """Channels-last depthwise convolution, multiplier 1; ``weight`` is ``(KH, KW, C, 1)``;
    ``out``: a C-contiguous ``(N, OH, OW, C)`` array to write into (else allocated);
    ``epilogue``: fused steps applied to each output row (:mod:`.epilogue`), or None."""
    x = np.ascontiguousarray(data)
    kh, kw, channels, _ = weight.shape
    oh = conv_out(x.shape[1], kh, strides[0], dilation[0], before[0], after[0])
    ow = conv_out(x.shape[2], kw, strides[1], dilation[1], before[1], after[1])
    if out is None:
        out = np.empty((x.shape[0], oh, ow, channels), x.dtype)
    depthwise.depthwise_nhwc(x, np.ascontiguousarray(weight).reshape(kh, kw, channels), out,
                             strides, dilation, before, epilogue)
    return out


def _conv2d_nhwc(data, weight, strides, dilation, before, after, result=None, epilogue=None):
    x = np.ascontiguousarray(data)
    batch, height, width, channels = x.shape
    kh, kw, _, out_channels = weight.shape
    oh = conv_out(height, kh, strides[0], dilation[0], before[0], after[0])
    ow = conv_out(width, kw, strides[1], dilation[1], before[1], after[1])
    w = np.ascontiguousarray(weight)
    out = (np.empty((batch, oh * ow, out_channels), x.dtype) if result is None
           else result.reshape(batch, oh * ow, out_channels))
    pointwise = (kh, kw) == (1, 1) and strides == (1, 1) and not any(before) \
        and not any(after)
    if weight.dtype == x.dtype and implicit_conv.pays(channels, out_channels, (kh, kw), strides,
                                                      dilation, batch * oh * ow, x.dtype):
        # the implicit-GEMM kernel (issue #17; IRLIB_IMPLICIT_CONV=0 turns it off)
        implicit_conv.conv2d_nhwc(x, weight, out, strides, dilation, before, after, epilogue)
        return out.reshape(batch, oh, ow, out_channels)
    if not pointwise and direct_conv.direct_pays(channels, out_channels, (kh, kw),
                                                 batch * oh * ow):
        direct_conv.conv2d_direct(x, w, out.reshape(batch, oh, ow, out_channels), (kh, kw),
                                  strides, dilation, before, True, epilogue,
                                  wpack=direct_conv.packed_weight(weight, False))
        return out.reshape(batch, oh, ow, out_channels)
    tile = (winograd.choose_tile(channels, out_channels, oh, ow, batch, weight_transform=True)
            if winograd.eligible((kh, kw), strides, dilation, 1) else 0)
    if tile:
        # Winograd with the weight transformed on this call (a constant weight is
        # transformed at build time instead: interp.winograd_rewrite).
        u = winograd.transform_weight(w.transpose(3, 2, 0, 1), tile, channels_last=True)
        winograd.conv2d_nhwc(x, u, out.reshape(batch, oh, ow, out_channels), tile,
                             before[0], before[1], epilogue)
    elif pointwise:
        conv_core.conv_nhwc_pointwise(x.reshape(batch, height * width, channels),
                                      w.reshape(channels, out_channels), out, epilogue)
    else:
        conv_core.conv_nhwc(x, w, out, (kh, kw), strides, dilation, before, after, (oh, ow),
                            epilogue)
    return out.reshape(batch, oh, ow, out_channels)


conv1d = register_kernel("nn.conv1d")(_conv_nd("nn.conv1d", 1))
conv2d = register_kernel("nn.conv2d")(_conv_nd("nn.conv2d", 2))
conv3d = register_kernel("nn.conv3d")(_conv_nd("nn.conv3d", 3))


@register_kernel("nn.conv2d_transpose")
def conv2d_transpose(data, weight, **attrs):
    """``nn.conv2d_transpose`` on CPU: the pixel-row GEMM and parallel gather col2im of
    :mod:`jitkernels.cpu.conv_transpose` (its ``into``/``into_fused`` forms too)."""
    return conv_transpose.conv2d_transpose(data, weight, **attrs)


conv2d_transpose.into = conv_transpose.into
conv2d_transpose.into_fused = conv_transpose.into_fused
