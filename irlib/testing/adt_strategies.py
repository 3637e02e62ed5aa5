"""Hypothesis strategies for higher-order programs over the Prelude's ADTs, with an oracle.

:func:`adt_programs` draws well-typed programs over ``int32`` scalars, ``List``, ``Option``,
``Tree`` and ``nat`` (the Prelude's types) using ``let``, ``if``, closures (capturing their
environment, passed to ``@map``, ``@foldl``, ``@filter``, ``@tmap``, ``@compose``), references
(written inside closures), ``match`` (flat, nested and wildcard patterns) and recursion:
let-bound recursive functions (tail-recursive ones and not) and the Prelude's recursive
globals. Every recursion is bounded by the size of its (small) input.

Each drawn :class:`AdtProgram` carries an *independent* oracle: while an expression is
generated, a Python function computing its value is built next to it (lists as tuples,
options as ``None`` / ``("Some", v)``, nats as ints, trees as ``(value, children)``), so
``program.reference(inputs)`` does not use the interpreter or the op registry.

Typical use::

    @settings(max_examples=examples(40), deadline=None)
    @given(program=irst.adt_programs(), data=st.data())
    def test_something(program, data):
        inputs = data.draw(program.inputs_strategy())       # {Var: value}
        result = run(program.module(), program.input_list(inputs))
        assert program.decode(result) == program.reference(inputs)

NOTE: generation recurses in Python, but only ``max_depth`` levels (a small bound the
strategy itself chooses), never over an expression given to it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import numpy as np
from hypothesis import strategies as st

from ..ir import expr as E
from ..ir.module import IRModule
from ..ir.types import FuncType, TensorType, TypeCall
from .runners import Adt, plain

__all__ = ["AdtProgram", "adt_programs", "plain_adt_values", "forms", "prelude_module",
           "KINDS"]

#: The value kinds programs compute with (``fn`` is ``int32 -> int32``).
KINDS = ("int", "bool", "list", "option", "nat", "tree", "fn")
INPUT_KINDS = ("int", "list", "option", "nat", "tree")
_INT = TensorType((), "int32")
_BOOL = TensorType((), "bool")


@functools.lru_cache(maxsize=1)
def _base_module() -> IRModule:
    mod = IRModule()
    mod.import_from_std("prelude.rly")
    mod.import_from_std("nat.rly")
    return mod


def prelude_module() -> IRModule:
    """A fresh module with ``prelude.rly`` and ``nat.rly`` loaded (no tensor arrays)."""
    return _base_module().copy()


class _Names:
    """Types, constructors and globals of the base module by short names."""

    def __init__(self, mod):
        list_t, self.cons, self.nil = mod.get_type("List")
        option_t, self.some, self.none = mod.get_type("Option")
        tree_t, self.rose = mod.get_type("Tree")
        nat_t, self.zero, self.succ = mod.get_type("nat")
        self.types = {"int": _INT, "bool": _BOOL, "list": TypeCall(list_t, [_INT]),
                      "option": TypeCall(option_t, [_INT]), "nat": TypeCall(nat_t, []),
                      "tree": TypeCall(tree_t, [_INT]), "fn": FuncType([_INT], _INT)}
        self.gv = mod.get_global_var


@dataclass(frozen=True, eq=False)
class AdtProgram:
    """A generated ADT program with its inputs and oracle.

    Attributes:
        expr: the expression; its free variables are exactly ``params``.
        params: the input variables (annotated).
        kinds: the kind (see :data:`KINDS`) of each input.
        result_kind: the kind of ``expr``.
    """

    expr: E.Expr
    params: tuple
    kinds: tuple
    result_kind: str
    _compute: Callable

    @property
    def function(self) -> E.Function:
        """``fn (params) { expr }``."""
        return E.Function(self.params, self.expr)

    def module(self) -> IRModule:
        """The Prelude module (without tensor arrays) plus ``main = fn (params) { expr }``."""
        mod = prelude_module()
        mod["main"] = self.function
        return mod

    def inputs_strategy(self):
        """Strategy for inputs: ``{Var: value}`` in plain form (numpy arrays and ``Adt``
        values, see :func:`plain_adt_values`); the executors registered for the test helpers
        take them as they are, and ``interp.plain_values.runtime_value`` converts them for a
        direct call of an executor."""
        names = _Names(_base_module())
        return st.fixed_dictionaries({p: plain_adt_values(kind, names)
                                      for p, kind in zip(self.params, self.kinds)})

    def input_list(self, inputs: dict) -> list:
        """The values of ``inputs`` in ``params`` order."""
        return [inputs[p] for p in self.params]

    def reference(self, inputs: dict):
        """The oracle's result (in the Python form :meth:`decode` gives) on ``inputs``."""
        env = {p: decode(inputs[p], kind) for p, kind in zip(self.params, self.kinds)}
        return self._compute(env)

    def decode(self, value):
        """A result value in the oracle's Python form."""
        return decode(value, self.result_kind)

    def __repr__(self) -> str:
        try:
            text = self.module().astext(show_meta_data=False).split("def @main", 1)[-1]
        except Exception:  # noqa: BLE001 - never hide the failing example behind a printer bug
            text = "<unprintable>"
        return f"AdtProgram(inputs {list(self.kinds)} -> {self.result_kind}) def @main{text}"


