"""Unannotated weights get their types from the data type and the attrs (Relay's Assign).

Every expected weight and output type below is derived by hand from the op's definition
(weight ``(O, I/groups, *K)`` in the kernel layout; transposed kernels ``(I, O/groups, *K)``).
"""

import pytest

import irlib
from irlib import Function, Let, TensorType, TupleType, TypeInferenceError, nn, var
from irlib.ir.dims import size_var
from irlib.ir.types import IncompleteType
from irlib.transform import infer_type


def _typed(build, data_shape, dtype="float32", **attrs):
    """Infer ``fn (%x: data, %w) { build(%x, %w, **attrs) }``; return (weight type, out type)."""
    x = var("x", shape=data_shape, dtype=dtype)
    w = var("w")
    func = infer_type(Function([x, w], build(x, w, **attrs)))
    return func.params[1].type_annotation, func.body.checked_type


def T(shape, dtype="float32"):  # noqa: N802 - reads like the text format
    return TensorType(shape, dtype)


@pytest.mark.parametrize("attrs, weight, out", [
    (dict(channels=4, kernel_size=(3, 3), padding=(1, 1)), (4, 3, 3, 3), (1, 4, 8, 8)),
    (dict(channels=4, kernel_size=(3, 2), kernel_layout="OHWI"), (4, 3, 2, 3), (1, 4, 6, 7)),
    (dict(channels=4, kernel_size=3, kernel_layout="HWIO"), (3, 3, 3, 4), (1, 4, 6, 6)),
])
def test_conv2d_nchw_weight(attrs, weight, out):
    assert _typed(nn.conv2d, (1, 3, 8, 8), **attrs) == (T(weight), T(out))


def test_conv2d_nhwc_hwio_weight():
    weight, out = _typed(nn.conv2d, (2, 8, 8, 6), channels=4, kernel_size=(3, 1),
                         data_layout="NHWC", kernel_layout="HWIO")
    assert weight == T((3, 1, 6, 4))
    assert out == T((2, 6, 8, 4))


def test_grouped_conv2d_weight_has_input_channels_per_group():
    weight, out = _typed(nn.conv2d, (1, 6, 5, 5), channels=4, groups=2, kernel_size=(3, 3))
    assert weight == T((4, 3, 3, 3))
    assert out == T((1, 4, 3, 3))


@pytest.mark.parametrize("data_shape, layouts, weight, out", [
    ((1, 8, 6, 6), ("NCHW", "OIHW"), (8, 1, 3, 3), (1, 8, 6, 6)),
    ((1, 6, 6, 8), ("NHWC", "HWOI"), (3, 3, 8, 1), (1, 6, 6, 8)),
])
def test_depthwise_conv2d_weight(data_shape, layouts, weight, out):
    got = _typed(nn.conv2d, data_shape, channels=8, groups=8, kernel_size=(3, 3),
                 padding=(1, 1), data_layout=layouts[0], kernel_layout=layouts[1])
    assert got == (T(weight), T(out))


def test_weight_takes_the_data_dtype_and_batch_may_be_symbolic():
    n = size_var("n")
    weight, out = _typed(nn.conv2d, (n, 3, 8, 8), dtype="float16", channels=2,
                         kernel_size=(1, 1))
    assert weight == T((2, 3, 1, 1), "float16")
    assert out == T((n, 2, 8, 8), "float16")


@pytest.mark.parametrize("data_shape, layouts, weight, out", [
    ((2, 3, 10), ("NCW", "OIW"), (5, 3, 3), (2, 5, 8)),
    ((2, 10, 3), ("NWC", "WIO"), (3, 3, 5), (2, 8, 5)),
])
def test_conv1d_weight(data_shape, layouts, weight, out):
    got = _typed(nn.conv1d, data_shape, channels=5, kernel_size=3, data_layout=layouts[0],
                 kernel_layout=layouts[1])
    assert got == (T(weight), T(out))


@pytest.mark.parametrize("data_shape, layouts, weight, out", [
    ((1, 2, 4, 5, 6), ("NCDHW", "OIDHW"), (3, 2, 1, 2, 3), (1, 3, 4, 4, 4)),
    ((1, 4, 5, 6, 2), ("NDHWC", "DHWIO"), (1, 2, 3, 2, 3), (1, 4, 4, 4, 3)),
])
def test_conv3d_weight(data_shape, layouts, weight, out):
    got = _typed(nn.conv3d, data_shape, channels=3, kernel_size=(1, 2, 3),
                 data_layout=layouts[0], kernel_layout=layouts[1])
    assert got == (T(weight), T(out))


