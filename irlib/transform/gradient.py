"""Reverse-mode automatic differentiation: :func:`gradient` (Relay's ``transform.gradient``).

``gradient(fn (%x0, ..., %xn) { body })`` returns a function with the same parameters whose
body evaluates to ``(body, (d/dx0, ..., d/dxn))``, the gradient of the sum of the seeded
output elements. The function is first put in A-normal form and type-checked; the forward
bindings are kept as they are (so no forward work is duplicated), then one backward binding
per forward binding is emitted in reverse order, using each op's registered gradient rule
(``irlib.op.get_def(name).grad``). Adjoints of tuple values are tracked field by field.

Modes:

* ``"first_order"``: dataflow code (ops, tuples, projections, lets, graph sharing) with
  tensor or tuple parameters; every output leaf is seeded with ones. Deprecated in Relay,
  and, as there, it refuses a ``mod`` argument.
* ``"higher_order"`` (default): everything. First-order code (ops, tuples, lets, ``if``,
  calls of non-recursive globals, which are inlined) gets the static backward pass above,
  where the backward code of an ``if`` branches on the same condition and recomputes the
  taken branch's intermediate values. Code with closures, recursion, ``match``,
  references or constructors is differentiated as Relay does, with gradient cells and a
  backpropagator closure (:mod:`.gradient_higher_order`); transformed copies of the
  globals it calls are then added to ``mod``. Both seed only the first leaf of a tuple
  output, as Relay does.

Before/after (types omitted)::

    fn (%x, %y) { multiply(%x, %y) }
    fn (%x, %y) { let %x_0 = multiply(%x, %y);
                  (%x_0, (multiply(ones_like(%x_0), %y), multiply(ones_like(%x_0), %x))) }
"""

from __future__ import annotations

import warnings

from ..errors import GradientError, IRError
from ..ir import expr as E
from ..ir.functor import free_vars, post_order
from ..ir.types import TensorType, TupleType
from ..op import registry
from ..ir.rewrite import fresh_copy, let_chain, make_lets, substitute
from .to_a_normal_form import to_a_normal_form

_MODES = ("first_order", "higher_order")


def _op(name, *args):
    return registry.make_call(name, args)


# -- adjoints: an Expr for a tensor, a list (one entry per field) for a tuple, None for zero ----

def _accumulate(old, new):
    if old is None:
        return new
    if new is None:
        return old
    if isinstance(old, list):
        return [_accumulate(a, b) for a, b in zip(old, new)]
    return _op("add", old, new)


def _split(adjoint, ty):
    """An adjoint expression of type ``ty`` in list form."""
    if adjoint is None or not isinstance(ty, TupleType):
        return adjoint
    if isinstance(adjoint, list):
        return adjoint
    if isinstance(adjoint, E.TupleWrapper):
        adjoint = adjoint.astuple()
    if isinstance(adjoint, E.Tuple):
        return [_split(f, t) for f, t in zip(adjoint.fields, ty.fields)]
    return [_split(E.TupleGetItem(adjoint, i), t) for i, t in enumerate(ty.fields)]


def call_grad_rule(op_def, call, out_grad):
    """Run ``op_def``'s gradient rule on ``call``.

    Args:
        op_def: the op's registry entry.
        call: the call being differentiated.
        out_grad: the gradient flowing into the call's result.

    Raises:
        GradientError: when the rule cannot differentiate the call (names the op); a bare
            ``NotImplementedError`` from a rule registered outside irlib is wrapped too.
    """
    try:
        return op_def.grad(call, out_grad)
    except GradientError as error:
        raise GradientError(f"gradient of {op_def.name}: {error}") from error
    except NotImplementedError as error:
        raise GradientError(f"gradient of {op_def.name}: {error or 'not supported'}") from error


