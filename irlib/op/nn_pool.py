"""2-D max pooling: ``nn.max_pool2d`` and its gradient op ``nn.max_pool2d_grad``.

Before/after in the text format::

    nn.max_pool2d(%x, pool_size=[2, 2], strides=[2, 2])    /* x: (1, 3, 8, 8) */
    -> Tensor[(1, 3, 4, 4), float32]

Output size per spatial axis: ``(size + pads - dilation*(pool-1) - 1 (+ stride-1 if
ceil_mode)) // stride + 1``. Padding never wins the max (it is -inf). The reference
implementation takes the max over a strided sliding-window view (no loops over pixels).
"""

from __future__ import annotations

import numpy as np

from ..errors import TypeInferenceError
from ..ir.types import TensorType
from ._layouts import (from_canonical, layout_positions, pad_spatial, padding4, pair,
                       to_canonical, windows)
from .registry import OpPattern, make_call, register_op
from .type_relations import expect_tensor

__all__ = ["max_pool2d", "max_pool2d_grad", "avg_pool2d", "avg_pool2d_grad", "global_avg_pool2d",
           "global_max_pool2d"]

_POOL_FIELDS = [("pool_size", (1, 1)), ("strides", (1, 1)), ("dilation", (1, 1)),
                ("padding", (0, 0, 0, 0)), ("layout", "NCHW"), ("out_layout", ""),
                ("ceil_mode", False)]


def _pool_out(size, pool, stride, dilation, before, after, ceil_mode):
    extra = stride - 1 if ceil_mode else 0
    return (size + before + after - dilation * (pool - 1) - 1 + extra) // stride + 1


def _pool_geometry(attrs):
    return (pair(attrs["pool_size"], "pool_size"), pair(attrs["strides"], "strides"),
            pair(attrs["dilation"], "dilation"), padding4(attrs["padding"]))


def _max_pool2d_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "nn.max_pool2d: data")
    if data.ndim != 4:
        raise TypeInferenceError(f"nn.max_pool2d: data must be 4-D, got {data}")
    pos = layout_positions(attrs["layout"], "NCHW", "nn.max_pool2d: layout")
    out_pos = layout_positions(attrs["out_layout"] or attrs["layout"], "NCHW",
                               "nn.max_pool2d: out_layout")
    pool, strides, dilation, pads = _pool_geometry(attrs)
    dims = {"N": data.shape[pos["N"]], "C": data.shape[pos["C"]]}
    for i, letter in enumerate("HW"):
        size = _pool_out(data.shape[pos[letter]], pool[i], strides[i], dilation[i], pads[i],
                         pads[i + 2], attrs["ceil_mode"])
        if isinstance(size, int) and size <= 0:
            raise TypeInferenceError(f"nn.max_pool2d: pool_size {pool} is larger than the "
                                     f"padded input {data}")
        dims[letter] = size
    shape = [None] * 4
    for letter, position in out_pos.items():
        shape[position] = dims[letter]
    return TensorType(shape, data.dtype)


def _lowest(dtype):
    return -np.inf if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).min


def _padded_windows(data_nchw, attrs):
    """The padded input and its windows ``(N, C, oh, ow, kh, kw)`` for NCHW data."""
    pool, strides, dilation, pads = _pool_geometry(attrs)
    out = [_pool_out(data_nchw.shape[2 + i], pool[i], strides[i], dilation[i], pads[i],
                     pads[i + 2], attrs["ceil_mode"]) for i in range(2)]
    # ceil_mode may need rows/columns past the bottom/right padding: pad those with -inf too.
    need = [(out[i] - 1) * strides[i] + dilation[i] * (pool[i] - 1) + 1 for i in range(2)]
    bottom = max(pads[2], need[0] - data_nchw.shape[2] - pads[0])
    right = max(pads[3], need[1] - data_nchw.shape[3] - pads[1])
    padded = pad_spatial(data_nchw, (pads[0], pads[1], bottom, right), _lowest(data_nchw.dtype))
    return padded, windows(padded, pool, strides, dilation, out)


def _max_pool2d_ref(data, **attrs):
    _, view = _padded_windows(to_canonical(data, attrs["layout"], "NCHW"), attrs)
    out = view.max(axis=(4, 5))
    return (from_canonical(out, "NCHW", attrs["out_layout"] or attrs["layout"]),)


_MAX_POOL2D = register_op("nn.max_pool2d", ("data",),
                          attrs=("relay.attrs.MaxPool2DAttrs", _POOL_FIELDS),
                          type_rel=_max_pool2d_rel, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                          description="2-D max pooling", support_level=2)
_MAX_POOL2D.def_impl(_max_pool2d_ref)


