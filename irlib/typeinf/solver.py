"""Constraints that must wait until some types are known: op type relations and projections.

An op's type relation (``type_rel(arg_types, attrs) -> Type``, see
:mod:`irlib.op.registry`) can only run once every argument type is fully known, and the type
of ``t.1`` is only known once ``t`` is known to be a tuple. The checker creates one
constraint per such node and hands it to the :class:`Solver`, which tries it at once (the
common case: arguments are checked before their call) and otherwise queues it. After a
function has been walked, :meth:`Solver.solve` retries the queue, oldest first, until a
round makes no progress; whatever is still pending then is reported as an error.

An op with an argument-type hook (``arg_types_rel``, see
:meth:`~irlib.op.registry.OpDef.def_arg_types`) does not wait for every argument: while some
are unknown, the hook is asked for their types from the known ones and the attrs (Relay's
relations assign the type of an unannotated ``nn.conv2d`` weight this way); its proposals are
unified with the unknown arguments' types, and the relation then runs as usual.

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
        """Run the relation once every argument type is known, asking the op's argument-type
        hook (if any) for the unknown ones first; see the module docstring."""
        unifier = ctx.unifier
        unknown = [i for i, ty in enumerate(self.arg_types) if unifier.free_holes(ty)]
        if unknown:
            if self.op_def.arg_types_rel is None or self._any_poisoned(ctx, unknown):
                return False
            settled = self._propose(ctx, unknown)
            if settled or any(unifier.free_holes(self.arg_types[i]) for i in unknown):
                return settled
        resolved = [unifier.resolve(ty) for ty in self.arg_types]
        name = self.op_def.name
        try:
            result = self.op_def.type_rel(resolved, self.call.attrs)
        except _RELATION_ERRORS as error:
            return self._fail(ctx, _relation_message(error, f"the type relation of {name}"))
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

    def _any_poisoned(self, ctx, indices: list) -> bool:
        # An erroneous argument gets no proposal; report_pending then stays quiet about it.
        unifier = ctx.unifier
        return any(unifier.is_poisoned(hole) for i in indices
                   for hole in unifier.free_holes(self.arg_types[i]))

    def _propose(self, ctx, unknown: list) -> bool:
        """Unify the hook's proposed types with the unknown arguments' types.

        Returns:
            True if the constraint failed (reported), False otherwise (whether or not the
            hook could propose anything).
        """
        unifier = ctx.unifier
        partial = [None if i in unknown else unifier.resolve(ty)
                   for i, ty in enumerate(self.arg_types)]
        name = self.op_def.name
        try:
            proposals = self.op_def.arg_types_rel(partial, self.call.attrs)
        except _RELATION_ERRORS as error:
            return self._fail(ctx, _relation_message(error, f"the argument-type rule of {name}"))
        if proposals is None:
            return False
        if len(proposals) != len(self.arg_types):
            return self._fail(ctx, f"the argument-type rule of {name} returned "
                                   f"{len(proposals)} entries for {len(self.arg_types)} "
                                   f"arguments")
        for index in unknown:
            proposal = proposals[index]
            if proposal is None:
                continue
            if not isinstance(proposal, Type):
                return self._fail(ctx, f"the argument-type rule of {name} returned "
                                       f"{proposal!r} for argument {index}, not a type")
            try:
                unifier.unify(self.arg_types[index], proposal)
            except UnificationError as error:
                arg_name = self.op_def.arg_names[index]
                ctx.errors.add(self.call.args[index],
                               f"{name}: the attrs and the other arguments give {arg_name} "
                               f"the type {proposal}, which does not fit this argument "
                               f"({error.detail})",
                               expected=proposal, actual=unifier.resolve(self.arg_types[index]))
                _poison_if_hole(ctx, self.out)
                return True
        return False

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
        name = self.op_def.name
        if self.op_def.arg_types_rel is None:
            ctx.errors.add(self.call, f"cannot infer type of call to {name}: argument types "
                                      f"unknown ({arg_text}); annotate the arguments")
        else:
            ctx.errors.add(self.call, self._derivation_hint(ctx, arg_text))
        _poison_if_hole(ctx, self.out)

    def _derivation_hint(self, ctx, arg_text: str) -> str:
        names = [n for n, t in zip(self.op_def.arg_names, self.arg_types)
                 if ctx.unifier.free_holes(t)]
        attrs = self.call.attrs
        missing = [k for k in self.op_def.arg_types_attrs
                   if attrs is None or attrs.get(k) is None]
        which, pronoun = ("argument", "it") if len(names) == 1 else ("arguments", "them")
        message = (f"cannot infer type of call to {self.op_def.name}: the type of {which} "
                   f"{', '.join(names)} is unknown and cannot be derived from the other "
                   f"arguments and the attrs (argument types: {arg_text}); annotate "
                   f"{pronoun}")
        if missing:
            message += (f", or set the attribute(s) {', '.join(missing)} that "
                        f"{self.op_def.name} needs to derive {pronoun}")
        return message


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


_RELATION_ERRORS = (TypeInferenceError, TypeError, ValueError, IndexError, KeyError,
                    AttributeError, ArithmeticError)


def _relation_message(error: Exception, what: str) -> str:
    if isinstance(error, TypeInferenceError):
        return str(error)
    return f"{what} raised {type(error).__name__}: {error}"


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