@pytest.mark.parametrize("attrs, weight, out", [
    # out = (5 - 1) * stride + (4 - 1) + 1
    (dict(channels=4, kernel_size=(4, 4)), (6, 4, 4, 4), (1, 4, 8, 8)),
    (dict(channels=4, kernel_size=(4, 4), strides=(2, 2)), (6, 4, 4, 4), (1, 4, 12, 12)),
    (dict(channels=4, kernel_size=(4, 4), groups=2), (6, 2, 4, 4), (1, 4, 8, 8)),
    (dict(channels=4, kernel_size=(4, 4), kernel_layout="OIHW"), (4, 6, 4, 4), (1, 4, 8, 8)),
])
def test_conv2d_transpose_weight_is_iohw(attrs, weight, out):
    assert _typed(nn.conv2d_transpose, (1, 6, 5, 5), **attrs) == (T(weight), T(out))


def test_conv1d_transpose_weight():
    # width: (5 - 1) * 2 + (3 - 1) + 1 = 11
    weight, out = _typed(nn.conv1d_transpose, (1, 6, 5), channels=4, kernel_size=3,
                         strides=2)
    assert weight == T((6, 4, 3))
    assert out == T((1, 4, 11))


@pytest.mark.parametrize("data_shape, units, weight, out", [
    ((3, 7), 9, (9, 7), (3, 9)),
    ((2, 3, 7), 4, (4, 7), (2, 3, 4)),
])
def test_dense_weight_is_units_by_in_features(data_shape, units, weight, out):
    assert _typed(nn.dense, data_shape, units=units) == (T(weight), T(out))


@pytest.mark.parametrize("data_shape, attrs, weight", [
    ((3, 7), dict(), (7, 5)),
    ((3, 7), dict(transpose_b=True), (5, 7)),
    ((7, 3), dict(transpose_a=True), (7, 5)),
])
def test_matmul_tensor_b(data_shape, attrs, weight):
    assert _typed(nn.matmul, data_shape, units=5, **attrs) == (T(weight), T((3, 5)))


@pytest.mark.parametrize("axis, bias", [(1, (5,)), (-1, (4,)), (0, (2,))])
def test_bias_add_bias_follows_axis(axis, bias):
    assert _typed(nn.bias_add, (2, 5, 3, 4), axis=axis) == (T(bias), T((2, 5, 3, 4)))


def test_prelu_alpha():
    assert _typed(nn.prelu, (1, 3, 4, 4)) == (T((3,)), T((1, 3, 4, 4)))
    assert _typed(nn.prelu, (1, 4, 4, 3), axis=3)[0] == T((3,))


def _norm_params(build, data_shape, count, **attrs):
    x = var("x", shape=data_shape)
    params = [var(f"p{i}") for i in range(count)]
    func = infer_type(Function([x] + params, build(x, *params, **attrs)))
    return [p.type_annotation for p in func.params[1:]], func.body.checked_type


def test_batch_norm_parameters():
    params, out = _norm_params(lambda *a, **k: nn.batch_norm(*a, **k).astuple(), (1, 5, 2, 2),
                               4)
    assert params == [T((5,))] * 4
    assert out == TupleType([T((1, 5, 2, 2)), T((5,)), T((5,))])


def test_batch_norm_parameters_nhwc():
    params, _ = _norm_params(lambda *a, **k: nn.batch_norm(*a, **k).astuple(), (1, 2, 2, 6),
                             4, axis=3)
    assert params == [T((6,))] * 4


@pytest.mark.parametrize("build, data_shape, attrs, size", [
    (nn.layer_norm, (2, 3, 7), dict(), 7),
    (nn.layer_norm, (2, 3, 7), dict(axis=1), 3),
    (nn.group_norm, (1, 4, 5, 5), dict(num_groups=2), 4),
    (nn.instance_norm, (1, 4, 5, 5), dict(), 4),
    (nn.instance_norm, (2, 3, 6), dict(axis=-1), 6),
])
def test_gamma_and_beta_of_normalisations(build, data_shape, attrs, size):
    params, out = _norm_params(build, data_shape, 2, **attrs)
    assert params == [T((size,))] * 2
    assert out == T(data_shape)


def test_batch_matmul_has_no_rule():
    x = var("x", shape=(2, 3, 4))
    y = var("y")
    with pytest.raises(TypeInferenceError, match="argument types unknown"):
        infer_type(Function([x, y], nn.batch_matmul(x, y)))


# -- errors -------------------------------------------------------------------------------------

def _error(build, data_shape, **attrs) -> str:
    x = var("x", shape=data_shape)
    w = var("w")
    with pytest.raises(TypeInferenceError) as info:
        infer_type(Function([x, w], build(x, w, **attrs)))
    return str(info.value)


def test_conv2d_without_channels_or_kernel_size_asks_for_an_annotation_or_the_attrs():
    message = _error(nn.conv2d, (1, 3, 8, 8))
    assert "the type of argument weight is unknown" in message
    assert "annotate it, or set the attribute(s) channels, kernel_size" in message


def test_conv2d_with_channels_only_names_the_missing_kernel_size():
    message = _error(nn.conv2d, (1, 3, 8, 8), channels=4)
    assert "set the attribute(s) kernel_size that nn.conv2d needs" in message
    assert "channels," not in message


def test_dense_without_units_names_units():
    assert "set the attribute(s) units" in _error(nn.dense, (3, 7))


