"""Hypothesis strategy for programs full of repeated and *nearly* repeated computations.

Passes that share work (common-subexpression elimination, memoisation, hash-consing) must
merge computations that are the same and never ones that only look alike. Generated
programs rarely repeat a computation by chance, so :func:`sharing_programs` builds them on
purpose: each step either computes something new, computes an earlier term *again* (a
fresh node with the same op, attributes and operands), or computes a *sibling* of an
earlier term that differs in exactly one thing: the op (``add`` for ``subtract``), an
attribute (``sum`` over another axis), one operand (another variable of the same type) or
a projection index. The result is a tuple of every term, so any wrong merge shows.

Every term has the same rank; each dim is either the base shape's or 1, so any two terms
broadcast. Values stay small and finite (no ``multiply``, no ``exp``). The oracle is numpy
code written here, independent of the op registry.

Example::

    from irlib.testing import sample
    from irlib.testing.sharing_strategies import sharing_programs
    print(sample(sharing_programs(max_steps=6), seed=1))
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ..ir import expr as E
from ..ir.types import TensorType, TupleType
from ..op.registry import make_call
from .strategies import GeneratedProgram

__all__ = ["sharing_programs", "SHARING_STEPS"]

#: What a step may do; ``steps=`` may restrict them.
SHARING_STEPS = ("new", "again", "sibling", "tuple", "bind")

_BINARY = {"add": np.add, "subtract": np.subtract, "maximum": np.maximum,
           "minimum": np.minimum}
_UNARY = {"negative": np.negative, "abs": np.abs, "tanh": np.tanh}
_REDUCE = {"sum": np.sum, "max": np.max, "min": np.min}
_FAMILIES = (_BINARY, _UNARY, _REDUCE)


class _Term:
    """A value of the program: how it is made (``recipe``) and the expression naming it."""

    __slots__ = ("recipe", "expr", "shape", "is_tuple")

    def __init__(self, recipe, expr, shape, is_tuple=False):
        self.recipe, self.expr, self.shape, self.is_tuple = recipe, expr, shape, is_tuple


class _Builder:
    def __init__(self, draw, params, shape, dtype):
        self.draw, self.dtype = draw, dtype
        self.terms = [_Term(("input", i), p, shape) for i, p in enumerate(params)]
        self.bindings: list = []            # (var, value expr)
        self.count = 0

    def pick(self, items):
        return items[self.draw(st.integers(0, len(items) - 1))]

    def tensors(self):
        return [i for i, t in enumerate(self.terms) if not t.is_tuple]

    # -- building a node from a recipe -------------------------------------------------------
    def shape_of(self, recipe):
        kind = recipe[0]
        if kind == "binary":
            a, b = (self.terms[i].shape for i in recipe[2])
            return tuple(max(x, y) for x, y in zip(a, b))
        if kind == "reduce":
            shape = list(self.terms[recipe[2][0]].shape)
            shape[recipe[3]] = 1
            return tuple(shape)
        if kind == "project":
            tuple_term = self.terms[recipe[2][0]]
            return self.terms[tuple_term.recipe[2][recipe[3]]].shape
        return self.terms[recipe[2][0]].shape          # unary

    def node(self, recipe):
        """A fresh expression computing ``recipe`` from the current terms."""
        kind, name, operands = recipe[0], recipe[1], recipe[2]
        args = tuple(self.terms[i].expr for i in operands)
        if kind == "reduce":
            return make_call(name, args, {"axis": (recipe[3],), "keepdims": True})
        if kind == "project":
            return E.TupleGetItem(args[0], recipe[3])
        return make_call(name, args)

    def add(self, recipe):
        self.terms.append(_Term(recipe, self.node(recipe), self.shape_of(recipe)))

    # -- steps -----------------------------------------------------------------------------
    def step_new(self):
        family = self.draw(st.sampled_from(("binary", "unary", "reduce")))
        x = self.pick(self.tensors())
        if family == "binary":
            name = self.draw(st.sampled_from(sorted(_BINARY)))
            return self.add(("binary", name, (x, self.pick(self.tensors()))))
        if family == "unary":
            return self.add(("unary", self.draw(st.sampled_from(sorted(_UNARY))), (x,)))
        axis = self.draw(st.integers(0, len(self.terms[x].shape) - 1))
        return self.add(("reduce", self.draw(st.sampled_from(sorted(_REDUCE))), (x,), axis))

    def made_terms(self):
        return [t for t in self.terms if t.recipe[0] in ("binary", "unary", "reduce",
                                                           "project")]

    def step_again(self):
        made = self.made_terms()
        if not made:
            return self.step_new()
        self.add(self.pick(made).recipe)

    def step_sibling(self):
        made = self.made_terms()
        if not made:
            return self.step_new()
        recipe = list(self.pick(made).recipe)
        kind = recipe[0]
        changes = ["op", "operand"]
        if kind == "project" or (kind == "reduce"
                                 and len(self.terms[recipe[2][0]].shape) > 1):
            changes = ["detail"] * 2 + changes
        if len(self.tensors()) < 2:
            changes.remove("operand")
        what = self.draw(st.sampled_from(changes))
        if kind == "project" or what == "detail":
            if kind == "project":
                fields = len(self.terms[recipe[2][0]].recipe[2])
                recipe[3] = (recipe[3] + 1) % fields
            elif kind == "reduce" and len(self.terms[recipe[2][0]].shape) > 1:
                recipe[3] = (recipe[3] + 1) % len(self.terms[recipe[2][0]].shape)
            else:
                what = "op"
        if what == "op" and kind != "project":
            family = {"binary": _BINARY, "unary": _UNARY, "reduce": _REDUCE}[kind]
            recipe[1] = self.draw(st.sampled_from(sorted(set(family) - {recipe[1]})))
        elif what == "operand" and kind != "project":
            operands = list(recipe[2])
            position = self.draw(st.integers(0, len(operands) - 1))
            operands[position] = self.pick(self.tensors())
            recipe[2] = tuple(operands)
        self.add(tuple(recipe))

    def step_tuple(self):
        first = self.pick(self.tensors())
        others = [i for i in self.tensors() if i != first]
        fields = (first, self.pick(others) if others else first)
        self.count += 1
        var = E.Var(f"t{self.count}")
        self.bindings.append((var, E.Tuple(tuple(self.terms[i].expr for i in fields))))
        self.terms.append(_Term(("tuple", None, fields), var, None, is_tuple=True))
        tuple_index = len(self.terms) - 1
        first_index = self.draw(st.integers(0, 1))
        self.add(("project", None, (tuple_index,), first_index))
        if self.draw(st.booleans()):     # its sibling right away
            self.add(("project", None, (tuple_index,), 1 - first_index))

    def step_bind(self):
        index = self.tensors()[-1]
        term = self.terms[index]
        if isinstance(term.expr, E.Var):
            return self.step_new()
        self.count += 1
        var = E.Var(f"v{self.count}", TensorType(term.shape, self.dtype)
                    if self.draw(st.booleans()) else None)
        self.bindings.append((var, term.expr))
        term.expr = var

    # -- oracle -----------------------------------------------------------------------------
    def compute(self, recipes, inputs):
        values = []
        for recipe in recipes:
            kind = recipe[0]
            if kind == "input":
                values.append(np.asarray(inputs[recipe[1]]))
                continue
            args = [values[i] for i in recipe[2]]
            if kind == "binary":
                value = _BINARY[recipe[1]](*args)
            elif kind == "unary":
                value = _UNARY[recipe[1]](args[0])
            elif kind == "reduce":
                value = _REDUCE[recipe[1]](args[0], axis=recipe[3], keepdims=True)
            elif kind == "tuple":
                value = tuple(args)
            else:
                value = args[0][recipe[3]]
            values.append(value if kind == "tuple" else np.asarray(value, dtype=self.dtype))
        return values


@st.composite
def sharing_programs(draw, max_steps: int = 12, inputs: int = 2, min_rank: int = 2,
                     max_rank: int = 2, max_dim: int = 3,
                     steps: tuple = SHARING_STEPS) -> GeneratedProgram:
    """Strategy for dataflow programs with exact and near repetitions (module docstring).

    Args:
        max_steps: the most steps (each adds a term, a tuple or a let).
        inputs: how many inputs (at least one), all of one float32 shape.
        min_rank, max_rank, max_dim: the inputs' shape has a rank in ``[min_rank,
            max_rank]`` and dims in ``[1, max_dim]``.
        steps: the step kinds to draw from (a subset of :data:`SHARING_STEPS`).

    Returns:
        A strategy of :class:`~irlib.testing.strategies.GeneratedProgram` whose result is
        the tuple of every term computed (inputs excluded).
    """
    unknown = set(steps) - set(SHARING_STEPS)
    if unknown or not steps:
        raise ValueError(f"unknown sharing steps {sorted(unknown)}; choose from "
                         f"{SHARING_STEPS}")
    rank = draw(st.integers(max(1, min_rank), max(1, min_rank, max_rank)))
    shape = tuple(draw(st.integers(1, max_dim)) for _ in range(rank))
    count = max(1, inputs)
    dtype = "float32"
    params = tuple(E.Var(f"x{i}", TensorType(shape, dtype)) for i in range(count))
    builder = _Builder(draw, params, shape, dtype)
    builder.step_new()
    # NOTE: siblings are what catches wrong merges: drawn twice as often as the others.
    weighted = tuple(steps) + (("sibling",) if "sibling" in steps else ())
    for _ in range(draw(st.integers(1, max(1, max_steps)))):
        getattr(builder, "step_" + draw(st.sampled_from(weighted)))()
    results = [i for i in builder.tensors() if i >= count]
    expr = E.Tuple(tuple(builder.terms[i].expr for i in results))
    result_type = TupleType([TensorType(builder.terms[i].shape, dtype) for i in results])
    for var, value in reversed(builder.bindings):
        expr = E.Let(var, value, expr)
    recipes = [t.recipe for t in builder.terms]

    def compute(inputs):
        values = builder.compute(recipes, [inputs[p] for p in params])
        return tuple(values[i] for i in results)
    return GeneratedProgram(expr, params, tuple((-2.0, 2.0) for _ in params), result_type,
                            {expr: result_type}, {}, compute)
