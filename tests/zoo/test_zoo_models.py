"""Every zoo model at small sizes: output type, parameter names and shapes (hand-written
from the reference architectures), a run, determinism for a seed, and softmax sums."""

import inspect

import numpy as np
import pytest

import zoo
from zoo_helpers import output_type, param_shapes, random_input, run_main

# -- configurations: (builder, expected output shape, output kind) ----------------------------

SMALL = {
    "mlp": (lambda: zoo.mlp.get_workload(2), (2, 10), "softmax"),
    "resnet18": (lambda: zoo.resnet.get_workload(num_classes=10, image_shape=(3, 32, 32)),
                 (1, 10), "softmax"),
    "resnet18_stem": (lambda: zoo.resnet.get_workload(num_classes=10, image_shape=(3, 40, 40)),
                      (1, 10), "softmax"),
    "resnet20_cifar": (lambda: zoo.resnet.get_workload(2, 10, 20, image_shape=(3, 16, 16)),
                       (2, 10), "softmax"),
    "resnet18_nhwc": (lambda: zoo.resnet.get_workload(num_classes=10, image_shape=(32, 32, 3),
                                                      layout="NHWC"), (1, 10), "softmax"),
    "mobilenet": (lambda: zoo.mobilenet.get_workload(num_classes=10, image_shape=(3, 32, 32)),
                  (1, 10), "softmax"),
    "mobilenet_nhwc": (lambda: zoo.mobilenet.get_workload(num_classes=10, image_shape=(32, 32, 3),
                                                          layout="NHWC"), (1, 10), "softmax"),
    "dcgan": (lambda: zoo.dcgan.get_workload(2, ngf=4, random_len=10), (2, 3, 64, 64), "tanh"),
    "lstm": (lambda: zoo.lstm.get_workload(3, 4, batch_size=2), (2, 4), "tanh"),
    "inception_v3": (lambda: zoo.inception_v3.get_workload(num_classes=10), (1, 10), "softmax"),
    "squeezenet1.0": (lambda: zoo.squeezenet.get_workload(num_classes=10,
                                                          image_shape=(3, 32, 32)),
                      (1, 10), "softmax"),
    "squeezenet1.1": (lambda: zoo.squeezenet.get_workload(num_classes=10, version="1.1",
                                                          image_shape=(3, 32, 32)),
                      (1, 10), "softmax"),
    "vgg11": (lambda: zoo.vgg.get_workload(1, num_classes=10, image_shape=(3, 32, 32)),
              (1, 10), "softmax"),
    "vgg11_bn": (lambda: zoo.vgg.get_workload(1, num_classes=10, image_shape=(3, 32, 32),
                                              batch_norm=True), (1, 10), "softmax"),
    "densenet121": (lambda: zoo.densenet.get_workload(classes=10, batch_size=1), (1, 10),
                    "logits"),
}

_CACHE = {}


def _workload(name):
    if name not in _CACHE:
        _CACHE[name] = SMALL[name][0]()
    return _CACHE[name]


@pytest.mark.parametrize("name", sorted(SMALL))
def test_output_type_and_data_parameter(name):
    mod, params = _workload(name)
    ret = output_type(mod)
    assert tuple(ret.shape) == SMALL[name][1] and ret.dtype == "float32"
    assert mod["main"].params[0].name_hint == "data"
    assert "data" not in params
    shapes = param_shapes(mod)
    for key, value in params.items():
        assert value.shape == shapes[key], key


@pytest.mark.parametrize("name", sorted(SMALL))
def test_runs_deterministically_with_expected_range(name):
    builder, shape, kind = SMALL[name]
    mod, params = _workload(name)
    data = random_input(mod)
    out = run_main(mod, params, {"data": data})
    assert out.shape == shape and np.all(np.isfinite(out))
    mod2, params2 = builder()  # rebuilt from scratch with the same (default) seed
    for key in params:
        np.testing.assert_array_equal(params[key].numpy(), params2[key].numpy())
    np.testing.assert_array_equal(out, run_main(mod2, params2, {"data": data}))
    if kind == "softmax":
        np.testing.assert_allclose(out.sum(axis=-1), 1.0, rtol=1e-5)
        assert np.all(out >= 0)
    elif kind == "tanh":
        assert np.all(np.abs(out) <= 1.0)
    else:
        assert not np.allclose(out.sum(axis=-1), 1.0)


