"""Tensor ops of the nn builder: arithmetic, comparison, elementwise math, casts, matmul,
sums; and (from :mod:`._op_shape` and :mod:`._op_create`) shapes, indexing and creation.

See :mod:`irlib.frontend.nn.op` for the conventions every op follows: nn tensors in, a
``name`` hint, the result's shape and dtype inferred at once, and
:class:`~irlib.frontend.nn.errors.OpError` (naming the module path) on bad input. Operands
of a binary op must have one dtype (cast one with :func:`astype`); broadcasting follows
numpy.
"""

from __future__ import annotations

from typing import List, Optional, Union

import numpy as np

from ... import op as _op
from ...ir.types import normalize_dtype
from ...op.type_relations import broadcast_shapes
from ...errors import TypeInferenceError
from ._op_common import binary, check_tensor
from ._op_create import empty, fail, full, ones, zeros
from ._op_shape import (broadcast_to, chunk, concat, pad, permute_dims, repeat, reshape,
                        split, squeeze, take, triu, unsqueeze)
from .core import Tensor, wrap_nested

__all__ = [
    # arithmetic and comparison
    "add", "subtract", "multiply", "divide", "maximum", "minimum",
    "less", "less_equal", "greater", "greater_equal", "equal", "not_equal",
    # elementwise math and selection
    "negative", "exp", "sqrt", "square", "tanh", "sigmoid", "where", "astype",
    # products and reductions
    "matmul", "sum",
    # shapes and indexing (._op_shape)
    "reshape", "permute_dims", "broadcast_to", "squeeze", "unsqueeze", "concat", "split",
    "chunk", "pad", "repeat", "take", "triu",
    # creation (._op_create)
    "empty", "zeros", "ones", "full",
]


# -- binary arithmetic ---------------------------------------------------------------------------

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
    """``a / b`` with broadcasting (for integer dtypes irlib's ``divide``, which truncates
    toward zero as Relay's does).

    Args:
        a: the first operand.
        b: the second operand (same dtype).
        name: name hint.
    """
    return binary(_op.divide, a, b, name)


def maximum(x1: Tensor, x2: Tensor, name: str = "maximum") -> Tensor:
    """Elementwise maximum with broadcasting.

    Args:
        x1: the first operand.
        x2: the second operand (same dtype).
        name: name hint.
    """
    return binary(_op.maximum, x1, x2, name)


def minimum(x1: Tensor, x2: Tensor, name: str = "minimum") -> Tensor:
    """Elementwise minimum with broadcasting.

    Args:
        x1: the first operand.
        x2: the second operand (same dtype).
        name: name hint.
    """
    return binary(_op.minimum, x1, x2, name)


# -- comparisons (bool results) --------------------------------------------------------------------

def less(a: Tensor, b: Tensor, name: str = "less") -> Tensor:
    """``a < b`` elementwise with broadcasting; a bool tensor.

    Args:
        a: the first operand.
        b: the second operand (same dtype).
        name: name hint.
    """
    return binary(_op.less, a, b, name)


def less_equal(a: Tensor, b: Tensor, name: str = "less_equal") -> Tensor:
    """``a <= b`` elementwise with broadcasting; a bool tensor.

    Args:
        a: the first operand.
        b: the second operand (same dtype).
        name: name hint.
    """
    return binary(_op.less_equal, a, b, name)


def greater(a: Tensor, b: Tensor, name: str = "greater") -> Tensor:
    """``a > b`` elementwise with broadcasting; a bool tensor.

    Args:
        a: the first operand.
        b: the second operand (same dtype).
        name: name hint.
    """
    return binary(_op.greater, a, b, name)


def greater_equal(a: Tensor, b: Tensor, name: str = "greater_equal") -> Tensor:
    """``a >= b`` elementwise with broadcasting; a bool tensor.

    Args:
        a: the first operand.
        b: the second operand (same dtype).
        name: name hint.
    """
    return binary(_op.greater_equal, a, b, name)


def equal(a: Tensor, b: Tensor, name: str = "equal") -> Tensor:
    """``a == b`` elementwise with broadcasting; a bool tensor.

    Args:
        a: the first operand.
        b: the second operand (same dtype).
        name: name hint.
    """
    return binary(_op.equal, a, b, name)


