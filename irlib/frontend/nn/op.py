"""Functional nn ops (Relax's ``nn.op``): each emits irlib op calls and returns nn tensors.

Every op takes nn :class:`~irlib.frontend.nn.Tensor` s and a ``name`` hint (the name of the
variable its result is bound to). Shapes and dtypes are inferred at once (symbolic dims
included); an op applied to tensors it cannot take raises
:class:`~irlib.frontend.nn.errors.OpError` naming the module path and the op. The ops live in
:mod:`._op_tensor` (arithmetic, shapes, creation, indexing) and :mod:`._op_nn` (activations,
normalisation, convolution, attention, resizing); this module gathers them.
"""

from ._op_tensor import *  # noqa: F401,F403
from .effects import debug_func, print_  # noqa: F401

from ._op_nn import *  # noqa: F401,F403
from .extern import extern, tensor_expr_op, tensor_ir_op  # noqa: F401  (custom kernels)
from ._op_ccl import *  # noqa: F401,F403  (collectives: ccl_allreduce, ...)