def _expect(name, expected: dict):
    shapes = param_shapes(_workload(name)[0])
    for key, shape in expected.items():
        assert shapes.get(key) == shape, f"{name}: {key} is {shapes.get(key)}, expected {shape}"


def test_mlp_parameters_exactly():
    assert param_shapes(_workload("mlp")[0]) == {
        "data": (2, 1, 28, 28), "fc1_weight": (128, 784), "fc1_bias": (128,),
        "fc2_weight": (64, 128), "fc2_bias": (64,), "fc3_weight": (10, 64), "fc3_bias": (10,)}


def test_resnet18_parameters():
    mod, params = _workload("resnet18")
    names = list(param_shapes(mod))
    assert names[:7] == ["data", "bn_data_gamma", "bn_data_beta", "bn_data_moving_mean",
                         "bn_data_moving_var", "conv0_weight", "stage1_unit1_bn1_gamma"]
    assert names[-2:] == ["fc1_weight", "fc1_bias"]
    # 32 px: 3x3 conv0 and no bn0; 4 + 1 + 8 units x 10 + 4 shortcuts + bn1 4 + fc 2
    assert "bn0_gamma" not in names and len(params) == 95
    _expect("resnet18", {
        "conv0_weight": (64, 3, 3, 3), "stage1_unit1_conv1_weight": (64, 64, 3, 3),
        "stage1_unit1_sc_weight": (64, 64, 1, 1), "stage2_unit1_conv1_weight": (128, 64, 3, 3),
        "stage2_unit1_sc_weight": (128, 64, 1, 1), "stage4_unit2_conv2_weight": (512, 512, 3, 3),
        "bn1_moving_var": (512,), "fc1_weight": (10, 512), "fc1_bias": (10,)})
    assert "stage2_unit2_sc_weight" not in names


def test_resnet_imagenet_stem_and_nhwc_kernels():
    _expect("resnet18_stem", {"conv0_weight": (64, 3, 7, 7), "bn0_gamma": (64,)})
    _expect("resnet18_nhwc", {"data": (1, 32, 32, 3), "conv0_weight": (3, 3, 3, 64),
                              "stage2_unit1_sc_weight": (1, 1, 64, 128)})
    _expect("resnet20_cifar", {"conv0_weight": (16, 3, 3, 3), "stage3_unit3_conv2_weight":
                               (64, 64, 3, 3), "stage3_unit1_sc_weight": (64, 32, 1, 1),
                               "fc1_weight": (10, 64)})
    assert "stage4_unit1_bn1_gamma" not in param_shapes(_workload("resnet20_cifar")[0])


def test_resnet50_bottleneck_shapes_by_inference():
    mod = zoo.create_workload(zoo.resnet.get_net(1, 10, 50, image_shape=(3, 32, 32)),
                              initializer=zoo.Constant())[0]
    shapes = param_shapes(mod)
    assert len(shapes) == 1 + 4 + 1 + 16 * 15 + 4 + 4 + 2
    assert shapes["stage1_unit1_conv1_weight"] == (64, 64, 1, 1)
    assert shapes["stage1_unit1_conv3_weight"] == (256, 64, 1, 1)
    assert shapes["stage2_unit1_conv1_weight"] == (128, 256, 1, 1)
    assert shapes["stage4_unit3_bn3_gamma"] == (512,)
    assert shapes["fc1_weight"] == (10, 2048)


@pytest.mark.parametrize("num_layers, units", [(34, [3, 4, 6, 3]), (101, [3, 4, 23, 3]),
                                               (152, [3, 8, 36, 3])])
def test_resnet_depths_have_the_documented_units(num_layers, units):
    net = zoo.resnet.get_net(1, 10, num_layers, image_shape=(3, 64, 64))
    names = {p.name_hint for p in net.params}
    for stage, count in enumerate(units, 1):
        assert f"stage{stage}_unit{count}_conv1_weight" in names
        assert f"stage{stage}_unit{count + 1}_conv1_weight" not in names


def test_resnet_rejects_unknown_depths():
    with pytest.raises(ValueError, match="num_layers 19"):
        zoo.resnet.get_net(1, 10, 19)
    with pytest.raises(ValueError, match="num_layers 18"):
        zoo.resnet.get_net(1, 10, 18, image_shape=(3, 28, 28))


