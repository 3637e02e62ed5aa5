"""Resource limits: the largest tensor irlib will materialise at import or compile time.

The ONNX importer (ConstantOfShape, Range, Expand, Tile and every op it folds) and
FoldConstant compute some tensors with numpy before any program runs. A hostile or mistaken
model (``Range(0, 1e12)``, ``ConstantOfShape([1e6, 1e6])``) would make numpy allocate
terabytes or raise a bare ``MemoryError``; instead, the result's size is checked against a
limit *before* numpy allocates, and :class:`TensorTooLargeError` names the node and the size.

The limit, in bytes, is the first of:

1. the ``PassContext`` option ``"irlib.max_tensor_bytes"``
   (``with irlib.transform.PassContext(config={"irlib.max_tensor_bytes": 2**34}): ...``);
2. the environment variable ``IRLIB_MAX_TENSOR_BYTES``;
3. :data:`DEFAULT_MAX_TENSOR_BYTES` (4 GiB).

Symbolic or unknown dims are not checked here (their size is known only at run time).
"""

from __future__ import annotations

import os

import numpy as np

from .errors import TensorTooLargeError

CONFIG_KEY = "irlib.max_tensor_bytes"
ENV_VAR = "IRLIB_MAX_TENSOR_BYTES"
DEFAULT_MAX_TENSOR_BYTES = 4 * 2 ** 30


def max_tensor_bytes() -> int:
    """The current limit in bytes (PassContext option, else env var, else the default).

    Raises:
        IRError: when the setting is not a non-negative integer (names the setting).
    """
    from .transform.pass_infra import PassContext
    value = PassContext.current().config.get(CONFIG_KEY)
    source = f"PassContext option {CONFIG_KEY!r}"
    if value is None:
        value = os.environ.get(ENV_VAR)
        source = f"environment variable {ENV_VAR}"
    if value is None:
        return DEFAULT_MAX_TENSOR_BYTES
    try:
        limit = int(value)
    except (TypeError, ValueError):
        limit = -1
    if limit < 0:
        from .errors import IRError
        raise IRError(f"{source} must be a non-negative integer number of bytes, got {value!r}")
    return limit


def tensor_bytes(shape, dtype) -> int | None:
    """Bytes of a dense tensor of ``shape`` and ``dtype``; None when a dim is not an int."""
    count = 1
    for dim in shape:
        if not isinstance(dim, (int, np.integer)):
            return None
        count *= max(int(dim), 0)
    try:
        itemsize = np.dtype(dtype).itemsize if dtype != "string" else 8
    except TypeError:
        itemsize = 1
    return count * max(itemsize, 1)


def check_tensor_size(shape, dtype, where: str) -> None:
    """Raise before allocating a tensor of ``shape``/``dtype`` over :func:`max_tensor_bytes`.

    Args:
        shape: the dims (ints; a tensor with a symbolic or unknown dim passes).
        dtype: the element type.
        where: what would make it (a node or op name) for the message.

    Raises:
        TensorTooLargeError: naming ``where``, the shape, the byte count and the limit.
    """
    size = tensor_bytes(shape, dtype)
    if size is None:
        return
    limit = max_tensor_bytes()
    if size > limit:
        dims = ", ".join(str(int(d)) for d in shape)
        raise TensorTooLargeError(
            f"{where} would materialise a tensor of shape ({dims}) and dtype {dtype}: "
            f"{size} bytes, over the limit of {limit} bytes (raise it with the PassContext "
            f"option {CONFIG_KEY!r} or the environment variable {ENV_VAR})",
            size=size, limit=limit)


def check_type_size(ty, where: str) -> None:
    """:func:`check_tensor_size` for every tensor in type ``ty`` (tuples walked iteratively)."""
    from .ir.types import TensorType, TupleType
    stack = [ty]
    while stack:
        item = stack.pop()
        if isinstance(item, TensorType):
            check_tensor_size(item.shape, item.dtype, where)
        elif isinstance(item, TupleType):
            stack.extend(item.fields)
