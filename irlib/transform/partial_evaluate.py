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

import numpy as np

from ..errors import IRError
from ..ir import expr as E
from ..ir.dim_binding import has_symbolic_attrs
from ..ir.functor import children, pattern_vars, post_order, rename_pattern
from ..ir.module import IRModule
from ..ir.type_functor import iter_types
from ..ir.types import TypeVar
from ..op import registry
from ._rewrite import LetMutator, is_primitive
from .eliminate_common_subexpr import is_stateful
from .pass_infra import ModulePass, is_skipped_function
from .to_a_normal_form import ToANormalForm, to_a_normal_form

_NEVER_FOLD = frozenset({"device_copy"})


# -- partial values ------------------------------------------------------------------------------

class PV:
    """A partial value: ``static`` knowledge (None: unknown) and the residual atom ``dyn``."""

    __slots__ = ("static", "dyn")

    def __init__(self, static, dyn):
        self.static = static
        self.dyn = dyn


class SConst:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class STuple:
    __slots__ = ("fields",)

    def __init__(self, fields):
        self.fields = fields


class SCtor:
    __slots__ = ("ctor", "fields")

    def __init__(self, ctor, fields):
        self.ctor = ctor
        self.fields = fields


class SFunc:
    __slots__ = ("func", "frame", "key")

    def __init__(self, func, frame, key):
        self.func = func
        self.frame = frame
        self.key = key


class SRef:
    __slots__ = ()


class Frame:
    """Variable -> PV bindings of one activation, chained to the defining frame."""

    __slots__ = ("env", "parent")

    def __init__(self, parent=None):
        self.env: dict = {}
        self.parent = parent

    def lookup(self, var):
        frame = self
        while frame is not None:
            pv = frame.env.get(var)
            if pv is not None:
                return pv
            frame = frame.parent
        return None


def static_size(pv) -> int:
    """How much is known about ``pv``: 0 if nothing, else 1 + the fields' sizes."""
    size, stack = 0, [pv]
    while stack:
        static = stack.pop().static
        if static is None:
            continue
        size += 1
        if isinstance(static, (STuple, SCtor)):
            stack.extend(static.fields)
    return size


def fuel(args) -> tuple:
    """The termination measure of a call: one natural number per argument.

    An argument's fuel is its static size plus the absolute value of a known integer
    scalar (a known list or nat shrinks; a known counter moves toward 0). A recursive
    inlining must make progress: some argument's fuel must fall below the meet
    (element-wise minimum) of the active inlinings of the same function, as in Relay.
    """
    result = []
    for arg in args:
        amount = static_size(arg)
        static = arg.static
        if isinstance(static, SConst):
            value = np.asarray(static.value)
            if value.ndim == 0 and value.dtype.kind in "iu":
                amount += abs(int(value))
        result.append(amount)
    return tuple(result)


def meet_with_progress(active: tuple, new: tuple):
    """(element-wise minimum, whether some element of ``new`` is below ``active``)."""
    if len(active) != len(new):
        return new, False
    progress = any(b < a for a, b in zip(active, new))
    return tuple(min(a, b) for a, b in zip(active, new)), progress


def _const_value(pv):
    """The numpy value of a known constant or tuple of constants, else None."""
    static = pv.static
    if isinstance(static, SConst):
        return static.value
    if isinstance(static, STuple):
        values = [_const_value(f) for f in static.fields]
        return None if any(v is None for v in values) else tuple(values)
    return None


def _wrap(bindings, result):
    for var, value in reversed(bindings):
        result = E.Let(var, value, result)
    return result


# -- the evaluator ----------------------------------------------------------------------------------

