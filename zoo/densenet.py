"""DenseNet 121/161/169/201 (Huang et al.), ``relay.testing.densenet``.

A 7x7/2 ``conv1``, ``batch1``, ReLU and 3x3/2 max pool, then dense blocks of BN-ReLU-1x1
conv-BN-ReLU-3x3 conv layers joined by transitions (``batch_t_i``, ReLU, 1x1 ``conv_t_i``
halving the channels, 2x2/2 average pool); ``batch2``, ReLU, 7x7 average pool, flatten and
``dense`` give the logits (no softmax).

NOTE: as in the reference, a block's output concatenates only its layers' outputs (each
layer reads the previous layer's output, not the running concatenation), and the channel
count that sizes each transition assumes the textbook concatenation. The model is a
benchmark workload, not the published DenseNet.
"""

import irlib
from irlib import nn

from . import layers
from .init import create_workload

_SPECS = {121: (64, 32, [6, 12, 24, 16]), 161: (96, 48, [6, 12, 36, 24]),
          169: (69, 32, [6, 12, 32, 32]), 201: (64, 32, [6, 12, 48, 32])}


def _dense_layer(data, growth_rate, bn_size, index):
    net = nn.relu(layers.batch_norm_infer(data, name=f"batch_1_{index}"))
    net = layers.conv2d(net, channels=bn_size * growth_rate, kernel_size=(1, 1),
                        name=f"conv2d_1_{index}")
    net = nn.relu(layers.batch_norm_infer(net, name=f"batch_2_{index}"))
    return layers.conv2d(net, channels=growth_rate, kernel_size=(3, 3), padding=(1, 1),
                         name=f"conv2d_2_{index}")


def _dense_block(data, num_layers, bn_size, growth_rate, index):
    outputs = []
    layer_out = data
    for i in range(num_layers):
        layer_out = _dense_layer(layer_out, growth_rate, bn_size, f"{index}_{i}")
        outputs.append(layer_out)
    return irlib.concatenate(outputs, 1)


def _transition(data, num_output_features, index):
    net = nn.relu(layers.batch_norm_infer(data, name=f"batch_t_{index}"))
    net = layers.conv2d(net, channels=num_output_features, kernel_size=(1, 1),
                        name=f"conv_t_{index}")
    return nn.avg_pool2d(net, pool_size=(2, 2), strides=(2, 2))


def _dense_net(num_init_features, growth_rate, block_config, data_shape, data_dtype, bn_size=4,
               classes=1000):
    data = irlib.var("data", shape=tuple(data_shape), dtype=data_dtype)
    net = layers.conv2d(data, channels=num_init_features, kernel_size=(7, 7), strides=(2, 2),
                        padding=(3, 3), name="conv1")
    net = nn.relu(layers.batch_norm_infer(net, name="batch1"))
    net = nn.max_pool2d(net, pool_size=(3, 3), strides=(2, 2), padding=(1, 1))
    num_features = num_init_features
    for i, num_layers in enumerate(block_config):
        net = _dense_block(net, num_layers, bn_size, growth_rate, i)
        num_features += num_layers * growth_rate
        if i != len(block_config) - 1:
            net = _transition(net, num_features // 2, i)
            num_features //= 2
    net = nn.relu(layers.batch_norm_infer(net, name="batch2"))
    net = nn.batch_flatten(nn.avg_pool2d(net, pool_size=(7, 7)))
    return layers.make_function(layers.dense_add_bias(net, units=classes, name="dense"))


def get_workload(densenet_size=121, classes=1000, batch_size=4, image_shape=(3, 224, 224),
                 dtype="float32"):
    """DenseNet and initialised parameters.

    Args:
        densenet_size: 121, 161, 169 or 201.
        classes: number of classes.
        batch_size: the batch size.
        image_shape: the image shape (C, H, W); the final 7x7 average pool expects the
            feature map to be at least 7x7 (224x224 images give exactly 7x7).
        dtype: the data type.

    Returns:
        ``(mod, params)`` as :func:`zoo.create_workload`.

    Raises:
        ValueError: for another size.
    """
    return create_workload(get_net(densenet_size, classes, batch_size, image_shape, dtype))


def get_net(densenet_size=121, classes=1000, batch_size=4, image_shape=(3, 224, 224),
            dtype="float32"):
    """The DenseNet Function (irlib addition: the reference has only get_workload).

    Args:
        densenet_size: 121, 161, 169 or 201.
        classes: number of classes.
        batch_size: the batch size.
        image_shape: the image shape (C, H, W).
        dtype: the data type.

    Returns:
        The network Function (logits of shape (batch, classes)).

    Raises:
        ValueError: for another size.
    """
    if densenet_size not in _SPECS:
        raise ValueError(f"unsupported densenet_size {densenet_size}; "
                         f"choose one of {sorted(_SPECS)}")
    num_init_features, growth_rate, block_config = _SPECS[densenet_size]
    return _dense_net(num_init_features, growth_rate, block_config,
                      (batch_size,) + tuple(image_shape), dtype, 4, classes)
