"""Collective ops of the nn builder (Relax's ``nn.ccl_allreduce`` and
``nn.ccl_broadcast_from_worker0``): each emits one call of an :mod:`irlib.op.ccl` op.

In a one-process run they are the identity; in a run started by ``mpiexec -n N`` (with
``interp.distributed``) they move data between the N processes over MPI. See
docs/distributed.md for the tensor-parallel pattern they serve (column-parallel then
row-parallel ``Linear`` with one ``ccl_allreduce``).
"""

from __future__ import annotations

from ...op import ccl as _ccl
from ._op_common import check_tensor
from ._op_nn_util import emit_op, fail
from .core import Tensor

__all__ = ["ccl_allreduce", "ccl_broadcast_from_worker0"]


def ccl_allreduce(x: Tensor, op_type: str = "sum", name="ccl_allreduce") -> Tensor:
    """Reduce ``x`` elementwise over every worker; every worker gets the result.

    Args:
        x: the input tensor (any dtype but bool; the same shape on every worker).
        op_type: ``"sum"``, ``"prod"``, ``"min"``, ``"max"`` or ``"avg"`` (the sum divided
            by the number of workers; truncated toward zero for integer dtypes).
        name: name hint.

    Returns:
        A tensor of ``x``'s shape and dtype.

    Raises:
        OpError: ``x`` is not a tensor, is bool, or ``op_type`` is unknown (names the module
            path).
    """
    x = check_tensor(x, "x", name)
    if op_type not in _ccl.REDUCE_OPS:
        raise fail(name, f"op_type must be one of {list(_ccl.REDUCE_OPS)}, got {op_type!r}")
    return emit_op(lambda: _ccl.allreduce(x._expr, op_type=op_type), name)


def ccl_broadcast_from_worker0(x: Tensor, name="broadcast_from_worker") -> Tensor:
    """Every worker gets worker 0's ``x`` (the other workers' values are replaced).

    Args:
        x: the tensor to broadcast (the same shape on every worker).
        name: name hint.

    Returns:
        A tensor of ``x``'s shape and dtype.

    Raises:
        OpError: ``x`` is not a tensor (names the module path).
    """
    x = check_tensor(x, "x", name)
    return emit_op(lambda: _ccl.broadcast_from_worker0(x._expr), name)