@_MAX_POOL2D.def_grad
def _max_pool2d_grad(call, out_grad):
    attrs = dict(call.attrs)
    return [make_call("nn.max_pool2d_grad", (out_grad, call.args[0]), attrs)]


@_MAX_POOL2D.def_layout
def _max_pool2d_layout(attrs, desired_layout):
    """The same pooling with ``layout`` set to ``desired_layout``."""
    return attrs.with_changes(layout=desired_layout, out_layout="")


def max_pool2d(data, pool_size=(1, 1), strides=(1, 1), dilation=(1, 1), padding=(0, 0),
               layout="NCHW", out_layout="", ceil_mode=False):
    """2-D max pooling (``relay.nn.max_pool2d``).

    Args:
        data: the input, 4-D in ``layout``.
        pool_size: an int or a pair.
        strides: an int or a pair.
        dilation: an int or a pair.
        padding: 1, 2 or 4 ints; stored as ``(top, left, bottom, right)``.
        layout: ``"NCHW"``, ``"NHWC"`` or another permutation of those letters.
        out_layout: the output layout (default: ``layout``).
        ceil_mode: round the output size up instead of down.

    Returns:
        A Call of ``nn.max_pool2d``.
    """
    return make_call("nn.max_pool2d", (data,), _pool_attrs(pool_size, strides, dilation,
                                                           padding, layout, out_layout,
                                                           ceil_mode))


def _pool_attrs(pool_size, strides, dilation, padding, layout, out_layout, ceil_mode):
    return {"pool_size": pair(pool_size, "pool_size"), "strides": pair(strides, "strides"),
            "dilation": pair(dilation, "dilation"), "padding": padding4(padding),
            "layout": layout, "out_layout": out_layout, "ceil_mode": bool(ceil_mode)}


# -- max_pool2d_grad ----------------------------------------------------------------------------

def _max_pool2d_grad_rel(arg_types, attrs):
    expect_tensor(arg_types[0], "nn.max_pool2d_grad: out_grad")
    return expect_tensor(arg_types[1], "nn.max_pool2d_grad: data")