def test_mobilenet_parameters():
    mod, params = _workload("mobilenet")
    assert len(params) == 137
    _expect("mobilenet", {
        "conv_block_1_conv_weight": (32, 3, 3, 3), "conv_block_1_bn_gamma": (32,),
        "separable_conv_block_1_weight": (32, 1, 3, 3),
        "separable_conv_block_1_conv2_weight": (64, 32, 1, 1),
        "separable_conv_block_13_weight": (1024, 1, 3, 3),
        "separable_conv_block_13_bn2_moving_mean": (1024,),
        "fc_weight": (10, 1024), "fc_bias": (10,)})
    _expect("mobilenet_nhwc", {"conv_block_1_conv_weight": (3, 3, 3, 32),
                               "separable_conv_block_2_weight": (3, 3, 64, 1)})


def test_dcgan_parameters_and_layout_checks():
    assert param_shapes(_workload("dcgan")[0]) == {
        "data": (2, 10), "dense_weight": (512, 10),
        "g2_deconv_weight": (32, 16, 4, 4), "g2_batch_norm_gamma": (16,),
        "g2_batch_norm_beta": (16,), "g2_batch_norm_moving_mean": (16,),
        "g2_batch_norm_moving_var": (16,),
        "g3_deconv_weight": (16, 8, 4, 4), "g3_batch_norm_gamma": (8,), "g3_batch_norm_beta": (8,),
        "g3_batch_norm_moving_mean": (8,), "g3_batch_norm_moving_var": (8,),
        "g4_deconv_weight": (8, 4, 4, 4), "g4_batch_norm_gamma": (4,), "g4_batch_norm_beta": (4,),
        "g4_batch_norm_moving_mean": (4,), "g4_batch_norm_moving_var": (4,),
        "g5_deconv_weight": (4, 3, 4, 4)}
    with pytest.raises(ValueError, match="64x64"):
        zoo.dcgan.get_net(1, oshape=(3, 32, 32))
    with pytest.raises(ValueError, match="layout"):
        zoo.dcgan.get_net(1, layout="NCDHW")


def test_lstm_parameters_collapse_the_data_vars():
    mod, params = _workload("lstm")
    main_names = [p.name_hint for p in mod["main"].params]
    assert main_names.count("data") == 3 and len(main_names) == 15
    expected = {}
    for i in range(3):
        expected.update({f"i2h_{i}_weight": (16, 4), f"i2h_{i}_bias": (16,),
                         f"h2h_{i}_weight": (16, 4), f"h2h_{i}_bias": (16,)})
    assert {k: v.shape for k, v in params.items()} == expected
    assert list(params) == list(expected)


def test_inception_v3_parameters():
    mod, params = _workload("inception_v3")
    _expect("inception_v3", {
        "data": (1, 3, 299, 299), "conv_conv1_weight": (32, 3, 3, 3), "conv_bn_beta": (32,),
        "conv_4_conv1_weight": (192, 80, 3, 3), "mixed_conv_conv1_weight": (64, 192, 1, 1),
        "mixed_tower_conv_conv1_weight": (48, 192, 1, 1),
        "mixed_tower_conv_1_conv1_weight": (64, 48, 5, 5),
        "mixed_tower_1_conv_2_conv1_weight": (96, 96, 3, 3),
        "mixed_tower_2_conv_conv1_weight": (32, 192, 1, 1),
        "mixed_3_conv_conv1_weight": (384, 288, 3, 3),
        "mixed_4_tower_1_conv_4_conv1_weight": (192, 128, 1, 7),
        "mixed_8_tower_1_conv_3_conv1_weight": (192, 192, 3, 3),
        "mixed_10_tower_1_mixed_conv_1_conv1_weight": (384, 384, 3, 1),
        "fc1_weight": (10, 2048), "fc2_bias": (10,)})
    assert "fc1_bias" not in params and "conv_bn_gamma" in params


def test_squeezenet_parameters_and_versions():
    _expect("squeezenet1.0", {
        "conv1_weight": (96, 3, 7, 7), "conv1_bias": (96,),
        "fire1_input_conv_weight": (16, 96, 1, 1), "fire1_left_conv_weight": (64, 16, 1, 1),
        "fire1_right_conv_weight": (64, 16, 3, 3), "fire2_input_conv_weight": (16, 128, 1, 1),
        "fire8_right_conv_bias": (256,), "conv_final_weight": (10, 512, 1, 1),
        "conv_final_bias": (10,)})
    _expect("squeezenet1.1", {"conv1_weight": (64, 3, 3, 3),
                              "fire1_input_conv_weight": (16, 64, 1, 1)})
    assert len(_workload("squeezenet1.0")[1]) == 2 + 8 * 6 + 2
    with pytest.raises(ValueError, match="1.0 or 1.1"):
        zoo.squeezenet.get_net(1, (3, 32, 32), 10, "1.2", "float32")


