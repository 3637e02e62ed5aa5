"""Hypothesis strategy for programs whose result depends on the *order* of their effects.

:func:`effect_programs` draws a chain of ``let`` bindings over ``int32`` scalar inputs that
creates references, writes them (directly, inside closures called later, and under an
``if``), reads them and computes with the values read. Every write adds to the current
content (``r := add(!r, a)``), so moving a write past a read, dropping a write whose result
is unused, or running a closure's body at the wrong time changes the result, which is a
tuple of every reference's final content and the last value computed. A pass that keeps
such programs' results keeps their effects and their order.

As the other generators, each program carries an independent oracle: a small simulation of
the bindings written next to them in Python (``program.reference(inputs)``); it never calls
the interpreter or the op registry.

Example::

    from irlib.testing import sample
    from irlib.testing.effect_strategies import effect_programs
    program = sample(effect_programs(max_steps=6), seed=1)
    print(program)                     # the program as text, with its input intervals
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ..ir import expr as E
from ..op.registry import make_call
from ..ir.types import FuncType, TensorType, TupleType
from .strategies import GeneratedProgram

__all__ = ["effect_programs", "EFFECT_STEPS"]

_INT = TensorType((), "int32")
_UNIT = TupleType([])
#: The step kinds a program is built from; ``steps=`` may restrict them.
EFFECT_STEPS = ("new_ref", "write", "read", "pure", "closure", "call", "if_write")
_PURE = {"add": np.add, "subtract": np.subtract, "maximum": np.maximum, "minimum": np.minimum}


def _i32(value) -> np.ndarray:
    return np.asarray(value, dtype="int32")


class _Builder:
    """One program under construction: its bindings and their oracle, step by step."""

    def __init__(self, draw, params):
        self.draw = draw
        self.ints = list(params)             # int32 scalar variables in scope
        self.refs: list = []                 # reference variables
        self.closures: list = []             # (function var, ref, addend var)
        self.bindings: list = []             # (var, value expr)
        self.actions: list = []              # oracle: env -> None, one per binding
        self.types: dict = {}
        self.count = 0

    def fresh(self, prefix: str, ty=None) -> E.Var:
        self.count += 1
        var = E.Var(f"{prefix}{self.count}", ty)
        if ty is not None:
            self.types[var] = ty
        return var

    def pick(self, items):
        return items[self.draw(st.integers(0, len(items) - 1))]

    def bind(self, var, value, action, ty):
        self.bindings.append((var, value))
        self.actions.append(action)
        self.types[value] = ty
        self.types[var] = ty

    # -- steps ------------------------------------------------------------------------------
    def new_ref(self):
        init = self.pick(self.ints)
        ref = self.fresh("r")

        def action(env):
            env[ref] = [env[init]]
        self.bind(ref, E.RefCreate(init), action, None)
        self.refs.append(ref)

    def _bump(self, ref, addend):
        """``ref := add(!ref, addend)``."""
        return E.RefWrite(ref, make_call("add", (E.RefRead(ref), addend)))

    def write(self):
        if not self.refs:
            return self.new_ref()
        ref, addend = self.pick(self.refs), self.pick(self.ints)
        unit = self.fresh("u")

        def action(env):
            env[ref][0] = _i32(env[ref][0] + env[addend])
        self.bind(unit, self._bump(ref, addend), action, _UNIT)

    def read(self):
        if not self.refs:
            return self.new_ref()
        ref = self.pick(self.refs)
        value = self.fresh("v", _INT if self.draw(st.booleans()) else None)

        def action(env):
            env[value] = env[ref][0]
        self.bind(value, E.RefRead(ref), action, _INT)
        self.ints.append(value)

    def pure(self):
        name = self.draw(st.sampled_from(sorted(_PURE)))
        lhs, rhs = self.pick(self.ints), self.pick(self.ints)
        value = self.fresh("v")

        def action(env):
            env[value] = _i32(_PURE[name](env[lhs], env[rhs]))
        self.bind(value, make_call(name, (lhs, rhs)), action, _INT)
        self.ints.append(value)

    def closure(self):
        if not self.refs:
            return self.new_ref()
        ref, addend = self.pick(self.refs), self.pick(self.ints)
        unit, fn = self.fresh("u"), self.fresh("bump")
        body = E.Let(unit, self._bump(ref, addend), E.RefRead(ref))
        func = E.Function([], body, _INT)

        def action(env):
            env[fn] = (ref, addend)
        self.bind(fn, func, action, FuncType([], _INT))
        self.closures.append(fn)

    def call(self):
        if not self.closures:
            return self.closure()
        fn = self.pick(self.closures)
        value = self.fresh("v")

        def action(env):
            ref, addend = env[fn]
            env[ref][0] = _i32(env[ref][0] + env[addend])
            env[value] = env[ref][0]
        self.bind(value, E.Call(fn, []), action, _INT)
        self.ints.append(value)

    def if_write(self):
        if not self.refs:
            return self.new_ref()
        lhs, rhs = self.pick(self.ints), self.pick(self.ints)
        ref, addend = self.pick(self.refs), self.pick(self.ints)
        unit = self.fresh("u")
        expr = E.If(make_call("less", (lhs, rhs)), self._bump(ref, addend), E.Tuple(()))

        def action(env):
            if env[lhs] < env[rhs]:
                env[ref][0] = _i32(env[ref][0] + env[addend])
        self.bind(unit, expr, action, _UNIT)

    # -- the whole program -------------------------------------------------------------------
    def finish(self):
        """The let chain ending in ``(!r1, ..., !rn, last)`` and its oracle."""
        fields = [E.RefRead(ref) for ref in self.refs] + [self.ints[-1]]
        result = E.Tuple(tuple(fields))
        expr = result
        for var, value in reversed(self.bindings):
            expr = E.Let(var, value, expr)
        actions, refs, last = list(self.actions), list(self.refs), self.ints[-1]

        def compute(env):
            env = dict(env)
            for action in actions:
                action(env)
            return tuple(_i32(env[ref][0]) for ref in refs) + (_i32(env[last]),)
        result_type = TupleType([_INT] * len(fields))
        self.types[expr] = result_type
        return expr, compute, result_type


@st.composite
def effect_programs(draw, max_steps: int = 8, max_inputs: int = 2,
                    steps: tuple = EFFECT_STEPS) -> GeneratedProgram:
    """Strategy for let chains with references, closures that write them, and ``if`` writes.

    Args:
        max_steps: the most bindings after the first reference (each step adds one).
        max_inputs: the most ``int32`` scalar inputs (at least one), drawn from ``[-5, 5]``.
        steps: the step kinds to use (a subset of :data:`EFFECT_STEPS`); a program always
            starts with one ``ref``.

    Returns:
        A strategy of :class:`~irlib.testing.strategies.GeneratedProgram` (a tuple result;
        ``program.reference(inputs)`` is the oracle).
    """
    unknown = set(steps) - set(EFFECT_STEPS)
    if unknown or not steps:
        raise ValueError(f"unknown effect steps {sorted(unknown)}; choose from {EFFECT_STEPS}")
    count = draw(st.integers(1, max(1, max_inputs)))
    params = tuple(E.Var(f"x{i}", _INT) for i in range(count))
    builder = _Builder(draw, params)
    builder.new_ref()
    for _ in range(draw(st.integers(1, max(1, max_steps)))):
        getattr(builder, draw(st.sampled_from(tuple(steps))))()
    expr, compute, result_type = builder.finish()
    return GeneratedProgram(expr, params, tuple((-5, 5) for _ in params), result_type,
                            builder.types, {}, compute)
