"""ResNet v2 ("Identity Mappings in Deep Residual Networks", He et al.), ``relay.testing.resnet``.

The pre-activation variant: each unit is BN-ReLU-conv (twice, or three times with the 1x1
bottleneck for 50 layers and more), plus a shortcut that is the input itself, or a 1x1
convolution ``<unit>_sc`` on the first activation in every stage's first unit. The input
goes through a ``bn_data`` batch norm without scale; images taller than 32 pixels get the
ImageNet stem (7x7/2 ``conv0``, ``bn0``, ReLU, 3x3/2 max-pool), smaller ones a 3x3 ``conv0``.
The head is ``bn1``, ReLU, global average pool, flatten, ``fc1`` and softmax.
"""

import irlib
from irlib import nn

from . import layers
from .init import create_workload

_IMAGENET_UNITS = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3], 50: [3, 4, 6, 3], 101: [3, 4, 23, 3],
                   152: [3, 8, 36, 3], 200: [3, 24, 36, 3], 269: [3, 30, 48, 8]}


def _bn_relu(data, name, bn_axis):
    bn = layers.batch_norm_infer(data=data, epsilon=2e-5, axis=bn_axis, name=name)
    return nn.relu(data=bn)


def residual_unit(data, num_filter, stride, dim_match, name, bottle_neck=True,
                  data_layout="NCHW", kernel_layout="IOHW"):
    """One pre-activation residual unit.

    Args:
        data: the input expression.
        num_filter: number of output channels.
        stride: the stride of the first convolution (and of the shortcut).
        dim_match: True when input and output shapes agree (identity shortcut); False
            makes a 1x1 convolution ``<name>_sc`` for the shortcut.
        name: the base name of the unit's parameters.
        bottle_neck: use the 1x1-3x3-1x1 bottleneck with num_filter/4 inner channels.
        data_layout: ``"NCHW"`` or ``"NHWC"``.
        kernel_layout: the convolution kernel layout.

    Returns:
        The unit's output expression.
    """
    bn_axis = data_layout.index("C")
    conv_args = {"data_layout": data_layout, "kernel_layout": kernel_layout}
    act1 = _bn_relu(data, name + "_bn1", bn_axis)
    if bottle_neck:
        inner = int(num_filter * 0.25)
        body = layers.conv2d(data=act1, channels=inner, kernel_size=(1, 1), strides=stride,
                             padding=(0, 0), name=name + "_conv1", **conv_args)
        body = layers.conv2d(data=_bn_relu(body, name + "_bn2", bn_axis), channels=inner,
                             kernel_size=(3, 3), strides=(1, 1), padding=(1, 1),
                             name=name + "_conv2", **conv_args)
        body = layers.conv2d(data=_bn_relu(body, name + "_bn3", bn_axis), channels=num_filter,
                             kernel_size=(1, 1), strides=(1, 1), padding=(0, 0),
                             name=name + "_conv3", **conv_args)
    else:
        body = layers.conv2d(data=act1, channels=num_filter, kernel_size=(3, 3), strides=stride,
                             padding=(1, 1), name=name + "_conv1", **conv_args)
        body = layers.conv2d(data=_bn_relu(body, name + "_bn2", bn_axis), channels=num_filter,
                             kernel_size=(3, 3), strides=(1, 1), padding=(1, 1),
                             name=name + "_conv2", **conv_args)
    if dim_match:
        shortcut = data
    else:
        shortcut = layers.conv2d(data=act1, channels=num_filter, kernel_size=(1, 1),
                                 strides=stride, name=name + "_sc", **conv_args)
    return irlib.add(body, shortcut)


