"""avg/global pooling, batch_flatten, dropout, log_softmax, leaky_relu, pad, layer_norm."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import irlib
from irlib import TensorType, TupleType, size_var
from irlib.errors import TypeInferenceError

from op_test_helpers import (OpRecord, check_gradient, check_record, pads4, pair as _pair,
                             pool_out_hw, rand, type_of)


def avg_pool_loops(data, pool_size=(1, 1), strides=(1, 1), dilation=(1, 1), padding=(0, 0),
                   layout="NCHW", ceil_mode=False, count_include_pad=False, **_):
    pool_size, strides, dilation = _pair(pool_size), _pair(strides), _pair(dilation)
    pads = pads4(padding)
    if layout == "NHWC":
        data = data.transpose(0, 3, 1, 2)
    n, c, h, w = data.shape
    oh, ow = pool_out_hw(h, w, pads, pool_size, strides, dilation, ceil_mode)
    out = np.zeros((n, c, oh, ow))
    for b, ch, y, x in itertools.product(range(n), range(c), range(oh), range(ow)):
        total, count = 0.0, 0
        for i, j in itertools.product(range(pool_size[0]), range(pool_size[1])):
            row = y * strides[0] + i * dilation[0] - pads[0]
            col = x * strides[1] + j * dilation[1] - pads[1]
            inside_padded = -pads[0] <= row < h + pads[2] and -pads[1] <= col < w + pads[3]
            if 0 <= row < h and 0 <= col < w:
                total += data[b, ch, row, col]
                count += 1
            elif count_include_pad and inside_padded:
                count += 1
        out[b, ch, y, x] = total / max(count, 1)
    if layout == "NHWC":
        out = out.transpose(0, 2, 3, 1)
    return out.astype(data.dtype)


def global_oracle(pick):
    def oracle(data, layout="NCHW"):
        h_axis, w_axis = layout.index("H"), layout.index("W")
        moved = np.moveaxis(data, (h_axis, w_axis), (-2, -1))
        flat = moved.reshape(moved.shape[:-2] + (-1,))
        values = np.array([pick(list(row)) for row in flat.reshape(-1, flat.shape[-1])])
        out = values.reshape(moved.shape[:-2] + (1, 1))
        return np.moveaxis(out, (-2, -1), (h_axis, w_axis)).astype(data.dtype)
    return oracle


def log_softmax_oracle(data, axis=-1):
    moved = np.moveaxis(data.astype("float64"), axis, -1)
    out = np.array([[v - np.log(sum(np.exp(row))) for v in row]
                    for row in moved.reshape(-1, moved.shape[-1])]).reshape(moved.shape)
    return np.moveaxis(out, -1, axis).astype(data.dtype)


def pad_oracle(data, pad_value, pad_width, pad_mode="constant"):
    shape = [d + a + b for d, (a, b) in zip(data.shape, pad_width)]
    out = np.full(shape, pad_value, data.dtype)
    out[tuple(slice(a, a + d) for d, (a, _) in zip(data.shape, pad_width))] = data
    if pad_mode == "edge":
        for index in itertools.product(*[range(s) for s in shape]):
            source = tuple(min(max(i - a, 0), d - 1) for i, d, (a, _) in
                           zip(index, data.shape, pad_width))
            out[index] = data[source]
    return out


def layer_norm_oracle(data, gamma, beta, axis=-1, epsilon=1e-5, center=True, scale=True):
    moved = np.moveaxis(data.astype("float64"), axis, -1)
    mean = moved.sum(-1, keepdims=True) / moved.shape[-1]
    var = ((moved - mean) ** 2).sum(-1, keepdims=True) / moved.shape[-1]
    out = (moved - mean) / np.sqrt(var + epsilon)
    if scale:
        out = out * gamma
    if center:
        out = out + beta
    return np.moveaxis(out, -1, axis).astype(data.dtype)


RECORDS = [
    OpRecord("nn.avg_pool2d", irlib.nn.avg_pool2d,
             [([rand((1, 2, 6, 6))], {"pool_size": 2, "strides": 2}),
              ([rand((2, 3, 7, 7))], {"pool_size": 3, "strides": 2, "padding": 1}),
              ([rand((1, 2, 7, 7))], {"pool_size": 3, "strides": 2, "padding": 1,
                                      "count_include_pad": True}),
              ([rand((1, 2, 7, 6))], {"pool_size": 2, "strides": 2, "ceil_mode": True}),
              ([rand((1, 6, 6, 3))], {"pool_size": 3, "layout": "NHWC", "dilation": 2})],
             avg_pool_loops, tol=1e-5),
    OpRecord("nn.global_avg_pool2d", irlib.nn.global_avg_pool2d,
             [([rand((2, 3, 4, 5))], {}), ([rand((2, 4, 5, 3))], {"layout": "NHWC"})],
             global_oracle(lambda v: sum(v) / len(v)), tol=1e-5),
    OpRecord("nn.global_max_pool2d", irlib.nn.global_max_pool2d,
             [([rand((2, 3, 4, 5))], {}), ([rand((2, 4, 5, 3))], {"layout": "NHWC"})],
             global_oracle(lambda v: sorted(v)[-1])),
    OpRecord("nn.batch_flatten", irlib.nn.batch_flatten, [([rand((2, 3, 4))], {})],
             lambda a: np.array([row.ravel() for row in a])),
    OpRecord("nn.dropout", lambda data, rate=0.5: irlib.nn.dropout_raw(data, rate),
             [([rand((2, 3))], {"rate": 0.3})], lambda a, rate: (a, a * 0 + 1)),
    OpRecord("nn.log_softmax", irlib.nn.log_softmax,
             [([rand((2, 5))], {}), ([rand((3, 4, 2), "float64")], {"axis": 1})],
             log_softmax_oracle, tol=1e-5),
    OpRecord("nn.leaky_relu", irlib.nn.leaky_relu,
             [([rand((2, 5))], {}), ([rand((4,), "float64")], {"alpha": 0.2})],
             lambda a, alpha=0.01: np.array([v if v > 0 else alpha * v for v in a.flat],
                                            a.dtype).reshape(a.shape)),
    OpRecord("nn.pad", lambda data, pad_value, **attrs: irlib.nn.pad(data, pad_value=pad_value,
                                                                     **attrs),
             [([rand((2, 3)), np.array(1.5, "float32")], {"pad_width": ((0, 1), (2, 0))}),
              ([rand((2, 3)), np.array(0.0, "float32")],
               {"pad_width": ((1, 1), (1, 2)), "pad_mode": "edge"})],
             pad_oracle),
    OpRecord("nn.layer_norm", irlib.nn.layer_norm,
             [([rand((2, 5)), rand((5,)), rand((5,))], {}),
              ([rand((2, 3, 4)), rand((3,)), rand((3,))], {"axis": 1, "scale": False}),
              ([rand((4, 3), "float64"), rand((4,), "float64"), rand((4,), "float64")],
               {"axis": 0, "epsilon": 1e-3, "center": False})],
             layer_norm_oracle, tol=1e-4),
]
CASES = [(r, i) for r in RECORDS for i in range(len(r.cases))]


@pytest.mark.parametrize("record,case", CASES, ids=[f"{r.name}-{i}" for r, i in CASES])
def test_reference_matches_oracle_and_type(record, case):
    check_record(record, case)


def test_dropout_builder_returns_the_first_field():
    x = irlib.var("x", shape=(2, 3))
    out = irlib.nn.dropout(x)
    assert isinstance(out, irlib.TupleGetItem) and out.index == 0
    assert type_of(out.tuple_value) == TupleType([TensorType((2, 3))] * 2)


def test_relations_and_errors():
    n = size_var("n")
    assert type_of(irlib.nn.batch_flatten(irlib.var("x", shape=(n, 3, 4)))) == \
        TensorType((n, 12))
    assert type_of(irlib.nn.global_avg_pool2d(irlib.var("x", shape=(n, 3, 7, 7)))) == \
        TensorType((n, 3, 1, 1))
    assert type_of(irlib.nn.pad(irlib.var("x", shape=(n, 3)), ((1, 1), (0, 2)))) == \
        TensorType((n + 2, 5))
    with pytest.raises(TypeInferenceError, match="pad_width needs one"):
        type_of(irlib.nn.pad(irlib.var("x", shape=(2, 3)), ((1, 1),)))
    with pytest.raises(TypeInferenceError, match="nn.layer_norm: gamma must have shape"):
        type_of(irlib.nn.layer_norm(*[irlib.var(v, shape=s) for v, s in
                                      (("x", (2, 3)), ("g", (2,)), ("b", (3,)))]))


def f64(*shape, low=-2.0, high=2.0):
    return np.random.default_rng(13).uniform(low, high, size=shape)


@pytest.mark.parametrize("builder,inputs,attrs", [
    (irlib.nn.avg_pool2d, [f64(1, 2, 5, 5)], {"pool_size": 3, "strides": 2, "padding": 1}),
    (irlib.nn.avg_pool2d, [f64(1, 1, 5, 4)], {"pool_size": 2, "strides": 2, "ceil_mode": True,
                                              "count_include_pad": True}),
    (irlib.nn.global_avg_pool2d, [f64(2, 3, 2, 2)], {}),
    (irlib.nn.global_max_pool2d, [f64(2, 2, 3, 2)], {"layout": "NHWC"}),
    (irlib.nn.batch_flatten, [f64(2, 3, 2)], {}),
    (irlib.nn.dropout_raw, [f64(2, 3)], {}),
    (irlib.nn.log_softmax, [f64(2, 4)], {"axis": 0}),
    (irlib.nn.leaky_relu, [f64(3, 4) + np.sign(f64(3, 4)) * 0.2], {"alpha": 0.1}),
    (lambda d, v, **a: irlib.nn.pad(d, pad_value=v, **a), [f64(2, 3), np.array(0.7)],
     {"pad_width": ((1, 0), (2, 1))}),
    (irlib.nn.layer_norm, [f64(2, 4), f64(4), f64(4)], {}),
    (irlib.nn.layer_norm, [f64(3, 2, 2), f64(2), f64(2)], {"axis": 1, "center": False}),
], ids=["avg_pool2d", "avg_pool2d-ceil-include", "global_avg", "global_max-nhwc",
        "batch_flatten", "dropout", "log_softmax", "leaky_relu", "pad", "layer_norm",
        "layer_norm-axis1"])
def test_gradients(builder, inputs, attrs):
    check_gradient(builder, inputs, rtol=1e-5, atol=1e-6, **attrs)
