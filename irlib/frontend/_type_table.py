"""The type table every importer keeps: the type of each expression it has built.

An importer types each call as it emits it (the op's type relation runs on arguments whose
types are already known), so a converter can ask for the shape or dtype of any value it was
handed. ONNX, PyTorch and StableHLO converters share this part; each importer subclasses
:class:`TypeTable` and names the error its converters raise.
"""

from __future__ import annotations

import numpy as np

from ..errors import IRError
from ..ir import expr as E
from ..ir.types import TensorType


class TypeTable:
    """Types of the expressions an importer has built.

    Subclasses set :attr:`conversion_error`, the documented error raised when a converter
    asks about something that is not a tensor.
    """

    conversion_error = IRError

    def __init__(self):
        self.types: dict = {}

    def type_of(self, expr):
        """The type recorded for ``expr``, or derived from a var's annotation or a
        constant's data.

        Args:
            expr: an expression the importer built.
        """
        ty = self.types.get(expr)
        if ty is not None:
            return ty
        if isinstance(expr, E.Var) and expr.type_annotation is not None:
            return expr.type_annotation
        if isinstance(expr, E.Constant):
            return self.constant_type(expr.data.numpy())
        raise self.conversion_error(f"internal: no type known for {type(expr).__name__}")

    def constant_type(self, array):
        """The type of a constant holding numpy ``array`` (a hook: the ONNX importer types
        string arrays as ``"string"`` tensors).

        Args:
            array: the constant's data.
        """
        return TensorType(array.shape, str(array.dtype))

    def set_type(self, expr, ty):
        """Record ``ty`` as the type of ``expr``; returns ``expr``.

        Args:
            expr: the expression.
            ty: its type.
        """
        self.types[expr] = ty
        return expr

    def shape(self, expr) -> tuple:
        """The shape of tensor ``expr`` (dims may be symbolic or ``Any``)."""
        ty = self.type_of(expr)
        if not isinstance(ty, TensorType):
            raise self.conversion_error(f"expected a tensor, got a value of type {ty}")
        return tuple(ty.shape)

    def static_shape(self, expr):
        """The shape of ``expr`` as ints, or None when some dim is not a known integer."""
        dims = self.shape(expr)
        return tuple(int(d) for d in dims) if all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in dims) else None

    def ndim(self, expr) -> int:
        """The rank of tensor ``expr``."""
        return len(self.shape(expr))

    def dtype(self, expr) -> str:
        """The dtype of tensor ``expr``."""
        return self.type_of(expr).dtype
