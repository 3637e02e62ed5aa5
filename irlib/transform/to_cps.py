"""ToCPS: continuation-passing style (Relay's ``ToCPS`` / ``to_cps`` / ``un_cps``).

``to_cps`` turns a function of type ``(A...) -> B`` into one of type
``[answer](A'..., fn (B') -> answer) -> answer``: a fresh type parameter ``answer`` is added
and a last parameter ``%k``, the continuation, receives the result. Primed types are the CPS
types (every function type inside gets a continuation parameter too). The body is first put
in A-normal form; then, walking each let chain:

* an op, constructor, tuple, projection or reference binding stays a ``let``;
* a call of a function value or a global becomes a call with a reified continuation
  ``fn (%x) { <rest of the chain> }``, or with the current continuation itself when the
  rest is just ``%x`` (a tail call);
* ``if`` and ``match`` reify the join continuation once and pass it to every branch;
* a function literal gets its own continuation parameter;
* the final atom ``%r`` becomes ``%k(%r)``.

Every call is then a tail call, so evaluation needs no control stack. ``un_cps`` wraps a CPS
function back into its original interface (higher-order inputs and outputs stay in CPS).

Before/after::

    fn (%x: float32) { %x }
    fn [answer](%x: float32, %k: fn (float32) -> answer) -> answer { %k(%x) }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import IRError
from ..ir import expr as E
from ..ir.functor import pattern_vars, post_order, rename_pattern
from ..ir.rewrite import let_chain
from ..ir.module import IRModule
from ..ir.types import FuncType, RefType, TupleType, TypeCall, TypeVar
from ._rewrite import is_primitive
from .pass_infra import ModulePass, is_skipped_function
from .to_a_normal_form import to_a_normal_form


def cps_type(ty, answer: TypeVar):
    """The CPS version of ``ty``: every function type gets a continuation parameter.

    Args:
        ty: a type (or None).
        answer: the answer type variable.
    """
    if ty is None:
        return None
    if isinstance(ty, FuncType):
        args = tuple(cps_type(a, answer) for a in ty.arg_types)
        cont = FuncType((cps_type(ty.ret_type, answer),), answer)
        return FuncType(args + (cont,), answer, ty.type_params, ty.type_constraints)
    if isinstance(ty, TupleType):
        return TupleType(tuple(cps_type(f, answer) for f in ty.fields))
    if isinstance(ty, RefType):
        return RefType(cps_type(ty.value, answer))
    if isinstance(ty, TypeCall):
        return TypeCall(ty.func, tuple(cps_type(a, answer) for a in ty.args))
    return ty


class _Converter:
    """Converts one ANF-form, type-checked function. Scopes (function bodies, branches) are
    found top-down with an explicit stack, then converted innermost first."""

    def __init__(self, answer: TypeVar, global_map: dict):
        self.answer = answer
        self.global_map = global_map
        self.vars: dict = {}       # original var -> CPS var
        # Keyed by (scope, continuation) and (let var, value): one expression object may be
        # a scope twice (a variable that is the branch of two ifs) with different
        # continuations, and one If or Function object may be bound by two lets.
        self.done: dict = {}       # (scope expr, continuation) -> converted expr
        self.branch_k: dict = {}   # (let var, If/Match node) -> continuation of its branches
        self.fn_k: dict = {}       # (let var, Function node) -> its continuation parameter

    def var(self, old: E.Var) -> E.Var:
        new = self.vars.get(old)
        if new is None:
            ty = old._checked_type or old.type_annotation
            new = self.vars[old] = E.Var(old.name_hint, cps_type(ty, self.answer))
        return new

    def cont_var(self, name, arg_type) -> E.Var:
        return E.Var(name, FuncType((cps_type(arg_type, self.answer),), self.answer))

    def atom(self, node):
        kind = type(node)
        if kind is E.Var:
            return self.var(node)
        if kind is E.GlobalVar:
            if node not in self.global_map:
                raise IRError(f"to_cps: @{node.name_hint} is not defined in the module given")
            return self.global_map[node]
        if kind is E.Constructor:
            return self._constructor_value(node)
        if kind is E.Op:
            raise IRError(f"to_cps: the operator {node.name} used as a value is not supported")
        return node   # a constant

    def _constructor_value(self, ctor):
        """A constructor used as a function value: ``fn (%a..., %k) { %k(C(%a...)) }``."""
        params = [E.Var(f"a{i}") for i in range(len(ctor.inputs))]
        k = E.Var("k")
        return E.Function(params + [k], E.Call(k, (E.Call(ctor, tuple(params)),)))

    def convert(self, func: E.Function, k: E.Var) -> E.Expr:
        """The CPS body of ``func`` for the continuation ``k``: every (scope, continuation)
        pair is found by one iterative post-order walk and built after those inside it."""
        for scope, cont in post_order((func.body, k), children_of=self._discover):
            self.done[scope, cont] = self._build(scope, cont)
        return self.done[func.body, k]

    def _discover(self, pair) -> list:
        """The (scope, continuation) pairs nested directly in ``pair``'s scope (branches get
        a join continuation unless in tail position; functions get their own)."""
        scope, cont = pair
        found = []
        bindings, result = let_chain(scope)
        for index, (var, value) in enumerate(bindings):
            tail = index == len(bindings) - 1 and result is var
            kind = type(value)
            if kind in (E.If, E.Match):
                branch_k = cont if tail else self.cont_var("join", var.checked_type)
                self.branch_k[var, value] = branch_k
                branches = (value.true_branch, value.false_branch) if kind is E.If else \
                    tuple(c.rhs for c in value.clauses)
                found.extend((b, branch_k) for b in branches)
            elif kind is E.Function:
                if is_primitive(value):
                    raise IRError("to_cps: Primitive functions are not supported")
                fn_k = self.cont_var("k", value.checked_type.ret_type)
                self.fn_k[var, value] = fn_k
                found.append((value.body, fn_k))
        return found

    def _build(self, scope, cont):
        bindings, result = let_chain(scope)
        if bindings and result is bindings[-1][0] and self._is_control(bindings[-1][1]):
            # The last binding is in tail position: it gets ``cont`` directly.
            var, value = bindings.pop()
            body = self._control(var, value, cont, None)
        else:
            body = E.Call(cont, (self.atom(result),))
        for var, value in reversed(bindings):
            if self._is_control(value):
                body = self._control(var, value, cont, body)
            else:
                body = E.Let(self.var(var), self._simple(var, value), body)
        return body

    @staticmethod
    def _is_control(value):
        kind = type(value)
        if kind in (E.If, E.Match):
            return True
        return kind is E.Call and type(value.op) not in (E.Op, E.Constructor)

    def _control(self, var, value, cont, rest):
        """``let var = value; rest`` for a call, ``if`` or ``match``; ``rest`` is None when
        the value is in tail position."""
        kind = type(value)
        if kind is E.Call:
            k = cont if rest is None else E.Function((self.var(var),), rest)
            args = tuple(self.atom(a) for a in value.args) + (k,)
            return E.Call(self.atom(value.op), args)
        branch_k = self.branch_k[var, value]
        if kind is E.If:
            node = E.If(self.atom(value.cond), self.done[value.true_branch, branch_k],
                        self.done[value.false_branch, branch_k])
        else:
            clauses = []
            for clause in value.clauses:
                mapping = {v: self.var(v) for v in pattern_vars(clause.lhs)}
                clauses.append(E.Clause(rename_pattern(clause.lhs, mapping),
                                        self.done[clause.rhs, branch_k]))
            node = E.Match(self.atom(value.data), tuple(clauses), value.complete)
        if rest is None:
            return node
        return E.Let(branch_k, E.Function((self.var(var),), rest), node)

    def _simple(self, var, value):
        kind = type(value)
        if kind is E.Function:
            k = self.fn_k[var, value]
            params = tuple(self.var(p) for p in value.params) + (k,)
            return E.Function(params, self.done[value.body, k], self.answer,
                              value.type_params, value.attrs)
        if kind is E.Call:
            return E.Call(value.op, tuple(self.atom(a) for a in value.args), value.attrs)
        if kind is E.Tuple:
            return E.Tuple(tuple(self.atom(f) for f in value.fields))
        if kind is E.TupleGetItem:
            return E.TupleGetItem(self.atom(value.tuple_value), value.index)
        if kind is E.RefCreate:
            return E.RefCreate(self.atom(value.value))
        if kind is E.RefRead:
            return E.RefRead(self.atom(value.ref))
        if kind is E.RefWrite:
            return E.RefWrite(self.atom(value.ref), self.atom(value.value))
        return self.atom(value)


def _cps_function(func: E.Function, mod, global_map: dict) -> E.Function:
    from ..typeinf import infer_expr
    typed = infer_expr(to_a_normal_form(func), mod)
    answer = TypeVar("answer")
    converter = _Converter(answer, global_map)
    k = converter.cont_var("k", typed.checked_type.ret_type)
    body = converter.convert(typed, k)
    params = tuple(converter.var(p) for p in typed.params) + (k,)
    return E.Function(params, body, answer, tuple(typed.type_params) + (answer,), func.attrs)


def _referenced_globals(func) -> list:
    return [n for n in post_order(func) if type(n) is E.GlobalVar]


def to_cps(func: E.Function, mod: IRModule | None = None) -> E.Function:
    """The CPS version of ``func`` (see the module docstring).

    Every global function ``@g`` that ``func`` reaches is converted too and added to ``mod``
    (in place) as ``@g_cps``; the result calls those.

    Args:
        func: a function without graph sharing problems (it is put in ANF first).
        mod: the module defining the globals and types ``func`` uses.

    Returns:
        The CPS function (type parameters: ``func``'s plus ``answer``).

    Raises:
        IRError: on a Primitive function, an operator used as a value, or a global
            without a module.
    """
    if not isinstance(func, E.Function):
        raise TypeError(f"to_cps expects a Function, got {type(func).__name__}")
    global_map: dict = {}
    pending = list(_referenced_globals(func))
    while pending:
        gvar = pending.pop()
        if gvar in global_map:
            continue
        if mod is None or gvar not in mod:
            raise IRError(f"to_cps: @{gvar.name_hint} is not defined in the module given")
        global_map[gvar] = E.GlobalVar(gvar.name_hint + "_cps")
        pending.extend(_referenced_globals(mod[gvar]))
    converted = {cps_gvar: _cps_function(mod[gvar], mod, global_map)
                 for gvar, cps_gvar in global_map.items()}
    result = _cps_function(func, mod, global_map)
    for cps_gvar, cps_func in converted.items():
        mod[cps_gvar] = cps_func
    return result


@dataclass(frozen=True)
class ToCPS(ModulePass):
    """Convert every function of the module to CPS (calls between globals stay direct:
    ``@g`` names the CPS version of ``@g`` afterwards). Applied to a Function, returns the
    CPS Function, as Relay's Python ``ToCPS(expr)`` does."""

    name: ClassVar[str] = "ToCPS"
    opt_level: ClassVar[int] = 1

    def transform_module(self, mod: IRModule, ctx=None) -> IRModule:
        """The module with every function in CPS."""
        new_mod = mod.copy()
        global_map = {g: g for g, _ in mod.items()}
        for gvar, func in mod.items():
            if is_skipped_function(func) or is_primitive(func):
                continue
            new_mod[gvar] = _cps_function(func, mod, global_map)
        return new_mod


from ._un_cps import un_cps  # noqa: E402,F401  (its inverse; importable from here too)