def _materialize(adjoint, ty, primal):
    """An expression for ``adjoint`` (zeros where it is None)."""
    if isinstance(ty, TupleType):
        parts = adjoint if isinstance(adjoint, list) else [None] * len(ty.fields)
        return E.Tuple(tuple(_materialize(a, t, E.TupleGetItem(primal, i))
                             for i, (a, t) in enumerate(zip(parts, ty.fields))))
    if adjoint is None:
        return _op("zeros_like", primal)
    return adjoint


def _seed(ty, primal, all_leaves: bool, first: list):
    if isinstance(ty, TupleType):
        return [_seed(t, E.TupleGetItem(primal, i), all_leaves, first)
                for i, t in enumerate(ty.fields)]
    if not all_leaves and first[0]:
        return None
    first[0] = True
    return _op("ones_like", primal)


def _differentiable(ty) -> bool:
    if isinstance(ty, TupleType):
        return all(_differentiable(t) for t in ty.fields)
    return isinstance(ty, TensorType)


# -- the backward pass over one A-normal-form scope ----------------------------------------------

class _Backward:
    def __init__(self, mode: str):
        self.mode = mode

    def scope(self, expr, seed, wrt):
        """``let <forward of expr>; (adjoint of each var in wrt)`` given the result's seed."""
        bindings, result = let_chain(expr)
        adjoints: dict = {}
        if type(result) is E.Var:
            adjoints[result] = seed
        backward = []
        for var, value in reversed(bindings):
            adjoint = adjoints.get(var)
            if adjoint is None:
                continue
            self._binding(var, value, adjoint, adjoints, backward)
        grads = E.Tuple(tuple(_materialize(adjoints.get(v), v.checked_type, v) for v in wrt))
        return make_lets(bindings + backward, grads)

    def _add(self, adjoints, atom, adjoint):
        if type(atom) is E.Var and adjoint is not None:
            adjoints[atom] = _accumulate(adjoints.get(atom), _split(adjoint, atom.checked_type))

    def _binding(self, var, value, adjoint, adjoints, backward):
        kind = type(value)
        if kind is E.Var:
            self._add(adjoints, value, adjoint)
        elif kind is E.Tuple:
            for field, field_adjoint in zip(value.fields, _split(adjoint, var.checked_type)):
                self._add(adjoints, field, field_adjoint)
        elif kind is E.TupleGetItem:
            ty = value.tuple_value.checked_type
            parts = [None] * len(ty.fields)
            parts[value.index] = adjoint
            self._add(adjoints, value.tuple_value, parts)
        elif kind is E.Call and type(value.op) is E.Op:
            self._call(var, value, adjoint, adjoints, backward)
        elif kind is E.If and self.mode == "higher_order":
            self._if(var, value, adjoint, adjoints, backward)
        elif kind in (E.Constant, E.Op, E.GlobalVar):
            pass
        else:
            raise IRError(f"gradient ({self.mode}): cannot differentiate through a "
                          f"{kind.__name__} (bound to %{var.name_hint}); supported: ops, "
                          f"tuples, lets" + (", if" if self.mode == "higher_order" else ""))

    def _call(self, var, call, adjoint, adjoints, backward):
        op_def = call.op.op_def
        if op_def.grad is None:
            raise GradientError(f"gradient: operator {op_def.name!r} has no registered "
                                f"gradient (input has operators with missing gradients)")
        out_grad = _materialize(adjoint, var.checked_type, var)
        grads = call_grad_rule(op_def, call, out_grad)
        for arg, grad in zip(call.args, grads):
            if type(arg) is not E.Var or not _differentiable(arg.checked_type):
                continue
            if isinstance(grad, E.TupleWrapper):
                grad = grad.astuple()
            # The rules mention the forward call itself; refer to its variable instead.
            grad = substitute(grad, {call: var})
            bound = E.Var(f"{arg.name_hint}_grad")
            backward.append((bound, grad))
            self._add(adjoints, arg, bound)

    def _if(self, var, node, adjoint, adjoints, backward):
        wrt = [v for v in free_vars(E.Tuple((node.true_branch, node.false_branch)))
               if _differentiable(v.checked_type)]
        if not wrt:
            return
        seed = _split(adjoint, var.checked_type)
        true_back = fresh_copy(self.scope(node.true_branch, seed, wrt))
        false_back = fresh_copy(self.scope(node.false_branch, seed, wrt))
        result = E.Var(f"{var.name_hint}_branch_grads")
        backward.append((result, E.If(node.cond, true_back, false_back)))
        for index, v in enumerate(wrt):
            self._add(adjoints, v, E.TupleGetItem(result, index))


