"""Inception v3 (Szegedy et al., 2015) for ~299x299 images, ``relay.testing.inception_v3``.

Every convolution unit is conv ``<name><suffix>_conv1`` + batch norm ``<name><suffix>_bn``
(no scale) + ReLU. Five stem units (``conv`` .. ``conv_4``) with two max pools, then the
blocks ``mixed`` .. ``mixed_10`` (A x3, B, C x4, D, E x2), an 8x8 average pool, flatten,
``fc1_weight`` with the bias ``fc2_bias`` (the reference's names) and softmax. Each block's
towers are named ``<block>_conv`` (1x1 tower), ``<block>_tower``, ``<block>_tower_1`` and
``<block>_tower_2`` (pool projection), with suffixes ``_conv``, ``_conv_1``, ...
"""

import irlib
from irlib import nn

from . import layers
from .init import create_workload


def _conv(data, num_filter, kernel=(1, 1), stride=(1, 1), pad=(0, 0), name=None, suffix=""):
    conv = layers.conv2d(data=data, channels=int(num_filter), kernel_size=kernel, strides=stride,
                         padding=pad, name=f"{name}{suffix}_conv1")
    bn = layers.batch_norm_infer(data=conv, epsilon=2e-5, scale=False, name=f"{name}{suffix}_bn")
    return nn.relu(data=bn)


def _pool(data, kernel, stride, pad, pool_type):
    if pool_type == "max":
        return nn.max_pool2d(data=data, pool_size=kernel, strides=stride, padding=pad)
    if pool_type == "avg":
        return nn.avg_pool2d(data=data, pool_size=kernel, strides=stride, padding=pad,
                             count_include_pad=True)
    raise ValueError(f"Invalid pooling type: {pool_type}")


def _tower(data, name, steps):
    """A chain of conv units named ``name`` with suffixes ``_conv``, ``_conv_1``, ...

    ``steps`` holds (filters, kernel, pad, stride) per unit.
    """
    for index, (filters, kernel, pad, stride) in enumerate(steps):
        suffix = "_conv" if index == 0 else f"_conv_{index}"
        data = _conv(data, filters, kernel=kernel, pad=pad, stride=stride, name=name,
                     suffix=suffix)
    return data


_ONE = ((1, 1), (0, 0), (1, 1))          # 1x1 kernel, no pad, stride 1
_THREE = ((3, 3), (1, 1), (1, 1))        # 3x3, same padding
_THREE_DOWN = ((3, 3), (0, 0), (2, 2))   # 3x3, valid, stride 2
_ONE_BY_SEVEN = ((1, 7), (0, 3), (1, 1))
_SEVEN_BY_ONE = ((7, 1), (3, 0), (1, 1))


def _steps(*pairs):
    return [(filters,) + shape for filters, shape in pairs]


def _inception_a(data, num_1x1, num_3x3_red, num_3x3_1, num_3x3_2, num_5x5_red, num_5x5, pool,
                 proj, name):
    tower_1x1 = _conv(data, num_1x1, name=f"{name}_conv")
    tower_5x5 = _tower(data, f"{name}_tower",
                       _steps((num_5x5_red, _ONE), (num_5x5, ((5, 5), (2, 2), (1, 1)))))
    tower_3x3 = _tower(data, f"{name}_tower_1",
                       _steps((num_3x3_red, _ONE), (num_3x3_1, _THREE), (num_3x3_2, _THREE)))
    pooled = _pool(data, (3, 3), (1, 1), (1, 1), pool)
    cproj = _conv(pooled, proj, name=f"{name}_tower_2", suffix="_conv")
    return irlib.concatenate((tower_1x1, tower_5x5, tower_3x3, cproj), axis=1)


def _inception_b(data, num_3x3, num_d3x3_red, num_d3x3_1, num_d3x3_2, pool, name):
    tower_3x3 = _conv(data, num_3x3, kernel=(3, 3), pad=(0, 0), stride=(2, 2),
                      name=f"{name}_conv")
    tower_d3x3 = _tower(data, f"{name}_tower", _steps(
        (num_d3x3_red, _ONE), (num_d3x3_1, _THREE), (num_d3x3_2, _THREE_DOWN)))
    pooled = _pool(data, (3, 3), (2, 2), (0, 0), "max")
    return irlib.concatenate((tower_3x3, tower_d3x3, pooled), axis=1)


def _inception_c(data, num_1x1, num_d7_red, num_d7_1, num_d7_2, num_q7_red, num_q7_1, num_q7_2,
                 num_q7_3, num_q7_4, pool, proj, name):
    tower_1x1 = _conv(data, num_1x1, name=f"{name}_conv")
    tower_d7 = _tower(data, f"{name}_tower", _steps(
        (num_d7_red, _ONE), (num_d7_1, _ONE_BY_SEVEN), (num_d7_2, _SEVEN_BY_ONE)))
    tower_q7 = _tower(data, f"{name}_tower_1", _steps(
        (num_q7_red, _ONE), (num_q7_1, _SEVEN_BY_ONE), (num_q7_2, _ONE_BY_SEVEN),
        (num_q7_3, _SEVEN_BY_ONE), (num_q7_4, _ONE_BY_SEVEN)))
    pooled = _pool(data, (3, 3), (1, 1), (1, 1), pool)
    cproj = _conv(pooled, proj, name=f"{name}_tower_2", suffix="_conv")
    return irlib.concatenate((tower_1x1, tower_d7, tower_q7, cproj), axis=1)


