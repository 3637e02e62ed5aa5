"""Neural-network ops: the ``irlib.nn`` namespace (``relay.nn``).

The ops are defined in one module per concept: ``nn_dense`` (dense, bias_add, matmul,
batch_matmul, batch_flatten), ``nn_activation`` (relu, softmax, ... and the ELU family),
``nn_conv`` (convolutions, gradients in ``nn_conv_grad``), ``nn_winograd``, ``nn_pool`` (2-D
pooling), ``nn_pool_nd`` (1-D/3-D, adaptive and Lp pooling), ``nn_norm`` (normalisation),
``nn_pad``, ``nn_dropout``, ``nn_space`` (depth/space rearrangement), ``nn_attention``, and
``upsampling`` from ``image``; this module gathers their builders so that users write
``irlib.nn.conv2d(x, w, padding=1)``.
"""

from .nn_dense import *  # noqa: F401,F403
from .nn_dense import __all__ as _dense_all
from .nn_activation import *  # noqa: F401,F403
from .nn_activation import __all__ as _activation_all
from .nn_conv import *  # noqa: F401,F403
from .nn_conv import __all__ as _conv_all
from .nn_conv_grad import conv2d_backward_weight  # noqa: F401
from .nn_pool import *  # noqa: F401,F403
from .nn_pool import __all__ as _pool_all
from .nn_norm import *  # noqa: F401,F403
from .nn_norm import __all__ as _norm_all
from .nn_pool_nd import *  # noqa: F401,F403
from .nn_pool_nd import __all__ as _pool_nd_all
from .nn_pad import *  # noqa: F401,F403
from .nn_pad import __all__ as _pad_all
from .nn_dropout import *  # noqa: F401,F403
from .nn_dropout import __all__ as _dropout_all
from .nn_space import *  # noqa: F401,F403
from .nn_space import __all__ as _space_all
from .nn_attention import *  # noqa: F401,F403
from .nn_attention import __all__ as _attention_all
from .image import upsampling  # noqa: F401
from .nn_winograd import (contrib_conv2d_winograd_weight_transform,  # noqa: F401
                          contrib_conv2d_winograd_without_weight_transform)

__all__ = (list(_dense_all) + list(_activation_all) + list(_conv_all) + list(_pool_all)
           + list(_norm_all) + list(_pool_nd_all) + list(_pad_all) + list(_dropout_all)
           + list(_space_all) + list(_attention_all)
           + ["upsampling", "conv2d_backward_weight", "contrib_conv2d_winograd_weight_transform",
              "contrib_conv2d_winograd_without_weight_transform"])
