"""Errors of the torch importer (both are :class:`irlib.errors.IRError` s).

* :class:`TorchOpNotImplemented` (an :class:`irlib.frontend.OpNotImplemented`): the graph
  calls targets that have no converter, or an unsupported variant of a supported op. Raised
  before anything is converted, its message lists *every* unsupported node with its target;
  ``nodes`` holds ``(node_name, target_name)`` pairs.
* :class:`TorchConversionError` (an :class:`irlib.frontend.ConversionError`): a node of a
  supported op could not be converted (bad shapes, arguments the importer cannot read, ...);
  the message names the node and its target.
"""

from __future__ import annotations

from .. import ConversionError, OpNotImplemented


class TorchOpNotImplemented(OpNotImplemented):
    """A torch graph uses targets (or op variants) the importer cannot convert.

    Attributes:
        nodes: ``[(node_name, target_name), ...]`` for every unsupported node.
    """


class TorchConversionError(ConversionError):
    """A node of a supported torch op failed to convert (the message names the node)."""


def unsupported(message: str):
    """Raise :class:`TorchOpNotImplemented` for an unsupported variant of an op.

    The importer adds the node name and target to the message.
    """
    raise TorchOpNotImplemented(message)
