"""The generator of DCGAN (Radford, Metz and Chintala, 2015), ``relay.testing.dcgan``.

A random code of length ``random_len`` goes through ``dense_weight`` (no bias) and ReLU, is
reshaped to (ngf*8, 4, 4), and is doubled in size by three deconvolution + batch norm
(without scale) + ReLU blocks ``g2``..``g4`` and a last deconvolution ``g5``; ``tanh`` gives
the image. Only 64x64 outputs are supported, as in the reference.
"""

import irlib
from irlib import nn

from . import layers
from .init import create_workload

_DECONV_KERNEL_LAYOUTS = {"NCHW": "IOHW", "NHWC": "HWOI"}


def deconv2d(data, ishape, oshape, kshape, layout, name, stride=(2, 2)):
    """A transposed convolution that enlarges the feature map to ``oshape``.

    Args:
        data: the input expression.
        ishape: the input (C, H, W) (documentation only, as in the reference).
        oshape: the output (C, H, W).
        kshape: the kernel (height, width).
        layout: ``"NCHW"`` (IOHW kernels) or ``"NHWC"`` (HWOI kernels).
        name: the weight's base name (creates ``<name>_weight``).
        stride: the stride.

    Returns:
        The conv2d_transpose call.

    Raises:
        ValueError: for another layout.
    """
    if layout not in _DECONV_KERNEL_LAYOUTS:
        raise ValueError(f"Invalid layout: {layout}")
    pad_y, pad_x = (kshape[0] - 1) // 2, (kshape[1] - 1) // 2
    # output_padding makes up what the stride division loses on the target size
    adj_y = (oshape[-2] + 2 * pad_y - kshape[0]) % stride[0]
    adj_x = (oshape[-1] + 2 * pad_x - kshape[1]) % stride[1]
    return layers.conv2d_transpose(data, kernel_size=tuple(kshape), strides=tuple(stride),
                                   channels=oshape[0], padding=(pad_y, pad_x),
                                   output_padding=(adj_y, adj_x), data_layout=layout,
                                   kernel_layout=_DECONV_KERNEL_LAYOUTS[layout], name=name)


def deconv2d_bn_relu(data, prefix, **kwargs):
    """Deconvolution ``<prefix>_deconv``, batch norm ``<prefix>_batch_norm`` (no scale), ReLU.

    Args:
        data: the input expression.
        prefix: the block's name prefix.
        **kwargs: the arguments of :func:`deconv2d` other than ``data`` and ``name``.

    Returns:
        The block's output expression.
    """
    net = deconv2d(data, name=f"{prefix}_deconv", **kwargs)
    bn_axis = kwargs.get("layout", "NCHW").index("C")
    net = layers.batch_norm_infer(net, epsilon=1e-5 + 1e-12, scale=False, axis=bn_axis,
                                  name=f"{prefix}_batch_norm")
    return nn.relu(net)


def get_net(batch_size, random_len=100, oshape=(3, 64, 64), ngf=128, code=None, layout="NCHW",
            dtype="float32"):
    """The DCGAN generator Function.

    Args:
        batch_size: the batch size.
        random_len: the length of the random code.
        oshape: the output image (C, H, W); H and W must be 64.
        ngf: the number of feature maps of the last block.
        code: the input expression, or None for a var ``data`` of shape (batch, random_len).
        layout: ``"NCHW"`` or ``"NHWC"``.
        dtype: the data type.

    Returns:
        The network Function (tanh output, (batch, C, 64, 64) in NCHW).

    Raises:
        ValueError: if the output is not 64x64 or the layout is unknown.
    """
    if tuple(oshape[-2:]) != (64, 64):
        raise ValueError(f"Only support 64x64 image, got oshape {tuple(oshape)}")
    if layout not in _DECONV_KERNEL_LAYOUTS:
        raise ValueError(f"Invalid layout: {layout}")
    if code is None:
        code = irlib.var("data", shape=(batch_size, random_len), dtype=dtype)
    dense = nn.dense(code, weight=irlib.var("dense_weight"), units=4 * 4 * ngf * 8)
    newshape = (-1, ngf * 8, 4, 4) if layout == "NCHW" else (-1, 4, 4, ngf * 8)
    net = irlib.reshape(nn.relu(dense), newshape=newshape)
    size, channels = 4, ngf * 8
    for prefix in ("g2", "g3", "g4"):
        net = deconv2d_bn_relu(net, ishape=(channels, size, size),
                               oshape=(channels // 2, size * 2, size * 2), kshape=(4, 4),
                               layout=layout, prefix=prefix)
        size, channels = size * 2, channels // 2
    net = deconv2d(net, ishape=(channels, size, size), oshape=tuple(oshape[-3:]), kshape=(4, 4),
                   layout=layout, name="g5_deconv")
    return layers.make_function(irlib.tanh(net))


def get_workload(batch_size, oshape=(3, 64, 64), ngf=128, random_len=100, layout="NCHW",
                 dtype="float32"):
    """The DCGAN generator and initialised parameters.

    Args:
        batch_size: the batch size.
        oshape: the output image (C, H, W).
        ngf: the number of feature maps of the last block.
        random_len: the length of the random code.
        layout: ``"NCHW"`` or ``"NHWC"``.
        dtype: the data type.

    Returns:
        ``(mod, params)`` as :func:`zoo.create_workload`.
    """
    net = get_net(batch_size, random_len, oshape=oshape, ngf=ngf, layout=layout, dtype=dtype)
    return create_workload(net)
