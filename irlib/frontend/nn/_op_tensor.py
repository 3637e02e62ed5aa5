"""Tensor ops of the nn builder: arithmetic, comparison, casts, shapes, creation, indexing.

See :mod:`irlib.frontend.nn.op` for the conventions every op follows.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

from ... import op as _op
from ...ir import expr as E
from ._builder import current_where
from ._op_common import binary, check_tensor
from .core import Tensor, wrap_nested
from .errors import OpError

__all__ = ["add", "subtract", "multiply", "divide", "matmul", "astype", "reshape",
           "permute_dims"]

def add(a: Tensor, b: Tensor, name: str = "add") -> Tensor:
    """``a + b`` with numpy-style broadcasting.

    Args:
        a: the first operand.
        b: the second operand (same dtype).
        name: name hint.
    """
    return binary(_op.add, a, b, name)


def subtract(a: Tensor, b: Tensor, name: str = "subtract") -> Tensor:
    """``a - b`` with broadcasting.

    Args:
        a: the first operand.
        b: the second operand (same dtype).
        name: name hint.
    """
    return binary(_op.subtract, a, b, name)


def multiply(a: Tensor, b: Tensor, name: str = "mul") -> Tensor:
    """``a * b`` with broadcasting.

    Args:
        a: the first operand.
        b: the second operand (same dtype).
        name: name hint.
    """
    return binary(_op.multiply, a, b, name)


def divide(a: Tensor, b: Tensor, name: str = "divide") -> Tensor:
    """``a / b`` with broadcasting (floor division semantics are not used: for integer
    dtypes this is irlib's ``divide``, truncating as Relay's).

    Args:
        a: the first operand.
        b: the second operand (same dtype).
        name: name hint.
    """
    return binary(_op.divide, a, b, name)


def matmul(a: Tensor, b: Tensor, out_dtype: Optional[str] = None, name: str = "matmul") -> Tensor:
    """Matrix product with broadcasting over batch dims (the array API's ``matmul``).

    Args:
        a: ``[..., n, k]`` (a 1-D ``[k]`` is a row vector, dropped from the result).
        b: ``[..., k, m]`` (a 1-D ``[k]`` is a column vector, dropped from the result).
        out_dtype: the result dtype (the inputs' when None).
        name: name hint.
    """
    a = check_tensor(a, "the first argument", name)
    b = check_tensor(b, "the second argument", name)
    if a.dtype != b.dtype:
        raise OpError(f"{current_where()}: {name}: operands have different dtypes "
                      f"{a.dtype} and {b.dtype}")
    if a.ndim == 0 or b.ndim == 0:
        raise OpError(f"{current_where()}: {name}: matmul needs operands of rank >= 1, got "
                      f"shapes {a.shape} and {b.shape}")
    if b.ndim == 2 and a.ndim >= 2:
        result = wrap_nested(_op.nn.matmul(a._expr, b._expr), name)
    else:
        result = _batched_matmul(a, b, name)
    if out_dtype is not None and out_dtype != result.dtype:
        result = astype(result, out_dtype)
    return result


def _batched_matmul(a: Tensor, b: Tensor, name: str) -> Tensor:
    """matmul through einsum, with 1-D operands promoted and their unit dim dropped."""
    lhs, rhs, squeeze = a._expr, b._expr, []
    if a.ndim == 1:
        lhs = _op.expand_dims(lhs, axis=0)
        squeeze.append(-2)
    if b.ndim == 1:
        rhs = _op.expand_dims(rhs, axis=1)
        squeeze.append(-1)
    result = wrap_nested(_op.einsum(E.Tuple([lhs, rhs]), "...ij,...jk->...ik"), name)
    if squeeze:
        axes = sorted(result.ndim + s for s in squeeze)
        result = wrap_nested(_op.squeeze(result._expr, axis=axes), name)
    return result


def astype(x: Tensor, dtype: str, name: str = "astype") -> Tensor:
    """Cast ``x`` to ``dtype`` (no-op when it already has it).

    Args:
        x: the tensor.
        dtype: the target dtype.
        name: name hint.
    """
    x = check_tensor(x, "x", name)
    if x.dtype == dtype:
        return x
    return wrap_nested(_op.cast(x._expr, dtype), name)


def reshape(x: Tensor, shape: Sequence, name: str = "reshape") -> Tensor:
    """Reshape ``x``; one dim may be -1 (inferred). Symbolic dims are allowed.

    Args:
        x: the tensor.
        shape: the new dims (ints, -1, or symbolic sizes).
        name: name hint.
    """
    x = check_tensor(x, "x", name)
    return wrap_nested(_op.reshape(x._expr, tuple(shape)), name)


def permute_dims(x: Tensor, axes: Optional[List[int]] = None, name: Optional[str] = None) -> Tensor:
    """Permute the dims of ``x`` (reverse them when ``axes`` is None).

    Args:
        x: the tensor.
        axes: the new order of the dims.
        name: name hint (``permute_dims`` when None).
    """
    name = name or "permute_dims"
    x = check_tensor(x, "x", name)
    return wrap_nested(_op.transpose(x._expr, None if axes is None else list(axes)), name)
