"""Errors of the StableHLO importer (both are :class:`irlib.errors.IRError` subclasses).

* :class:`StableHLOOpNotImplemented` (an :class:`irlib.frontend.OpNotImplemented`): the module
  uses operations, custom-call targets or op variants the importer cannot map. Before
  converting anything the importer walks the whole module and lists *every* unsupported
  operation with its MLIR location; ``ops`` holds them as ``[(op_name, location), ...]``.
* :class:`StableHLOConversionError` (an :class:`irlib.frontend.ConversionError`): the text does
  not parse, or a supported operation failed to convert; the message names the operation and
  its location.
"""

from __future__ import annotations

from .. import ConversionError, OpNotImplemented


class StableHLOOpNotImplemented(OpNotImplemented):
    """Operations the StableHLO importer cannot map.

    Args:
        message: what is unsupported (each op name with its location).
        ops: ``[(op_name, location), ...]`` for every unsupported operation found.

    Attributes:
        ops: as given (also available as ``nodes``, the attribute of the base class).
    """

    def __init__(self, message: str, ops=()):
        super().__init__(message, ops)
        self.ops = list(ops)


class StableHLOConversionError(ConversionError):
    """A StableHLO module that does not parse, or a supported operation that failed to
    convert (the message names the operation and its location)."""
