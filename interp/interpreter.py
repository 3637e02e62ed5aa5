"""The ADT-aware reference interpreter: a flat loop over an explicit continuation stack.

Every expression kind of the IR evaluates here: globals (and mutual recursion between them),
closures capturing their environment, let-bound recursive closures (letrec), references with
aliasing, ``match`` with nested patterns, ``if``, op calls through the op registry's numpy
reference implementations, and ADT values built and taken apart (constructors are also
first-class function values).

NOTE: [No recursion limit] Each node kind has one ``eval_<kind>`` method. Leaves (variables,
constants, globals, functions, ops, constructors) return their value at once. Compound nodes
are *generators*: they ``yield`` a sub-expression and receive its value, so they read like a
recursive interpreter, but the driver (:meth:`Interpreter.run`) keeps the pending generators
on a list, not on Python's call stack. A generator may finish with a :class:`Tail` (an
expression and the frame to evaluate it in) instead of a value; the driver then drops the
generator before evaluating that expression. Let bodies, ``if`` branches, match arms and
function bodies are all tail positions, so a 100,000-long let chain or a tail-recursive loop
runs in constant stack, and a non-tail recursion over a 100,000-element list needs 100,000
small list entries but no Python frames.

NOTE: [Frames] A frame is a dict for one function activation: parameters, let variables and
pattern variables of that activation (variables are unique objects, so one dict per
activation suffices), plus the values of *shared* compound nodes. A node reachable along two
paths (a DAG, as the text format's ``%0 = ...; f(%0, %0)`` builds) is evaluated once per
activation, as Relay's A-normal form would; unshared nodes are not memoised, so their values
are freed as soon as their parent has used them. A closure captures the values of its
function's free variables when it is created.

NOTE: [Shortcuts] A call whose operands are all variables or constants, and a match on a
variable, are evaluated without making a generator (``_call_direct``, ``_match_direct``):
that is most nodes of a typical loop body, and it halves the cost per iteration. A subclass
that overrides ``eval_call`` or ``eval_match`` turns the matching shortcut off, so its
method sees every node of that kind.

NOTE: [Size variables] A function whose parameter types carry symbolic dims (or that has a
``"size_params"`` attribute) binds those size variables when it is entered
(:mod:`interp.size_binding`); the bindings live in the activation's frame under the key
:data:`SIZES` and a closure made there captures them. Op calls whose attributes or inferred
type mention size variables run with the bound values substituted and their result shape
checked. Frames of static functions have no ``SIZES`` entry.
"""

from __future__ import annotations

import numpy as np

from irlib.errors import InterpreterError, IRError, MatchError
from irlib.ir import expr as E
from irlib.ir.functor import children, free_vars
from irlib.ir.types import TensorType, TupleType
from irlib.ndarray import NDArray, cpu
from irlib.op import registry

from .describe import describe_node, describe_span
from .size_binding import function_sizes, symbolic_call
from .values import (Closure, ConstructorValue, RecClosure, RefValue, TupleValue,
                     format_value)


class Tail:
    """Returned by an ``eval_<kind>`` generator: "my value is that of ``expr`` in ``frame``"."""

    __slots__ = ("expr", "frame")

    def __init__(self, expr, frame: dict):
        self.expr = expr
        self.frame = frame


# Ops that only annotate: they evaluate to their argument (which may be any value).
IDENTITY_OPS = frozenset({"on_device", "annotation.stop_fusion", "annotation.compiler_begin",
                          "annotation.compiler_end", "annotation.checkpoint"})

_MISSING = object()
#: Frame key of the activation's size-variable bindings (``{name: int}``), when it has any.
SIZES = object()
_STORE = object()   # stack marker: store the incoming value as a shared node's memo

_LEAF_KINDS = {E.Var: "var", E.GlobalVar: "global_var", E.Constant: "constant",
               E.Function: "function", E.Op: "op", E.Constructor: "constructor"}
