"""Initializers and create_workload: name rules, Xavier's scale, determinism, param dict."""

import numpy as np
import pytest

import irlib
import zoo
from zoo.init import Constant, Initializer, Xavier


def _filled(initializer, name, shape):
    arr = np.zeros(shape, dtype="float32")
    initializer(name, arr)
    return arr


@pytest.mark.parametrize("name, value", [
    ("fc1_bias", 0.0), ("bn_gamma", 1.0), ("bn_beta", 0.0), ("bn_moving_mean", 0.0),
    ("bn_moving_var", 1.0), ("running_mean", 0.0), ("some_var", 1.0)])
def test_suffix_rules_fill_constants(name, value):
    arr = np.full((5,), 7.0, dtype="float32")
    Xavier()(name, arr)
    assert np.all(arr == value)


def test_unknown_suffix_raises_value_error_naming_the_parameter():
    with pytest.raises(ValueError, match="Unknown initialization pattern for conv_kernel"):
        Xavier()("conv_kernel", np.zeros((2, 2), dtype="float32"))


def test_base_initializer_has_no_weight_rule():
    with pytest.raises(NotImplementedError):
        Initializer()("w_weight", np.zeros((2, 2), dtype="float32"))


def test_xavier_rejects_vectors():
    with pytest.raises(ValueError, match="at least 2D"):
        Xavier()("fc_weight", np.zeros((4,), dtype="float32"))


@pytest.mark.parametrize("factor_type, factor", [
    # shape (8, 4, 3, 3): hw = 9, fan_in = 36, fan_out = 72
    ("avg", 54.0), ("in", 36.0), ("out", 72.0)])
def test_xavier_scale_follows_the_factor_type(factor_type, factor):
    np.random.seed(0)
    arr = _filled(Xavier(factor_type=factor_type, magnitude=2), "c_weight", (8, 4, 3, 3))
    bound = np.sqrt(2.0 / factor)
    assert np.abs(arr).max() <= bound + 1e-7
    assert np.abs(arr).max() > 0.9 * bound  # 288 uniform draws reach close to the bound


def test_xavier_depthwise_names_use_the_window_only():
    np.random.seed(0)
    arr = _filled(Xavier(), "block_depthwise_weight", (64, 1, 3, 3))
    bound = np.sqrt(3.0 / 9.0)
    assert np.abs(arr).max() <= bound + 1e-7 and np.abs(arr).max() > 0.9 * bound


def test_xavier_same_seed_same_values_and_matches_numpy_uniform():
    np.random.seed(3)
    arr = _filled(Xavier(), "fc_weight", (10, 6))
    np.random.seed(3)
    scale = np.sqrt(3.0 / 8.0)  # fan_in 6, fan_out 10 -> avg 8
    expected = np.random.uniform(-scale, scale, size=(10, 6)).astype("float32")
    np.testing.assert_array_equal(arr, expected)


def test_xavier_rejects_unknown_settings():
    with pytest.raises(ValueError, match="factor type"):
        _filled(Xavier(factor_type="sideways"), "w_weight", (2, 2))
    with pytest.raises(ValueError, match="random type"):
        _filled(Xavier(rnd_type="gaussian"), "w_weight", (2, 2))


def test_constant_initializer_uses_one_over_size():
    arr = _filled(Constant(), "w_weight", (3, 4))
    assert np.all(arr == np.float32(1.0 / 12))


def _tiny_net():
    data = irlib.var("data", shape=(2, 3))
    weight = irlib.var("fc_weight", shape=(4, 3))
    bias = irlib.var("fc_bias", shape=(4,))
    out = irlib.nn.bias_add(irlib.nn.dense(data, weight), bias, axis=-1)
    return irlib.Function((data, weight, bias), out)


def test_create_workload_returns_typed_module_and_ndarrays_without_data():
    mod, params = zoo.create_workload(_tiny_net())
    assert isinstance(mod, irlib.IRModule)
    assert str(mod["main"].checked_type.ret_type) == "Tensor[(2, 4), float32]"
    assert list(params) == ["fc_weight", "fc_bias"]
    assert all(isinstance(v, irlib.NDArray) for v in params.values())
    assert params["fc_weight"].shape == (4, 3) and params["fc_weight"].dtype == "float32"
    assert np.all(params["fc_bias"].numpy() == 0)


def test_create_workload_is_deterministic_per_seed():
    _, first = zoo.create_workload(_tiny_net(), seed=5)
    _, again = zoo.create_workload(_tiny_net(), seed=5)
    _, other = zoo.create_workload(_tiny_net(), seed=6)
    np.testing.assert_array_equal(first["fc_weight"].numpy(), again["fc_weight"].numpy())
    assert not np.array_equal(first["fc_weight"].numpy(), other["fc_weight"].numpy())


def test_create_workload_uses_the_given_initializer():
    _, params = zoo.create_workload(_tiny_net(), initializer=Constant())
    assert np.all(params["fc_weight"].numpy() == np.float32(1 / 12))


def test_create_workload_fills_in_unannotated_weight_types():
    data = irlib.var("data", shape=(1, 3, 8, 8))
    conv = zoo.layers.conv2d(data, channels=5, kernel_size=(3, 3), name="c")
    net = irlib.Function(tuple(irlib.analysis.free_vars(conv)), conv)
    mod, params = zoo.create_workload(net)
    assert params["c_weight"].shape == (5, 3, 3, 3)
    assert str(mod["main"].checked_type.ret_type) == "Tensor[(1, 5, 6, 6), float32]"
