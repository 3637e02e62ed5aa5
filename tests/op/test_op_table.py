"""Table-driven op tests: each record runs an op's reference implementation on a few shapes
and dtypes and compares it with an independent numpy oracle written here; the type relation's
result must equal the oracle's shape and dtype."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import irlib

from op_test_helpers import (OpRecord, check_record, pads4 as _pads, pair as _pair, pool_out_hw,
                             positive, rand)

# -- oracles ---------------------------------------------------------------------------------

def reduce_oracle(kind):
    def oracle(data, axis=None, keepdims=False, exclude=False):
        axes = list(range(data.ndim)) if axis is None else \
            [a % data.ndim for a in ([axis] if isinstance(axis, int) else axis)]
        if exclude:
            axes = [a for a in range(data.ndim) if a not in axes]
        out = data.astype("float64")
        for a in sorted(axes, reverse=True):
            out = out.sum(axis=a) if kind == "sum" else out.sum(axis=a) / data.shape[a]
        if keepdims:
            for a in sorted(axes):
                out = np.expand_dims(out, a)
        return np.asarray(out).astype(data.dtype)
    return oracle


def transpose_oracle(data, axes=None):
    letters = "abcdef"[:data.ndim]
    perm = list(reversed(range(data.ndim))) if axes is None else [a % data.ndim for a in axes]
    return np.einsum(f"{letters}->{''.join(letters[p] for p in perm)}", data)


def concatenate_oracle(fields, axis):
    axis %= fields[0].ndim
    shape = list(fields[0].shape)
    shape[axis] = sum(f.shape[axis] for f in fields)
    out = np.zeros(shape, fields[0].dtype)
    start = 0
    for f in fields:
        index = [slice(None)] * len(shape)
        index[axis] = slice(start, start + f.shape[axis])
        out[tuple(index)] = f
        start += f.shape[axis]
    return out


def dense_oracle(data, weight, units=None, out_dtype=""):
    out = np.einsum("...k,uk->...u", data.astype("float64"), weight.astype("float64"))
    return out.astype(out_dtype or data.dtype)


def conv2d_loops(data, weight, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
                 data_layout="NCHW", kernel_layout="OIHW", **_):
    """Direct nested-loop convolution (the definition), on tiny inputs."""
    if data_layout == "NHWC":
        data = data.transpose(0, 3, 1, 2)
    if kernel_layout == "HWIO":
        weight = weight.transpose(3, 2, 0, 1)
    pads = _pads(padding)
    strides, dilation = _pair(strides), _pair(dilation)
    n, c, h, w = data.shape
    o, ig, kh, kw = weight.shape
    oh = (h + pads[0] + pads[2] - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (w + pads[1] + pads[3] - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for b, oc, y, x in itertools.product(range(n), range(o), range(oh), range(ow)):
        g = oc // og
        total = 0.0
        for ic, i, j in itertools.product(range(ig), range(kh), range(kw)):
            row = y * strides[0] + i * dilation[0] - pads[0]
            col = x * strides[1] + j * dilation[1] - pads[1]
            if 0 <= row < h and 0 <= col < w:
                total += data[b, g * ig + ic, row, col] * weight[oc, ic, i, j]
        out[b, oc, y, x] = total
    if data_layout == "NHWC":
        out = out.transpose(0, 2, 3, 1)
    return out.astype(data.dtype)


def conv2d_transpose_loops(data, weight, strides=(1, 1), padding=(0, 0), dilation=(1, 1),
                           groups=1, output_padding=(0, 0), **_):
    """Scatter definition of the transposed convolution (IOHW weight)."""
    pads = _pads(padding)
    strides, dilation = _pair(strides), _pair(dilation)
    n, cin, h, w = data.shape
    _, og, kh, kw = weight.shape
    output_padding = _pair(output_padding)
    ig = cin // groups
    oh = (h - 1) * strides[0] - pads[0] - pads[2] + dilation[0] * (kh - 1) + 1 + output_padding[0]
    ow = (w - 1) * strides[1] - pads[1] - pads[3] + dilation[1] * (kw - 1) + 1 + output_padding[1]
    out = np.zeros((n, og * groups, oh, ow))
    for b, ic, y, x, oc, i, j in itertools.product(range(n), range(cin), range(h), range(w),
                                                   range(og), range(kh), range(kw)):
        row = y * strides[0] + i * dilation[0] - pads[0]
        col = x * strides[1] + j * dilation[1] - pads[1]
        if 0 <= row < oh and 0 <= col < ow:
            out[b, (ic // ig) * og + oc, row, col] += data[b, ic, y, x] * weight[ic, oc, i, j]
    return out.astype(data.dtype)


def max_pool_loops(data, pool_size=(1, 1), strides=(1, 1), dilation=(1, 1), padding=(0, 0),
                   layout="NCHW", ceil_mode=False, **_):
    if layout == "NHWC":
        data = data.transpose(0, 3, 1, 2)
    pads = _pads(padding)
    strides, dilation = _pair(strides), _pair(dilation)
    pool_size = _pair(pool_size)
    n, c, h, w = data.shape
    oh, ow = pool_out_hw(h, w, pads, pool_size, strides, dilation, ceil_mode)
    out = np.full((n, c, oh, ow), -np.inf)
    for b, ch, y, x, i, j in itertools.product(range(n), range(c), range(oh), range(ow),
                                               range(pool_size[0]), range(pool_size[1])):
        row = y * strides[0] + i * dilation[0] - pads[0]
        col = x * strides[1] + j * dilation[1] - pads[1]
        if 0 <= row < h and 0 <= col < w:
            out[b, ch, y, x] = max(out[b, ch, y, x], data[b, ch, row, col])
    if layout == "NHWC":
        out = out.transpose(0, 2, 3, 1)
    return out.astype(data.dtype)


def batch_norm_oracle(data, gamma, beta, mean, var, axis=1, epsilon=1e-5, center=True,
                      scale=True):
    moved = np.moveaxis(data.astype("float64"), axis, -1)
    out = (moved - mean) / np.sqrt(var + epsilon)
    if scale:
        out = out * gamma
    if center:
        out = out + beta
    return (np.moveaxis(out, -1, axis).astype(data.dtype), mean, var)


def softmax_oracle(data, axis=-1):
    e = np.exp(data.astype("float64"))
    return (e / e.sum(axis=axis, keepdims=True)).astype(data.dtype)


def bias_add_oracle(data, bias, axis=1):
    out = data.copy()
    axis %= data.ndim
    for c in range(data.shape[axis]):
        index = [slice(None)] * data.ndim
        index[axis] = c
        out[tuple(index)] += bias[c]
    return out


def where_oracle(condition, x, y):
    condition, x, y = np.broadcast_arrays(condition, x, y)
    picked = [a if c else b for c, a, b in zip(condition.flat, x.flat, y.flat)]
    return np.array(picked, x.dtype).reshape(condition.shape)


def split_oracle(data, indices_or_sections, axis=0):
    size = data.shape[axis]
    if isinstance(indices_or_sections, int):
        step = size // indices_or_sections
        edges = [step * i for i in range(indices_or_sections + 1)]
    else:
        edges = [0, *indices_or_sections, size]
    return tuple(np.take(data, list(range(a, b)), axis=axis) for a, b in zip(edges, edges[1:]))


# -- the table -------------------------------------------------------------------------------

def _binary_cases(dtypes=("float32", "float64", "int32")):
    shapes = [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1, 3), (2, 1)), ((), (2,))]
    return [([rand(a, dt), rand(b, dt)], {}) for (a, b), dt in itertools.product(shapes, dtypes)]


def _unary_cases(maker=rand, dtypes=("float32", "float64")):
    return [([maker(s, dt)], {}) for s, dt in itertools.product([(3,), (2, 3), ()], dtypes)]


RECORDS = [
    OpRecord("add", irlib.add, _binary_cases(), lambda a, b: a + b),
    OpRecord("subtract", irlib.subtract, _binary_cases(), lambda a, b: a - b),
    OpRecord("multiply", irlib.multiply, _binary_cases(), lambda a, b: a * b),
    OpRecord("divide", irlib.divide, [([rand((2, 3)), positive((3,))], {}),
                                      ([np.array([7, -7, 6], "int32"),
                                        np.array([2, 2, -4], "int32")], {})],
             lambda a, b: (a / b).astype(a.dtype) if a.dtype.kind == "f"
             else np.array([int(x / y) for x, y in zip(a, b)], a.dtype)),
    OpRecord("equal", irlib.equal, _binary_cases(("int32",)), lambda a, b: a == b),
    OpRecord("not_equal", irlib.not_equal, _binary_cases(("int32",)), lambda a, b: a != b),
    OpRecord("less", irlib.less, _binary_cases(), lambda a, b: a < b),
    OpRecord("less_equal", irlib.less_equal, _binary_cases(("int32",)), lambda a, b: a <= b),
    OpRecord("greater", irlib.greater, _binary_cases(), lambda a, b: a > b),
    OpRecord("greater_equal", irlib.greater_equal, _binary_cases(("int32",)),
             lambda a, b: a >= b),
    OpRecord("negative", irlib.negative, _unary_cases(), lambda a: 0 - a),
    OpRecord("exp", irlib.exp, _unary_cases(),
             lambda a: (np.e ** a.astype("float64")).astype(a.dtype)),
    OpRecord("log", irlib.log, _unary_cases(positive), lambda a: np.log(a)),
    OpRecord("sqrt", irlib.sqrt, _unary_cases(positive), lambda a: a ** 0.5),
    OpRecord("where", irlib.where,
             [([rand((2, 3), "bool"), rand((2, 3)), rand((2, 3))], {}),
              ([rand((3,), "bool"), rand((2, 1)), rand(())], {})],
             where_oracle),
    OpRecord("cast", irlib.cast, [([rand((2, 3))], {"dtype": "int32"}),
                                  ([rand((3,), "int32")], {"dtype": "float64"}),
                                  ([rand((2,), "int32")], {"dtype": "bool"})],
             lambda a, dtype: np.array(a.tolist(), dtype=dtype)),
    OpRecord("cast_like", irlib.cast_like, [([rand((2, 3)), rand((1,), "int32")], {})],
             lambda a, b: a.astype(b.dtype)),
    OpRecord("ones_like", irlib.ones_like, _unary_cases(), lambda a: a * 0 + 1),
    OpRecord("zeros_like", irlib.zeros_like, _unary_cases(), lambda a: a * 0),
    OpRecord("sum", irlib.sum,
             [([rand((2, 3, 4))], {}), ([rand((2, 3, 4))], {"axis": 1}),
              ([rand((2, 3, 4))], {"axis": [0, -1], "keepdims": True}),
              ([rand((2, 3, 4))], {"axis": [1], "exclude": True}),
              ([rand((2, 3, 4), "int32")], {"axis": (0, 2)})],
             reduce_oracle("sum"), tol=1e-4),
    OpRecord("mean", irlib.mean,
             [([rand((2, 3, 4))], {}), ([rand((2, 3, 4))], {"axis": -1, "keepdims": True}),
              ([rand((2, 3, 4), "float64")], {"axis": [1], "exclude": True})],
             reduce_oracle("mean"), tol=1e-5),
    OpRecord("collapse_sum_like", irlib.collapse_sum_like,
             [([rand((2, 3, 4)), rand((3, 1))], {}), ([rand((2, 3)), rand((2, 3))], {})],
             lambda a, b: reduce_oracle("sum")(a, axis=[0, 2], keepdims=False)[:, None]
             if a.ndim == 3 else a),
    OpRecord("reshape", irlib.reshape,
             [([rand((2, 3, 4))], {"newshape": (6, 4)}),
              ([rand((2, 3, 4))], {"newshape": (0, -1)}),
              ([rand((2, 3, 4))], {"newshape": (-2,)}),
              ([rand((2, 3, 4))], {"newshape": (2, -2)}),
              ([rand((2, 3, 4))], {"newshape": (-3, 4)}),
              ([rand((2, 3, 4))], {"newshape": (-4, 1, 2, -2)}),
              ([rand((2, 3, 4))], {"newshape": (0, -4, -1, 1, 4)}),
              ([rand((2, 3, 4))], {"newshape": -1})],
             lambda a, newshape: a.reshape({(6, 4): (6, 4), (0, -1): (2, 12), (-2,): (2, 3, 4),
                                            (2, -2): (2, 3, 4), (-3, 4): (6, 4),
                                            (-4, 1, 2, -2): (1, 2, 3, 4),
                                            (0, -4, -1, 1, 4): (2, 3, 1, 4),
                                            -1: (24,)}[newshape])),
    OpRecord("reshape_like", irlib.reshape_like, [([rand((2, 6)), rand((3, 4))], {})],
             lambda a, b: a.reshape(3, 4)),
    OpRecord("transpose", irlib.transpose,
             [([rand((2, 3, 4))], {}), ([rand((2, 3, 4))], {"axes": (1, 0, 2)}),
              ([rand((2, 3, 4, 5))], {"axes": [0, -1, 1, 2]})],
             transpose_oracle),
    OpRecord("concatenate", lambda data, axis: irlib.concatenate(data, axis),
             [([(rand((2, 3)), rand((2, 5)))], {"axis": 1}),
              ([(rand((1, 3)), rand((2, 3)), rand((3, 3)))], {"axis": 0}),
              ([(rand((2, 2, 2), "int32"), rand((2, 2, 1), "int32"))], {"axis": -1})],
             concatenate_oracle),
    OpRecord("split", irlib.split,
             [([rand((6, 2))], {"indices_or_sections": 3}),
              ([rand((2, 7))], {"indices_or_sections": [2, 5], "axis": 1})],
             split_oracle),
    OpRecord("broadcast_to_like", irlib.broadcast_to_like,
             [([rand((3, 1)), rand((2, 3, 4))], {})],
             lambda a, b: a + np.zeros(b.shape, a.dtype)),
    OpRecord("expand_dims", irlib.expand_dims,
             [([rand((2, 3))], {"axis": 1}), ([rand((2, 3))], {"axis": -1, "num_newaxis": 2})],
             lambda a, axis, num_newaxis=1: a.reshape(
                 {1: (2, 1, 3), -1: (2, 3) + (1,) * num_newaxis}[axis])),
    OpRecord("squeeze", irlib.squeeze,
             [([rand((1, 3, 1))], {}), ([rand((1, 3, 1))], {"axis": [2]})],
             lambda a, axis=None: a.reshape((3,) if axis is None else (1, 3))),
    OpRecord("nn.dense", irlib.nn.dense,
             [([rand((4, 3)), rand((5, 3))], {}), ([rand((2, 4, 3)), rand((5, 3))], {"units": 5}),
              ([rand((4, 3), "int32"), rand((2, 3), "int32")], {"out_dtype": "int64"})],
             dense_oracle, tol=1e-4),
    OpRecord("nn.conv2d", irlib.nn.conv2d,
             [([rand((1, 3, 5, 5)), rand((4, 3, 3, 3))], {}),
              ([rand((2, 4, 6, 5)), rand((6, 2, 3, 2))],
               {"strides": 2, "padding": (1, 2), "groups": 2}),
              ([rand((1, 4, 7, 7)), rand((4, 1, 3, 3))],
               {"dilation": (2, 1), "padding": 1, "groups": 4}),
              ([rand((1, 3, 6, 6)), rand((6, 3, 2, 2))],
               {"padding": (0, 1, 2, 0), "strides": (1, 2)}),
              ([rand((1, 5, 5, 3)), rand((3, 3, 3, 4))],
               {"data_layout": "NHWC", "kernel_layout": "HWIO", "padding": 1}),
              ([rand((1, 2, 4, 4), "float64"), rand((2, 2, 1, 1), "float64")], {})],
             conv2d_loops, tol=1e-4),
    OpRecord("nn.conv2d_transpose", irlib.nn.conv2d_transpose,
             [([rand((1, 3, 4, 4)), rand((3, 2, 3, 3))], {"strides": 2, "padding": 1,
                                                           "output_padding": 1}),
              ([rand((2, 4, 3, 3)), rand((4, 1, 2, 2))], {"groups": 2, "dilation": 2}),
              ([rand((1, 2, 3, 3)), rand((2, 2, 3, 3))], {})],
             conv2d_transpose_loops, tol=1e-4),
    OpRecord("nn.relu", irlib.nn.relu, _unary_cases(), lambda a: a * (a > 0)),
    OpRecord("nn.bias_add", irlib.nn.bias_add,
             [([rand((2, 3, 4)), rand((3,))], {}), ([rand((2, 3, 4)), rand((4,))], {"axis": -1})],
             bias_add_oracle),
    OpRecord("nn.batch_norm", irlib.nn.batch_norm,
             [([rand((2, 3, 4, 4)), rand((3,)), rand((3,)), rand((3,)), positive((3,))], {}),
              ([rand((2, 5, 3)), rand((3,)), rand((3,)), rand((3,)), positive((3,))],
               {"axis": -1, "epsilon": 1e-3, "center": False}),
              ([rand((4, 2)), rand((2,)), rand((2,)), rand((2,)), positive((2,))],
               {"scale": False})],
             batch_norm_oracle, tol=1e-4),
    OpRecord("nn.max_pool2d", irlib.nn.max_pool2d,
             [([rand((1, 2, 6, 6))], {"pool_size": 2, "strides": 2}),
              ([rand((2, 3, 7, 7))], {"pool_size": (3, 3), "strides": (2, 2), "padding": 1}),
              ([rand((1, 2, 7, 6))], {"pool_size": 2, "strides": 2, "ceil_mode": True}),
              ([rand((1, 2, 7, 7))], {"pool_size": 2, "dilation": 2, "padding": (0, 1, 1, 0)}),
              ([rand((1, 6, 6, 3))], {"pool_size": 3, "strides": 1, "layout": "NHWC"}),
              ([rand((1, 1, 5, 5), "int32")], {"pool_size": 2, "padding": 1})],
             max_pool_loops),
    OpRecord("nn.softmax", irlib.nn.softmax,
             [([rand((2, 5))], {}), ([rand((3, 4, 2), "float64")], {"axis": 1})],
             softmax_oracle),
]

CASES = [(record, i) for record in RECORDS for i in range(len(record.cases))]


@pytest.mark.parametrize("record,case", CASES,
                         ids=[f"{r.name}-{i}" for r, i in CASES])
def test_reference_matches_oracle_and_type(record, case):
    check_record(record, case)
