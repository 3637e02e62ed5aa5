"""MobileNet v1 (depthwise-separable convolutions), ``relay.testing.mobilenet``.

A 3x3/2 ``conv_block_1`` then thirteen ``separable_conv_block_k`` blocks (a depthwise 3x3
convolution whose weight ``separable_conv_block_k_weight`` is given explicitly, batch norm,
ReLU, then a 1x1 pointwise ``_conv2``, batch norm, ReLU), global average pooling and a
``fc`` dense layer with softmax.
"""

import irlib
from irlib import nn

from . import layers
from .init import create_workload


def conv_block(data, name, channels, kernel_size=(3, 3), strides=(1, 1), padding=(1, 1),
               epsilon=1e-05, layout="NCHW"):
    """Convolution ``<name>_conv``, batch norm ``<name>_bn``, ReLU.

    Args:
        data: the input expression.
        name: the block's name prefix.
        channels: output channels.
        kernel_size, strides, padding: the convolution's window.
        epsilon: the batch norm epsilon.
        layout: ``"NCHW"`` or ``"NHWC"``.

    Returns:
        The block's output expression.
    """
    conv = layers.conv2d(data=data, channels=channels, kernel_size=kernel_size, strides=strides,
                         padding=padding, data_layout=layout,
                         kernel_layout=layers.conv_kernel_layout(layout), name=name + "_conv")
    bn = layers.batch_norm_infer(data=conv, epsilon=epsilon, axis=layout.index("C"),
                                 name=name + "_bn")
    return nn.relu(data=bn)


def separable_conv_block(data, name, depthwise_channels, pointwise_channels, kernel_size=(3, 3),
                         downsample=False, padding=(1, 1), epsilon=1e-05, layout="NCHW",
                         dtype="float32"):
    """Depthwise convolution + BN + ReLU, then pointwise 1x1 convolution + BN + ReLU.

    Args:
        data: the input expression.
        name: the block's name prefix.
        depthwise_channels: channels of the depthwise convolution (its groups).
        pointwise_channels: output channels.
        kernel_size: the depthwise window.
        downsample: stride 2 in the depthwise convolution.
        padding: the depthwise padding.
        epsilon: the batch norm epsilon.
        layout: ``"NCHW"`` or ``"NHWC"``.
        dtype: the dtype of the explicit depthwise weight.

    Returns:
        The block's output expression.

    Raises:
        ValueError: for another layout.
    """
    strides = (2, 2) if downsample else (1, 1)
    kernel_size = tuple(kernel_size)
    if layout == "NCHW":
        weight_shape = (depthwise_channels, 1) + kernel_size
    elif layout == "NHWC":
        weight_shape = kernel_size + (depthwise_channels, 1)
    else:
        raise ValueError(f"Invalid layout: {layout}")
    bn_axis = layout.index("C")
    weight = irlib.var(name + "_weight", shape=weight_shape, dtype=dtype)
    conv1 = layers.conv2d(data=data, weight=weight, channels=depthwise_channels,
                          groups=depthwise_channels, kernel_size=kernel_size, strides=strides,
                          padding=padding, data_layout=layout,
                          kernel_layout=layers.conv_kernel_layout(layout, True),
                          name=name + "_depthwise_conv1")
    act1 = nn.relu(data=layers.batch_norm_infer(data=conv1, epsilon=epsilon, axis=bn_axis,
                                                name=name + "_bn1"))
    conv2 = layers.conv2d(data=act1, channels=pointwise_channels, kernel_size=(1, 1),
                          strides=(1, 1), padding=(0, 0), data_layout=layout,
                          kernel_layout=layers.conv_kernel_layout(layout), name=name + "_conv2")
    return nn.relu(data=layers.batch_norm_infer(data=conv2, epsilon=epsilon, axis=bn_axis,
                                                name=name + "_bn2"))


def _block_schedule(is_shallow):
    """(depthwise, pointwise, downsample) per separable block, before alpha."""
    head = [(32, 64, False), (64, 128, True), (128, 128, False), (128, 256, True),
            (256, 256, False), (256, 512, True)]
    if is_shallow:
        return head + [(512, 1024, True), (1024, 1024, True)]
    return head + [(512, 512, False)] * 5 + [(512, 1024, True), (1024, 1024, False)]


def mobile_net(num_classes=1000, data_shape=(1, 3, 224, 224), dtype="float32", alpha=1.0,
               is_shallow=False, layout="NCHW"):
    """The MobileNet Function.

    Args:
        num_classes: number of classes.
        data_shape: the input shape, batch first, in ``layout``.
        dtype: the data type.
        alpha: the width multiplier.
        is_shallow: the 8-block variant.
        layout: ``"NCHW"`` or ``"NHWC"``.

    Returns:
        The network Function (softmax output of shape (batch, num_classes)).
    """
    data = irlib.var("data", shape=tuple(data_shape), dtype=dtype)
    body = conv_block(data, "conv_block_1", int(32 * alpha), strides=(2, 2), layout=layout)
    for index, (depthwise, pointwise, downsample) in enumerate(_block_schedule(is_shallow), 1):
        body = separable_conv_block(body, f"separable_conv_block_{index}", int(depthwise * alpha),
                                    int(pointwise * alpha), downsample=downsample,
                                    layout=layout, dtype=dtype)
    flatten = nn.batch_flatten(data=nn.global_avg_pool2d(data=body, layout=layout))
    fc = nn.dense(data=flatten, weight=irlib.var("fc_weight"), units=num_classes)
    fc = nn.bias_add(fc, irlib.var("fc_bias"))
    return layers.make_function(nn.softmax(data=fc))


def get_workload(batch_size=1, num_classes=1000, image_shape=(3, 224, 224), dtype="float32",
                 layout="NCHW"):
    """MobileNet (alpha 1.0, 13 blocks) and initialised parameters.

    Args:
        batch_size: the batch size.
        num_classes: number of classes.
        image_shape: the image shape in ``layout`` without the batch.
        dtype: the data type.
        layout: ``"NCHW"`` or ``"NHWC"``.

    Returns:
        ``(mod, params)`` as :func:`zoo.create_workload`.
    """
    net = mobile_net(num_classes=num_classes, data_shape=(batch_size,) + tuple(image_shape),
                     dtype=dtype, alpha=1.0, is_shallow=False, layout=layout)
    return create_workload(net)
