"""Creation ops of the nn builder: ``empty``, ``zeros``, ``ones``, ``full``.

A shape argument may mix Python ints, ``str`` names (a symbolic size variable of that name,
the one ``nn.spec.Tensor`` uses for the same name) and symbolic
:class:`~irlib.ir.dims.DimExpr` dims taken from other tensors' ``shape``; symbolic dims stay
symbolic in the result's type and are bound when the exported function is called.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ... import op as _op
from ...ir import expr as E
from ...ir.dims import DimExpr, size_var
from ...ir.types import normalize_dtype
from ._builder import current_where
from .core import Tensor, wrap_nested
from .errors import OpError

__all__ = ["empty", "zeros", "ones", "full"]


def fail(name: str, message: str) -> OpError:
    """An OpError for op ``name`` naming the module path whose code runs now.

    Args:
        name: the op's name hint.
        message: what is wrong.
    """
    return OpError(f"{current_where()}: {name}: {message}")


def shape_arg(shape, name: str, allow_minus_one: bool = False) -> tuple:
    """A shape argument as dims: ints, symbolic ``DimExpr`` s (``str`` names become size
    variables).

    Args:
        shape: a sequence of dims (or one dim).
        name: the op's name hint, for errors.
        allow_minus_one: accept ``-1`` (an inferred dim, for ``reshape``).

    Raises:
        OpError: a dim that is negative (other than an allowed -1) or of another type.
    """
    if isinstance(shape, (int, np.integer, str, DimExpr)):
        shape = (shape,)
    try:
        items = list(shape)
    except TypeError:
        raise fail(name, f"shape must be a sequence of dims, got {shape!r}") from None
    dims = []
    for dim in items:
        if isinstance(dim, str):
            dims.append(size_var(dim))
        elif isinstance(dim, DimExpr):
            dims.append(dim)
        elif isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
            dim = int(dim)
            if dim < 0 and not (allow_minus_one and dim == -1):
                raise fail(name, f"shape {tuple(items)} has a negative dim {dim}")
            dims.append(dim)
        else:
            raise fail(name, f"shape {tuple(items)}: a dim must be an int, a str (a symbolic "
                             f"size) or a symbolic size expression, got {dim!r}")
    return tuple(dims)


def _dtype_arg(dtype, name: str) -> str:
    """``dtype`` normalised, or an OpError naming the op."""
    try:
        return normalize_dtype(dtype)
    except Exception as error:  # noqa: BLE001 - any bad dtype is the caller's mistake
        raise fail(name, f"unknown dtype {dtype!r} ({error})") from None


def zeros(shape: Sequence, dtype: str = "float32", name: str = "zeros") -> Tensor:
    """A tensor of zeros.

    Args:
        shape: the dims (ints, ``str`` size names, symbolic dims).
        dtype: the element dtype.
        name: name hint.
    """
    return wrap_nested(_op.zeros(shape_arg(shape, name), _dtype_arg(dtype, name)), name)


def ones(shape: Sequence, dtype: str = "float32", name: str = "ones") -> Tensor:
    """A tensor of ones.

    Args:
        shape: the dims (ints, ``str`` size names, symbolic dims).
        dtype: the element dtype.
        name: name hint.
    """
    return wrap_nested(_op.ones(shape_arg(shape, name), _dtype_arg(dtype, name)), name)


def empty(shape: Sequence, dtype: str = "float32", name: str = "empty") -> Tensor:
    """A tensor of the given shape and dtype whose values are unspecified.

    Relax allocates it without initialising it; here it is a tensor of zeros (a valid
    choice of unspecified values, and one the fused-kernel generator inlines).

    Args:
        shape: the dims (ints, ``str`` size names, symbolic dims).
        dtype: the element dtype.
        name: name hint.
    """
    return wrap_nested(_op.zeros(shape_arg(shape, name), _dtype_arg(dtype, name)), name)


def full(shape: Sequence, fill_value, dtype: str = "float32", name: str = "full") -> Tensor:
    """A tensor filled with a scalar.

    Args:
        shape: the dims (ints, ``str`` size names, symbolic dims).
        fill_value: a rank-0 nn Tensor (or a Python number).
        dtype: the result dtype (the fill value is cast to it); ``None`` keeps the fill
            value's dtype (the reference's rule when no dtype is given).
        name: name hint.

    Raises:
        OpError: ``fill_value`` is not a scalar.
    """
    dims = shape_arg(shape, name)
    if isinstance(fill_value, (bool, int, float, np.number)):
        value = E.Constant(np.array(fill_value, dtype=_dtype_arg(dtype or "float32", name)))
    elif isinstance(fill_value, Tensor):
        if fill_value.ndim != 0:
            raise fail(name, f"fill_value must be a scalar (rank-0) tensor, got shape "
                             f"{fill_value.shape}")
        value = fill_value._expr
    else:
        raise fail(name, f"fill_value must be an nn.Tensor or a number, got "
                         f"{type(fill_value).__name__}")
    out_dtype = _dtype_arg(dtype, name) if dtype is not None else ""
    return wrap_nested(_op.full(value, dims, out_dtype), name)
