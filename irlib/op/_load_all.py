"""Imports every core op family module so that each registers its ops (in a fixed order).

The frontend namespaces (``dyn.*``, ``onnx.*``) are not here: :mod:`irlib.op.frontend`
registers them when an importer (or a lookup of such a name) loads it.
"""

from . import tensor  # noqa: F401
from . import elemwise  # noqa: F401
from . import reduce  # noqa: F401
from . import transform  # noqa: F401
from . import indexing  # noqa: F401
from . import construct  # noqa: F401
from . import layout  # noqa: F401
from . import nn  # noqa: F401
from . import gather  # noqa: F401
from . import sorting  # noqa: F401
from . import shape_ops  # noqa: F401
from . import nn_conv_grad  # noqa: F401  (gradients of the nn_conv ops)
from . import nn_norm  # noqa: F401
from . import nn_pool_nd  # noqa: F401
from . import image  # noqa: F401
from . import nn_space  # noqa: F401
from . import annotation  # noqa: F401
from . import arg_type_inference  # noqa: F401
from . import device_copy  # noqa: F401  (device_copy, for RewriteAnnotatedOps)
from . import extern_call  # noqa: F401  (call_dps_packed: extern functions, nn custom kernels)
from . import debug_io  # noqa: F401  (debug_io.call: nn's IO effect, print_/debug_func)
from . import ccl  # noqa: F401  (ccl.*: collectives, run on MPI by interp.distributed)


def name_relation_errors(names) -> None:
    """Prefix every type-relation error of the ops ``names`` with the op's name.

    Relations shared by many ops (broadcasting, reductions, helpers they call) cannot name the
    op in their messages; each op's relation is wrapped once (idempotent), after its family
    modules registered it. :mod:`irlib.op.frontend` calls it for its own ops.

    Args:
        names: op names (registered).
    """
    from .registry import get_def
    from .type_relations import named_rel
    for name in names:
        op_def = get_def(name)
        if op_def.type_rel is not None:
            op_def.type_rel = named_rel(name, op_def.type_rel)


def _core_names() -> list:
    from .registry import _REGISTRY
    return list(_REGISTRY)


name_relation_errors(_core_names())