# -- values ---------------------------------------------------------------------------------

def plain_adt_values(kind: str, names=None):
    """Strategy for small values of ``kind`` (one of ``INPUT_KINDS``) in plain form.

    Plain form (:mod:`irlib.testing.runners`): an ``int`` is a 0-d ``int32`` numpy array and
    a constructor value is ``Adt(name, fields)``, so no runtime is needed to draw them. The
    runtime's executors registered for the test helpers convert them at their boundary
    (``interp.plain_values.runtime_value``); ``interp.testing.adt_values(kind)`` draws
    the same values as interpreter values.

    Args:
        kind: ``"int"``, ``"list"``, ``"option"``, ``"nat"`` or ``"tree"``.
        names: internal; the constructors to use (the base module's by default).

    Returns:
        A strategy of numpy arrays (``int``) or ``Adt`` values.

    Raises:
        ValueError: for another kind.
    """
    names = names or _Names(_base_module())
    ints = st.integers(-5, 5).map(lambda v: np.array(v, dtype="int32"))

    def adt(ctor, *fields):
        return Adt(ctor.name_hint, tuple(fields))

    def as_list(items):
        value = adt(names.nil)
        for item in reversed(items):
            value = adt(names.cons, item, value)
        return value

    if kind == "int":
        return ints
    if kind == "list":
        return st.lists(ints, max_size=4).map(as_list)
    if kind == "option":
        return st.one_of(st.just(None), ints).map(
            lambda v: adt(names.none) if v is None else adt(names.some, v))
    if kind == "nat":
        def nat(n):
            value = adt(names.zero)
            for _ in range(n):
                value = adt(names.succ, value)
            return value
        return st.integers(0, 5).map(nat)
    if kind == "tree":
        leaves = ints.map(lambda v: adt(names.rose, v, as_list([])))
        return st.recursive(leaves, lambda sub: st.tuples(ints, st.lists(sub, max_size=2)).map(
            lambda pair: adt(names.rose, pair[0], as_list(pair[1]))), max_leaves=4)
    raise ValueError(f"no input values of kind {kind!r}")


def decode(value, kind: str):
    """A value of ``kind`` (a runtime value, or one in plain form) in the oracle's Python
    form (see the module docs)."""
    return _decode_plain(plain(value), kind)


def _decode_plain(value, kind: str):
    if kind in ("int", "bool"):
        return bool(value) if kind == "bool" else int(value)
    if kind == "list":
        items = []
        while value.fields:
            items.append(int(value.fields[0]))
            value = value.fields[1]
        return tuple(items)
    if kind == "option":
        return ("Some", int(value.fields[0])) if value.fields else None
    if kind == "nat":
        count = 0
        while value.fields:
            count, value = count + 1, value.fields[0]
        return count
    if kind == "tree":
        head, children = value.fields
        subtrees = []
        while children.fields:
            subtrees.append(_decode_plain(children.fields[0], "tree"))
            children = children.fields[1]
        return (int(head), tuple(subtrees))
    raise ValueError(f"cannot decode a value of kind {kind!r}")


# -- programs -------------------------------------------------------------------------------

def forms() -> tuple:
    """The names of the expression forms, e.g. ``"int_ref"`` (``<result kind>_<form>``)."""
    from ._adt_forms import AdtGenerator
    return tuple(sorted(name[1:] for name in dir(AdtGenerator)
                        if name.startswith("_") and name[1:].split("_")[0] in KINDS))


@st.composite
def adt_programs(draw, max_depth: int = 3, max_inputs: int = 3,
                 root: str | None = None) -> AdtProgram:
    """Strategy for well-typed higher-order programs over the Prelude's ADTs.

    Args:
        max_depth: how deeply expressions nest (each level is one let, match, call, ...).
        max_inputs: the most input variables (at least one).
        root: if given, the form (one of :func:`forms`) of the whole expression, so a test
            can make sure every form is exercised.

    Returns:
        A strategy of :class:`AdtProgram`; build its module with ``program.module()``.
    """
    from ._adt_forms import AdtGenerator
    names = _Names(_base_module())
    kinds = tuple(draw(st.lists(st.sampled_from(INPUT_KINDS), min_size=1,
                                max_size=max_inputs)))
    params = tuple(E.Var(f"in{i}", names.types[kind]) for i, kind in enumerate(kinds))
    generator = AdtGenerator(draw, names)
    env = tuple(zip(params, kinds))
    depth = draw(st.integers(1, max_depth))
    if root is not None:
        result_kind = root.split("_")[0]
        expr, compute = getattr(generator, "_" + root)(env, depth - 1)
    else:
        result_kind = draw(st.sampled_from(("int", "list", "option", "nat", "tree", "bool")))
        expr, compute = generator.expr(result_kind, env, depth)
    if result_kind == "fn":     # results must be comparable values: apply the function
        function, compute_function = expr, compute
        argument = draw(st.integers(-5, 5))
        expr = E.Call(function, [E.const(argument, "int32")])
        result_kind = "int"

        def compute(values, compute_function=compute_function):
            return compute_function(values)(argument)
    return AdtProgram(expr, params, kinds, result_kind, compute)
