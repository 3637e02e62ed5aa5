"""VGG 11/13/16/19 (Simonyan and Zisserman, 2014), ``relay.testing.vgg``.

Five blocks of 3x3 convolutions ``conv{i}_{j}`` (each with its bias, optionally batch norm
``bn{i}_{j}``, and ReLU), each block ending in a 2x2/2 max pool; then ``fc6`` and ``fc7``
(4096 units, ReLU, dropout) and ``fc8`` (the classes) with softmax.
"""

import irlib
from irlib import nn

from . import layers as wrapper
from .init import create_workload

_FILTERS = [64, 128, 256, 512, 512]
_SPECS = {11: [1, 1, 2, 2, 2], 13: [2, 2, 2, 2, 2], 16: [2, 2, 3, 3, 3], 19: [2, 2, 4, 4, 4]}


def get_feature(internal_layer, layers, filters, batch_norm=False):
    """The convolutional body.

    Args:
        internal_layer: the input expression.
        layers: the number of convolutions in each block.
        filters: the channels of each block.
        batch_norm: add batch norm after each convolution's bias.

    Returns:
        The body's output expression.
    """
    for i, count in enumerate(layers):
        for j in range(count):
            name = f"{i + 1}_{j + 1}"
            internal_layer = wrapper.conv2d(data=internal_layer, kernel_size=(3, 3),
                                            padding=(1, 1), channels=filters[i],
                                            name=f"conv{name}")
            internal_layer = nn.bias_add(internal_layer, irlib.var(f"conv{name}_bias"))
            if batch_norm:
                internal_layer = wrapper.batch_norm_infer(data=internal_layer, name=f"bn{name}")
            internal_layer = nn.relu(data=internal_layer)
        internal_layer = nn.max_pool2d(data=internal_layer, pool_size=(2, 2), strides=(2, 2))
    return internal_layer


def get_classifier(input_data, num_classes):
    """The fully connected head (before softmax).

    Args:
        input_data: the body's output.
        num_classes: number of classes.

    Returns:
        The ``fc8`` output expression.
    """
    net = nn.batch_flatten(data=input_data)
    for name in ("fc6", "fc7"):
        net = wrapper.dense_add_bias(data=net, units=4096, name=name)
        net = nn.dropout(data=nn.relu(data=net), rate=0.5)
    return wrapper.dense_add_bias(data=net, units=num_classes, name="fc8")


def get_net(batch_size, image_shape, num_classes, dtype, num_layers=11, batch_norm=False):
    """The VGG Function.

    Args:
        batch_size: the batch size.
        image_shape: the image shape (C, H, W).
        num_classes: number of classes.
        dtype: the data type.
        num_layers: 11, 13, 16 or 19.
        batch_norm: use batch normalisation.

    Returns:
        The network Function (softmax output of shape (batch, num_classes)).

    Raises:
        ValueError: for another depth.
    """
    if num_layers not in _SPECS:
        raise ValueError(f"Invalid num_layers {num_layers}. Choices are 11, 13, 16, 19.")
    data = irlib.var("data", shape=(batch_size,) + tuple(image_shape), dtype=dtype)
    feature = get_feature(data, _SPECS[num_layers], _FILTERS, batch_norm)
    return wrapper.make_function(nn.softmax(data=get_classifier(feature, num_classes)))


def get_workload(batch_size, num_classes=1000, image_shape=(3, 224, 224), dtype="float32",
                 num_layers=11, batch_norm=False):
    """VGG and initialised parameters.

    Args:
        batch_size: the batch size.
        num_classes: number of classes.
        image_shape: the image shape (C, H, W).
        dtype: the data type.
        num_layers: 11, 13, 16 or 19.
        batch_norm: use batch normalisation.

    Returns:
        ``(mod, params)`` as :func:`zoo.create_workload`.
    """
    return create_workload(get_net(batch_size, image_shape, num_classes, dtype, num_layers,
                                   batch_norm))