class _PartialEvaluator:
    """Evaluation steps are generators that ``yield`` sub-evaluations (generators) to
    :meth:`run`, which keeps them on a list: no Python recursion however deep the program."""

    def __init__(self, mod):
        self.mod = mod
        self.store: dict = {}     # SRef -> PV
        self.active: dict = {}    # function key -> stack of argument sizes
        self.root = Frame()

    @staticmethod
    def run(gen):
        stack, value = [gen], None
        while stack:
            try:
                request = stack[-1].send(value)
            except StopIteration as stop:
                stack.pop()
                value = stop.value
                continue
            stack.append(request)
            value = None
        return value

    def emit(self, ll, value, name="t") -> E.Var:
        var = E.Var(name)
        ll.append((var, value))
        return var

    # -- atoms ------------------------------------------------------------------------------
    def atom(self, node, frame):
        kind = type(node)
        if kind is E.Var:
            pv = frame.lookup(node)
            if pv is None:
                raise IRError(f"PartialEvaluate: unbound variable %{node.name_hint}")
            return pv
        if kind is E.Constant:
            return PV(SConst(node.data.numpy()), node)
        if kind is E.GlobalVar:
            if self.mod is not None and node in self.mod:
                return PV(SFunc(self.mod[node], self.root, node), node)
            return PV(None, node)
        return PV(None, node)   # an op or constructor used as a value

    # -- expressions ---------------------------------------------------------------------------
    def eval(self, expr, frame, ll):
        """Generator: the PV of ``expr``, residual code appended to ``ll``."""
        while type(expr) is E.Let:
            value = expr.value
            if type(value) is E.Function and not is_primitive(value):
                pv = self.closure(value, frame, expr.var.name_hint)
                frame.env[expr.var] = pv    # before the body: let-bound functions recurse
                yield self.residualize(pv, ll)
            elif isinstance(value, (E.Var, E.Constant, E.GlobalVar)):
                frame.env[expr.var] = self.atom(value, frame)
            else:
                frame.env[expr.var] = yield self.eval(value, frame, ll)
            expr = expr.body
        kind = type(expr)
        if kind in (E.Var, E.Constant, E.GlobalVar, E.Op, E.Constructor):
            return self.atom(expr, frame)
        if kind is E.Function and is_primitive(expr):
            return PV(None, self.emit(ll, expr, "f"))
        if kind is E.Function:
            pv = self.closure(expr, frame, "f")
            yield self.residualize(pv, ll)
            return pv
        args = []
        for child in _operands(expr):
            args.append(self.atom(child, frame) if _is_atom(child)
                        else (yield self.eval(child, frame, ll)))
        if kind is E.Call:
            return (yield self.call(expr, args, ll))
        if kind is E.Tuple:
            return PV(STuple(args), self.emit(ll, E.Tuple(tuple(a.dyn for a in args))))
        if kind is E.TupleGetItem:
            static = args[0].static
            if isinstance(static, STuple):
                return static.fields[expr.index]
            return PV(None, self.emit(ll, E.TupleGetItem(args[0].dyn, expr.index)))
        if kind is E.If:
            return (yield self.branch_if(expr, args[0], frame, ll))
        if kind is E.Match:
            return (yield self.match(expr, args[0], frame, ll))
        if kind is E.RefCreate:
            ref = SRef()
            self.store[ref] = args[0]
            return PV(ref, self.emit(ll, E.RefCreate(args[0].dyn), "r"))
        if kind is E.RefRead:
            known = self.store.get(args[0].static) if isinstance(args[0].static, SRef) else None
            if known is not None:
                return known
            return PV(None, self.emit(ll, E.RefRead(args[0].dyn)))
        if kind is E.RefWrite:
            ref, value = args
            if isinstance(ref.static, SRef):
                self.store[ref.static] = value
            else:
                self.store = {}
            return PV(STuple([]), self.emit(ll, E.RefWrite(ref.dyn, value.dyn), "u"))
        raise IRError(f"PartialEvaluate has no rule for {kind.__name__}")

    def closure(self, func, frame, name):
        return PV(SFunc(func, frame, func), E.Var(name))

    def residualize(self, pv, ll):
        """Generator: emit ``let <pv.dyn> = fn (...) { <body with unknown params> }``."""
        static = pv.static
        func = static.func
        frame = Frame(static.frame)
        own = set(func.type_params)
        params = tuple(E.Var(p.name_hint, _closed_type(p.type_annotation, own))
                       for p in func.params)
        for old, new in zip(func.params, params):
            frame.env[old] = PV(None, new)
        zero = (0,) * len(func.params)
        body = yield self.activation(static.key, zero, func.body, frame, fresh_store=True)
        ll.append((pv.dyn, E.Function(params, body, _closed_type(func.ret_type, own),
                                      func.type_params, func.attrs)))
        return pv

    def activation(self, key, size, body, frame, fresh_store):
        """Generator: the residual code of ``body`` in its own let list."""
        saved = self.store
        if fresh_store:
            self.store = {}
        self.active.setdefault(key, []).append(size)
        body_ll = []
        try:
            result = yield self.eval(body, frame, body_ll)
        finally:
            self.active[key].pop()
            self.store = saved
        return _wrap(body_ll, result.dyn)

    # -- calls ---------------------------------------------------------------------------------
    def call(self, node, args, ll):
        callee, args = args[0], args[1:]
        op = node.op
        if type(op) is E.Op:
            return self.op_call(node, args, ll)
        if type(op) is E.Constructor:
            dyn = self.emit(ll, E.Call(op, tuple(a.dyn for a in args)))
            return PV(SCtor(op, args), dyn)
        static = callee.static
        if isinstance(static, SFunc):
            size = fuel(args)
            sizes = self.active.get(static.key)
            progress = not sizes
            if sizes:
                size, progress = meet_with_progress(sizes[-1], size)
            if progress:
                return (yield self.inline(static, size, args, ll))
        dyn = self.emit(ll, E.Call(callee.dyn, tuple(a.dyn for a in args)))
        self.store = {}   # unknown code may write any reference
        return PV(None, dyn)

    def inline(self, static, size, args, ll):
        func = static.func
        frame = Frame(static.frame)
        for param, arg in zip(func.params, args):
            frame.env[param] = arg
        self.active.setdefault(static.key, []).append(size)
        try:
            result = yield self.eval(func.body, frame, ll)
        finally:
            self.active[static.key].pop()
        return result

    def op_call(self, node, args, ll):
        op = node.op
        if args and op.name not in _NEVER_FOLD and not is_stateful(op) \
                and not has_symbolic_attrs(node.attrs):   # sizes known only at run time
            values = [_const_value(a) for a in args]
            if all(v is not None for v in values):
                try:
                    result = registry.evaluate(op.name, values, node.attrs)
                except IRError:
                    result = None   # left for run time, where the error has context
                if result is not None:
                    return self.constant(result, ll)
        dyn = self.emit(ll, E.Call(op, tuple(a.dyn for a in args), node.attrs))
        return PV(None, dyn)

    def constant(self, value, ll):
        if isinstance(value, tuple):
            fields = [self.constant(v, ll) for v in value]
            return PV(STuple(fields), self.emit(ll, E.Tuple(tuple(f.dyn for f in fields))))
        array = np.asarray(value)
        return PV(SConst(array), E.Constant(array))

    # -- control flow ----------------------------------------------------------------------------
    def branch_if(self, node, cond, frame, ll):
        if isinstance(cond.static, SConst):
            branch = node.true_branch if bool(cond.static.value) else node.false_branch
            return (yield self.eval(branch, frame, ll))
        branches = []
        for branch in (node.true_branch, node.false_branch):
            branches.append((yield self.branch_scope(branch, frame)))
        self.store = {}
        return PV(None, self.emit(ll, E.If(cond.dyn, *branches)))

    def branch_scope(self, expr, frame):
        saved = self.store
        self.store = dict(saved)
        body_ll = []
        try:
            result = yield self.eval(expr, frame, body_ll)
        finally:
            self.store = saved
        return _wrap(body_ll, result.dyn)

    def match(self, node, data, frame, ll):
        for clause in node.clauses:
            outcome, bindings = _static_match(clause.lhs, data)
            if outcome is None:
                break
            if outcome:
                frame.env.update(bindings)
                return (yield self.eval(clause.rhs, frame, ll))
        clauses = []
        for clause in node.clauses:
            mapping = {v: E.Var(v.name_hint) for v in pattern_vars(clause.lhs)}
            for old, new in mapping.items():
                frame.env[old] = PV(None, new)
            rhs = yield self.branch_scope(clause.rhs, frame)
            clauses.append(E.Clause(rename_pattern(clause.lhs, mapping), rhs))
        self.store = {}
        return PV(None, self.emit(ll, E.Match(data.dyn, tuple(clauses), node.complete)))


