"""Imports every op family module so that each registers its ops (in a fixed order)."""

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
from . import nn_convnd  # noqa: F401
from . import nn_norm  # noqa: F401
from . import nn_pool_nd  # noqa: F401
from . import image  # noqa: F401
from . import nn_space  # noqa: F401
from . import annotation  # noqa: F401
from . import arg_type_inference  # noqa: F401
from . import dyn  # noqa: F401  (dynamic-shape ops, added for the ONNX frontend)
from . import device_copy  # noqa: F401  (device_copy, for RewriteAnnotatedOps)
from . import onnx_extra_ops  # noqa: F401  (ONNX-only ops: attention, resize, ...)
from . import onnx_misc_ops  # noqa: F401
from . import nn_conv3d_transpose, onnx_vision_ops, onnx_sampling_ops  # noqa: F401
from . import onnx_signal_ops  # noqa: F401  (STFT, MelWeightMatrix, TensorScatter, AffineGrid)
from . import onnx_text_train_ops  # noqa: F401  (TfIdfVectorizer, ImageDecoder)
from . import onnx_ml_ops  # noqa: F401  (ai.onnx.ml LabelEncoder, TreeEnsemble)
from . import extern_call  # noqa: F401  (call_dps_packed: extern functions, nn custom kernels)
from . import debug_io  # noqa: F401  (debug_io.call: nn's IO effect, print_/debug_func)
from . import ccl  # noqa: F401  (ccl.*: collectives, run on MPI by interp.distributed)


def _name_relation_errors() -> None:
    # Relations shared by many ops (broadcasting, reductions, helpers they call) cannot name
    # the op in their messages; prefix every error with the op's name once, here.
    from .registry import get_def, list_ops
    from .type_relations import named_rel
    for name in list_ops():
        op_def = get_def(name)
        if op_def.type_rel is not None:
            op_def.type_rel = named_rel(name, op_def.type_rel)


_name_relation_errors()
