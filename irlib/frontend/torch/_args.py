"""Reading converter arguments: torch calls pass most arguments positionally or by name."""

from __future__ import annotations

from .errors import TorchConversionError

REQUIRED = object()


def arg(args, kwargs, index: int, name: str, default=REQUIRED):
    """Argument ``name`` at position ``index`` of a torch call (keyword first).

    Args:
        args: the call's positional arguments.
        kwargs: its keyword arguments.
        index: the argument's position.
        name: its keyword.
        default: the value when it is absent (the default, ``REQUIRED``, makes it required).

    Raises:
        TorchConversionError: when a required argument is missing.
    """
    if name in kwargs:
        return kwargs[name]
    if index is not None and index < len(args):
        return args[index]
    if default is REQUIRED:
        raise TorchConversionError(f"missing argument {name!r} (position {index})")
    return default


def norm_axis(axis: int, ndim: int) -> int:
    """``axis`` in ``[0, ndim)`` (negative axes count from the end).

    Raises:
        TorchConversionError: when it is out of range.
    """
    axis = int(axis)
    if not -max(ndim, 1) <= axis < max(ndim, 1):
        raise TorchConversionError(f"dim {axis} is out of range for a rank-{ndim} tensor")
    return axis + ndim if axis < 0 else axis


def int_list(value, count: int = None) -> list:
    """``value`` (an int or a sequence of ints) as a list, an int repeated ``count`` times."""
    if isinstance(value, (list, tuple)):
        items = list(value)
        if count is not None and len(items) == 1 and count > 1:
            items = items * count
        return items
    return [value] * (count or 1)


def sizes_from(args) -> list:
    """Sizes given either as varargs (``x.view(2, 3)``) or one sequence (``x.view((2, 3))``).

    Args:
        args: the call's positional arguments after the tensor.
    """
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return list(args[0])
    return list(args)