# -- entry point ----------------------------------------------------------------------------------

def _resolve(expr, mod):
    if isinstance(expr, E.GlobalVar):
        if mod is None:
            raise IRError(f"gradient: @{expr.name_hint} needs the module that defines it")
        expr = mod[expr]
    if not isinstance(expr, E.Function):
        raise TypeError(f"gradient expects a Function or GlobalVar, got {type(expr).__name__}")
    if free_vars(expr):
        names = ", ".join("%" + v.name_hint for v in free_vars(expr))
        raise IRError(f"gradient: the function must be closed; free variables: {names}")
    return expr


class _RecursiveGlobals(IRError):
    """Raised when inlining leaves global calls (recursion): the reference-based AD is
    used instead."""


def _inline_globals(func, mod):
    if mod is None or not any(type(n) is E.GlobalVar for n in post_order(func)):
        return func
    from .inline import inline_globals
    work = mod.copy()
    for gvar, other in mod.items():
        work[gvar] = other.with_attr("Inline", 1)
    work["__gradient_entry"] = func
    inlined = inline_globals(work)["__gradient_entry"]
    leftover = [n.name_hint for n in post_order(inlined) if type(n) is E.GlobalVar]
    if leftover:
        raise _RecursiveGlobals(f"recursive globals: @{', @'.join(sorted(set(leftover)))}")
    return inlined


def gradient(expr, mod=None, mode: str = "higher_order") -> E.Function:
    """Differentiate a function: the result returns ``(value, (gradients of the params))``.

    Args:
        expr: a closed Function, or a GlobalVar defined in ``mod``.
        mod: the module for globals and type definitions.
        mode: ``"higher_order"`` (default) or ``"first_order"`` (see the module docstring).

    Returns:
        The (untyped) gradient function, with the same parameters.

    Raises:
        ValueError: on an unknown mode.
        RuntimeError: if ``mode="first_order"`` is given a module (as in Relay).
        IRError: on code outside the mode's fragment or an op without a gradient.
        TypeInferenceError: if the function does not type-check.
    """
    if mode not in _MODES:
        raise ValueError(f"gradient mode must be one of {_MODES}, got {mode!r}")
    if mode == "first_order":
        warnings.warn("gradient(mode='first_order') is deprecated; use 'higher_order'",
                      DeprecationWarning, stacklevel=2)
        if mod is not None:
            raise RuntimeError("gradient(mode='first_order') does not take a module")
    func = _resolve(expr, mod)
    if mode == "higher_order":
        from .gradient_higher_order import higher_order_gradient, needs_references
        original = func
        try:
            func = _inline_globals(func, mod)
        except _RecursiveGlobals:
            return higher_order_gradient(original, mod)
        if needs_references(func):
            return higher_order_gradient(original, mod)
    from ..typeinf import infer_expr
    typed = infer_expr(to_a_normal_form(func.replace(ret_type=None)), mod)
    first = [False]
    _, result = let_chain(typed.body)
    seed = _seed(result.checked_type, result, mode == "first_order", first)
    backward = _Backward(mode)
    grads = backward.scope(typed.body, seed, list(typed.params))
    grad_bindings, grad_tuple = let_chain(grads)
    body = make_lets(grad_bindings, E.Tuple((result, grad_tuple)))
    return E.Function(typed.params, body)