def _inception_d(data, num_3x3_red, num_3x3, num_d7_3x3_red, num_d7_1, num_d7_2, num_d7_3x3, pool,
                 name):
    tower_3x3 = _tower(data, f"{name}_tower", _steps((num_3x3_red, _ONE),
                                                      (num_3x3, _THREE_DOWN)))
    tower_d7_3x3 = _tower(data, f"{name}_tower_1", _steps(
        (num_d7_3x3_red, _ONE), (num_d7_1, _ONE_BY_SEVEN), (num_d7_2, _SEVEN_BY_ONE),
        (num_d7_3x3, _THREE_DOWN)))
    pooled = _pool(data, (3, 3), (2, 2), (0, 0), pool)
    return irlib.concatenate((tower_3x3, tower_d7_3x3, pooled), axis=1)


def _inception_e(data, num_1x1, num_d3_red, num_d3_1, num_d3_2, num_3x3_d3_red, num_3x3,
                 num_3x3_d3_1, num_3x3_d3_2, pool, proj, name):
    tower_1x1 = _conv(data, num_1x1, name=f"{name}_conv")
    tower_d3 = _conv(data, num_d3_red, name=f"{name}_tower", suffix="_conv")
    tower_d3_a = _conv(tower_d3, num_d3_1, kernel=(1, 3), pad=(0, 1), name=f"{name}_tower",
                       suffix="_mixed_conv")
    tower_d3_b = _conv(tower_d3, num_d3_2, kernel=(3, 1), pad=(1, 0), name=f"{name}_tower",
                       suffix="_mixed_conv_1")
    tower_3x3 = _tower(data, f"{name}_tower_1", _steps((num_3x3_d3_red, _ONE),
                                                        (num_3x3, _THREE)))
    tower_3x3_a = _conv(tower_3x3, num_3x3_d3_1, kernel=(1, 3), pad=(0, 1),
                        name=f"{name}_tower_1", suffix="_mixed_conv")
    tower_3x3_b = _conv(tower_3x3, num_3x3_d3_2, kernel=(3, 1), pad=(1, 0),
                        name=f"{name}_tower_1", suffix="_mixed_conv_1")
    pooled = _pool(data, (3, 3), (1, 1), (1, 1), pool)
    cproj = _conv(pooled, proj, name=f"{name}_tower_2", suffix="_conv")
    return irlib.concatenate((tower_1x1, tower_d3_a, tower_d3_b, tower_3x3_a, tower_3x3_b, cproj),
                             axis=1)


def get_net(batch_size, num_classes, image_shape, dtype):
    """The Inception v3 Function.

    Args:
        batch_size: the batch size.
        num_classes: number of classes.
        image_shape: the image shape (C, H, W); the final 8x8 average pool needs a feature
            map of at least 8x8, which 299x299 images give.
        dtype: the data type.

    Returns:
        The network Function (softmax output of shape (batch, num_classes)).
    """
    data = irlib.var("data", shape=(batch_size,) + tuple(image_shape), dtype=dtype)
    net = _conv(data, 32, kernel=(3, 3), stride=(2, 2), name="conv")
    net = _conv(net, 32, kernel=(3, 3), name="conv_1")
    net = _conv(net, 64, kernel=(3, 3), pad=(1, 1), name="conv_2")
    net = _pool(net, (3, 3), (2, 2), (0, 0), "max")
    net = _conv(net, 80, kernel=(1, 1), name="conv_3")
    net = _conv(net, 192, kernel=(3, 3), name="conv_4")
    net = _pool(net, (3, 3), (2, 2), (0, 0), "max")
    net = _inception_a(net, 64, 64, 96, 96, 48, 64, "avg", 32, "mixed")
    net = _inception_a(net, 64, 64, 96, 96, 48, 64, "avg", 64, "mixed_1")
    net = _inception_a(net, 64, 64, 96, 96, 48, 64, "avg", 64, "mixed_2")
    net = _inception_b(net, 384, 64, 96, 96, "max", "mixed_3")
    net = _inception_c(net, 192, 128, 128, 192, 128, 128, 128, 128, 192, "avg", 192, "mixed_4")
    net = _inception_c(net, 192, 160, 160, 192, 160, 160, 160, 160, 192, "avg", 192, "mixed_5")
    net = _inception_c(net, 192, 160, 160, 192, 160, 160, 160, 160, 192, "avg", 192, "mixed_6")
    net = _inception_c(net, 192, 192, 192, 192, 192, 192, 192, 192, 192, "avg", 192, "mixed_7")
    net = _inception_d(net, 192, 320, 192, 192, 192, 192, "max", "mixed_8")
    net = _inception_e(net, 320, 384, 384, 384, 448, 384, 384, 384, "avg", 192, "mixed_9")
    net = _inception_e(net, 320, 384, 384, 384, 448, 384, 384, 384, "max", 192, "mixed_10")
    net = nn.batch_flatten(_pool(net, (8, 8), (1, 1), (0, 0), "avg"))
    net = nn.dense(net, irlib.var("fc1_weight"), units=num_classes)
    net = nn.bias_add(net, irlib.var("fc2_bias"), axis=-1)
    return layers.make_function(nn.softmax(data=net))


def get_workload(batch_size=1, num_classes=1000, image_shape=(3, 299, 299), dtype="float32"):
    """Inception v3 and initialised parameters.

    Args:
        batch_size: the batch size.
        num_classes: number of classes.
        image_shape: the image shape (C, H, W).
        dtype: the data type.

    Returns:
        ``(mod, params)`` as :func:`zoo.create_workload`.
    """
    return create_workload(get_net(batch_size, num_classes, image_shape, dtype))