def _closed_type(ty, own):
    """``ty`` unless it mentions type variables other than ``own``: a function inlined out
    of a polymorphic one would otherwise refer to type parameters no longer in scope (type
    inference fills the annotation in again)."""
    if ty is None:
        return None
    if any(isinstance(t, TypeVar) and t not in own for t in iter_types(ty)):
        return None
    return ty


def _is_atom(node):
    return isinstance(node, (E.Var, E.Constant, E.GlobalVar, E.Op, E.Constructor))


def _operands(expr):
    """The sub-expressions evaluated before ``expr`` itself (not branches)."""
    kind = type(expr)
    if kind is E.Call:
        return (expr.op,) + tuple(expr.args)
    if kind is E.Tuple:
        return expr.fields
    if kind is E.TupleGetItem:
        return (expr.tuple_value,)
    if kind is E.If:
        return (expr.cond,)
    if kind is E.Match:
        return (expr.data,)
    if kind is E.RefCreate:
        return (expr.value,)
    if kind is E.RefRead:
        return (expr.ref,)
    if kind is E.RefWrite:
        return (expr.ref, expr.value)
    return ()


def _static_match(pattern, pv):
    """(True, bindings) if ``pattern`` surely matches, (False, None) if surely not, and
    (None, None) if it depends on unknown parts."""
    bindings, unknown, stack = {}, False, [(pattern, pv)]
    while stack:
        pat, value = stack.pop()
        kind = type(pat)
        if kind is E.PatternWildcard:
            continue
        if kind is E.PatternVar:
            bindings[pat.var] = value
            continue
        static = value.static
        if kind is E.PatternConstructor:
            if not isinstance(static, SCtor):
                unknown = True
                continue
            if static.ctor is not pat.constructor and static.ctor.tag != pat.constructor.tag:
                return False, None
            stack.extend(zip(pat.patterns, static.fields))
        elif kind is E.PatternTuple:
            if not isinstance(static, STuple):
                unknown = True
                continue
            stack.extend(zip(pat.patterns, static.fields))
    return (None, None) if unknown else (True, bindings)


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


class _DropRefs(LetMutator):
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
