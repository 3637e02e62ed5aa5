"""Constraints that must wait until some types are known: op type relations and projections.

An op's type relation (``type_rel(arg_types, attrs) -> Type``, see
:mod:`irlib.op.registry`) can only run once every argument type is fully known, and the type
of ``t.1`` is only known once ``t`` is known to be a tuple. The checker creates one
constraint per such node and hands it to the :class:`Solver`, which tries it at once (the
common case: arguments are checked before their call) and otherwise queues it. After a
function has been walked, :meth:`Solver.solve` retries the queue, oldest first, until a
round makes no progress; whatever is still pending then is reported as an error.

A constraint's ``try_solve(ctx)`` returns True once it is settled (solved, or failed with a
report) and False while it must keep waiting. ``ctx`` is the checker: it offers ``unifier``
and ``errors`` (an :class:`~irlib.typeinf.reports.ErrorCollector`).
"""

from __future__ import annotations

from ..errors import TypeInferenceError
from ..ir.types import TupleType, Type
from .unifier import IncompleteType, UnificationError


class OpRelation:
    """The result type of an op call is ``type_rel(argument types, attrs)``.

    Args:
        call: the call expression (blamed in reports).
        op_def: the op's registry entry.
        arg_types: the argument types (may contain holes).
        out: the hole standing for the call's type.
    """

    __slots__ = ("call", "op_def", "arg_types", "out")

    def __init__(self, call, op_def, arg_types, out):
        self.call = call
        self.op_def = op_def
        self.arg_types = tuple(arg_types)
        self.out = out

    def try_solve(self, ctx) -> bool:
        """Run the relation if every argument type is known; see the module docstring."""
        unifier = ctx.unifier
        resolved = []
        for ty in self.arg_types:
            if unifier.free_holes(ty):
                return False
            resolved.append(unifier.resolve(ty))
        name = self.op_def.name
        try:
            result = self.op_def.type_rel(resolved, self.call.attrs)
        except TypeInferenceError as error:
            return self._fail(ctx, str(error))
        except (TypeError, ValueError, IndexError, KeyError, AttributeError,
                ArithmeticError) as error:
            return self._fail(ctx, f"the type relation of {name} raised "
                                   f"{type(error).__name__}: {error}")
        if not isinstance(result, Type):
            return self._fail(ctx, f"the type relation of {name} returned {result!r}, "
                                   f"not a type")
        try:
            ctx.unifier.unify(self.out, result)
        except UnificationError as error:
            ctx.errors.add(self.call, f"the result of {name} does not fit where it is used "
                                      f"({error.detail})",
                           expected=unifier.resolve(self.out), actual=result)
        return True

    def _fail(self, ctx, message: str) -> bool:
        arg_text = ", ".join(str(ctx.unifier.resolve(t)) for t in self.arg_types)
        ctx.errors.add(self.call, f"{message} (argument types: {arg_text})")
        _poison_if_hole(ctx, self.out)
        return True

    def report_pending(self, ctx) -> None:
        """Report that the relation never became ready (unless an earlier error caused it)."""
        holes = [h for t in self.arg_types for h in ctx.unifier.free_holes(t)]
        if any(ctx.unifier.is_poisoned(h) for h in holes):
            _poison_if_hole(ctx, self.out)  # so that users of this call stay quiet too
            return
        arg_text = ", ".join(str(ctx.unifier.resolve(t)) for t in self.arg_types)
        ctx.errors.add(self.call, f"cannot infer type of call to {self.op_def.name}: argument "
                                  f"types unknown ({arg_text}); annotate the arguments")
        _poison_if_hole(ctx, self.out)


class Projection:
    """The type of ``tuple_value.index`` is field ``index`` of the tuple's type.

    Args:
        node: the :class:`~irlib.ir.expr.TupleGetItem`.
        tuple_type: the type of ``node.tuple_value``.
        out: the hole standing for the projection's type.
    """

    __slots__ = ("node", "tuple_type", "out")

    def __init__(self, node, tuple_type, out):
        self.node = node
        self.tuple_type = tuple_type
        self.out = out

    def try_solve(self, ctx) -> bool:
        """Project once the tuple's type is known; see the module docstring."""
        tuple_type = ctx.unifier.shallow(self.tuple_type)
        if isinstance(tuple_type, IncompleteType):
            return False
        index = self.node.index
        if not isinstance(tuple_type, TupleType):
            ctx.errors.add(self.node, f"projection .{index} needs a tuple, but the value has "
                                      f"type {ctx.unifier.resolve(tuple_type)}")
            _poison_if_hole(ctx, self.out)
            return True
        if not 0 <= index < len(tuple_type.fields):
            ctx.errors.add(self.node, f"tuple index {index} is out of range for a "
                                      f"{len(tuple_type.fields)}-tuple of type "
                                      f"{ctx.unifier.resolve(tuple_type)}")
            _poison_if_hole(ctx, self.out)
            return True
        try:
            ctx.unifier.unify(self.out, tuple_type.fields[index])
        except UnificationError as error:
            ctx.errors.add(self.node, f"the projected field does not fit where it is used "
                                      f"({error.detail})",
                           expected=ctx.unifier.resolve(self.out),
                           actual=ctx.unifier.resolve(tuple_type.fields[index]))
        return True

    def report_pending(self, ctx) -> None:
        """Report that the tuple's type never became known."""
        if ctx.unifier.is_poisoned(ctx.unifier.shallow(self.tuple_type)):
            _poison_if_hole(ctx, self.out)
            return
        ctx.errors.add(self.node, f"cannot infer the type of projection .{self.node.index}: "
                                  f"the type of the tuple is unknown; annotate it")
        _poison_if_hole(ctx, self.out)


def _poison_if_hole(ctx, ty) -> None:
    target = ctx.unifier.shallow(ty)
    if isinstance(target, IncompleteType):
        ctx.unifier.poison(target)


class Solver:
    """A queue of constraints that could not be settled when they were created."""

    def __init__(self):
        self.pending: list = []

    def add(self, constraint, ctx) -> None:
        """Try ``constraint`` now; queue it if it must wait.

        Args:
            constraint: an :class:`OpRelation` or :class:`Projection`.
            ctx: the checker (see the module docstring).
        """
        if not constraint.try_solve(ctx):
            self.pending.append(constraint)

    def solve(self, ctx) -> None:
        """Retry queued constraints until no progress; report the ones left, and clear.

        Args:
            ctx: the checker (see the module docstring).
        """
        progress = True
        while progress and self.pending:
            still_waiting = []
            for constraint in self.pending:
                if not constraint.try_solve(ctx):
                    still_waiting.append(constraint)
            progress = len(still_waiting) < len(self.pending)
            self.pending = still_waiting
        for constraint in self.pending:
            constraint.report_pending(ctx)
        self.pending = []
