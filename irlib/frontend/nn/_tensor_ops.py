"""Python operators on :class:`~irlib.frontend.nn.Tensor` (``a + b``, ``x * 2``, ``x.reshape``).

Each operator calls the functional op of the same meaning in :mod:`irlib.frontend.nn.op`;
a Python number on either side becomes a scalar constant of the tensor's dtype, as in Relax.
"""

from __future__ import annotations


def _op():
    from . import op    # op imports core, which imports this module
    return op


def _as_tensor(value, like):
    from .core import Tensor
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (bool, int, float)):
        return Tensor.from_scalar(value, dtype=like.dtype)
    return value


class TensorOps:
    """The operator methods of nn tensors."""

    def __add__(self, other):
        return _op().add(self, _as_tensor(other, self))

    def __radd__(self, other):
        return _op().add(_as_tensor(other, self), self)

    def __sub__(self, other):
        return _op().subtract(self, _as_tensor(other, self))

    def __rsub__(self, other):
        return _op().subtract(_as_tensor(other, self), self)

    def __mul__(self, other):
        return _op().multiply(self, _as_tensor(other, self))

    def __rmul__(self, other):
        return _op().multiply(_as_tensor(other, self), self)

    def __truediv__(self, other):
        return _op().divide(self, _as_tensor(other, self))

    def __rtruediv__(self, other):
        return _op().divide(_as_tensor(other, self), self)

    def __matmul__(self, other):
        return _op().matmul(self, other)

    def __neg__(self):
        return _op().negative(self)

    def __lt__(self, other):
        return _op().less(self, _as_tensor(other, self))

    def __le__(self, other):
        return _op().less_equal(self, _as_tensor(other, self))

    def __gt__(self, other):
        return _op().greater(self, _as_tensor(other, self))

    def __ge__(self, other):
        return _op().greater_equal(self, _as_tensor(other, self))

    def astype(self, dtype):
        """``nn.op.astype(self, dtype)``."""
        return _op().astype(self, dtype)

    def maximum(self, other):
        """``nn.op.maximum(self, other)``."""
        return _op().maximum(self, _as_tensor(other, self))

    def minimum(self, other):
        """``nn.op.minimum(self, other)``."""
        return _op().minimum(self, _as_tensor(other, self))

    def reshape(self, *shape):
        """``nn.op.reshape(self, shape)``; the shape as separate arguments or one sequence."""
        if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = shape[0]
        return _op().reshape(self, shape)

    def permute_dims(self, *axes):
        """``nn.op.permute_dims(self, axes)``; the axes as separate arguments or one sequence."""
        if len(axes) == 1 and isinstance(axes[0], (list, tuple)):
            axes = axes[0]
        return _op().permute_dims(self, list(axes) if axes else None)

    def repeat(self, repeats: int, axis=None):
        """``nn.op.repeat(self, repeats, axis)``."""
        return _op().repeat(self, repeats, axis)
