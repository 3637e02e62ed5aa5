"""The StableHLO converters, one module per family; importing this package registers them.

Every converter and helper here takes ``ctx``, the importer's
:class:`~irlib.frontend.stablehlo.importer.Context` (it emits the irlib calls and knows each
value's type).
"""

from . import bits, control, elementwise, indexing, linalg, reduce, shape, special  # noqa: F401