def not_equal(a: Tensor, b: Tensor, name: str = "not_equal") -> Tensor:
    """``a != b`` elementwise with broadcasting; a bool tensor.

    Args:
        a: the first operand.
        b: the second operand (same dtype).
        name: name hint.
    """
    return binary(_op.not_equal, a, b, name)


# -- unary math ----------------------------------------------------------------------------------

def _unary(builder, x, name: str, float_only: bool) -> Tensor:
    """Emit ``builder(x)`` after checking ``x`` (and that it is float, when required)."""
    x = check_tensor(x, "x", name)
    if float_only and not x.dtype.startswith(("float", "bfloat")):
        raise fail(name, f"needs a float tensor, got dtype {x.dtype} (cast it with astype)")
    return wrap_nested(builder(x._expr), name)


def negative(x: Tensor, name: str = "neg") -> Tensor:
    """``-x`` elementwise.

    Args:
        x: the tensor.
        name: name hint.
    """
    return _unary(_op.negative, x, name, float_only=False)


def exp(x: Tensor, name: str = "exp") -> Tensor:
    """``e ** x`` elementwise (float tensors).

    Args:
        x: the tensor.
        name: name hint.
    """
    return _unary(_op.exp, x, name, float_only=True)


def sqrt(x: Tensor, name: str = "sqrt") -> Tensor:
    """Square root elementwise (float tensors).

    Args:
        x: the tensor.
        name: name hint.
    """
    return _unary(_op.sqrt, x, name, float_only=True)


def square(x: Tensor, name: str = "square") -> Tensor:
    """``x * x`` elementwise.

    Args:
        x: the tensor.
        name: name hint.
    """
    x = check_tensor(x, "x", name)
    return wrap_nested(_op.multiply(x._expr, x._expr), name)


def tanh(x: Tensor, name: str = "tanh") -> Tensor:
    """Hyperbolic tangent elementwise (float tensors).

    Args:
        x: the tensor.
        name: name hint.
    """
    return _unary(_op.tanh, x, name, float_only=True)


def sigmoid(x: Tensor, name: str = "sigmoid") -> Tensor:
    """``1 / (1 + exp(-x))`` elementwise (float tensors).

    Args:
        x: the tensor.
        name: name hint.
    """
    return _unary(_op.sigmoid, x, name, float_only=True)


def where(condition: Tensor, x1: Tensor, x2: Tensor, name: str = "where") -> Tensor:
    """``x1`` where ``condition`` holds, else ``x2`` (all three broadcast together).

    Args:
        condition: a tensor (cast to bool: nonzero is true).
        x1: the values where the condition holds; a Python number becomes a scalar of
            ``x2``'s dtype.
        x2: the values elsewhere (same dtype as ``x1``); a number becomes a scalar of
            ``x1``'s dtype.
        name: name hint.
    """
    condition = check_tensor(condition, "condition", name)
    if isinstance(x1, (bool, int, float)) and isinstance(x2, Tensor):
        x1 = Tensor.from_scalar(x1, x2.dtype)
    if isinstance(x2, (bool, int, float)) and isinstance(x1, Tensor):
        x2 = Tensor.from_scalar(x2, x1.dtype)
    x1 = check_tensor(x1, "x1", name)
    x2 = check_tensor(x2, "x2", name)
    if x1.dtype != x2.dtype:
        raise fail(name, f"x1 and x2 have different dtypes {x1.dtype} and {x2.dtype} (cast "
                         f"one with astype)")
    condition = astype(condition, "bool", name=f"{name}_cond")
    return wrap_nested(_op.where(condition._expr, x1._expr, x2._expr), name)


def astype(x: Tensor, dtype: str, name: str = "astype") -> Tensor:
    """Cast ``x`` to ``dtype`` (``x`` itself when it already has it).

    Args:
        x: the tensor.
        dtype: the target dtype.
        name: name hint.
    """
    x = check_tensor(x, "x", name)
    try:
        dtype = normalize_dtype(dtype)
    except Exception as error:  # noqa: BLE001 - any bad dtype is the caller's mistake
        raise fail(name, f"unknown dtype {dtype!r} ({error})") from None
    if x.dtype == dtype:
        return x
    return wrap_nested(_op.cast(x._expr, dtype), name)


# -- reductions ----------------------------------------------------------------------------------

