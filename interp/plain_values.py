"""irlib.testing's *plain* values as interpreter values, and strategies that draw them.

``irlib.testing`` may not import the runtime (the layer rule), so its program strategies
draw inputs in the plain form of :mod:`irlib.testing.runners`: numpy arrays, tuples,
``Adt(name, fields)`` for a constructor value and ``Ref(value)`` for a reference. The
runtime turns them into its own values at its boundary: the executors ``interp`` registers
for the test helpers (``"debug"``, ``"graph"``, ``"python"``) call :func:`runtime_value` on
every argument, and a test that calls an executor directly does the same.

:func:`adt_values` (re-exported by :mod:`interp.testing`) is the strategy of interpreter
values (NDArrays and ConstructorValues) over the Prelude's types.
"""

from __future__ import annotations

import numpy as np

from irlib.ir.module import IRModule
from irlib.testing.runners import Adt, Ref

from .values import ConstructorValue, RefValue, TupleValue, ValueConversionError, as_value

__all__ = ["runtime_value", "adt_values"]


def runtime_value(value, mod: IRModule):
    """``value`` in plain form as an interpreter value (other values pass through).

    ``Adt(name, fields)`` becomes a :class:`~interp.values.ConstructorValue` of ``mod``'s
    constructor called ``name``, ``Ref(v)`` a :class:`~interp.values.RefValue`, a tuple a
    :class:`~interp.values.TupleValue`; numpy arrays and interpreter values are returned
    as they are (executors take numpy arrays). The walk uses an explicit stack, so a long
    list converts without recursion.

    Args:
        value: the plain value.
        mod: the module defining the constructors named in ``value``.

    Raises:
        ValueConversionError: if ``mod`` has no constructor of a name used, or the number of
            fields does not match it.
    """
    if not isinstance(value, (tuple, Ref)):       # Adt is a tuple too
        return value
    # Post-order over an explicit stack: a node is built once its children are.
    built: dict = {}
    stack = [(value, False)]
    while stack:
        node, children_done = stack.pop()
        if not isinstance(node, (tuple, Ref)) or id(node) in built:
            continue
        children = (node.value,) if isinstance(node, Ref) else \
            (node.fields if isinstance(node, Adt) else node)
        if not children_done:
            stack.append((node, True))
            stack.extend((child, False) for child in children)
            continue
        items = [built.get(id(c), c) if isinstance(c, (tuple, Ref)) else c for c in children]
        if isinstance(node, Adt):
            built[id(node)] = _constructor_value(node.name, items, mod)
        elif isinstance(node, Ref):
            built[id(node)] = RefValue(items[0])
        else:
            built[id(node)] = TupleValue(*(as_value(item) for item in items))
    return built[id(value)]


def _constructor_value(name: str, fields: list, mod: IRModule) -> ConstructorValue:
    from irlib.errors import UnknownNameError
    try:
        ctor = mod.lookup_constructor(name)
    except UnknownNameError as error:
        raise ValueConversionError(f"cannot make a {name} value: {error}") from error
    try:
        return ConstructorValue(ctor.tag, fields, ctor)
    except TypeError as error:
        raise ValueConversionError(f"cannot make a {name} value: {error}") from error


def adt_values(kind: str):
    """Strategy for small interpreter values of ``kind`` over the Prelude's types.

    The values are :func:`irlib.testing.adt_strategies.plain_adt_values` made runtime
    values with the constructors of :func:`irlib.testing.adt_strategies.prelude_module`
    (the module every ``AdtProgram.module()`` copies, so the constructors are the same
    objects).

    Args:
        kind: ``"int"``, ``"list"``, ``"option"``, ``"nat"`` or ``"tree"``.

    Returns:
        A strategy of NDArrays (``"int"``) or ConstructorValues.

    Raises:
        ValueError: for another kind.
    """
    from irlib.testing.adt_strategies import plain_adt_values, prelude_module
    mod = prelude_module()
    return plain_adt_values(kind).map(
        lambda value: as_value(value) if isinstance(value, np.ndarray)
        else runtime_value(value, mod))
