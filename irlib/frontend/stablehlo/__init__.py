"""StableHLO importer (Relax's ``relax.frontend.stablehlo``): JAX programs -> irlib.

``from_stablehlo(text_or_module)`` converts the StableHLO MLIR that
``jax.jit(f).lower(*args).as_text()`` prints (or an ``mlir.ir.Module``) into an
:class:`irlib.IRModule` whose ``main`` takes main's arguments in order. It parses with the
MLIR Python bindings jaxlib ships (install ``irlib[jax]``) and walks operations generically;
each operation is converted by one function of the converter registry
(:mod:`irlib.frontend.stablehlo.registry`; :func:`supported_ops` lists them and
:func:`op_table` renders the table of docs/stablehlo.md).

Errors: :class:`StableHLOOpNotImplemented` (lists every unsupported operation with its MLIR
location) and :class:`StableHLOConversionError` (the text does not parse, bad
``input_info``, or a supported operation failed to convert).
"""

from __future__ import annotations

from . import ops  # noqa: F401  (registers the converters)
from .errors import StableHLOConversionError, StableHLOOpNotImplemented
from .registry import entries, supported_ops

__all__ = ["from_stablehlo", "supported_ops", "op_table", "StableHLOOpNotImplemented",
           "StableHLOConversionError"]


def from_stablehlo(stablehlo_module, input_info=None):
    """Convert a StableHLO module into an :class:`irlib.IRModule` with entry function ``main``.

    Args:
        stablehlo_module: MLIR text (``jax.jit(f).lower(*args).as_text()``, or the text of a
            ``jax.export`` module), the bytes of ``Exported.mlir_module_serialized``, or an
            ``mlir.ir.Module`` parsed in jaxlib's bindings.
        input_info: optional ``[(shape, dtype), ...]``, one per argument of the module's
            ``main``, overriding its argument types. A dim may be an int, a string (a named
            size variable, :func:`irlib.ir.dims.size_var`) or None/-1 (``?``). Without it,
            a dynamic (``?``) dim becomes a size variable, named as ``jax.export`` names it
            (``"b"`` for ``symbolic_shape("b")``) when the module says so, else
            ``arg<i>_d<axis>``.

    Returns:
        The IRModule; ``main``'s parameters are ``arg0, arg1, ...``; it returns one tensor or
        a tuple when the module's main has several results. Private functions are inlined
        at their calls.

    Raises:
        StableHLOOpNotImplemented: the module uses operations (or variants) without a
            converter; the message and ``.ops`` list every one with its location.
        StableHLOConversionError: the text does not parse, ``input_info`` does not fit, or a
            conversion failed (names the operation and its location).
    """
    from .importer import import_module
    return import_module(stablehlo_module, input_info)


def op_table() -> str:
    """The Markdown table of the converter registry (operation, irlib mapping, notes), as
    checked into docs/stablehlo.md between the ``op-table`` markers."""
    lines = ["| StableHLO operation | irlib | supported variants |", "|---|---|---|"]
    for entry in entries():
        note = entry.note.replace("|", "\\|")
        lines.append(f"| `{entry.name}` | {entry.maps_to.replace('|', '/')} | {note} |")
    return "\n".join(lines) + "\n"
