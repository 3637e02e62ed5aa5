"""Operators: the registry and every op family.

Sub-namespaces: ``irlib.nn``, ``irlib.image`` (``resize2d``, ``grid_sample``) and
``irlib.annotation`` (``on_device``, ``stop_fusion``, ``compiler_begin``, ...).

``irlib.op.get(name)`` returns the interned Op node; builder functions (``irlib.add``,
``irlib.nn.conv2d``) create calls with attributes filled from the op's schema. Only the
builders are star-exported (to the ``irlib`` top level); the registry functions stay under
``irlib.op``.
"""

from .registry import (AttrSchema, OpDef, OpPattern, evaluate, get, get_def, is_registered,
                       list_ops, make_call, register_op)
from . import _load_all  # noqa: F401  (registers every op family)
from . import nn  # noqa: F401
from .construct import *  # noqa: F401,F403
from .construct import __all__ as _construct_all
from .elemwise import *  # noqa: F401,F403
from .elemwise import __all__ as _elemwise_all
from .layout import *  # noqa: F401,F403
from .layout import __all__ as _layout_all
from .reduce import *  # noqa: F401,F403
from .reduce import __all__ as _reduce_all
from .tensor import *  # noqa: F401,F403
from .tensor import __all__ as _tensor_all
from .indexing import *  # noqa: F401,F403
from .indexing import __all__ as _indexing_all
from .transform import *  # noqa: F401,F403
from .transform import __all__ as _transform_all
from .gather import *  # noqa: F401,F403
from .gather import __all__ as _gather_all
from .sorting import *  # noqa: F401,F403
from .sorting import __all__ as _sorting_all
from .shape_ops import *  # noqa: F401,F403
from .shape_ops import __all__ as _shape_ops_all
from . import annotation, image  # noqa: F401  (irlib.annotation.*, irlib.image.*)
from .device_copy import device_copy  # noqa: F401

__all__ = (list(_tensor_all) + list(_elemwise_all) + list(_reduce_all) + list(_transform_all)
           + list(_indexing_all) + list(_construct_all)
           + list(_layout_all) + list(_gather_all) + list(_sorting_all) + list(_shape_ops_all)
           + ["annotation", "image", "device_copy"])
