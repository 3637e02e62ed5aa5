"""The converter table: StableHLO operation name -> one small converter function.

A converter module registers each function with the operation names it handles::

    @converter("stablehlo.add", maps_to="add")
    def _add(ctx, op, inputs, attrs): ...

A converter receives the :class:`~irlib.frontend.stablehlo.importer.Context`, the MLIR
operation (for its result types and regions), the converted operand expressions and the
operation's attributes (``{name: mlir Attribute}``), and returns one expression or a list
(one per result). ``check(op)``, when given, is asked before conversion whether the
operation's variant is supported (it returns None, or a short reason); the importer uses it to
list every unsupported operation up front. ``maps_to`` and ``note`` feed the op table of
docs/stablehlo.md (:func:`irlib.frontend.stablehlo.op_table`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

_CONVERTERS: dict = {}


@dataclass(frozen=True)
class Converter:
    """One registry entry.

    Attributes:
        name: the MLIR operation name (``"stablehlo.dot_general"``).
        function: ``function(ctx, op, inputs, attrs) -> Expr | list``.
        maps_to: the irlib construct it produces (for the docs table).
        note: the variants it supports or refuses (for the docs table).
        check: ``check(op) -> None | str`` (the reason an op variant is unsupported).
    """

    name: str
    function: Callable
    maps_to: str
    note: str = ""
    check: Optional[Callable] = None


def converter(*names: str, maps_to: str, note: str = "", check=None):
    """Decorator registering a converter for each operation name in ``names``.

    Args:
        names: MLIR operation names (``"stablehlo.add"``, ``"chlo.erf"``).
        maps_to: the irlib op(s) or construct it produces.
        note: what variants it supports (one line, for docs/stablehlo.md).
        check: optional ``check(op) -> None | str`` naming an unsupported variant.

    Returns:
        The decorator (it returns the function unchanged).
    """
    def register(function):
        for name in names:
            _CONVERTERS[name] = Converter(name, function, maps_to, note, check)
        return function
    return register


def lookup(name: str) -> Optional[Converter]:
    """The :class:`Converter` of operation ``name``, or None."""
    return _CONVERTERS.get(name)


def supported_ops() -> list:
    """Sorted names of the operations with a converter."""
    return sorted(_CONVERTERS)


def entries() -> list:
    """Every :class:`Converter`, sorted by operation name."""
    return [_CONVERTERS[name] for name in sorted(_CONVERTERS)]