def test_vgg_parameters_and_depths():
    _expect("vgg11", {"conv1_1_weight": (64, 3, 3, 3), "conv1_1_bias": (64,),
                      "conv3_2_weight": (256, 256, 3, 3), "conv5_2_weight": (512, 512, 3, 3),
                      "fc6_weight": (4096, 512), "fc7_weight": (4096, 4096),
                      "fc8_weight": (10, 4096), "fc8_bias": (10,)})
    assert "bn1_1_gamma" not in _workload("vgg11")[1]
    _expect("vgg11_bn", {"bn1_1_gamma": (64,), "bn5_2_moving_var": (512,)})
    for depth, convs in ((11, 8), (13, 10), (16, 13), (19, 16)):
        net = zoo.vgg.get_net(1, (3, 32, 32), 10, "float32", depth)
        assert sum(p.name_hint.endswith("_weight") and p.name_hint.startswith("conv")
                   for p in net.params) == convs
    with pytest.raises(ValueError, match="11, 13, 16, 19"):
        zoo.vgg.get_net(1, (3, 32, 32), 10, "float32", 12)


def test_densenet_parameters_show_the_block_quirk():
    mod, params = _workload("densenet121")
    _expect("densenet121", {
        "data": (1, 3, 224, 224), "conv1_weight": (64, 3, 7, 7), "batch1_gamma": (64,),
        "batch_1_0_0_gamma": (64,), "conv2d_1_0_0_weight": (128, 64, 1, 1),
        "conv2d_2_0_0_weight": (32, 128, 3, 3),
        # layer 1 reads layer 0's output (32 channels), not the running concatenation
        "batch_1_0_1_gamma": (32,), "conv2d_1_0_1_weight": (128, 32, 1, 1),
        # the block output is 6 x 32 = 192 channels; the transition sizes for (64 + 192) / 2
        "conv_t_0_weight": (128, 192, 1, 1), "batch2_gamma": (512,),
        "dense_weight": (10, 512), "dense_bias": (10,)})


@pytest.mark.parametrize("size, first, growth, last_block", [
    (161, 96, 48, 24), (169, 69, 32, 32), (201, 64, 32, 32)])
def test_densenet_sizes(size, first, growth, last_block):
    net = zoo.densenet.get_net(size, 10, 1)
    mod = zoo.create_workload(net, initializer=zoo.Constant())[0]
    shapes = param_shapes(mod)
    assert shapes["conv1_weight"] == (first, 3, 7, 7)
    assert shapes["dense_weight"] == (10, last_block * growth)
    assert tuple(output_type(mod).shape) == (1, 10)
    with pytest.raises(ValueError, match="densenet_size"):
        zoo.densenet.get_workload(densenet_size=100)


# -- signatures as in relay-testing-api.txt --------------------------------------------------

