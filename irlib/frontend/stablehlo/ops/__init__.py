"""The StableHLO converters, one module per family; importing this package registers them."""

from . import bits, control, elementwise, indexing, linalg, reduce, shape, special  # noqa: F401