def test_unknown_data_and_weight_are_both_named():
    x, w = var("x"), var("w")
    with pytest.raises(TypeInferenceError, match="the type of arguments data, weight is "
                                                 "unknown"):
        infer_type(Function([x, w], nn.conv2d(x, w, channels=4, kernel_size=3)))


def test_groups_that_do_not_divide_the_data_channels_are_an_error():
    message = _error(nn.conv2d, (1, 6, 5, 5), channels=4, groups=4, kernel_size=3)
    assert "6 does not divide into groups=4" in message


def test_bad_layout_is_reported_by_the_rule():
    message = _error(nn.conv2d, (1, 3, 8, 8), channels=4, kernel_size=3, data_layout="NCHW8c")
    assert "data_layout 'NCHW8c' is not supported" in message


def test_a_proposal_that_does_not_fit_the_argument_is_reported():
    x = var("x", shape=(3, 7))
    w = var("w", TupleType([IncompleteType()]))  # known to be a tuple, so no tensor fits
    with pytest.raises(TypeInferenceError) as info:
        infer_type(Function([x, w], nn.dense(x, w, units=2)))
    message = str(info.value)
    assert "the attrs and the other arguments give weight the type " \
           "Tensor[(2, 7), float32], which does not fit this argument" in message


def test_an_erroneous_weight_expression_is_reported_once():
    x = var("x", shape=(1, 3, 8, 8))
    a, b = var("a", shape=(2,)), var("b", shape=(3,))
    with pytest.raises(TypeInferenceError) as info:
        infer_type(Function([x, a, b], nn.conv2d(x, irlib.add(a, b), channels=4,
                                                 kernel_size=3)))
    assert len(info.value.errors) == 1
    assert "do not broadcast" in str(info.value)


def test_matmul_rank_errors_come_from_the_rule():
    message = _error(nn.matmul, (2, 3, 7), units=5, transpose_a=True)
    assert "tensor_a must be at least 1-D (2-D when transpose_a)" in message


def test_a_shared_weight_is_checked_against_its_second_use():
    x = var("x", shape=(1, 3, 8, 8))
    y = var("y", shape=(1, 6, 8, 8))
    w = var("w")
    body = irlib.Tuple([nn.conv2d(x, w, channels=4, kernel_size=3),
                        nn.conv2d(y, w, channels=4, kernel_size=3)])
    with pytest.raises(TypeInferenceError, match="data has 6 input channels but weight "
                                                 "expects 3"):
        infer_type(Function([x, y, w], body))


# -- whole programs -----------------------------------------------------------------------------

def test_data_type_known_only_after_solving():
    # Inside the local function %y is unknown until the call %f(%x) is checked.
    x = var("x", shape=(1, 3, 8, 8))
    y, w, f = var("y"), var("w"), var("f")
    inner = Function([y], nn.conv2d(y, w, channels=2, kernel_size=(3, 3)))
    func = infer_type(Function([x, w], Let(f, inner, f(x))))
    assert func.params[1].type_annotation == T((2, 3, 3, 3))
    assert func.body.checked_type == T((1, 2, 6, 6))


def _bn_relu(data, name):
    params = [var(f"{name}_{p}") for p in ("gamma", "beta", "moving_mean", "moving_var")]
    return nn.relu(nn.batch_norm(data, *params)[0])


def test_resnet_style_block_with_bare_weights():
    data = var("data", shape=(2, 3, 8, 8))
    body = nn.conv2d(data, var("conv0_weight"), channels=8, kernel_size=(3, 3),
                     padding=(1, 1))
    body = _bn_relu(body, "bn0")
    body = nn.conv2d(body, var("conv1_weight"), channels=8, kernel_size=(3, 3),
                     strides=(2, 2), padding=(1, 1))
    body = _bn_relu(body, "bn1")
    shortcut = nn.conv2d(data, var("sc_weight"), channels=8, kernel_size=(1, 1),
                         strides=(2, 2))
    body = nn.global_avg_pool2d(irlib.add(body, shortcut))
    body = nn.bias_add(nn.dense(nn.batch_flatten(body), var("fc_weight"), units=10),
                       var("fc_bias"), axis=-1)
    net = nn.softmax(body)
    func = infer_type(Function(list(irlib.analysis.free_vars(net)), net))
    got = {p.name_hint: p.type_annotation for p in func.params}
    vector = T((8,))
    assert got == {
        "data": T((2, 3, 8, 8)), "conv0_weight": T((8, 3, 3, 3)),
        "bn0_gamma": vector, "bn0_beta": vector, "bn0_moving_mean": vector,
        "bn0_moving_var": vector, "conv1_weight": T((8, 8, 3, 3)),
        "bn1_gamma": vector, "bn1_beta": vector, "bn1_moving_mean": vector,
        "bn1_moving_var": vector, "sc_weight": T((8, 3, 1, 1)),
        "fc_weight": T((10, 8)), "fc_bias": T((10,))}
    assert func.body.checked_type == T((2, 10))