SIGNATURES = {
    zoo.create_workload: "(net, initializer=None, seed=0)",
    zoo.mlp.get_net: "(batch_size, num_classes=10, image_shape=(1, 28, 28), dtype='float32')",
    zoo.mlp.get_workload: "(batch_size, num_classes=10, image_shape=(1, 28, 28), "
                          "dtype='float32')",
    zoo.resnet.residual_unit: "(data, num_filter, stride, dim_match, name, bottle_neck=True, "
                              "data_layout='NCHW', kernel_layout='IOHW')",
    zoo.resnet.resnet: "(units, num_stages, filter_list, num_classes, data_shape, "
                       "bottle_neck=True, layout='NCHW', dtype='float32')",
    zoo.resnet.get_net: "(batch_size, num_classes, num_layers=50, image_shape=(3, 224, 224), "
                        "layout='NCHW', dtype='float32', **kwargs)",
    zoo.resnet.get_workload: "(batch_size=1, num_classes=1000, num_layers=18, "
                             "image_shape=(3, 224, 224), layout='NCHW', dtype='float32', "
                             "**kwargs)",
    zoo.dcgan.deconv2d: "(data, ishape, oshape, kshape, layout, name, stride=(2, 2))",
    zoo.dcgan.deconv2d_bn_relu: "(data, prefix, **kwargs)",
    zoo.dcgan.get_net: "(batch_size, random_len=100, oshape=(3, 64, 64), ngf=128, code=None, "
                       "layout='NCHW', dtype='float32')",
    zoo.dcgan.get_workload: "(batch_size, oshape=(3, 64, 64), ngf=128, random_len=100, "
                            "layout='NCHW', dtype='float32')",
    zoo.mobilenet.conv_block: "(data, name, channels, kernel_size=(3, 3), strides=(1, 1), "
                              "padding=(1, 1), epsilon=1e-05, layout='NCHW')",
    zoo.mobilenet.separable_conv_block: "(data, name, depthwise_channels, pointwise_channels, "
                                        "kernel_size=(3, 3), downsample=False, padding=(1, 1), "
                                        "epsilon=1e-05, layout='NCHW', dtype='float32')",
    zoo.mobilenet.mobile_net: "(num_classes=1000, data_shape=(1, 3, 224, 224), "
                              "dtype='float32', alpha=1.0, is_shallow=False, layout='NCHW')",
    zoo.mobilenet.get_workload: "(batch_size=1, num_classes=1000, image_shape=(3, 224, 224), "
                                "dtype='float32', layout='NCHW')",
    zoo.lstm.lstm_cell: "(num_hidden, batch_size=1, dtype='float32', name='')",
    zoo.lstm.get_net: "(iterations, num_hidden, batch_size=1, dtype='float32')",
    zoo.lstm.get_workload: "(iterations, num_hidden, batch_size=1, dtype='float32')",
    zoo.inception_v3.get_net: "(batch_size, num_classes, image_shape, dtype)",
    zoo.inception_v3.get_workload: "(batch_size=1, num_classes=1000, image_shape=(3, 299, 299), "
                                   "dtype='float32')",
    zoo.squeezenet.get_net: "(batch_size, image_shape, num_classes, version, dtype)",
    zoo.squeezenet.get_workload: "(batch_size=1, num_classes=1000, version='1.0', "
                                 "image_shape=(3, 224, 224), dtype='float32')",
    zoo.vgg.get_feature: "(internal_layer, layers, filters, batch_norm=False)",
    zoo.vgg.get_classifier: "(input_data, num_classes)",
    zoo.vgg.get_net: "(batch_size, image_shape, num_classes, dtype, num_layers=11, "
                     "batch_norm=False)",
    zoo.vgg.get_workload: "(batch_size, num_classes=1000, image_shape=(3, 224, 224), "
                          "dtype='float32', num_layers=11, batch_norm=False)",
    zoo.densenet.get_workload: "(densenet_size=121, classes=1000, batch_size=4, "
                               "image_shape=(3, 224, 224), dtype='float32')",
    zoo.layers.batch_norm_infer: "(data, gamma=None, beta=None, moving_mean=None, "
                                 "moving_var=None, **kwargs)",
    zoo.layers.conv2d: "(data, weight=None, **kwargs)",
    zoo.layers.conv2d_transpose: "(data, weight=None, **kwargs)",
    zoo.layers.dense_add_bias: "(data, weight=None, bias=None, units=None, **kwargs)",
    zoo.layers.conv_kernel_layout: "(data_layout, is_depthwise=False)",
    zoo.Xavier: "(rnd_type='uniform', factor_type='avg', magnitude=3)",
}


@pytest.mark.parametrize("function", list(SIGNATURES), ids=lambda f: f.__qualname__)
def test_signature_matches_the_reference(function):
    assert str(inspect.signature(function)) == SIGNATURES[function]


@pytest.mark.parametrize("name", ["resnet18", "lstm", "dcgan", "squeezenet1.1"])
def test_workloads_print_in_the_text_format(name):
    text = _workload(name)[0].astext()
    assert text.startswith('#[version = "0.0.5"]') and "def @main(%data: Tensor[" in text


def test_dcgan_nhwc_output_shape():
    mod, _ = zoo.dcgan.get_workload(1, ngf=4, random_len=10, layout="NHWC")
    assert tuple(output_type(mod).shape) == (1, 64, 64, 3)
    assert param_shapes(mod)["g2_deconv_weight"] == (4, 4, 16, 32)
