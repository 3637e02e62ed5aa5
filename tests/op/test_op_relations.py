"""Type relations beyond the table: symbolic dims, Any, error messages, attrs and builders."""

from __future__ import annotations

import numpy as np
import pytest

import irlib
from irlib import TensorType, TupleType, size_var
from irlib.errors import TypeInferenceError
from irlib.ir.dims import Any
from irlib.op import OpPattern, get_def

from op_test_helpers import type_of
from helpers import tvar

n = size_var("n")
m = size_var("m")


# -- symbolic and dynamic shapes ---------------------------------------------------------------

SYMBOLIC_CASES = [
    (lambda: irlib.nn.dense(tvar("x", (n, 4)), tvar("w", (3, 4))), TensorType((n, 3))),
    (lambda: irlib.add(tvar("x", (n, 1)), tvar("y", (1, m))), TensorType((n, m))),
    (lambda: irlib.add(tvar("x", (Any, 3)), tvar("y", (2, 3))), TensorType((2, 3))),
    (lambda: irlib.sum(tvar("x", (n, m, 2)), axis=1), TensorType((n, 2))),
    (lambda: irlib.mean(tvar("x", (n, 3)), axis=0, keepdims=True), TensorType((1, 3))),
    (lambda: irlib.reshape(tvar("x", (n, 3, 4)), (0, -1)), TensorType((n, 12))),
    (lambda: irlib.reshape(tvar("x", (n, 6)), (-1, 3)), TensorType((2 * n, 3))),
    (lambda: irlib.reshape(tvar("x", (n, m)), (-3,)), TensorType((n * m,))),
    (lambda: irlib.reshape(tvar("x", (Any, 6)), (-1, 2)), TensorType((Any, 2))),
    (lambda: irlib.transpose(tvar("x", (n, m))), TensorType((m, n))),
    (lambda: irlib.concatenate([tvar("a", (n, 2)), tvar("b", (m, 2))], 0),
     TensorType((n + m, 2))),
    (lambda: irlib.nn.conv2d(tvar("x", (n, 3, 8, 8)), tvar("w", (4, 3, 3, 3)), padding=1),
     TensorType((n, 4, 8, 8))),
    (lambda: irlib.nn.conv2d(tvar("x", (1, 3, n, n)), tvar("w", (4, 3, 3, 3)), padding=1),
     TensorType((1, 4, n, n))),
    (lambda: irlib.nn.max_pool2d(tvar("x", (n, 3, 8, 8)), pool_size=2, strides=2),
     TensorType((n, 3, 4, 4))),
    (lambda: irlib.nn.softmax(tvar("x", (n, 10))), TensorType((n, 10))),
    (lambda: irlib.nn.bias_add(tvar("x", (n, 3)), tvar("b", (3,))), TensorType((n, 3))),
    (lambda: irlib.nn.batch_norm(*[tvar("x", (n, 3, 2))] + [tvar(f"p{i}", (3,))
                                                           for i in range(4)]),
     TupleType([TensorType((n, 3, 2)), TensorType((3,)), TensorType((3,))])),
    (lambda: irlib.split(tvar("x", (2 * n, 4)), 2), TupleType([TensorType((n, 4))] * 2)),
    (lambda: irlib.where(tvar("c", (n, 1), "bool"), tvar("x", (1, 3)), tvar("y", (3,))),
     TensorType((n, 3))),
    (lambda: irlib.cast(tvar("x", (n,)), "int64"), TensorType((n,), "int64")),
    (lambda: irlib.less_equal(tvar("x", (n,)), tvar("y", (n,))), TensorType((n,), "bool")),
]


@pytest.mark.parametrize("build,expected", SYMBOLIC_CASES)
def test_symbolic_relations(build, expected):
    assert type_of(build()) == expected


