"""Helpers shared by the tensor-array tests: evaluate text over a Prelude and read the
tensor ADT values back."""

import interp
import irlib
from interp import ConstructorValue, NDArray


def run(prelude, text, *args):
    """Evaluate ``text`` (an expression over the Prelude); call it with ``args`` if given."""
    expr = irlib.parse_expr(text, init_module=prelude.mod)
    result = interp.create_executor("debug", mod=prelude.mod).evaluate(expr)
    return result(*args) if args else result


def tensor(value):
    """A (static or dynamic) tensor ADT value as ``(constructor name, array)``, or ``"nil"``."""
    assert isinstance(value, ConstructorValue), value
    if not value.fields:
        return "nil"
    (data,) = value.fields
    assert isinstance(data, NDArray)
    return value.constructor.name_hint, data.numpy()


def items(value):
    """A Prelude List value as a Python list of :func:`tensor` results."""
    out = []
    while value.constructor.name_hint == "Cons":
        out.append(tensor(value.fields[0]))
        value = value.fields[1]
    assert value.constructor.name_hint == "Nil"
    return out