_COMPOUND_KINDS = {E.Tuple: "tuple", E.TupleGetItem: "tuple_get_item", E.Call: "call",
                   E.Let: "let", E.If: "if", E.RefCreate: "ref_create",
                   E.RefRead: "ref_read", E.RefWrite: "ref_write", E.Match: "match"}


class Interpreter:
    """Evaluates expressions of a (type-checked) module.

    Method hierarchy (override one ``eval_<kind>`` to change how one node kind evaluates)::

        call_value(function_value, args)         apply a closure from Python
        evaluate(expr, frame)                    evaluate an expression
         └── run(expr, frame)                    the driver loop (explicit stack)
              ├── leaves, return a value:   eval_var, eval_global_var, eval_constant,
              │                             eval_function, eval_op, eval_constructor
              └── generators, yield operands and return a value or a Tail:
                   eval_tuple, eval_tuple_get_item, eval_let, eval_if,
                   eval_ref_create, eval_ref_read, eval_ref_write,
                   eval_call ── apply_op(call, args)
                             └─ apply_function(function_value, args, call)
                   eval_match ── choose_clause(match, value, frame)
                                  └─ match_pattern(pattern, value, frame)

    Args:
        mod: the :class:`~irlib.IRModule` whose globals and constructors the code uses
            (type-checked: op results are cast to their inferred dtype).
        device: the device values nominally live on (all values are host numpy arrays).

    Raises (from evaluation):
        InterpreterError: an op failed, a variable has no value, a value has the wrong kind;
            the message names the node (``while evaluating `add(%x, %y)` at f.rly:3:5``).
        MatchError: no clause of a ``match`` covers the value.
    """

    def __init__(self, mod, device=None):
        self.mod = mod
        self.device = device
        self._global_closures: dict = {}
        self._free_vars: dict = {}
        self._constructor_closures: dict = {}
        self._shared: set = set()
        self._flat_patterns: dict = {}
        self._function_sizes: dict = {}   # Function -> FunctionSizes or None
        self._symbolic_calls: dict = {}    # op Call -> SymbolicCall or None
        self._function_names = {func: "@" + gvar.name_hint
                                for gvar, func in mod.functions.items()}
        self._leaves = {kind: getattr(self, "eval_" + name) for kind, name in _LEAF_KINDS.items()}
        self._compounds = {kind: getattr(self, "eval_" + name)
                           for kind, name in _COMPOUND_KINDS.items()}
        # Shortcuts for calls and matches whose operands are already values (the hot path of
        # every loop): no generator is made. Used only where the eval_ method is not
        # overridden, so subclasses see every node in their own method.
        self._directs = {}
        if type(self).eval_call is Interpreter.eval_call:
            self._directs[E.Call] = self._call_direct
        if type(self).eval_match is Interpreter.eval_match:
            self._directs[E.Match] = self._match_direct
        self.note_program(func for _, func in mod.functions.items())

    # -- entry points ------------------------------------------------------------------------
    def note_program(self, roots) -> None:
        """Find the nodes of ``roots`` reachable along more than one path (memoised per frame).

        Called for the module's functions at construction and by :meth:`evaluate`; call it
        before :meth:`run` on any other expression, or shared nodes run once per use.
        """
        seen = set()
        stack = []
        for root in roots:
            if root not in seen:
                seen.add(root)
                stack.append(root)
        shared = self._shared
        while stack:
            node = stack.pop()
            for child in children(node):
                if child in seen:
                    if type(child) in _COMPOUND_KINDS:
                        shared.add(child)
                else:
                    seen.add(child)
                    stack.append(child)

    def evaluate(self, expr, frame: dict | None = None):
        """The value of ``expr``, its free variables taken from ``frame`` (Var -> value)."""
        self.note_program([expr])
        return self.run(expr, dict(frame or {}))

    def call_value(self, function_value, args: list):
        """Apply a function value (closure, constructor function) to argument values."""
        result = self.apply_function(function_value, list(args), None)
        if type(result) is Tail:
            return self.run(result.expr, result.frame)
        return result

    # -- the driver ---------------------------------------------------------------------------
    def run(self, expr, frame: dict):
        """Evaluate ``expr`` in ``frame`` with an explicit stack (see the module notes)."""
        leaves, compounds, directs, shared = (self._leaves, self._compounds, self._directs,
                                              self._shared)
        stack = []          # entries: (generator or _STORE, node, frame)
        request, request_frame = expr, frame
        value = None
        while True:
            if request is not None:
                kind = type(request)
                leaf = leaves.get(kind)
                if leaf is not None:
                    try:
                        value = leaf(request, request_frame)
                    except Exception as error:  # noqa: BLE001 - re-raised with the node
                        raise self._located(error, request, stack) from error
                else:
                    value = request_frame.get(request, _MISSING)   # a shared node's memo
                    if value is _MISSING:
                        direct = directs.get(kind)
                        try:
                            result = direct(request, request_frame) if direct else _MISSING
                        except Exception as error:  # noqa: BLE001 - re-raised with the node
                            raise self._located(error, request, stack) from error
                        if result is _MISSING:
                            method = compounds.get(kind)
                            if method is None:
                                raise InterpreterError(f"the interpreter cannot evaluate a "
                                                       f"{kind.__name__} node")
                            stack.append((method(request, request_frame), request,
                                          request_frame))
                            value = None
                        else:
                            if request in shared:
                                stack.append((_STORE, request, request_frame))
                            if type(result) is Tail:
                                request, request_frame = result.expr, result.frame
                                continue
                            value = result
                request = None
            if not stack:
                return value
            generator, owner, owner_frame = stack[-1]
            if generator is _STORE:
                stack.pop()
                owner_frame[owner] = value
                continue
            try:
                request = generator.send(value)
                request_frame = owner_frame
            except StopIteration as stop:
                stack.pop()
                result = stop.value
                if owner in shared:
                    stack.append((_STORE, owner, owner_frame))
                if type(result) is Tail:
                    request, request_frame = result.expr, result.frame
                else:
                    value = result
            except Exception as error:  # noqa: BLE001 - re-raised with the node
                raise self._located(error, owner, stack) from error

    def _located(self, error, node, stack) -> InterpreterError:
        """``error`` as an InterpreterError naming ``node`` (unless it already names one)."""
        if isinstance(error, InterpreterError):
            return error
        bound_to = None
        for _, parent, _ in reversed(stack):
            if parent is node:
                continue
            if type(parent) is E.Let and parent.value is node:
                bound_to = parent.var
            break
        text = str(error) if isinstance(error, IRError) else f"{type(error).__name__}: {error}"
        located = InterpreterError(f"{text}\n  while evaluating "
                                   f"`{describe_node(node, bound_to)}` at {describe_span(node)}")
        located.node = node
        return located

    # -- leaves ---------------------------------------------------------------------------------
    def eval_var(self, node, frame):
        """A variable: its value in the current frame."""
        try:
            return frame[node]
        except KeyError:
            raise InterpreterError(f"variable %{node.name_hint} has no value here (it is "
                                   f"unbound, or a closure did not capture it)") from None

    def eval_global_var(self, node, frame):
        """A global: a closure of its function (made once, with an empty environment)."""
        closure = self._global_closures.get(node)
        if closure is None:
            try:
                func = self.mod[node]
            except IRError:
                func = self.mod[node.name_hint]
            closure = Closure(func, {}, self)
            self._global_closures[node] = closure
        return closure

    def eval_constant(self, node, frame):
        """A constant: its data."""
        return node.data

    def eval_function(self, node, frame):
        """A function literal: a closure capturing the current values of its free vars."""
        captured = self._free_vars.get(node)
        if captured is None:
            captured = tuple(free_vars(node))
            self._free_vars[node] = captured
        env = {}
        for var in captured:
            try:
                env[var] = frame[var]
            except KeyError:
                raise InterpreterError(f"function captures %{var.name_hint}, which has no "
                                       f"value here") from None
        sizes = frame.get(SIZES)
        if sizes is not None:
            env[SIZES] = sizes
        return Closure(node, env, self)

    def eval_op(self, node, frame):
        """A bare op is not a value: ops can only be called."""
        raise InterpreterError(f"operator {node.name} used as a value; ops can only be "
                               f"called (wrap it: fn (%x) {{ {node.name}(%x) }})")

    def eval_constructor(self, node, frame):
        """A constructor used as a function value: ``fn (%f0, ...) { C(%f0, ...) }``."""
        closure = self._constructor_closures.get(node)
        if closure is None:
            params = tuple(E.Var(f"field{i}") for i in range(len(node.inputs)))
            closure = Closure(E.Function(params, E.Call(node, params)), {}, self)
            self._constructor_closures[node] = closure
        return closure

    # -- compound nodes ---------------------------------------------------------------------
    def eval_tuple(self, node, frame):
        """A tuple: its fields left to right."""
        fields = []
        for field in node.fields:
            fields.append((yield field))
        return TupleValue(*fields)

    def eval_tuple_get_item(self, node, frame):
        """A projection ``t.i``."""
        value = yield node.tuple_value
        if not isinstance(value, tuple):
            raise InterpreterError(f"cannot project field {node.index} of "
                                   f"{format_value(value)}: not a tuple")
        if not -len(value) <= node.index < len(value):
            raise InterpreterError(f"tuple index {node.index} out of range for a "
                                   f"{len(value)}-tuple")
        return value[node.index]

    def eval_let(self, node, frame):
        """``let %v = value; body``; a function value is bound as a RecClosure (letrec)."""
        if type(node.value) is E.Function:
            closure = self._letrec_closure(node.value, node.var, frame)
            frame[node.var] = RecClosure(closure, node.var)
        else:
            frame[node.var] = yield node.value
        return Tail(node.body, frame)

    def _letrec_closure(self, func, self_var, frame) -> Closure:
        captured = self._free_vars.get(func)
        if captured is None:
            captured = tuple(free_vars(func))
            self._free_vars[func] = captured
        env = {}
        for var in captured:
            if var is self_var:
                continue
            if var not in frame:
                raise InterpreterError(f"function captures %{var.name_hint}, which has no "
                                       f"value here")
            env[var] = frame[var]
        sizes = frame.get(SIZES)
        if sizes is not None:
            env[SIZES] = sizes
        return Closure(func, env, self)

    def eval_if(self, node, frame):
        """``if (c) {a} else {b}``: only the chosen branch is evaluated."""
        condition = yield node.cond
        data = condition.numpy() if type(condition) is NDArray else None
        if data is None or data.dtype.kind != "b" or data.size != 1:
            raise InterpreterError(f"an if condition must be a bool scalar tensor, got "
                                   f"{format_value(condition)}")
        branch = node.true_branch if data.item() else node.false_branch
        return Tail(branch, frame)

    def eval_ref_create(self, node, frame):
        """``ref(v)``: a new cell."""
        return RefValue((yield node.value))

    def eval_ref_read(self, node, frame):
        """``ref_read(r)``: the cell's contents."""
        return self._as_ref((yield node.ref)).value

    def eval_ref_write(self, node, frame):
        """``ref_write(r, v)``: store v in the cell; the result is the empty tuple."""
        ref = self._as_ref((yield node.ref))
        ref.value = yield node.value
        return TupleValue()

    @staticmethod
    def _as_ref(value) -> RefValue:
        if type(value) is not RefValue:
            raise InterpreterError(f"expected a reference, got {format_value(value)}")
        return value

    def eval_call(self, node, frame):
        """A call: the arguments left to right, then the callee (as Relay does)."""
        args = []
        for arg in node.args:
            args.append((yield arg))
        callee = node.op
        kind = type(callee)
        if kind is E.Op:
            sizes = frame.get(SIZES)
            if sizes is None:   # subclasses may override apply_op(call, args)
                return self.apply_op(node, args)
            return self.apply_op(node, args, sizes)
        if kind is E.Constructor:
            return ConstructorValue(callee.tag, args, callee)
        function_value = yield callee
        return self.apply_function(function_value, args, node)

    def _call_direct(self, node, frame):
        """``eval_call`` when every operand is a variable or constant; else ``_MISSING``."""
        known = frame.get
        args = []
        for arg in node.args:
            value = known(arg, _MISSING)
            if value is _MISSING:
                if type(arg) is not E.Constant:
                    return _MISSING
                value = arg.data
            args.append(value)
        callee = node.op
        kind = type(callee)
        if kind is E.Op:
            sizes = frame.get(SIZES)
            if sizes is None:   # subclasses may override apply_op(call, args)
                return self.apply_op(node, args)
            return self.apply_op(node, args, sizes)
        if kind is E.Constructor:
            return ConstructorValue(callee.tag, args, callee)
        function_value = known(callee, _MISSING)
        if function_value is _MISSING:
            if kind is not E.GlobalVar:
                return _MISSING
            function_value = self.eval_global_var(callee, frame)
        return self.apply_function(function_value, args, node)

    def eval_match(self, node, frame):
        """``match (d) { clauses }``: the first clause whose pattern matches."""
        return self.choose_clause(node, (yield node.data), frame)

    def _match_direct(self, node, frame):
        """``eval_match`` when the scrutinee is a variable; else ``_MISSING``."""
        value = frame.get(node.data, _MISSING)
        if value is _MISSING:
            return _MISSING
        return self.choose_clause(node, value, frame)

    def choose_clause(self, node, value, frame) -> Tail:
        """The rhs of the first clause of ``node`` matching ``value`` (variables bound).

        Raises:
            MatchError: if no clause matches.
        """
        for clause in node.clauses:
            if self.match_pattern(clause.lhs, value, frame):
                return Tail(clause.rhs, frame)
        raise MatchError(f"no clause of `{describe_node(node)}` at {describe_span(node)} "
                         f"matches the value {format_value(value)}")

    # -- helpers the compound nodes use ----------------------------------------------------------
    def apply_op(self, call, args: list, sizes=None):
        """Run ``call.op`` on argument values through its reference implementation.

        The result is cast to the call's inferred dtype when type inference gave one.
        Annotation ops (``on_device``, ``annotation.stop_fusion``, ...) return their argument
        itself, whatever kind of value it is.

        Args:
            call: the op call.
            args: its argument values.
            sizes: the activation's size-variable bindings, if any: substituted into
                symbolic attributes (``reshape(newshape=[1, n])``), and the result's shape
                is checked against the call's symbolic inferred type under them.
        """
        if call.op.name in IDENTITY_OPS:
            return args[0]
        inputs = [op_input(arg) for arg in args]
        symbolic = self._symbolic_calls.get(call, _MISSING)
        if symbolic is _MISSING:
            symbolic = self._symbolic_calls[call] = symbolic_call(call)
        if symbolic is None:
            result = registry.evaluate(call.op.name, inputs, call.attrs)
            return op_result(result, call._checked_type)
        result = registry.evaluate(call.op.name, inputs, symbolic.attrs_for(sizes))
        value = op_result(result, call._checked_type)
        symbolic.check_result(value, sizes)
        return value

    def apply_function(self, function_value, args: list, call):
        """Enter a closure: a new frame with its env, its params and (letrec) itself.

        Returns:
            A :class:`Tail` for the function body, or a value for a Python callable.
        """
        kind = type(function_value)
        if kind is Closure:
            closure = function_value
            frame = dict(closure.env)
        elif kind is RecClosure:
            closure = function_value.clos
            frame = dict(closure.env)
            frame[function_value.bind] = function_value
        elif callable(function_value) and kind not in (ConstructorValue, TupleValue):
            return function_value(*args)
        else:
            raise InterpreterError(f"cannot call {format_value(function_value)}: not a "
                                   f"function")
        params = closure.func.params
        if len(params) != len(args):
            raise InterpreterError(f"function {format_value(function_value)} takes "
                                   f"{len(params)} argument(s), got {len(args)}")
        for param, arg in zip(params, args):
            frame[param] = arg
        func = closure.func
        binder = self._function_sizes.get(func, _MISSING)
        if binder is _MISSING:
            name = self._function_names.get(func) or f"the function at {describe_span(func)}"
            binder = self._function_sizes[func] = function_sizes(func, name)
        if binder is not None:
            frame[SIZES] = binder.bind(args, frame.get(SIZES))
        return Tail(func.body, frame)

    def match_pattern(self, pattern, value, frame) -> bool:
        """Whether ``value`` matches ``pattern``; if so its variables are bound in ``frame``."""
        flat = self._flat_patterns.get(pattern)
        if flat is None:
            flat = self._flat_patterns[pattern] = _flat_pattern(pattern)
        if flat is not False and type(value) is ConstructorValue:
            # the common ``C(%a, _, %b)`` clause: one tag test and direct bindings
            tag, variables = flat
            if value.tag != tag or len(value.fields) != len(variables):
                return False
            for var, field in zip(variables, value.fields):
                if var is not None:
                    frame[var] = field
            return True
        bindings = []
        stack = [(pattern, value)]
        while stack:
            current, current_value = stack.pop()
            kind = type(current)
            if kind is E.PatternWildcard:
                continue
            if kind is E.PatternVar:
                bindings.append((current.var, current_value))
            elif kind is E.PatternConstructor:
                if type(current_value) is not ConstructorValue:
                    raise InterpreterError(f"constructor pattern {current.constructor.name_hint}"
                                           f" applied to {format_value(current_value)}")
                if current_value.tag != current.constructor.tag:
                    return False
                if len(current.patterns) != len(current_value.fields):
                    return False
                stack.extend(zip(current.patterns, current_value.fields))
            elif kind is E.PatternTuple:
                if not isinstance(current_value, tuple) \
                        or len(current_value) != len(current.patterns):
                    return False
                stack.extend(zip(current.patterns, current_value))
            else:
                raise InterpreterError(f"unknown pattern kind {kind.__name__}")
        for var, bound in bindings:
            frame[var] = bound
        return True


