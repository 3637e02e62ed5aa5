"""zoo.layers helpers: the names they create, and the types inference gives their weights."""

import pytest

import irlib
from irlib.transform import infer_type
from zoo import layers


def _free_names(expr):
    return [v.name_hint for v in irlib.analysis.free_vars(expr)]


def test_batch_norm_infer_creates_four_named_parameters_and_returns_field_zero():
    data = irlib.var("data", shape=(1, 3, 4, 4))
    out = layers.batch_norm_infer(data, scale=False, name="bn")
    assert isinstance(out, irlib.TupleGetItem) and out.index == 0
    assert _free_names(out) == ["data", "bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var"]
    assert out.tuple_value.attrs.scale is False


def test_conv_and_deconv_create_weight_only_when_missing():
    data = irlib.var("data", shape=(1, 3, 4, 4))
    assert _free_names(layers.conv2d(data, channels=2, kernel_size=(1, 1), name="c")) == \
        ["data", "c_weight"]
    given = irlib.var("mine")
    assert _free_names(layers.conv2d(data, given, channels=2, kernel_size=(1, 1), name="c")) == \
        ["data", "mine"]
    assert _free_names(layers.conv2d_transpose(data, channels=2, kernel_size=(2, 2),
                                               name="d")) == ["data", "d_weight"]


def test_dense_add_bias_is_dense_then_bias_add_on_the_last_axis():
    data = irlib.var("data", shape=(2, 3))
    out = layers.dense_add_bias(data, units=5, name="fc")
    assert out.op.name == "nn.bias_add" and out.attrs.axis == -1
    assert out.args[0].op.name == "nn.dense" and out.args[0].attrs.units == 5
    assert _free_names(out) == ["data", "fc_weight", "fc_bias"]


def test_helpers_require_a_name():
    with pytest.raises(TypeError, match="name="):
        layers.conv2d(irlib.var("data"), channels=1, kernel_size=(1, 1))


@pytest.mark.parametrize("layout, depthwise, expected", [
    ("NCHW", False, "OIHW"), ("NHWC", False, "HWIO"), ("NCHW", True, "OIHW"),
    ("NHWC", True, "HWOI")])
def test_conv_kernel_layout(layout, depthwise, expected):
    assert layers.conv_kernel_layout(layout, depthwise) == expected


def test_conv_kernel_layout_rejects_other_layouts():
    with pytest.raises(ValueError, match="NCDHW"):
        layers.conv_kernel_layout("NCDHW")


def test_inferred_weight_types_follow_layouts_groups_and_units():
    data = irlib.var("data", shape=(2, 8, 8, 6))  # NHWC, 6 channels
    conv = layers.conv2d(data, channels=4, kernel_size=(3, 1), data_layout="NHWC",
                         kernel_layout="HWIO", name="c")
    grouped = layers.conv2d(irlib.var("x", shape=(1, 6, 5, 5)), channels=4, groups=2,
                            kernel_size=(3, 3), name="g")
    deconv = layers.conv2d_transpose(irlib.var("y", shape=(1, 6, 5, 5)), channels=4,
                                     kernel_size=(4, 4), name="d")
    fc = layers.dense_add_bias(irlib.var("z", shape=(3, 7)), units=9, name="fc")
    bn = layers.batch_norm_infer(irlib.var("w", shape=(1, 5, 2, 2)), axis=1, name="bn")
    typed = infer_type(layers.make_function(irlib.Tuple((conv, grouped, deconv, fc, bn))))
    found = {p.name_hint: tuple(p.type_annotation.shape) for p in typed.params
             if p.name_hint not in ("data", "x", "y", "z", "w")}
    assert found == {"c_weight": (3, 1, 6, 4), "g_weight": (4, 3, 3, 3),
                     "d_weight": (6, 4, 4, 4), "fc_weight": (9, 7), "fc_bias": (9,),
                     "bn_gamma": (5,), "bn_beta": (5,), "bn_moving_mean": (5,),
                     "bn_moving_var": (5,)}


def test_make_function_keeps_weights_bare_and_inference_types_a_chain():
    data = irlib.var("data", shape=(1, 3, 8, 8))
    net = layers.conv2d(data, channels=4, kernel_size=(3, 3), padding=(1, 1), name="a")
    net = irlib.nn.relu(layers.batch_norm_infer(net, name="bn"))
    net = layers.conv2d(net, channels=2, kernel_size=(1, 1), name="b")
    func = layers.make_function(net)
    assert [p.name_hint for p in func.params] == [
        "data", "a_weight", "bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var",
        "b_weight"]
    assert all(p.type_annotation is None for p in func.params[1:])  # as in the reference
    annotations = {p.name_hint: p.type_annotation for p in infer_type(func).params}
    assert str(annotations["a_weight"]) == "Tensor[(4, 3, 3, 3), float32]"
    assert str(annotations["b_weight"]) == "Tensor[(2, 4, 1, 1), float32]"
    assert tuple(annotations["bn_moving_var"].shape) == (4,)