def test_strided_conv_on_a_symbolic_size_keeps_the_formula():
    out = type_of(irlib.nn.conv2d(tvar("x", (1, 3, n, 8)), tvar("w", (4, 3, 3, 3)), strides=2))
    assert out.shape[1:] != (4, n, 3)
    assert out.shape[3] == 3
    assert str(out.shape[2]) == str((n - 3) // 2 + 1)


# -- error messages --------------------------------------------------------------------------

ERROR_CASES = [
    (lambda: irlib.nn.dense(tvar("x", (2, 4)), tvar("w", (5, 3))),
     r"nn.dense: data has 4 input features but weight expects 3"),
    (lambda: irlib.nn.dense(tvar("x", (2, 3)), tvar("w", (5, 3)), units=4),
     r"nn.dense: units=4 but weight has 5 rows"),
    (lambda: irlib.add(tvar("x", (2, 3)), tvar("y", (4,))),
     r"shapes \(2, 3\) and \(4,\) do not broadcast"),
    (lambda: irlib.add(tvar("x", (2,)), tvar("y", (2,), "int32")), r"dtypes differ"),
    (lambda: irlib.nn.conv2d(tvar("x", (1, 3, 8, 8)), tvar("w", (4, 2, 3, 3))),
     r"nn.conv2d: data has 3 input channels but weight expects 2"),
    (lambda: irlib.nn.conv2d(tvar("x", (1, 4, 8, 8)), tvar("w", (3, 2, 3, 3)), groups=2),
     r"3 output channels do not divide into groups=2"),
    (lambda: irlib.nn.conv2d(tvar("x", (1, 3, 2, 2)), tvar("w", (4, 3, 3, 3))),
     r"larger than the padded input"),
    (lambda: irlib.nn.conv2d(tvar("x", (1, 3, 8, 8)), tvar("w", (4, 3, 3, 3)), channels=5),
     r"channels=5 but weight has 4"),
    (lambda: irlib.nn.conv2d(tvar("x", (1, 3, 8, 8)), tvar("w", (4, 3, 3, 3)),
                             data_layout="NCHW16c"), r"data_layout 'NCHW16c' is not supported"),
    (lambda: irlib.reshape(tvar("x", (2, 3)), (4, 2)),
     r"reshape: cannot reshape \(2, 3\) \(6 elements\) to \(4, 2\) \(8 elements\)"),
    (lambda: irlib.reshape(tvar("x", (2, 3)), (-1, -1)), r"more than one -1"),
    (lambda: irlib.reshape(tvar("x", (2, 3)), (-1, 4)), r"cannot be split"),
    (lambda: irlib.transpose(tvar("x", (2, 3)), (0, 0)), r"repeats an axis"),
    (lambda: irlib.transpose(tvar("x", (2, 3)), (0,)), r"must list all 2 axes"),
    (lambda: irlib.sum(tvar("x", (2, 3)), axis=2), r"axis 2 is out of range for a tensor of "
                                                   r"rank 2"),
    (lambda: irlib.concatenate([tvar("a", (2, 3)), tvar("b", (3, 3))], 1),
     r"concatenate: field 1 has shape \(3, 3\).*dimension 0"),
    (lambda: irlib.concatenate([tvar("a", (2, 3)), tvar("b", (2, 3), "int32")], 0),
     r"ranks and dtypes must agree"),
    (lambda: irlib.nn.bias_add(tvar("x", (2, 3)), tvar("b", (2,))),
     r"nn.bias_add: bias must have shape \(3,\)"),
    (lambda: irlib.nn.batch_norm(tvar("x", (2, 3)), *[tvar(f"p{i}", (2,)) for i in range(4)]),
     r"nn.batch_norm: gamma must have shape \(3,\)"),
    (lambda: irlib.nn.max_pool2d(tvar("x", (1, 3, 8)), pool_size=2), r"must be 4-D"),
    (lambda: irlib.nn.softmax(tvar("x", (2, 3)), axis=3), r"nn.softmax: axis 3 is out of range"),
    (lambda: irlib.split(tvar("x", (5, 2)), 2), r"size 5 is not divisible into 2 sections"),
    (lambda: irlib.where(tvar("c", (2,), "bool"), tvar("x", (2,)), tvar("y", (2,), "int32")),
     r"where: x and y dtypes differ"),
    (lambda: irlib.cast(tvar("x", (2,)), "float32").replace(
        attrs=get_def("cast").make_attrs({"dtype": "float13"})), r"cast: unknown dtype"),
]


@pytest.mark.parametrize("build,pattern", ERROR_CASES)
def test_relation_errors(build, pattern):
    with pytest.raises(TypeInferenceError, match=pattern):
        type_of(build())


# -- attrs and builders --------------------------------------------------------------------------

def test_conv2d_attrs_defaults_and_normalisation():
    x, w = tvar("x", (1, 3, 8, 8)), tvar("w", (4, 3, 3, 3))
    attrs = irlib.nn.conv2d(x, w).attrs
    assert attrs.type_key == "relay.attrs.Conv2DAttrs"
    assert attrs.strides == (1, 1) and attrs.dilation == (1, 1)
    assert attrs.padding == (0, 0, 0, 0) and attrs.groups == 1
    assert attrs.channels is None and attrs.kernel_size is None
    assert (attrs.data_layout, attrs.kernel_layout, attrs.out_layout, attrs.out_dtype) == \
        ("NCHW", "OIHW", "", "")
    assert list(attrs.non_default_items()) == []
    custom = irlib.nn.conv2d(x, w, strides=[2, 2], padding=1, kernel_size=3).attrs
    assert custom.strides == (2, 2) and custom.padding == (1, 1, 1, 1)
    assert custom.kernel_size == (3, 3)
    assert irlib.nn.conv2d(x, w, padding=(1, 2)).attrs.padding == (1, 2, 1, 2)


@pytest.mark.parametrize("call,type_key,expected", [
    (lambda x: irlib.sum(x), "relay.attrs.ReduceAttrs",
     {"axis": None, "keepdims": False, "exclude": False}),
    (lambda x: irlib.mean(x, 1), "relay.attrs.ReduceAttrs",
     {"axis": (1,), "keepdims": False, "exclude": False}),
    (lambda x: irlib.reshape(x, [4, 4]), "relay.attrs.ReshapeAttrs",
     {"newshape": (4, 4), "allowzero": False}),
    (lambda x: irlib.transpose(x), "relay.attrs.TransposeAttrs", {"axes": None}),
    (lambda x: irlib.concatenate([x, x], 0), "relay.attrs.ConcatenateAttrs", {"axis": 0}),
    (lambda x: irlib.nn.dense(x, x), "relay.attrs.DenseAttrs", {"units": None,
                                                                "out_dtype": ""}),
    (lambda x: irlib.nn.bias_add(x, x), "relay.attrs.BiasAddAttrs", {"axis": 1}),
    (lambda x: irlib.nn.softmax(x), "relay.attrs.SoftmaxAttrs", {"axis": -1}),
    (lambda x: irlib.nn.batch_norm(x, x, x, x, x).astuple(), "relay.attrs.BatchNormAttrs",
     {"axis": 1, "epsilon": 1e-5, "center": True, "scale": True}),
    (lambda x: irlib.nn.max_pool2d(x), "relay.attrs.MaxPool2DAttrs",
     {"pool_size": (1, 1), "strides": (1, 1), "dilation": (1, 1), "padding": (0, 0, 0, 0),
      "layout": "NCHW", "out_layout": "", "ceil_mode": False}),
    (lambda x: x.astype("int32"), "relay.attrs.CastAttrs", {"dtype": "int32"}),
])
def test_attrs_defaults(call, type_key, expected):
    attrs = call(tvar("x", (4, 4))).attrs
    assert attrs.type_key == type_key
    assert dict(attrs) == expected


def test_builders_reject_unknown_attributes():
    x = tvar("x", (2, 2))
    with pytest.raises(TypeError, match="conv2d"):
        irlib.nn.conv2d(x, x, stride=2)
    with pytest.raises(TypeError, match="nn.softmax got unexpected attribute"):
        irlib.op.get("nn.softmax")(x, axes=1)
    with pytest.raises(TypeError, match="exp takes no attributes"):
        irlib.op.get("exp")(x, axis=1)


def test_batch_norm_returns_a_three_field_wrapper():
    args = [tvar("x", (2, 3))] + [tvar(f"p{i}", (3,)) for i in range(4)]
    out = irlib.nn.batch_norm(*args)
    assert isinstance(out, irlib.TupleWrapper) and len(out) == 3
    assert type_of(out[0].tuple_value).fields[0] == TensorType((2, 3))
    assert get_def("nn.batch_norm").tuple_output


def test_expr_operators_use_registered_ops():
    x, y = tvar("x", (2,)), tvar("y", (2,))
    assert (x <= y).op.name == "less_equal" and (x >= y).op.name == "greater_equal"
    assert type_of(x.astype("float64")) == TensorType((2,), "float64")


def test_top_level_exports_are_builders_only():
    assert irlib.sum is irlib.op.reduce.sum
    assert irlib.nn is irlib.op.nn
    for name in ("np", "numpy", "register_op", "make_call"):
        assert name not in irlib.op.__all__
        assert name not in irlib.nn.__all__


@pytest.mark.parametrize("name,pattern", [
    ("add", OpPattern.BROADCAST), ("exp", OpPattern.ELEMWISE), ("where", OpPattern.BROADCAST),
    ("reshape", OpPattern.INJECTIVE), ("transpose", OpPattern.INJECTIVE),
    ("concatenate", OpPattern.INJECTIVE), ("sum", OpPattern.COMM_REDUCE),
    ("mean", OpPattern.COMM_REDUCE), ("nn.conv2d", OpPattern.OUT_ELEMWISE_FUSABLE),
    ("nn.dense", OpPattern.OUT_ELEMWISE_FUSABLE), ("nn.softmax", OpPattern.OPAQUE),
    ("nn.batch_norm", OpPattern.OPAQUE), ("nn.max_pool2d", OpPattern.OUT_ELEMWISE_FUSABLE),
    ("nn.relu", OpPattern.ELEMWISE), ("nn.bias_add", OpPattern.BROADCAST),
])
def test_fusion_patterns(name, pattern):
    assert get_def(name).pattern == pattern


def test_layout_hooks():
    x, w = tvar("x", (1, 3, 8, 8)), tvar("w", (4, 3, 3, 3))
    conv_attrs = irlib.nn.conv2d(x, w).attrs
    nhwc = get_def("nn.conv2d").layout_rule(conv_attrs, "NHWC")
    assert (nhwc.data_layout, nhwc.kernel_layout) == ("NHWC", "HWIO")
    pool = get_def("nn.max_pool2d").layout_rule(irlib.nn.max_pool2d(x).attrs, "NHWC")
    assert pool.layout == "NHWC"
    bias = get_def("nn.bias_add").layout_rule(irlib.nn.bias_add(x, x).attrs, "NHWC")
    assert bias.axis == 3


def test_resnet_sized_conv2d_reference_runs():
    # Not a timing assertion (see benchmarks/); just the shape at a realistic size.
    data = np.ones((1, 64, 56, 56), "float32")
    weight = np.ones((64, 64, 3, 3), "float32")
    attrs = get_def("nn.conv2d").make_attrs({"padding": (1, 1, 1, 1)})
    out = irlib.op.evaluate("nn.conv2d", [data, weight], attrs)
    assert out.shape == (1, 64, 56, 56) and out[0, 0, 10, 10] == 576.0