def resnet(units, num_stages, filter_list, num_classes, data_shape, bottle_neck=True,
           layout="NCHW", dtype="float32"):
    """The ResNet network Function.

    Args:
        units: number of units in each stage.
        num_stages: number of stages (``len(units)``).
        filter_list: the stem's channels, then each stage's.
        num_classes: the output size.
        data_shape: the input shape, batch first, in ``layout``.
        bottle_neck: use bottleneck units.
        layout: ``"NCHW"`` or ``"NHWC"`` (kernels OIHW or HWIO).
        dtype: the data type.

    Returns:
        The network Function (softmax output of shape (batch, num_classes)).

    Raises:
        ValueError: if ``len(units) != num_stages`` or the layout is unknown.
    """
    if len(units) != num_stages:
        raise ValueError(f"resnet: {len(units)} unit counts for {num_stages} stages")
    kernel_layout = layers.conv_kernel_layout(layout)
    conv_args = {"data_layout": layout, "kernel_layout": kernel_layout}
    bn_axis = layout.index("C")
    data = irlib.var("data", shape=tuple(data_shape), dtype=dtype)
    body = layers.batch_norm_infer(data=data, epsilon=2e-5, axis=bn_axis, scale=False,
                                   name="bn_data")
    height = data_shape[layout.index("H")]
    if height <= 32:  # CIFAR-sized input: no downsampling stem
        body = layers.conv2d(data=body, channels=filter_list[0], kernel_size=(3, 3),
                             strides=(1, 1), padding=(1, 1), name="conv0", **conv_args)
    else:
        body = layers.conv2d(data=body, channels=filter_list[0], kernel_size=(7, 7),
                             strides=(2, 2), padding=(3, 3), name="conv0", **conv_args)
        body = _bn_relu(body, "bn0", bn_axis)
        body = nn.max_pool2d(data=body, pool_size=(3, 3), strides=(2, 2), padding=(1, 1),
                             layout=layout)
    for stage in range(num_stages):
        stride = (1, 1) if stage == 0 else (2, 2)
        body = residual_unit(body, filter_list[stage + 1], stride, False,
                             name=f"stage{stage + 1}_unit1", bottle_neck=bottle_neck,
                             data_layout=layout, kernel_layout=kernel_layout)
        for unit in range(units[stage] - 1):
            body = residual_unit(body, filter_list[stage + 1], (1, 1), True,
                                 name=f"stage{stage + 1}_unit{unit + 2}",
                                 bottle_neck=bottle_neck, data_layout=layout,
                                 kernel_layout=kernel_layout)
    body = _bn_relu(body, "bn1", bn_axis)
    body = nn.batch_flatten(data=nn.global_avg_pool2d(data=body, layout=layout))
    body = layers.dense_add_bias(data=body, units=num_classes, name="fc1")
    return layers.make_function(nn.softmax(data=body))


def _configuration(num_layers, height):
    """(units, num_stages, filter_list, bottle_neck) for a depth and image height."""
    if height <= 28:
        if (num_layers - 2) % 9 == 0 and num_layers >= 164:
            return [(num_layers - 2) // 9] * 3, 3, [16, 64, 128, 256], True
        if (num_layers - 2) % 6 == 0 and num_layers < 164:
            return [(num_layers - 2) // 6] * 3, 3, [16, 16, 32, 64], False
        raise ValueError(f"no experiments done on num_layers {num_layers} for small images "
                         "(use 6n+2 below 164 or 9n+2 from 164)")
    if num_layers not in _IMAGENET_UNITS:
        raise ValueError(f"no experiments done on num_layers {num_layers}; "
                         f"choose one of {sorted(_IMAGENET_UNITS)}")
    if num_layers >= 50:
        return _IMAGENET_UNITS[num_layers], 4, [64, 256, 512, 1024, 2048], True
    return _IMAGENET_UNITS[num_layers], 4, [64, 64, 128, 256, 512], False


def get_net(batch_size, num_classes, num_layers=50, image_shape=(3, 224, 224), layout="NCHW",
            dtype="float32", **kwargs):
    """The ResNet Function for a depth.

    Args:
        batch_size: the batch size.
        num_classes: number of classes.
        num_layers: 18, 34, 50, 101, 152, 200 or 269 (images taller than 28 pixels), or
            6n+2 / 9n+2 for small images.
        image_shape: the image shape, (C, H, W) for NCHW or (H, W, C) for NHWC.
        layout: ``"NCHW"`` or ``"NHWC"``.
        dtype: the data type.
        **kwargs: ignored (accepted for compatibility).

    Returns:
        The network Function.

    Raises:
        ValueError: for an unsupported depth.
    """
    image_shape = tuple(image_shape)
    height = image_shape[0] if layout == "NHWC" else image_shape[1]
    units, num_stages, filter_list, bottle_neck = _configuration(num_layers, height)
    return resnet(units=units, num_stages=num_stages, filter_list=filter_list,
                  num_classes=num_classes, data_shape=(batch_size,) + image_shape,
                  bottle_neck=bottle_neck, layout=layout, dtype=dtype)


def get_workload(batch_size=1, num_classes=1000, num_layers=18, image_shape=(3, 224, 224),
                 layout="NCHW", dtype="float32", **kwargs):
    """ResNet and initialised parameters.

    Args:
        batch_size: the batch size.
        num_classes: number of classes.
        num_layers: the depth (see :func:`get_net`).
        image_shape: the image shape in ``layout`` without the batch.
        layout: ``"NCHW"`` or ``"NHWC"``.
        dtype: the data type.
        **kwargs: passed to :func:`get_net`.

    Returns:
        ``(mod, params)`` as :func:`zoo.create_workload`.
    """
    net = get_net(batch_size=batch_size, num_classes=num_classes, num_layers=num_layers,
                  image_shape=image_shape, layout=layout, dtype=dtype, **kwargs)
    return create_workload(net)
