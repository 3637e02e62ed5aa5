"""SqueezeNet 1.0 and 1.1 (Iandola et al., 2016), ``relay.testing.squeezenet``.

A stem convolution ``conv1`` (7x7/2, 96 channels in 1.0; 3x3/2, 64 in 1.1), max pools and
eight fire modules ``fire1``..``fire8`` (a 1x1 squeeze ``_input``, then 1x1 ``_left`` and
3x3 ``_right`` expands concatenated on the channel axis, each conv with its own bias), then
dropout, a 1x1 ``conv_final`` to the classes, ReLU, global average pooling and softmax.
"""

import irlib
from irlib import nn

from . import layers
from .init import create_workload

# (squeeze, expand) per fire module, and after which modules (0-based) a max pool comes
_FIRES = [(16, 64), (16, 64), (32, 128), (32, 128), (48, 192), (48, 192), (64, 256), (64, 256)]
_POOL_AFTER = {"1.0": (2, 6), "1.1": (1, 3)}


def _fire_conv(net, channels, kernel_size, padding, prefix):
    net = layers.conv2d(net, channels=channels, kernel_size=(kernel_size, kernel_size),
                        padding=(padding, padding), name=f"{prefix}_conv")
    net = nn.bias_add(net, irlib.var(f"{prefix}_conv_bias"))
    return nn.relu(net)


def _fire(net, squeeze_channels, expand1x1_channels, expand3x3_channels, prefix):
    net = _fire_conv(net, squeeze_channels, 1, 0, f"{prefix}_input")
    left = _fire_conv(net, expand1x1_channels, 1, 0, f"{prefix}_left")
    right = _fire_conv(net, expand3x3_channels, 3, 1, f"{prefix}_right")
    return irlib.concatenate((left, right), axis=1)


def get_net(batch_size, image_shape, num_classes, version, dtype):
    """The SqueezeNet Function.

    Args:
        batch_size: the batch size.
        image_shape: the image shape (C, H, W).
        num_classes: number of classes.
        version: ``"1.0"`` or ``"1.1"``.
        dtype: the data type.

    Returns:
        The network Function (softmax output of shape (batch, num_classes)).

    Raises:
        ValueError: for another version.
    """
    if version not in _POOL_AFTER:
        raise ValueError(f"Unsupported SqueezeNet version {version}: 1.0 or 1.1 expected")
    net = irlib.var("data", shape=(batch_size,) + tuple(image_shape), dtype=dtype)
    if version == "1.0":
        net = layers.conv2d(net, channels=96, kernel_size=(7, 7), strides=(2, 2),
                            padding=(3, 3), name="conv1")
    else:
        net = layers.conv2d(net, channels=64, kernel_size=(3, 3), strides=(2, 2),
                            padding=(1, 1), name="conv1")
    net = nn.relu(nn.bias_add(net, irlib.var("conv1_bias")))
    net = nn.max_pool2d(net, pool_size=(3, 3), strides=(2, 2))
    for index, (squeeze, expand) in enumerate(_FIRES):
        net = _fire(net, squeeze, expand, expand, f"fire{index + 1}")
        if index in _POOL_AFTER[version]:
            net = nn.max_pool2d(net, pool_size=(3, 3), strides=(2, 2))
    net = nn.dropout(net, rate=0.5)
    net = layers.conv2d(net, channels=num_classes, kernel_size=(1, 1), name="conv_final")
    net = nn.relu(nn.bias_add(net, irlib.var("conv_final_bias")))
    net = nn.batch_flatten(nn.global_avg_pool2d(net))
    return layers.make_function(nn.softmax(net))


def get_workload(batch_size=1, num_classes=1000, version="1.0", image_shape=(3, 224, 224),
                 dtype="float32"):
    """SqueezeNet and initialised parameters.

    Args:
        batch_size: the batch size.
        num_classes: number of classes.
        version: ``"1.0"`` or ``"1.1"``.
        image_shape: the image shape (C, H, W).
        dtype: the data type.

    Returns:
        ``(mod, params)`` as :func:`zoo.create_workload`.
    """
    return create_workload(get_net(batch_size, image_shape, num_classes, version, dtype))
