"""PartialEvaluate: an online partial evaluator (Relay's ``PartialEvaluate``, pass ``PartialEval``).

Every expression is evaluated to a *partial value*: what is known statically (a constant, a
tuple or constructor value with partial fields, a closure, a reference cell) together with
an atom that computes it in the residual program. Known code runs at compile time: op calls
on constants are folded with the ops' reference implementations, calls of known functions
(closures and globals) are inlined and evaluated, ``if`` and ``match`` on known values pick
their branch, tuple projections and reads of known references are resolved through a static
store. Unknown code is residualised in A-normal form, once, in evaluation order, so effects
are never duplicated or reordered. Branches and function bodies run on a copy of the store;
a call of unknown code, a residual branch or a write through an unknown reference forgets
the store. Writes are residualised too, unless the reference ends up only ever written in
the residual program (every read was resolved): then it and its writes are dropped.

Termination: a function may be inlined inside an active inlining of the *same* function
only if it makes progress (Relay's fuel): each argument has a fuel, its static size plus the
absolute value of a known integer scalar (a known list or nat shrinks, a known counter moves
toward 0, an unknown value has 0), and some argument's fuel must fall below the element-wise
minimum over the active inlinings of that function; else the call is residualised.
Residualising a function body (with unknown parameters) is an activation with fuel 0. So
recursion on known data unrolls, recursion on unknown data stops after one level, and
``@loop(%a, %b) = @loop(%b, %a)`` on known nats unrolls once and stops at the original call.

The result contains dead bindings: follow it with ``DeadCodeElimination(inline_once=True)``.

Before/after (after DCE)::

    fn (%x) { let %f = fn (%d) { add(%d, %d) }; multiply(%f(4f), %x) }
    fn (%x) { multiply(8f, %x) }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import expr as E
from ..ir.functor import ExprMutator, children, post_order
from ..ir.module import IRModule
from ._pe_evaluator import _PartialEvaluator
from ._pe_values import PV, Frame
from ._rewrite import is_primitive
from .pass_infra import ModulePass, is_skipped_function
from .to_a_normal_form import ToANormalForm, to_a_normal_form


# -- write-only references ------------------------------------------------------------------------

def _write_only_refs(expr) -> set:
    """Let-bound references of the residual code that are only ever written: their
    reads were all resolved statically, so the writes cannot be observed."""
    candidates = {n.var for n in post_order(expr)
                  if type(n) is E.Let and type(n.value) is E.RefCreate}
    if not candidates:
        return set()
    escaped = set()
    for node in post_order(expr):
        kind = type(node)
        for index, child in enumerate(children(node)):
            if child not in candidates:
                continue
            if (kind is E.Let and index == 0) or (kind is E.RefWrite and index == 0
                                                   and node.value is not child):
                continue
            escaped.add(child)
    return candidates - escaped


class _DropRefs(ExprMutator):
    def __init__(self, dead):
        super().__init__()
        self.dead = dead
        self.removed: set = set()

    def bind_let(self, let, new_value):
        value = let.value
        if type(value) is E.RefCreate and let.var in self.dead:
            self.removed.add(let)
        elif type(value) is E.RefWrite and value.ref in self.dead:
            self.removed.add(let)
            self.memo[let.var] = E.Tuple(())

    def visit_let(self, node, original):
        return node.body if original in self.removed else node


def _drop_write_only_refs(expr):
    dead = _write_only_refs(expr)
    return _DropRefs(dead).visit(expr) if dead else expr


# -- entry points ---------------------------------------------------------------------------------

def _evaluate_function(func: E.Function, mod, key) -> E.Function:
    if is_primitive(func):
        return func
    evaluator = _PartialEvaluator(mod)
    frame = Frame(evaluator.root)
    params = tuple(E.Var(p.name_hint, p.type_annotation) for p in func.params)
    for old, new in zip(func.params, params):
        frame.env[old] = PV(None, new)
    body = evaluator.run(evaluator.activation(key, (0,) * len(func.params), func.body, frame, fresh_store=True))
    body = _drop_write_only_refs(body)
    return E.Function(params, body, func.ret_type, func.type_params, func.attrs)


def partial_evaluate(expr: E.Expr, mod: IRModule | None = None) -> E.Expr:
    """``expr`` partially evaluated (see the module docstring).

    Args:
        expr: a Function (or any closed expression).
        mod: the module whose globals may be inlined (not mutated).

    Returns:
        The residual expression (with dead bindings; run DeadCodeElimination after).
    """
    if mod is not None:
        mod = ToANormalForm(bind_constants=False)(mod)
    expr = to_a_normal_form(expr)
    if isinstance(expr, E.Function):
        return _evaluate_function(expr, mod, expr)
    return _evaluate_function(E.Function((), expr), mod, expr).body


@dataclass(frozen=True)
class PartialEvaluate(ModulePass):
    """Partially evaluate every function of the module."""

    name: ClassVar[str] = "PartialEval"
    opt_level: ClassVar[int] = 1

    def transform_module(self, mod: IRModule, ctx=None) -> IRModule:
        """The module with every function partially evaluated."""
        anf = ToANormalForm(bind_constants=False)(mod)
        new_mod = mod.copy()
        for gvar, func in anf.items():
            if is_skipped_function(func):
                continue
            new_mod[gvar] = _evaluate_function(func, anf, gvar)
        return new_mod
