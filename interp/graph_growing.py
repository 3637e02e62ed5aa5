"""Loops whose state grows (ONNX ``Scan``, ``Loop`` with scan outputs) on the graph executor.

The ONNX importer writes a scan output as loop state typed ``Tensor[(?, ...)]`` that starts
as an empty ``(0, ...)`` constant and grows by ``concatenate((acc, expand_dims(y)))`` each
step. Such a loop can still run as one ``__loop`` node with static output shapes when its
trip count is known at build time:

1. **Trip count** (:func:`static_trip_count`). The *control* state is the smallest set of
   state variables holding those the condition reads and those their steps read. When the
   control state starts at constants and neither the condition nor the control steps read
   an outer value (the counter of ``less(%i, 5i64)``, a condition variable passed on
   unchanged), the control loop is run here on the interpreter, with the numpy reference
   ops, until the condition stops it: that is the trip count T (at most
   :data:`MAX_STATIC_TRIPS`).
2. **Symbolic parts** (:func:`growing_loop`). Each ``?`` dim of a state variable becomes a
   size variable (``s3_0``: parameter 3, axis 0); the condition, step and exit are copied
   and type-inferred with those types (:func:`interp.graph_retype.retyped_copy`), so the
   step's result type says how each size changes (``s3_0 + 1``).
3. **Static outputs.** The sizes are followed from the initial state's shapes through T
   steps of that map; the exit's type at the final sizes is the node's output type. The
   rest of the model then keeps static shapes (a fused function after the loop whose
   parameter was typed ``?`` is specialised to them by :mod:`interp.graph_lower`).

The three parts are lowered to graphs with symbolic dims, run by
:class:`~interp.graph_symbolic.SymbolicRuntime` (sizes bound from the state at each step,
kernels take sizes as arguments: nothing compiles per size); see
:class:`~interp.graph_loop.LoopKernel`. A loop whose trip count depends on run-time data
and whose state grows raises :class:`~interp.graph_lower.GraphUnsupportedError` (the
program runs on the interpreter).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from irlib.errors import IRError
from irlib.ir import expr as E
from irlib.ir.dims import AnyDim, DimExpr, size_var, substitute_dim
from irlib.ir.functor import free_vars
from irlib.ir.types import TensorType, TupleType

from .graph_retype import has_any, retyped_copy

__all__ = ["APPEND_ROWS", "GrowingLoop", "MAX_STATIC_TRIPS", "append_rows", "control_state",
           "growing_loop", "static_trip_count"]

MAX_STATIC_TRIPS = 10000
"""The longest loop whose trip count is found at build time (about 35 us per trip)."""

APPEND_ROWS = os.environ.get("IRLIB_SCAN_APPEND", "1").strip().lower() not in (
    "0", "off", "false", "no")
"""Whether scan outputs are written row by row (:func:`append_rows`); ``IRLIB_SCAN_APPEND=0``
at import keeps the concatenation in the step (each step copies the whole stack)."""


@dataclass
class GrowingLoop:
    """A loop with growing state, ready to lower (see the module docstring).

    Attributes:
        cond, step, result: the typed copies of the condition, the step's arguments (a
            tuple) and the exit value, over ``params`` and ``outer``.
        params: the new state variables (growing ones typed with size variables).
        outer: ``{old outer Var: new Var}`` for the outer values the parts read.
        out_type: the node's (static) output type.
        trips: the trip count.
    """

    cond: E.Expr
    step: tuple
    result: E.Expr
    params: tuple
    outer: dict
    out_type: object
    trips: int
    appended: tuple = ()
    """Indices of the state variables whose step gives only the row to append (see
    :func:`append_rows`); the kernel writes it in place of a concatenation."""
    control: tuple = ()
    """Indices of the control state (:func:`control_state`): its values at every step are
    the same at every run, so the kernel keeps them and does not recompute them."""


def _unsupported(var: E.Var, why: str):
    from .graph_lower import GraphUnsupportedError
    return GraphUnsupportedError(
        f"graph executor: loop %{var.name_hint} has state that changes shape (a scan output), "
        f"which it runs only with a trip count known at build time; {why} (the program runs "
        f"on the interpreter)")


def control_state(var: E.Var, func: E.Function, parts) -> list | str:
    """The loop's control state: the smallest set of parameters holding those the
    condition reads and those their steps read (in parameter order), or a string saying
    why the condition depends on run-time data (it, or such a step, reads an outer value).

    Args:
        var: the loop's let-bound variable.
        func: the loop function.
        parts: its :class:`~interp.graph_loop.LoopParts`.
    """
    params = list(func.params)
    index = {p: k for k, p in enumerate(params)}

    def reads(expr) -> tuple:
        found = [v for v in free_vars(expr) if v is not var]
        return [v for v in found if v in index], [v for v in found if v not in index]

    control, outer = reads(parts.cond)
    if outer:
        return f"its condition reads %{outer[0].name_hint}, a value known only at run time"
    chosen, pending = set(), list(control)
    while pending:
        param = pending.pop()
        if param in chosen:
            continue
        chosen.add(param)
        inner, outer = reads(parts.step[index[param]])
        if outer:
            return (f"the condition depends on %{param.name_hint}, whose step reads "
                    f"%{outer[0].name_hint}, a value known only at run time")
        pending.extend(inner)
    return sorted(chosen, key=index.get)


def static_trip_count(var: E.Var, func: E.Function, parts, init_args) -> int | str:
    """The number of steps the loop ``func`` takes from ``init_args``, or why it is unknown.

    Args:
        var: the loop's let-bound variable (for messages).
        func: the loop function.
        parts: its :class:`~interp.graph_loop.LoopParts`.
        init_args: the arguments of the call that starts it.

    Returns:
        The trip count (an int), or a string saying why it depends on run-time data.
    """
    order = control_state(var, func, parts)
    if isinstance(order, str):
        return order
    index = {p: k for k, p in enumerate(func.params)}
    for param in order:
        if type(init_args[index[param]]) is not E.Constant:
            return f"%{param.name_hint} does not start at a constant"
    from .interpreter import Interpreter
    from .values import as_value
    from irlib.ir.module import IRModule
    machine = Interpreter(IRModule())
    program = E.Tuple((parts.cond,) + tuple(parts.step[index[p]] for p in order))
    frame = {p: as_value(init_args[index[p]].data.numpy()) for p in order}
    for trips in range(MAX_STATIC_TRIPS + 1):
        try:
            values = machine.evaluate(program, frame)
        except IRError as error:
            return f"its condition could not be evaluated at build time ({error})"
        if bool(np.asarray(values[0].numpy()).reshape(-1)[0]) != parts.go_on:
            return trips
        frame = dict(zip(order, values[1:]))
    return f"it runs over {MAX_STATIC_TRIPS} steps"


def _symbolic_type(ty, position: int, names: dict):
    """``ty`` with each ``?`` dim replaced by a size variable ``s<position>_<axis>``
    (recorded in ``names``: name -> (position, axis))."""
    if not isinstance(ty, TensorType) or not has_any(ty):
        return ty
    shape = []
    for axis, dim in enumerate(ty.shape):
        if isinstance(dim, AnyDim):
            name = f"s{position}_{axis}"
            names[name] = (position, axis)
            dim = size_var(name)
        shape.append(dim)
    return TensorType(shape, ty.dtype)


def _static_type(ty, sizes: dict):
    """``ty`` with its size variables replaced by ``sizes`` (None if a dim stays
    unknown)."""
    if isinstance(ty, TupleType):
        fields = [_static_type(f, sizes) for f in ty.fields]
        return None if any(f is None for f in fields) else TupleType(fields)
    if not isinstance(ty, TensorType):
        return None
    shape = []
    for dim in ty.shape:
        if isinstance(dim, DimExpr):
            dim = substitute_dim(dim, sizes)
        if not isinstance(dim, (int, np.integer)):
            return None
        shape.append(int(dim))
    return TensorType(shape, ty.dtype)


def _attr(attrs, name, default=None):
    try:
        return attrs[name]
    except (KeyError, TypeError):
        return default


def _appended_row(step, param):
    """The row expression when ``step`` is ``f(..., param, ...)`` for a primitive ``f`` whose
    body is ``concatenate((p, expand_dims(<row>, axis=0)), axis=0)`` with ``p`` bound to
    ``param`` and ``<row>`` not reading ``p``; else None. The row is returned as the
    argument it is, or as a call of a new primitive function of the other arguments."""
    if type(step) is not E.Call or type(step.op) is not E.Function \
            or not (step.op.attrs or {}).get("Primitive", 0):
        return None
    func, body = step.op, step.op.body
    if type(body) is not E.Call or not isinstance(body.op, E.Op) \
            or body.op.name != "concatenate" or _attr(body.attrs, "axis") != 0 \
            or type(body.args[0]) is not E.Tuple or len(body.args[0].fields) != 2:
        return None
    head, tail = body.args[0].fields
    if type(tail) is not E.Call or not isinstance(tail.op, E.Op) \
            or tail.op.name != "expand_dims" or _attr(tail.attrs, "axis") != 0 \
            or _attr(tail.attrs, "num_newaxis", 1) != 1:
        return None
    if head not in func.params or step.args[func.params.index(head)] is not param:
        return None
    row = tail.args[0]
    if any(v is head for v in free_vars(row)):
        return None
    if row in func.params:              # the row is an argument itself: no call
        return step.args[func.params.index(row)]
    keep = [k for k, p in enumerate(func.params) if p is not head]
    row_func = E.Function(tuple(func.params[k] for k in keep), row, None, (), func.attrs)
    return E.Call(row_func, tuple(step.args[k] for k in keep))


def append_rows(func: E.Function, parts, call: E.Call, control: tuple = ()) -> tuple:
    """``(step, appended)``: the loop's step with every scan output's concatenation
    replaced by the row it appends, and the indices of those state variables.

    A state variable qualifies when its type is ``?`` along axis 0 only, its step is the
    importer's ``concatenate((acc, expand_dims(row, axis=0)), axis=0)`` (alone in its fused
    function, or with the row's computation), and it starts as a constant (the empty
    ``(0, ...)`` stack). The step then costs one row, not a copy of everything stacked so
    far (quadratic in the trip count). State in ``control`` (the condition reads it) keeps
    its step."""
    step, appended = list(parts.step), []
    for position, param in enumerate(func.params):
        if position in control:
            continue
        ty = param._checked_type or param.type_annotation
        if not isinstance(ty, TensorType) or not ty.shape or \
                not isinstance(ty.shape[0], AnyDim) or has_any(TensorType(ty.shape[1:], ty.dtype)) \
                or type(call.args[position]) is not E.Constant:
            continue
        row = _appended_row(step[position], param)
        if row is not None:
            step[position] = row
            appended.append(position)
    return tuple(step), tuple(appended)


def growing_loop(var: E.Var, func: E.Function, parts, call: E.Call, outer: list) -> GrowingLoop:
    """Analyse a loop whose state has ``?`` dims (see the module docstring).

    Args:
        var: the loop's let-bound variable.
        func: the loop function.
        parts: its :class:`~interp.graph_loop.LoopParts`.
        call: the call that starts the loop (its arguments: the initial state).
        outer: the outer variables the loop reads (values of main).

    Raises:
        GraphUnsupportedError: if the trip count is not known at build time, a state
            variable is not a tensor, or a size cannot be followed through the steps.
    """
    names: dict = {}
    types = {}
    for position, param in enumerate(func.params):
        ty = param._checked_type or param.type_annotation
        if not isinstance(ty, TensorType):
            raise _unsupported(var, f"state %{param.name_hint} is not a tensor ({ty})")
        types[param] = _symbolic_type(ty, position, names)
    for value in outer:
        types[value] = value._checked_type or value.type_annotation
    trips = static_trip_count(var, func, parts, call.args)
    if isinstance(trips, str):
        raise _unsupported(var, trips)
    control = tuple(func.params.index(p) for p in control_state(var, func, parts))
    steps, appended = append_rows(func, parts, call, control) if APPEND_ROWS \
        else (parts.step, ())
    try:
        typed, new_vars = retyped_copy(
            E.Tuple((parts.cond, E.Tuple(steps), parts.result)), types)
    except IRError as error:            # a type error, or a relation refusing a size variable
        raise _unsupported(var, f"its parts do not type-check with sized state "
                                f"({type(error).__name__}: {error})") from None
    cond, step, result = typed.fields
    step_types = step.checked_type.fields
    sizes = {}
    for name, (position, axis) in names.items():
        start = call.args[position].checked_type
        dim = start.shape[axis] if isinstance(start, TensorType) else None
        if not isinstance(dim, (int, np.integer)):
            raise _unsupported(var, f"state %{func.params[position].name_hint} starts with "
                                    f"type {start}, not a static shape")
        sizes[name] = int(dim)
    rules = {}
    for name, (position, axis) in names.items():
        if position in appended:            # one row more per step
            rules[name] = size_var(name) + 1
            continue
        ty = step_types[position]
        dim = ty.shape[axis] if isinstance(ty, TensorType) else None
        if not isinstance(dim, (int, np.integer, DimExpr)):
            raise _unsupported(var, f"the step gives state %{func.params[position].name_hint}"
                                    f" the type {ty}, whose size cannot be followed")
        rules[name] = dim
    for _ in range(trips):
        sizes = {name: int(substitute_dim(rule, sizes)) if isinstance(rule, DimExpr)
                 else int(rule) for name, rule in rules.items()}
    out_type = _static_type(result.checked_type, sizes)
    if out_type is None:
        raise _unsupported(var, f"its result type {result.checked_type} has no static shape "
                                f"after {trips} steps")
    params = tuple(new_vars.get(p) or E.Var(p.name_hint, types[p]) for p in func.params)
    outer_new = {v: new_vars.get(v) or E.Var(v.name_hint, types[v]) for v in outer}
    return GrowingLoop(cond, tuple(step.fields), result, params, outer_new, out_type, trips,
                       appended, control)