def _flat_pattern(pattern):
    """``(tag, vars)`` for ``C(p1, ...)`` whose sub-patterns are vars (or None for ``_``)."""
    if type(pattern) is not E.PatternConstructor:
        return False
    variables = []
    for sub in pattern.patterns:
        if type(sub) is E.PatternVar:
            variables.append(sub.var)
        elif type(sub) is E.PatternWildcard:
            variables.append(None)
        else:
            return False
    return pattern.constructor.tag, tuple(variables)


# -- tensors in and out of the op registry -------------------------------------------------------

def op_input(value):
    """A value as an op's reference implementation takes it (numpy, or tuples of numpy)."""
    kind = type(value)
    if kind is NDArray:
        return value.numpy()
    if isinstance(value, tuple):
        return tuple(op_input(item) for item in value)
    raise InterpreterError(f"an operator argument must be a tensor or a tuple of tensors, "
                           f"got {format_value(value)}")


def op_result(result, result_type):
    """An op's numpy result as a value, cast to ``result_type``'s dtype(s) when known."""
    if isinstance(result, tuple):
        field_types = result_type.fields if type(result_type) is TupleType else ()
        return TupleValue(*(op_result(item, field_types[i] if i < len(field_types) else None)
                            for i, item in enumerate(result)))
    array = np.asarray(result)
    if type(result_type) is TensorType and result_type.dtype != "string":
        dtype = _DTYPES.get(result_type.dtype)
        if dtype is None:
            dtype = _DTYPES[result_type.dtype] = np.dtype(result_type.dtype)
        if array.dtype != dtype:
            array = array.astype(dtype)
    return NDArray(array, _HOST)


_DTYPES: dict = {}
_HOST = cpu(0)
