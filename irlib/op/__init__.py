"""Operators: the registry and every op family.

``irlib.op.get(name)`` returns the interned Op node; builder functions (``irlib.add``,
``irlib.nn.conv2d``) create calls with attributes filled from the op's schema.
"""

from .registry import (AttrSchema, OpDef, OpPattern, evaluate, get, get_def, is_registered,
                       list_ops, make_call, register_op)
from . import _load_all  # noqa: F401  (registers every op family)
from .tensor import *  # noqa: F401,F403