def _max_pool2d_grad_ref(out_grad, data, **attrs):
    layout = attrs["layout"]
    data_nchw = to_canonical(data, layout, "NCHW")
    grad_nchw = to_canonical(out_grad, attrs["out_layout"] or layout, "NCHW")
    padded, view = _padded_windows(data_nchw, attrs)
    pool, strides, dilation, pads = _pool_geometry(attrs)
    batch, channels, out_h, out_w = view.shape[:4]
    # The first maximum of each window receives that window's adjoint.
    flat_index = view.reshape(batch, channels, out_h, out_w, -1).argmax(axis=4)
    rows = (np.arange(out_h)[:, None] * strides[0]
            + (flat_index // pool[1]) * dilation[0])
    cols = (np.arange(out_w)[None, :] * strides[1]
            + (flat_index % pool[1]) * dilation[1])
    result = np.zeros(padded.shape, dtype=out_grad.dtype)
    n_index = np.arange(batch)[:, None, None, None]
    c_index = np.arange(channels)[None, :, None, None]
    np.add.at(result, (n_index, c_index, rows, cols), grad_nchw)
    return (_unpadded(result, pads, data_nchw.shape, layout),)


def _unpadded(grad_padded, pads, data_shape, layout):
    """The gradient with respect to the padded NCHW data, cropped to the data (``pads``: the
    top and left padding) and put back in ``layout``."""
    cropped = grad_padded[:, :, pads[0]:pads[0] + data_shape[2], pads[1]:pads[1] + data_shape[3]]
    return from_canonical(np.ascontiguousarray(cropped), "NCHW", layout)


_MAX_POOL2D_GRAD = register_op("nn.max_pool2d_grad", ("out_grad", "data"),
                               attrs=("relay.attrs.MaxPool2DAttrs", _POOL_FIELDS),
                               type_rel=_max_pool2d_grad_rel,
                               pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                               description="gradient of max_pool2d w.r.t. its data")
_MAX_POOL2D_GRAD.def_impl(_max_pool2d_grad_ref)


def max_pool2d_grad(out_grad, data, pool_size=(1, 1), strides=(1, 1), padding=(0, 0),
                    layout="NCHW", out_layout="", ceil_mode=False):
    """The gradient of :func:`max_pool2d` with respect to its data.

    Args:
        out_grad: the adjoint of the pooling's output.
        data: the pooling's input.
        pool_size: the window size.
        strides: the strides.
        padding: the padding.
        layout: the data layout.
        out_layout: the output layout.
        ceil_mode: the pooling's ceil_mode.

    Returns:
        A Call of ``nn.max_pool2d_grad``.
    """
    return make_call("nn.max_pool2d_grad", (out_grad, data),
                     _pool_attrs(pool_size, strides, (1, 1), padding, layout, out_layout,
                                 ceil_mode))


# -- average pooling ----------------------------------------------------------------------------

_AVG_FIELDS = _POOL_FIELDS + [("count_include_pad", False)]


def _window_counts(data_nchw, attrs):
    """How many input (or padded, with count_include_pad) positions each window covers."""
    pool, strides, dilation, pads = _pool_geometry(attrs)
    height, width = data_nchw.shape[2:]
    if attrs["count_include_pad"]:
        inner = np.ones((1, 1, height + pads[0] + pads[2], width + pads[1] + pads[3]))
        mask_pads = (0, 0, 0, 0)
    else:
        inner = np.ones((1, 1, height, width))
        mask_pads = pads
    template = np.zeros((1, 1, height, width))
    padded, _ = _padded_windows(template, attrs)
    mask = np.zeros(padded.shape)
    top, left = mask_pads[0], mask_pads[1]
    rows = min(inner.shape[2], mask.shape[2] - top)
    cols = min(inner.shape[3], mask.shape[3] - left)
    mask[:, :, top:top + rows, left:left + cols] = 1.0
    out_size = [_pool_out(data_nchw.shape[2 + i], pool[i], strides[i], dilation[i], pads[i],
                          pads[i + 2], attrs["ceil_mode"]) for i in range(2)]
    return windows(mask, pool, strides, dilation, out_size).sum(axis=(4, 5))[0, 0]


def _avg_pool2d_ref(data, **attrs):
    data_nchw = to_canonical(data, attrs["layout"], "NCHW")
    pool, strides, dilation, pads = _pool_geometry(attrs)
    padded, _ = _padded_windows(np.zeros((1, 1) + data_nchw.shape[2:]), attrs)
    zero_padded = pad_spatial(data_nchw, (pads[0], pads[1], padded.shape[2] - pads[0]
                                          - data_nchw.shape[2], padded.shape[3] - pads[1]
                                          - data_nchw.shape[3]))
    counts = _window_counts(data_nchw, attrs)
    out_size = counts.shape
    sums = windows(zero_padded, pool, strides, dilation, out_size).sum(axis=(4, 5))
    out = (sums / np.maximum(counts, 1)).astype(data.dtype, copy=False)
    return (from_canonical(out, "NCHW", attrs["out_layout"] or attrs["layout"]),)


_AVG_POOL2D = register_op("nn.avg_pool2d", ("data",),
                          attrs=("relay.attrs.AvgPool2DAttrs", _AVG_FIELDS),
                          type_rel=_max_pool2d_rel, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                          description="2-D average pooling", support_level=2)
_AVG_POOL2D.def_impl(_avg_pool2d_ref)
_AVG_POOL2D.def_grad(lambda call, out_grad: [
    make_call("nn.avg_pool2d_grad", (out_grad, call.args[0]), dict(call.attrs))])
_AVG_POOL2D.def_layout(_max_pool2d_layout)


def _avg_pool2d_grad_ref(out_grad, data, **attrs):
    layout = attrs["layout"]
    data_nchw = to_canonical(data, layout, "NCHW")
    grad_nchw = to_canonical(out_grad, attrs["out_layout"] or layout, "NCHW")
    pool, strides, dilation, pads = _pool_geometry(attrs)
    padded, _ = _padded_windows(np.zeros((1, 1) + data_nchw.shape[2:]), attrs)
    share = grad_nchw / np.maximum(_window_counts(data_nchw, attrs), 1)
    out_h, out_w = share.shape[2:]
    result = np.zeros(data_nchw.shape[:2] + padded.shape[2:], dtype=out_grad.dtype)
    # One vectorised add per kernel offset (never a loop over pixels).
    for i in range(pool[0]):
        for j in range(pool[1]):
            rows = slice(i * dilation[0], i * dilation[0] + strides[0] * (out_h - 1) + 1,
                         strides[0])
            cols = slice(j * dilation[1], j * dilation[1] + strides[1] * (out_w - 1) + 1,
                         strides[1])
            result[:, :, rows, cols] += share
    return (_unpadded(result, pads, data_nchw.shape, layout),)


_AVG_POOL2D_GRAD = register_op("nn.avg_pool2d_grad", ("out_grad", "data"),
                               attrs=("relay.attrs.AvgPool2DAttrs", _AVG_FIELDS),
                               type_rel=_max_pool2d_grad_rel,
                               pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                               description="gradient of avg_pool2d w.r.t. its data")
_AVG_POOL2D_GRAD.def_impl(_avg_pool2d_grad_ref)


def avg_pool2d(data, pool_size=(1, 1), strides=(1, 1), dilation=(1, 1), padding=(0, 0),
               layout="NCHW", out_layout="", ceil_mode=False, count_include_pad=False):
    """2-D average pooling (``relay.nn.avg_pool2d``).

    Args:
        data: the input, 4-D in ``layout``.
        pool_size: an int or a pair.
        strides: an int or a pair.
        dilation: an int or a pair.
        padding: 1, 2 or 4 ints; stored as ``(top, left, bottom, right)``.
        layout: ``"NCHW"``, ``"NHWC"`` or another permutation of those letters.
        out_layout: the output layout (default: ``layout``).
        ceil_mode: round the output size up instead of down.
        count_include_pad: divide by the window size including padding positions.

    Returns:
        A Call of ``nn.avg_pool2d``.
    """
    attrs = _pool_attrs(pool_size, strides, dilation, padding, layout, out_layout, ceil_mode)
    attrs["count_include_pad"] = bool(count_include_pad)
    return make_call("nn.avg_pool2d", (data,), attrs)


def avg_pool2d_grad(out_grad, data, pool_size=(1, 1), strides=(1, 1), padding=(0, 0),
                    layout="NCHW", out_layout="", ceil_mode=False, count_include_pad=False):
    """The gradient of :func:`avg_pool2d` with respect to its data. Arguments as
    :func:`max_pool2d_grad`, and ``count_include_pad`` as the pooling's.

    Returns:
        A Call of ``nn.avg_pool2d_grad``.
    """
    attrs = _pool_attrs(pool_size, strides, (1, 1), padding, layout, out_layout, ceil_mode)
    attrs["count_include_pad"] = bool(count_include_pad)
    return make_call("nn.avg_pool2d_grad", (out_grad, data), attrs)


# -- global pooling ----------------------------------------------------------------------------

def _global_pool_rel(arg_types, attrs):
    data = expect_tensor(arg_types[0], "global pool: data")
    if data.ndim != 4:
        raise TypeInferenceError(f"global pooling needs 4-D data, got {data}")
    pos = layout_positions(attrs["layout"], "NCHW", "global pool: layout")
    shape = list(data.shape)
    shape[pos["H"]] = 1
    shape[pos["W"]] = 1
    return TensorType(shape, data.dtype)


def _spatial_axes(attrs):
    pos = layout_positions(attrs["layout"], "NCHW", "global pool: layout")
    return (pos["H"], pos["W"])


def _global_pool(name: str, numpy_fn, doc: str):
    op_def = register_op(name, ("data",),
                         attrs=("relay.attrs.GlobalPool2DAttrs", [("layout", "NCHW"),
                                                                  ("out_layout", "")]),
                         type_rel=_global_pool_rel, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                         description=doc, support_level=2)
    op_def.def_impl(lambda data, layout="NCHW", out_layout="": (
        numpy_fn(data, axis=_spatial_axes({"layout": layout}), keepdims=True).astype(
            data.dtype, copy=False),))
    op_def.def_layout(lambda attrs, desired_layout: attrs.with_changes(layout=desired_layout))
    return op_def


_GLOBAL_AVG = _global_pool("nn.global_avg_pool2d", np.mean, "mean over the spatial axes")
_GLOBAL_MAX = _global_pool("nn.global_max_pool2d", np.max, "maximum over the spatial axes")


def _reduce_attrs(call):
    return {"axis": _spatial_axes(call.attrs), "keepdims": True, "exclude": False}


@_GLOBAL_AVG.def_grad
def _global_avg_grad(call, out_grad):
    data = call.args[0]
    count = make_call("sum", (make_call("ones_like", (data,)),), _reduce_attrs(call))
    return [make_call("broadcast_to_like", (make_call("divide", (out_grad, count)), data))]


@_GLOBAL_MAX.def_grad
def _global_max_grad(call, out_grad):
    data = call.args[0]
    hit = make_call("cast_like", (make_call("equal", (data, call)), data))
    ties = make_call("sum", (hit,), _reduce_attrs(call))
    return [make_call("multiply", (hit, make_call("divide", (out_grad, ties))))]


def global_avg_pool2d(data, layout="NCHW", out_layout=""):
    """Mean over the spatial (H, W) axes, keeping them as size 1.

    Args:
        data: the 4-D input.
        layout: the data layout.
        out_layout: the output layout (default: ``layout``).

    Returns:
        A Call of ``nn.global_avg_pool2d``.
    """
    return make_call("nn.global_avg_pool2d", (data,), {"layout": layout,
                                                       "out_layout": out_layout})


def global_max_pool2d(data, layout="NCHW", out_layout=""):
    """Maximum over the spatial (H, W) axes, keeping them as size 1.

    Arguments as :func:`global_avg_pool2d`.

    Returns:
        A Call of ``nn.global_max_pool2d``.
    """
    return make_call("nn.global_max_pool2d", (data,), {"layout": layout,
                                                       "out_layout": out_layout})
