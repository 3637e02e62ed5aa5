"""Gradient rules against two-sided finite differences (float64, tiny shapes)."""

from __future__ import annotations

import numpy as np
import pytest

import irlib

from op_test_helpers import check_gradient

RNG = np.random.default_rng(7)


def rand(*shape, low=-2.0, high=2.0):
    return RNG.uniform(low, high, size=shape)


def away_from_zero(*shape):
    return RNG.choice([-1.0, 1.0], size=shape) * RNG.uniform(0.3, 2.0, size=shape)


GRAD_CASES = [
    ("add", irlib.add, [rand(2, 3), rand(3)], {}),
    ("add-scalar", irlib.add, [rand(), rand(2, 2)], {}),
    ("subtract", irlib.subtract, [rand(2, 1, 3), rand(4, 1)], {}),
    ("multiply", irlib.multiply, [rand(2, 3), rand(2, 1)], {}),
    ("divide", irlib.divide, [rand(2, 3), away_from_zero(3)], {}),
    ("negative", irlib.negative, [rand(3, 2)], {}),
    ("exp", irlib.exp, [rand(4)], {}),
    ("log", irlib.log, [rand(4, low=0.5, high=2.0)], {}),
    ("sqrt", irlib.sqrt, [rand(4, low=0.5, high=2.0)], {}),
    ("less", irlib.less, [rand(3), rand(3)], {}),
    ("greater_equal", irlib.greater_equal, [rand(3), rand(3)], {}),
    ("where", irlib.where, [RNG.random((2, 3)) > 0.5, rand(2, 3), rand(3)], {}),
    ("cast", irlib.cast, [rand(2, 3)], {"dtype": "float64"}),
    ("cast_like", irlib.cast_like, [rand(3), rand(1)], {}),
    ("ones_like", irlib.ones_like, [rand(3)], {}),
    ("device_copy", irlib.device_copy, [rand(2, 3)], {"src_device": 2, "dst_device": 1}),
    ("sum-all", irlib.sum, [rand(2, 3)], {}),
    ("sum-axis", irlib.sum, [rand(2, 3, 4)], {"axis": 1}),
    ("sum-keepdims", irlib.sum, [rand(2, 3, 4)], {"axis": [0, 2], "keepdims": True}),
    ("sum-exclude", irlib.sum, [rand(2, 3, 4)], {"axis": [1], "exclude": True}),
    ("mean-all", irlib.mean, [rand(2, 3)], {}),
    ("mean-axis", irlib.mean, [rand(2, 3, 4)], {"axis": -1}),
    ("mean-exclude", irlib.mean, [rand(2, 3, 4)], {"axis": 0, "exclude": True,
                                                   "keepdims": True}),
    ("collapse_sum_like", irlib.collapse_sum_like, [rand(2, 3), rand(3)], {}),
    ("broadcast_to_like", irlib.broadcast_to_like, [rand(3, 1), rand(2, 3, 2)], {}),
    ("reshape", irlib.reshape, [rand(2, 3, 4)], {"newshape": (0, -1)}),
    ("reshape_like", irlib.reshape_like, [rand(2, 6), rand(3, 4)], {}),
    ("transpose", irlib.transpose, [rand(2, 3, 4)], {"axes": (2, 0, 1)}),
    ("transpose-default", irlib.transpose, [rand(2, 3)], {}),
    ("concatenate", lambda data, axis: irlib.concatenate(data, axis),
     [(rand(2, 3), rand(2, 1))], {"axis": -1}),
    ("split", irlib.split, [rand(2, 6)], {"indices_or_sections": [1, 4], "axis": 1}),
    ("expand_dims", irlib.expand_dims, [rand(2, 3)], {"axis": 1}),
    ("squeeze", irlib.squeeze, [rand(1, 3, 1)], {}),
    ("dense", irlib.nn.dense, [rand(4, 3), rand(5, 3)], {}),
    ("dense-3d", irlib.nn.dense, [rand(2, 4, 3), rand(5, 3)], {}),
    ("conv2d", irlib.nn.conv2d, [rand(1, 2, 5, 5), rand(3, 2, 3, 3)], {"padding": 1}),
    ("conv2d-strided", irlib.nn.conv2d, [rand(2, 2, 6, 7), rand(4, 1, 3, 2)],
     {"strides": 2, "padding": (1, 0), "groups": 2}),
    ("conv2d-dilated", irlib.nn.conv2d, [rand(1, 3, 7, 7), rand(3, 1, 2, 2)],
     {"dilation": 2, "groups": 3, "strides": (1, 2)}),
    ("conv2d-nhwc", irlib.nn.conv2d, [rand(1, 5, 4, 2), rand(2, 3, 2, 3)],
     {"strides": 2, "padding": 1, "data_layout": "NHWC", "kernel_layout": "HWIO"}),
    ("relu", irlib.nn.relu, [away_from_zero(3, 4)], {}),
    ("bias_add", irlib.nn.bias_add, [rand(2, 3, 2), rand(3)], {}),
    ("bias_add-last", irlib.nn.bias_add, [rand(2, 3), rand(3)], {"axis": -1}),
    ("batch_norm", irlib.nn.batch_norm,
     [rand(2, 3, 2), rand(3), rand(3), rand(3), rand(3, low=0.5, high=2.0)], {}),
    ("batch_norm-noscale", irlib.nn.batch_norm,
     [rand(2, 3), rand(3), rand(3), rand(3), rand(3, low=0.5, high=2.0)],
     {"axis": -1, "scale": False, "center": False}),
    ("max_pool2d", irlib.nn.max_pool2d, [rand(1, 2, 5, 5)],
     {"pool_size": 3, "strides": 2, "padding": 1}),
    ("max_pool2d-ceil", irlib.nn.max_pool2d, [rand(1, 1, 5, 4)],
     {"pool_size": 2, "strides": 2, "ceil_mode": True}),
    ("softmax", irlib.nn.softmax, [rand(2, 4)], {}),
    ("softmax-axis0", irlib.nn.softmax, [rand(3, 2)], {"axis": 0}),
]


@pytest.mark.parametrize("builder,inputs,attrs", [c[1:] for c in GRAD_CASES],
                         ids=[c[0] for c in GRAD_CASES])
def test_gradient_matches_finite_differences(builder, inputs, attrs):
    check_gradient(builder, inputs, **attrs)


def test_gradient_of_untyped_strided_conv_explains_itself():
    x = irlib.var("x", shape=(1, 1, 4, 4), dtype="float64")
    w = irlib.var("w", shape=(1, 1, 2, 2), dtype="float64")
    call = irlib.nn.conv2d(x, w, strides=2)
    with pytest.raises(NotImplementedError, match="type inference"):
        irlib.op.get_def("nn.conv2d").grad(call, irlib.var("g"))
