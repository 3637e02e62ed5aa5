"""Model importers (Relax's ``relax.frontend``): ONNX and StableHLO.

``irlib.frontend.onnx.from_onnx`` imports an ONNX model and
``irlib.frontend.stablehlo.from_stablehlo`` a JAX program's StableHLO (its errors subclass
the ones below); this package also defines the errors an importer raises:

* :class:`OpNotImplemented` -- the model uses operators (or operator variants) the importer
  cannot map; the message lists every such node at once;
* :class:`ModelFormatError` -- the model is malformed (``onnx.checker``'s message and node);
* :class:`ConversionError` -- a supported node failed to convert (bad shapes, types, ...).

``detach_params(mod)`` takes the weights that a frontend left in its functions' ``params``
attribute out of the module (``irlib/frontend/detach.py``; raises :class:`ParamsAttrError`).
"""

from ..errors import IRError, UnsupportedOpError


class OpNotImplemented(UnsupportedOpError):
    """An importer met operators it cannot map.

    Attributes:
        nodes: ``[(node_name, op_type, opset), ...]`` for every unsupported node.
    """

    def __init__(self, message: str, nodes=()):
        super().__init__(message)
        self.nodes = list(nodes)


class ModelFormatError(IRError, ValueError):
    """The model fails ``onnx.checker`` or is otherwise malformed."""


class ConversionError(IRError):
    """A node of a supported op type could not be converted (names the node)."""


from .detach import ParamsAttrError, detach_params  # noqa: E402  (after the error classes)

__all__ = ["OpNotImplemented", "ModelFormatError", "ConversionError", "ParamsAttrError",
           "detach_params"]
