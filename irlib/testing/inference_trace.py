"""Watch type inference work: the unifications and op type relations it performs, in order.

A teaching aid (docs/learn.md). Type inference (:mod:`irlib.typeinf`) gives every
expression a type that may contain *holes*, unifies types that must agree
(:class:`~irlib.typeinf.unifier.Unifier`), and runs each op's type relation once its
argument types are known (:class:`~irlib.typeinf.solver.OpRelation`). :func:`trace_inference`
records each of those steps while ``InferType`` runs, with holes named ``?a``, ``?b``, ...
in the order they first appear.

It does so without any hook in the type checker: for the duration of the call it wraps
``Unifier.unify`` and ``OpRelation.try_solve`` (class attributes, restored afterwards), so
the checker's code stays free of tracing. Consequently it is not thread-safe: do not run
type inference in another thread meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.types import IncompleteType, TypeVar
from ..typeinf import solver as _solver
from ..typeinf import unifier as _unifier

__all__ = ["trace_inference", "InferenceStep"]


@dataclass(frozen=True)
class InferenceStep:
    """One step of type inference.

    Attributes:
        kind: ``"unify"`` or ``"relation"``.
        text: the step in words, e.g. ``unify ?a with Tensor[(1, 3), float32]  =>
            Tensor[(1, 3), float32]`` or ``nn.dense(Tensor[(1, 4), float32],
            Tensor[(3, 4), float32]) => Tensor[(1, 3), float32]``.
    """

    kind: str
    text: str

    def __str__(self) -> str:
        return self.text


class _Names:
    """Stable names for holes (by the identity of their union-find root)."""

    def __init__(self):
        self.names: dict = {}

    def show(self, unifier, ty) -> str:
        resolved = unifier.resolve(ty)
        holes = unifier.free_holes(resolved)
        if isinstance(resolved, IncompleteType):
            holes = [unifier.root(resolved)]
        mapping = {}
        for hole in holes:
            key = id(unifier.root(hole))
            if key not in self.names:
                self.names[key] = "?" + _letters(len(self.names))
            mapping[hole] = TypeVar(self.names[key])
        if isinstance(resolved, IncompleteType):
            return mapping[holes[0]].name_hint
        return str(_unifier.substitute(resolved, mapping))


def _letters(index: int) -> str:
    text = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        text = chr(ord("a") + rest) + text
    return text


def trace_inference(mod):
    """Run ``InferType`` on ``mod`` and record its steps.

    Args:
        mod: an :class:`~irlib.ir.module.IRModule` (or an expression: it is wrapped as
            ``main``, as passes do).

    Returns:
        ``(typed module, [InferenceStep, ...])``.
    """
    from ..transform import InferType
    steps: list = []
    names = _Names()
    unify, try_solve = _unifier.Unifier.unify, _solver.OpRelation.try_solve

    def traced_unify(self, lhs, rhs):
        before = f"unify {names.show(self, lhs)} with {names.show(self, rhs)}"
        result = unify(self, lhs, rhs)
        steps.append(InferenceStep("unify", f"{before}  =>  {names.show(self, result)}"))
        return result

    def traced_try_solve(self, ctx):
        settled = try_solve(self, ctx)
        args = ", ".join(names.show(ctx.unifier, t) for t in self.arg_types)
        outcome = names.show(ctx.unifier, self.out) if settled else "(waits for its arguments)"
        steps.append(InferenceStep("relation", f"{self.op_def.name}({args})  =>  {outcome}"))
        return settled

    _unifier.Unifier.unify = traced_unify
    _solver.OpRelation.try_solve = traced_try_solve
    try:
        typed = InferType()(mod)
    finally:
        _unifier.Unifier.unify = unify
        _solver.OpRelation.try_solve = try_solve
    return typed, steps
