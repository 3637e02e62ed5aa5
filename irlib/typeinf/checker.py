"""Constraint generation: the walk that gives every expression a (possibly partial) type.

:class:`Checker` walks expressions with an explicit stack, never with Python recursion, so a
100,000-deep let chain or call chain is as easy as a short one. Each node gets a type in
``checker.types`` when the walk leaves it; the type may contain holes that later
unifications fill. Rules (Relay's):

=================  ===================================================================
``%x``             its annotation, or a fresh hole (given when the binder is entered)
``@f``             the global's type (polymorphic globals are instantiated at calls)
constant           ``Tensor[shape, dtype]`` of its data
``(a, b)``         ``(ta, tb)``
``t.i``            field ``i`` of ``t``'s tuple type (waits in the solver while unknown)
``f(a, b)``        ``f : fn (ta, tb) -> r`` gives ``r``; a polymorphic ``f`` (a function
                   with type parameters, a constructor) is instantiated with fresh holes,
                   recorded as the call's type arguments
``op(a, b)``       arity checked against the op's ``arg_names``, then the op's type
                   relation, run by the solver once ``ta``, ``tb`` are known
``let``            the variable is bound before its value is checked (letrec); a function
                   value's signature is known before its body is checked
``if``             condition ``bool`` scalar; branches unify, or join when both are known
                   tensors (tuples) of one dtype and rank: differing dims become ``Any``
``fn``             ``fn (params) -> ret``; the body unifies with ``ret``
``match``          patterns constrain the scrutinee (:mod:`.patterns`), clause bodies
                   unify; a complete match is checked for coverage (:mod:`.match_coverage`)
``ref``            ``ref(v)``: ``ref(tv)``; ``ref_read(r)``: ``t`` for ``r : ref(t)``;
                   ``ref_write(r, v)``: ``()``
=================  ===================================================================

Errors are collected (``checker.errors``), never raised from the walk: one bad call does
not hide another.
"""

from __future__ import annotations

from ..errors import UnknownNameError
from ..ir import expr as E
from ..ir.functor import children, pattern_vars
from ..ir.types import FuncType, RefType, TensorType, TupleType, TypeCall
from ..op import registry
from .join import join_types
from .match_coverage import missing_cases
from .patterns import check_pattern
from .reports import ErrorCollector
from .solver import OpRelation, Projection, Solver
from .unifier import IncompleteType, UnificationError, Unifier, fresh_hole, instantiate

_VISIT, _EXIT, _LET_BODY, _PATTERN = range(4)
_BOOL = TensorType((), "bool")