def sum(x: Tensor, axis: Union[int, List[int], None] = None,  # noqa: A001 - the reference's name
        keepdims: bool = False, name: str = "sum") -> Tensor:
    """Sum of the elements of ``x`` over ``axis``.

    Args:
        x: the tensor.
        axis: an axis, a list of axes (negative counts from the end), or None for all.
        keepdims: keep the reduced axes as size-1 dims.
        name: name hint.
    """
    x = check_tensor(x, "x", name)
    if axis is not None:
        axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
        for a in axes:
            if isinstance(a, bool) or not isinstance(a, (int, np.integer)) or not (
                    -x.ndim <= a < x.ndim):
                raise fail(name, f"axis {axis!r} is out of range for a tensor of rank "
                                 f"{x.ndim}")
        axis = [int(a) for a in axes]
    return wrap_nested(_op.sum(x._expr, axis, bool(keepdims)), name)


# -- matmul --------------------------------------------------------------------------------------

def matmul(a: Tensor, b: Tensor, out_dtype: Optional[str] = None, name: str = "matmul") -> Tensor:
    """Matrix product with broadcasting over batch dims (the array API's ``matmul``).

    A 2-D ``b`` becomes one ``nn.matmul`` (any leading dims of ``a`` fold into rows); other
    batched products become one ``nn.batch_matmul`` over the broadcast batch dims flattened
    into one (a batch of size 1 is not materialised).

    Args:
        a: ``[..., n, k]`` (a 1-D ``[k]`` is a row vector, dropped from the result).
        b: ``[..., k, m]`` (a 1-D ``[k]`` is a column vector, dropped from the result).
        out_dtype: the result dtype; the operands are cast to it before the product (so
            ``int8`` operands with ``out_dtype="int32"`` accumulate in ``int32``). The
            operands' dtype when None.
        name: name hint.
    """
    a = check_tensor(a, "the first argument", name)
    b = check_tensor(b, "the second argument", name)
    if a.dtype != b.dtype:
        raise fail(name, f"operands have different dtypes {a.dtype} and {b.dtype}")
    if a.ndim == 0 or b.ndim == 0:
        raise fail(name, f"matmul needs operands of rank >= 1, got shapes {a.shape} and "
                         f"{b.shape}")
    if out_dtype is not None:
        a = astype(a, out_dtype, name=f"{name}_a")
        b = astype(b, out_dtype, name=f"{name}_b")
    squeeze_axes = []
    if a.ndim == 1:
        a = unsqueeze(a, 0, name=f"{name}_a")
        squeeze_axes.append(-2)
    if b.ndim == 1:
        b = unsqueeze(b, 1, name=f"{name}_b")
        squeeze_axes.append(-1)
    if b.ndim == 2:
        result = wrap_nested(_op.nn.matmul(a._expr, b._expr), name)
    else:
        result = _batched_matmul(a, b, name)
    if squeeze_axes:
        result = squeeze(result, [result.ndim + s for s in squeeze_axes], name=name)
    return result


def _flatten_batch(x: Tensor, batch, name: str) -> Tensor:
    """``x`` (``[*own_batch, r, c]``) as ``[B, r, c]`` for the broadcast ``batch``: kept as
    ``[1, r, c]`` when its own batch is all ones, broadcast first otherwise."""
    own = [1] * (len(batch) - (x.ndim - 2)) + list(x.shape[:-2])
    rows, cols = x.shape[-2:]
    if all(isinstance(d, int) and d == 1 for d in own):
        if x.ndim == 3:
            return x
        return reshape(x, [1, rows, cols], name=name)
    if own != list(batch):
        x = broadcast_to(x, list(batch) + [rows, cols], name=name)
    if x.ndim == 3:
        return x
    total = 1
    for dim in batch:
        total = dim * total
    return reshape(x, [total, rows, cols], name=name)


def _batched_matmul(a: Tensor, b: Tensor, name: str) -> Tensor:
    """``a @ b`` for ``a`` of rank >= 2 and ``b`` of rank >= 3 through ``nn.batch_matmul``."""
    try:
        batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except TypeInferenceError:
        raise fail(name, f"batch dims of shapes {a.shape} and {b.shape} do not "
                         "broadcast") from None
    lhs = _flatten_batch(a, batch, f"{name}_a")
    rhs = _flatten_batch(b, batch, f"{name}_b")
    result = wrap_nested(_op.nn.batch_matmul(lhs._expr, rhs._expr, transpose_b=False), name)
    if len(batch) == 1 and result.shape[0] == batch[0]:
        return result
    return reshape(result, list(batch) + result.shape[-2:], name=name)
