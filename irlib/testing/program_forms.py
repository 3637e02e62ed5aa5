"""Program transformations that give passes more to do, keeping the oracle exact.

:func:`bind_inputs` turns some inputs of a generated program into constants, so that
constant folding has work.

:func:`computed_twice` makes a generated program compute its final expression twice, in
the scope of all its ``let`` bindings, from freshly built nodes. Generated programs rarely
repeat a computation by chance; with this form a pass that shares work (CSE-like) has
something to merge, and one that merges what is only *similar* (different ops, attributes,
indices or variables) is caught. ``check_pass`` uses it for half of its dataflow and
control-flow programs.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..ir import expr as E
from ..ir.types import TupleType
from ..ir.functor import ExprMutator
from ..ir.rewrite import binders, substitute

__all__ = ["computed_twice", "rebuilt_copy", "bind_inputs"]


class _Rebuild(ExprMutator):
    """Copies every call, tuple and projection into a new node; renames binders."""

    def __init__(self, renaming):
        super().__init__()
        self.memo.update(renaming)

    def visit_call(self, node, original):
        return dataclasses.replace(node) if node is original else node

    def visit_tuple(self, node, original):
        return dataclasses.replace(node) if node is original else node

    def visit_tuple_get_item(self, node, original):
        return dataclasses.replace(node) if node is original else node


def rebuilt_copy(expr: E.Expr) -> E.Expr:
    """A copy of ``expr`` made of new call/tuple/projection nodes, with fresh binders.

    The copy uses the same free variables, so it can sit next to ``expr`` in one scope and
    the program stays well formed; no node of it is shared with ``expr`` except variables,
    constants, ops and function-free leaves.
    """
    renaming = {var: E.Var(var.name_hint, var.type_annotation) for var in binders(expr)}
    return _Rebuild(renaming).visit(expr)


def computed_twice(program):
    """``program`` whose final expression ``e`` (inside all the lets) becomes ``(e, e')``.

    Args:
        program: a :class:`~irlib.testing.strategies.GeneratedProgram`.

    Returns:
        A GeneratedProgram with a pair result; its oracle returns the original value twice.
    """
    from .strategies import GeneratedProgram
    spine = []
    node = program.expr
    while type(node) is E.Let:
        spine.append(node)
        node = node.body
    body = E.Tuple((node, rebuilt_copy(node)))
    types = dict(program.types)
    body_type = TupleType([program.result_type, program.result_type])
    types[body] = body_type
    for let in reversed(spine):
        body = let.replace(body=body)
        types[body] = body_type
    compute = program.reference

    def both(inputs):
        value = compute(inputs)
        return (value, value)
    return GeneratedProgram(body, program.params, program.param_bounds, body_type, types,
                            program.global_functions, both)


def bind_inputs(program, values: dict):
    """``program`` with some inputs replaced by constants (as binding weights does).

    A program whose inputs are partly constant has constant subcomputations: constant
    folding and partial evaluation have something to do.

    Args:
        program: a :class:`~irlib.testing.strategies.GeneratedProgram`.
        values: ``{param: numpy array}`` for the inputs to bind (each must be one of
            ``program.params``; values should lie in its ``param_bounds``).

    Returns:
        A GeneratedProgram over the remaining inputs; its oracle is the original one with
        the bound values filled in.
    """
    from .strategies import GeneratedProgram
    unknown = [p for p in values if p not in program.params]
    if unknown:
        raise ValueError(f"bind_inputs: %{unknown[0].name_hint} is not an input of the program")
    constants = {p: E.const(np.asarray(v), dtype=str(np.asarray(v).dtype))
                 for p, v in values.items()}
    expr = substitute(program.expr, constants)
    kept = [(p, b) for p, b in zip(program.params, program.param_bounds) if p not in values]
    types = dict(program.types)
    types[expr] = program.result_type
    compute, bound = program.reference, dict(values)

    def with_bound(inputs):
        return compute({**inputs, **bound})
    return GeneratedProgram(expr, tuple(p for p, _ in kept), tuple(b for _, b in kept),
                            program.result_type, types, program.global_functions, with_bound)
