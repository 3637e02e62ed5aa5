"""Neural-network ops: the ``irlib.nn`` namespace (``relay.nn``).

The ops are defined in family modules (``nn_basic``, ``nn_conv`` (with ``nn_conv_grad``),
``nn_pool``, ``nn_more``, ``nn_norm``, ``nn_pool_nd``, ``nn_space``, and
``upsampling`` from ``image``); this module
gathers their builders so that users write ``irlib.nn.conv2d(x, w, padding=1)``.
"""

from .nn_basic import *  # noqa: F401,F403
from .nn_basic import __all__ as _basic_all
from .nn_conv import *  # noqa: F401,F403
from .nn_conv import __all__ as _conv_all
from .nn_conv_grad import conv2d_backward_weight  # noqa: F401
from .nn_more import *  # noqa: F401,F403
from .nn_more import __all__ as _more_all
from .nn_pool import *  # noqa: F401,F403
from .nn_pool import __all__ as _pool_all
from .nn_norm import *  # noqa: F401,F403
from .nn_norm import __all__ as _norm_all
from .nn_pool_nd import *  # noqa: F401,F403
from .nn_pool_nd import __all__ as _pool_nd_all
from .nn_space import *  # noqa: F401,F403
from .nn_space import __all__ as _space_all
from .image import upsampling  # noqa: F401
from .nn_winograd import (contrib_conv2d_winograd_weight_transform,  # noqa: F401
                          contrib_conv2d_winograd_without_weight_transform)

__all__ = (list(_basic_all) + list(_conv_all) + list(_pool_all) + list(_more_all)
           + list(_norm_all) + list(_pool_nd_all) + list(_space_all)
           + ["upsampling", "conv2d_backward_weight", "contrib_conv2d_winograd_weight_transform",
              "contrib_conv2d_winograd_without_weight_transform"])
