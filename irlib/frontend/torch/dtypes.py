"""torch dtypes <-> irlib dtype strings, and torch's type promotion for binary ops."""

from __future__ import annotations

from .errors import TorchOpNotImplemented

_NAMES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
          "float32", "float64", "complex64", "complex128")


def to_irlib(dtype) -> str:
    """The irlib dtype string of a ``torch.dtype`` (or of a dtype string, checked).

    Raises:
        TorchOpNotImplemented: for a torch dtype irlib has no counterpart of.
    """
    import torch
    if isinstance(dtype, str):
        name = dtype
    elif isinstance(dtype, torch.dtype):
        name = str(dtype).replace("torch.", "")
    else:
        raise TorchOpNotImplemented(f"expected a torch dtype, got {dtype!r}")
    if name not in _NAMES:
        raise TorchOpNotImplemented(f"dtype {name} is not supported")
    return name


def to_torch(name: str):
    """The ``torch.dtype`` of irlib dtype string ``name``."""
    import torch
    return getattr(torch, name)


def promote(a: str, b: str) -> str:
    """torch's result dtype of a binary op on tensors of dtypes ``a`` and ``b``."""
    import torch
    if a == b:
        return a
    return to_irlib(torch.promote_types(to_torch(a), to_torch(b)))


def category(name: str) -> int:
    """0 for bool, 1 for integers, 2 for floats, 3 for complex (torch's promotion tiers).

    Args:
        name: the irlib dtype.
    """
    if name == "bool":
        return 0
    if name.startswith(("int", "uint")):
        return 1
    if name.startswith("complex"):
        return 3
    return 2


def scalar_result(tensor_dtype: str, scalar) -> str:
    """torch's result dtype of a tensor of ``tensor_dtype`` combined with Python ``scalar``
    (a scalar only raises the category: int tensor + float scalar is the default float)."""
    kind = 0 if isinstance(scalar, bool) else 2 if isinstance(scalar, float) else 1
    if kind <= category(tensor_dtype):
        return tensor_dtype
    return "float32" if kind == 2 else "int64"
