"""Generator steps for control flow and functions, mixed into the program generator.

Each step returns a new operand (an :class:`~irlib.testing.generator_core.Entry`) or None when
it cannot apply. Function values are always let-bound (or global), and a step that defines a
function also calls it, so that generated functions are used.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ..ir import expr as E
from ..ir.types import FuncType, TensorType
from ..op import registry
from . import generator_ops as G
from .generator_core import Entry, FnBounds, Scope, as_array, value_of

_COUNTER = TensorType((), "int32")
# Steps of a generated loop: each maps an interval holding 0 into itself, so the loop's
# value interval is known whatever the trip count.
_SHRINKERS = {"multiply": None, "tanh": np.tanh,
              "nn.relu": lambda x: np.maximum(x, 0).astype(x.dtype)}


class ControlSteps:
    """``if``, let-bound closures, higher-order functions and global function calls."""

    def same_type_variant(self, scope: Scope, target: Entry) -> Entry:
        """An operand of exactly ``target``'s type computed from it (or ``target`` itself).

        Args:
            scope: the scope the operand is made in.
            target: the operand whose type it has.
        """
        choice = self.draw(st.integers(0, 2))
        made = None
        if choice == 1:
            made = self.apply_unary(target)
        elif choice == 2:
            partners = [e for e in scope.tensors(numeric=True) if e.ty.dtype == target.ty.dtype
                        and G.broadcast(target.ty.shape, e.ty.shape) == target.ty.shape]
            made = self.apply_binary(target, self.choose(partners), same_type_only=True)
        return made or target

    def apply_function(self, function: Entry, args) -> Entry:
        """A call of a function-typed operand on ``args``."""
        node = E.Call(function.expr, tuple(a.expr for a in args))
        return self.entry(node, function.ty.ret_type, function.bounds.ret_bounds,
                          lambda env: value_of(function, env)(*[value_of(a, env)
                                                                 for a in args]))

    def make_function(self, scope: Scope, param_types, param_bounds, captures: bool = True,
                      first_step=None) -> Entry:
        """A function value: parameters, a body grown in a child scope, an oracle closure.

        Args:
            scope: where the function is defined (its operands may be captured).
            param_types: the parameter types (every parameter is annotated).
            param_bounds: the value intervals the parameters are assumed to lie in.
            captures: whether the body may use the operands of ``scope``.
            first_step: ``(child_scope, param_entries) -> Entry`` building the first body
                node; by default an op applied to the first parameter.
        """
        params = tuple(E.Var(self.fresh("p"), ty) for ty in param_types)
        param_entries = [self.var_entry(p, ty, b)
                         for p, ty, b in zip(params, param_types, param_bounds)]
        visible = (list(scope.entries) if captures else []) + param_entries
        child = Scope(visible, scope.depth + 1)
        first_local = len(child.entries)
        made = first_step(child, param_entries) if first_step else None
        if made is None:
            first = param_entries[0]
            made = self.same_type_variant(child, first)
        child.entries.append(self.maybe_bind(child, made))
        self.grow(child, self.draw(st.integers(0, 1)))
        result = self.pick_result(child, first_local)
        body, body_compute = self.finish(child, result)
        ret_type = result.ty if self.flag() else None
        node = E.Function(params, body, ret_type=ret_type)
        fty = FuncType(tuple(param_types), result.ty)

        def compute(env):
            def closure(*args):
                inner = dict(env)
                for param, arg in zip(params, args):
                    inner[param] = arg
                return body_compute(inner)
            return closure
        return self.entry(node, fty, FnBounds(tuple(param_bounds), result.bounds), compute)

    # -- steps -------------------------------------------------------------------------------
    def step_if(self, scope: Scope):
        """An ``if`` on a drawn condition whose branches compute operands of one drawn operand's
        type, each in a child scope; None when no condition or operand is visible.

        Args:
            scope: the current scope.
        """
        cond = self._condition(scope)
        targets = scope.tensors(numeric=True)
        if cond is None or not targets:
            return None
        target = self.choose(targets)
        branches = []
        for _ in range(2):
            child = Scope(scope.entries, scope.depth + 1)
            made = self.maybe_bind(child, self.same_type_variant(child, target))
            branches.append((self.finish(child, made), made.bounds))
        (true_expr, true_compute), true_bounds = branches[0]
        (false_expr, false_compute), false_bounds = branches[1]

        def compute(env):
            return true_compute(env) if bool(value_of(cond, env)) else false_compute(env)
        return self.entry(E.If(cond.expr, true_expr, false_expr), target.ty,
                          G.union(true_bounds, false_bounds), compute)

    def _condition(self, scope: Scope):
        bools = [e for e in scope.tensors(numeric=False) if e.ty.shape == ()]
        scalars = [e for e in scope.tensors(numeric=True) if e.ty.shape == ()]
        if bools and (not scalars or self.flag()):
            return self.choose(bools)
        names = [n for n in ("less", "greater") if self.usable(n)]
        if not scalars or not names:
            return None
        lhs = self.choose(scalars)
        partners = [e for e in scalars if e.ty.dtype == lhs.ty.dtype]
        # A constant inside lhs's interval makes both branches likely across inputs.
        rhs = self.choose(partners) if self.flag() else self.make_constant((), lhs.bounds)
        name = self.choose(names)
        op = G.BINARY[[b.name for b in G.BINARY].index(name)]
        return self.entry(registry.make_call(name, (lhs.expr, rhs.expr)),
                          TensorType((), "bool"), (0.0, 1.0),
                          lambda env: op.numpy_fn(value_of(lhs, env), value_of(rhs, env)))

    def _function_of_an_operand(self, scope: Scope, captures: bool):
        """``(operand, function)``: a drawn visible numeric operand and a generated function of
        one parameter of its type and interval; None when no numeric operand is visible."""
        args = scope.tensors(numeric=True)
        if not args:
            return None
        arg = self.choose(args)
        return arg, self.make_function(scope, [arg.ty], [arg.bounds], captures=captures)

    def step_lambda(self, scope: Scope):
        """A let-bound closure of one tensor parameter (it may capture the operands of
        ``scope``, the current scope), applied to a visible operand; None when there is none."""
        made = self._function_of_an_operand(scope, captures=True)
        if made is None:
            return None
        arg, function = made
        bound = self.maybe_bind(scope, function, force=True)
        scope.entries.append(bound)
        return self.apply_function(bound, [arg])

    def step_higher_order(self, scope: Scope):
        """A function that takes a visible one-argument function as a parameter and calls it,
        applied to that function and an operand it accepts; None when there is no such pair.

        Args:
            scope: the current scope.
        """
        functions = [e for e in scope.entries if isinstance(e.ty, FuncType)
                     and len(e.ty.arg_types) == 1 and isinstance(e.ty.arg_types[0], TensorType)]
        if not functions:
            return None
        function = self.choose(functions)
        arg_type, arg_bounds = function.ty.arg_types[0], function.bounds.arg_bounds[0]
        args = [e for e in scope.tensors() if e.ty == arg_type
                and G.contains(arg_bounds, e.bounds)]
        if not args:
            return None
        arg = self.choose(args)

        def call_parameter(child, param_entries):
            callee, value = param_entries
            return self.apply_function(callee, [value])
        # fn (h: fn(T) -> U, y: T) { ... h(y) ... }
        applier = self.make_function(scope, [function.ty, arg_type],
                                     [function.bounds, arg_bounds], first_step=call_parameter)
        bound = self.maybe_bind(scope, applier, force=True)
        scope.entries.append(bound)
        return self.apply_function(bound, [function, arg])

    def step_global(self, scope: Scope):
        """A new global function of one tensor parameter (no captures), called on an operand
        visible in ``scope`` (the current scope); None when there is none."""
        made = self._function_of_an_operand(scope, captures=False)
        if made is None:
            return None
        arg, function = made
        gvar = E.GlobalVar(self.fresh("g"))
        self.globals[gvar] = function.expr
        closure = value_of(function, {})
        global_entry = self.entry(gvar, function.ty, function.bounds, lambda env: closure)
        return self.apply_function(global_entry, [arg])

    def step_loop(self, scope: Scope):
        """``let %loop = fn (%i: int32, %acc: T) -> T { if (%i < 1) { %acc } else
        { %loop(%i - 1, shrink(%acc)) } }; %loop(n, init)``: a recursive let.

        Args:
            scope: the current scope.
        """
        shrinkers = [n for n in _SHRINKERS if self.usable(n)]
        operands = scope.tensors(numeric=True)
        if not (self.is_float and operands and shrinkers and self.usable("less")
                and self.usable("subtract")):
            return None
        init = self.choose(operands)
        ty, dtype = init.ty, init.ty.dtype
        bounds = (min(init.bounds[0], 0.0), max(init.bounds[1], 0.0))
        counter, acc = E.Var(self.fresh("i"), _COUNTER), E.Var(self.fresh("acc"), ty)
        loop_type = FuncType([_COUNTER, ty], ty)
        loop = E.Var(self.fresh("loop"), loop_type if self.flag() else None)
        name = self.choose(shrinkers)
        if name == "multiply":
            factor = self.draw(st.sampled_from((0.5, 0.75, 1.0)))
            step = registry.make_call(name, (acc, E.const(np.array(factor, dtype), dtype)))
            self.types[step.args[1]] = TensorType((), dtype)
            shrink = (lambda x: x * np.asarray(factor, dtype))
        else:
            step = registry.make_call(name, (acc,))
            shrink = _SHRINKERS[name]
        one = E.const(1, "int32")
        condition = registry.make_call("less", (counter, one))
        decrement = registry.make_call("subtract", (counter, one))
        recurse = E.Call(loop, (decrement, step))
        body = E.If(condition, acc, recurse)
        function = E.Function((counter, acc), body, ret_type=ty)
        count = self.draw(st.integers(0, 3))
        start = E.const(count, "int32")
        node = E.Let(loop, function, E.Call(loop, (start, init.expr)))
        for part, part_type in ((counter, _COUNTER), (acc, ty), (loop, loop_type),
                                (one, _COUNTER), (condition, TensorType((), "bool")),
                                (decrement, _COUNTER), (step, ty), (recurse, ty), (body, ty),
                                (function, loop_type), (start, _COUNTER), (node.body, ty)):
            self.types[part] = part_type

        def compute(env):
            value = value_of(init, env)
            for _ in range(count):
                value = as_array(shrink(value), dtype)
            return value
        return self.entry(node, ty, bounds, compute)