class Checker:
    """Types of expressions, as constraints over holes.

    Args:
        type_definitions: the module's ADTs (GlobalTypeVar -> TypeData).
        global_types: the types of the module's globals (GlobalVar -> Type); the driver
            keeps it up to date.
    """

    def __init__(self, type_definitions: dict, global_types: dict):
        self.type_definitions = type_definitions
        self.global_types = global_types
        self.unifier = Unifier()
        self.solver = Solver()
        self.errors = ErrorCollector()
        self.types: dict = {}
        self.signatures: dict = {}
        self.type_args: dict = {}
        self._constructor_types: dict = {}
        self._bad_patterns: set = set()
        self._constant_types: dict = {}

    # -- entry points ----------------------------------------------------------------------
    def check(self, expr) -> None:
        """Generate (and, where possible, solve) the constraints of ``expr``.

        Args:
            expr: an expression (usually a top-level function); its nodes get entries in
                ``self.types``. Errors go to ``self.errors``.
        """
        types = self.types
        stack = [(_VISIT, expr)]
        while stack:
            action, item = stack.pop()
            if action == _VISIT:
                if item not in types:
                    self._enter(item, stack)
            elif action == _EXIT:
                types[item] = self._EXIT_RULES[type(item)](self, item)
            elif action == _LET_BODY:
                self._bind_let_value(item)
                stack.append((_EXIT, item))
                stack.append((_VISIT, item.body))
            else:
                match, clause = item
                if not check_pattern(self, clause.lhs, types[match.data], match):
                    self._bad_patterns.add(match)

    def solve(self) -> None:
        """Settle every queued constraint; the ones that cannot be settled are reported."""
        self.solver.solve(self)

    def signature(self, func: E.Function) -> FuncType:
        """The type of function ``func`` from its annotations, holes where there are none.

        The parameters get their types here, so callers that need the signature before the
        body is checked (let-bound and global functions) see the same holes as the body.

        Args:
            func: the function.

        Returns:
            Its :class:`FuncType` (the same object on every call).
        """
        sig = self.signatures.get(func)
        if sig is None:
            params = tuple(self._var_type(p) for p in func.params)
            ret = func.ret_type if func.ret_type is not None else fresh_hole()
            sig = FuncType(params, ret, func.type_params)
            self.signatures[func] = sig
        return sig

    def constructor_type(self, ctor: E.Constructor, blame):
        """The polymorphic function type of a constructor.

        Args:
            ctor: the constructor.
            blame: the expression to report a missing ADT definition at.

        Returns:
            ``fn [type_vars](inputs) -> Adt[type_vars]``, or None (reported) if the module
            does not define the constructor's ADT.
        """
        cached = self._constructor_types.get(ctor)
        if cached is not None:
            return cached
        data = self.type_definitions.get(ctor.belong_to)
        adt = getattr(ctor.belong_to, "name_hint", ctor.belong_to)
        if data is None:
            self.errors.add(blame, f"constructor {ctor.name_hint} belongs to type {adt}, "
                                   f"which the module does not define (add its TypeData)")
            return None
        if not any(c is ctor for c in data.constructors):
            self.errors.add(blame, f"constructor {ctor.name_hint} is not one of the "
                                   f"constructors of type {adt} in this module")
            return None
        ctor_type = FuncType(ctor.inputs, TypeCall(ctor.belong_to, data.type_vars),
                             data.type_vars)
        self._constructor_types[ctor] = ctor_type
        return ctor_type

    def constructors_of(self, adt) -> tuple:
        """Every constructor of the ADT named ``adt`` (a GlobalTypeVar)."""
        data = self.type_definitions.get(adt)
        return data.constructors if data is not None else ()

    def unify_or_report(self, expected, actual, node, message: str):
        """Unify two types; on failure report and return None.

        Args:
            expected: the type required by the context.
            actual: the type found.
            node: the expression blamed on failure.
            message: what the failure means (the unifier's detail is appended).

        Returns:
            The merged type, or None after reporting a mismatch.
        """
        try:
            return self.unifier.unify(expected, actual)
        except UnificationError as error:
            self.errors.add(node, f"{message} ({error.detail})",
                            expected=self.unifier.resolve(expected),
                            actual=self.unifier.resolve(actual))
            return None

    def poisoned_hole(self) -> IncompleteType:
        """A hole for the type of an erroneous expression (no follow-on reports)."""
        hole = fresh_hole()
        self.unifier.poison(hole)
        return hole

    # -- the walk --------------------------------------------------------------------------
    def _var_type(self, var: E.Var):
        ty = self.types.get(var)
        if ty is None:
            ty = var.type_annotation if var.type_annotation is not None else fresh_hole()
            self.types[var] = ty
        return ty

    def _enter(self, node, stack) -> None:
        kind = type(node)
        types = self.types
        if kind is E.Var:
            self._var_type(node)
        elif kind is E.Constant:
            types[node] = self._constant_type(node)
        elif kind is E.GlobalVar:
            types[node] = self._global_type(node)
        elif kind is E.Constructor:
            ctor_type = self.constructor_type(node, node)
            types[node] = ctor_type if ctor_type is not None else self.poisoned_hole()
        elif kind is E.Op:
            self.errors.add(node, "an operator can only be called, not used as a value; wrap "
                                  "it in a function (fn (%a, %b) { op(%a, %b) })")
            types[node] = self.poisoned_hole()
        elif kind is E.Let:
            var_type = self._var_type(node.var)
            if type(node.value) is E.Function:
                self.unify_or_report(var_type, self.signature(node.value), node.value,
                                     f"the function bound to %{node.var.name_hint} does not "
                                     f"match the variable's annotation")
            stack.append((_LET_BODY, node))
            stack.append((_VISIT, node.value))
        elif kind is E.Function:
            self.signature(node)
            stack.append((_EXIT, node))
            stack.append((_VISIT, node.body))
        elif kind is E.Match:
            for clause in node.clauses:
                for var in pattern_vars(clause.lhs):
                    self._var_type(var)
            stack.append((_EXIT, node))
            for clause in reversed(node.clauses):
                stack.append((_VISIT, clause.rhs))
                stack.append((_PATTERN, (node, clause)))
            stack.append((_VISIT, node.data))
        elif kind is E.Call:
            stack.append((_EXIT, node))
            for arg in reversed(node.args):
                stack.append((_VISIT, arg))
            if not isinstance(node.op, (E.Op, E.Constructor)):
                stack.append((_VISIT, node.op))
        else:
            stack.append((_EXIT, node))
            for child in reversed(children(node)):
                stack.append((_VISIT, child))

    def _constant_type(self, node: E.Constant) -> TensorType:
        # Programs hold many constants of few types; share the TensorType objects.
        key = (node.data.shape, node.data.dtype)
        ty = self._constant_types.get(key)
        if ty is None:
            ty = self._constant_types[key] = node.tensor_type
        return ty

    def _global_type(self, gvar: E.GlobalVar):
        ty = self.global_types.get(gvar)
        if ty is None:
            self.errors.add(gvar, f"global @{gvar.name_hint} is not defined in the module")
            return self.poisoned_hole()
        return ty

    def _bind_let_value(self, node: E.Let) -> None:
        self.unify_or_report(self.types[node.var], self.types[node.value], node.value,
                             f"the value bound to %{node.var.name_hint} does not match the "
                             f"variable's type")

    # -- rules applied when the walk leaves a node -----------------------------------------
    def _exit_tuple(self, node):
        return TupleType([self.types[f] for f in node.fields])

    def _exit_tuple_get_item(self, node):
        out = fresh_hole()
        self.solver.add(Projection(node, self.types[node.tuple_value], out), self)
        return out

    def _exit_let(self, node):
        return self.types[node.body]

    def _exit_if(self, node):
        self.unify_or_report(_BOOL, self.types[node.cond], node.cond,
                             "the condition of an if must be a bool scalar")
        then_type, else_type = self.types[node.true_branch], self.types[node.false_branch]
        # Known tensor branches whose dims differ join with Any dims (see .join); anything
        # else (holes still to learn, ADTs, functions) unifies as in Relay.
        joined = join_types(self.unifier.resolve(then_type), self.unifier.resolve(else_type))
        if joined is not None:
            return joined
        merged = self.unify_or_report(then_type, else_type, node,
                                      "the branches of the if have different types")
        return then_type if merged is None else merged

    def _exit_function(self, node):
        sig = self.signatures[node]
        self.unify_or_report(sig.ret_type, self.types[node.body], node.body,
                             "the function body does not have the declared return type")
        return sig

    def _exit_ref_create(self, node):
        return RefType(self.types[node.value])

    def _exit_ref_read(self, node):
        value = fresh_hole()
        if self.unify_or_report(RefType(value), self.types[node.ref], node,
                                "ref_read needs a reference") is None:
            self.unifier.poison(value)
        return value

    def _exit_ref_write(self, node):
        self.unify_or_report(RefType(self.types[node.value]), self.types[node.ref], node,
                             "ref_write needs a reference to a value of the written type")
        return TupleType(())

    def _exit_match(self, node):
        result = fresh_hole()
        for clause in node.clauses:
            self.unify_or_report(result, self.types[clause.rhs], clause.rhs,
                                 "the clauses of the match have different types")
        if node.complete and node not in self._bad_patterns:
            missing = missing_cases([c.lhs for c in node.clauses], self.constructors_of)
            if missing:
                self.errors.add(node, "match expression does not handle the following "
                                      "cases: " + ", ".join(missing))
        return result

    def _exit_call(self, node):
        callee = node.op
        if isinstance(callee, E.Op):
            return self._op_call(node)
        if isinstance(callee, E.Constructor):
            callee_type = self.constructor_type(callee, node)
            if callee_type is None:
                return self.poisoned_hole()
        else:
            callee_type = self.unifier.shallow(self.types[callee])
        arg_types = [self.types[a] for a in node.args]
        if isinstance(callee_type, IncompleteType):
            if self.unifier.is_poisoned(callee_type):
                return self.poisoned_hole()
            out = fresh_hole()
            self.unify_or_report(callee_type, FuncType(arg_types, out), node,
                                 "the callee's type does not fit this call")
            return out
        if not isinstance(callee_type, FuncType):
            self.errors.add(node, f"cannot call a value of type "
                                  f"{self.unifier.resolve(callee_type)}")
            return self.poisoned_hole()
        if callee_type.type_params:
            if not isinstance(callee, E.Constructor):
                # Substituting type parameters must see through holes (an inferred ret).
                callee_type = self.unifier.resolve(callee_type)
            callee_type = self._instantiate(node, callee_type)
        if len(arg_types) != len(callee_type.arg_types):
            self.errors.add(node, f"the callee takes {len(callee_type.arg_types)} argument(s) "
                                  f"but the call gives {len(arg_types)}")
            return callee_type.ret_type
        for index, (arg, param_type, arg_type) in enumerate(
                zip(node.args, callee_type.arg_types, arg_types)):
            self.unify_or_report(param_type, arg_type, arg,
                                 f"argument {index} does not have the parameter's type")
        return callee_type.ret_type

    def _instantiate(self, node, callee_type: FuncType) -> FuncType:
        given = node.type_args or None
        if given is not None and len(given) != len(callee_type.type_params):
            self.errors.add(node, f"the call gives {len(given)} type argument(s) but the "
                                  f"callee has {len(callee_type.type_params)} type "
                                  f"parameter(s)")
            given = None
        mono, type_args = instantiate(callee_type, given)
        self.type_args[node] = type_args
        return mono

    def _op_call(self, node):
        name = node.op.name
        try:
            op_def = registry.get_def(name)
        except UnknownNameError as error:
            self.errors.add(node, str(error))
            return self.poisoned_hole()
        if len(node.args) != op_def.num_inputs:
            self.errors.add(node, f"operator {name} takes {op_def.num_inputs} argument(s) "
                                  f"({', '.join(op_def.arg_names)}) but was given "
                                  f"{len(node.args)}")
            return self.poisoned_hole()
        if op_def.type_rel is None:
            self.errors.add(node, f"operator {name} has no type relation registered")
            return self.poisoned_hole()
        out = fresh_hole()
        self.solver.add(OpRelation(node, op_def, [self.types[a] for a in node.args], out), self)
        return out

    _EXIT_RULES = {
        E.Tuple: _exit_tuple, E.TupleGetItem: _exit_tuple_get_item, E.Let: _exit_let,
        E.If: _exit_if, E.Function: _exit_function, E.RefCreate: _exit_ref_create,
        E.RefRead: _exit_ref_read, E.RefWrite: _exit_ref_write, E.Match: _exit_match,
        E.Call: _exit_call,
    }
