"""A simple multilayer perceptron (``relay.testing.mlp``): flatten, three dense layers.

Parameters: ``fc1_weight`` (128, in), ``fc1_bias``, ``fc2_weight`` (64, 128), ``fc2_bias``,
``fc3_weight`` (classes, 64), ``fc3_bias``; output ``softmax`` of shape (batch, classes).
"""

import irlib
from irlib import nn

from .init import create_workload
from .layers import make_function


def get_net(batch_size, num_classes=10, image_shape=(1, 28, 28), dtype="float32"):
    """The multilayer perceptron as a Function.

    Args:
        batch_size: the batch size.
        num_classes: number of classes.
        image_shape: the input image shape (C, H, W).
        dtype: the data type.

    Returns:
        The network Function; its first parameter is ``data``.
    """
    data = irlib.var("data", shape=(batch_size,) + tuple(image_shape), dtype=dtype)
    body = nn.batch_flatten(data)
    for index, units in ((1, 128), (2, 64)):
        body = nn.dense(body, irlib.var(f"fc{index}_weight"), units=units)
        body = nn.relu(nn.bias_add(body, irlib.var(f"fc{index}_bias"), axis=-1))
    body = nn.dense(body, irlib.var("fc3_weight"), units=num_classes)
    body = nn.bias_add(body, irlib.var("fc3_bias"), axis=-1)
    return make_function(nn.softmax(data=body))


def get_workload(batch_size, num_classes=10, image_shape=(1, 28, 28), dtype="float32"):
    """The multilayer perceptron and initialised parameters.

    Arguments as :func:`get_net`.

    Returns:
        ``(mod, params)`` as :func:`zoo.create_workload`.
    """
    return create_workload(get_net(batch_size, num_classes, image_shape, dtype))
