"""PartialEvaluate's evaluator: evaluation steps are generators run on an explicit list, so
no program is too deep for it. See :mod:`irlib.transform.partial_evaluate` for the rules.
"""

from __future__ import annotations

import numpy as np

from ..errors import IRError
from ..ir import expr as E
from ..ir.dim_binding import has_symbolic_attrs
from ..ir.functor import operands, pattern_vars, rename_pattern
from ..ir.rewrite import make_lets
from ..op import registry
from ._pe_values import (PV, SConst, SCtor, SFunc, SRef, STuple, Frame, _closed_type,
                         _const_value, _is_atom, _static_match, fuel,
                         meet_with_progress)
from ._rewrite import is_primitive
from .eliminate_common_subexpr import is_stateful

_NEVER_FOLD = frozenset({"device_copy"})


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
        for child in operands(expr):
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
        return make_lets(body_ll, result.dyn)

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
        return make_lets(body_ll, result.dyn)

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
