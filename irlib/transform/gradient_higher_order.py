"""Higher-order reverse-mode AD with references and closures (Relay's ``Gradient``).

Used by :func:`irlib.transform.gradient` in ``"higher_order"`` mode for code the static
backward pass cannot handle: closures, recursion (local or global), ``match``, references
and constructors. Every tensor value ``v: T`` becomes a pair ``(v, ref(zeros_like(v))) :
(T, Ref[T])`` holding its primal value and its gradient cell; tuples, functions, references
and ADT type arguments are transformed field by field (``List[T]`` becomes ``List[(T,
Ref[T])]``). A reference ``%bp`` holds the backpropagator, a closure ``fn () -> ()``. Each
op call computes its primal result, pairs it with a fresh gradient cell and pushes a new
backpropagator that adds the op's input gradients (its registered rule) into the
arguments' cells and then calls the previous backpropagator. After the forward pass the
first leaf of the result is seeded with ``ones_like``, ``%bp`` is run, and the parameters'
cells are read.

Calls of global functions go to transformed copies ``@<name>_grad_ho`` that take the
backpropagator reference as an extra first parameter; they are added to the module.

Restrictions (as in Relay): parameters are tensors, no type polymorphism, the result is
built from tensors and tuples, and every op producing floats has a gradient rule.

Before/after (abbreviated)::

    fn (%x) { multiply(%x, %x) }
    fn (%x) { let %bp = ref(fn () { () }); let %x1 = (%x, ref(zeros_like(%x)));
              let %t = multiply(%x1.0, %x1.0); let %v = (%t, ref(zeros_like(%t)));
              let %prev = ref_read(%bp);
              ref_write(%bp, fn () { <add %v's gradient times the rule into %x1.1>; %prev() });
              ref_write(%v.1, ones_like(%v.0)); ref_read(%bp)();
              (%v.0, (ref_read(%x1.1),)) }
"""

from __future__ import annotations

from ..errors import GradientError, IRError
from ..ir import expr as E
from ..ir.functor import pattern_vars, post_order, rename_pattern
from ..ir.types import TensorType, TupleType
from ..ir.rewrite import let_chain, make_lets, nested_scopes, substitute
from ._ad_values import (_BP_TYPE, _accumulate, _grad_read, _is_float, _op, _pair,
                         _primal, ad_type)
from .gradient import call_grad_rule
from .to_a_normal_form import to_a_normal_form



class _Transformer:
    """Transforms one typed ANF function body; inner scopes are built first (no recursion)."""

    def __init__(self, bp: E.Var, globals_map: dict, mod):
        self.bp = bp
        self.globals_map = globals_map
        self.mod = mod
        self.vars: dict = {}
        self.done: dict = {}

    def var(self, old):
        new = self.vars.get(old)
        if new is None:
            new = self.vars[old] = E.Var(old.name_hint, ad_type(old.checked_type))
        return new

    def transform(self, body):
        """The transformed ``body``; nested scopes (branches, match clauses, function
        bodies) are transformed first, found by one iterative post-order walk."""
        for scope in post_order(body, children_of=nested_scopes):
            self.done[scope] = self._scope(scope)
        return self.done[body]

    def _scope(self, scope):
        bindings, result = let_chain(scope)
        out = []
        for var, value in bindings:
            self._binding(var, value, out)
        return make_lets(out, self.lift(result, out))

    def lift(self, atom, out):
        """The transformed value of an atom (constants get a gradient cell)."""
        kind = type(atom)
        if kind is E.Var:
            return self.var(atom)
        if kind is E.Constant:
            c = E.Var("c")
            out.append((c, _pair(atom, atom.checked_type, out)))
            return c
        if kind is E.GlobalVar:
            fty = atom.checked_type
            params = tuple(E.Var(f"a{i}", ad_type(t)) for i, t in enumerate(fty.arg_types))
            return E.Function(params, E.Call(self.global_var(atom), (self.bp,) + params))
        if kind is E.Constructor:
            params = tuple(E.Var(f"a{i}") for i in range(len(atom.inputs)))
            return E.Function(params, E.Call(atom, params))
        raise IRError(f"gradient (higher_order): the operator {atom.name} used as a value "
                      f"is not supported")

    def primal_arg(self, atom):
        if type(atom) is E.Constant:
            return atom
        return _primal(self.var(atom), atom.checked_type)

    def global_var(self, gvar):
        new = self.globals_map.get(gvar)
        if new is None:
            new = self.globals_map[gvar] = E.GlobalVar(gvar.name_hint + "_grad_ho")
        return new

    def _binding(self, var, value, out):
        new_var = self.var(var)
        kind = type(value)
        if kind is E.Call and type(value.op) is E.Op:
            self._op_call(var, value, out)
            return
        if kind in (E.Var, E.Constant, E.GlobalVar, E.Constructor):
            new = self.lift(value, out)
        elif kind is E.Call:
            args = tuple(self.lift(a, out) for a in value.args)
            if type(value.op) is E.Constructor:
                new = E.Call(value.op, args)
            elif type(value.op) is E.GlobalVar:
                new = E.Call(self.global_var(value.op), (self.bp,) + args)
            else:
                new = E.Call(self.lift(value.op, out), args)
        elif kind is E.Tuple:
            new = E.Tuple(tuple(self.lift(f, out) for f in value.fields))
        elif kind is E.TupleGetItem:
            new = E.TupleGetItem(self.lift(value.tuple_value, out), value.index)
        elif kind is E.If:
            new = E.If(self.primal_arg(value.cond), self.done[value.true_branch],
                       self.done[value.false_branch])
        elif kind is E.Match:
            clauses = []
            for clause in value.clauses:
                mapping = {v: self.var(v) for v in pattern_vars(clause.lhs)}
                clauses.append(E.Clause(rename_pattern(clause.lhs, mapping),
                                        self.done[clause.rhs]))
            new = E.Match(self.lift(value.data, out), tuple(clauses), value.complete)
        elif kind is E.Function:
            params = tuple(self.var(p) for p in value.params)
            new = E.Function(params, self.done[value.body],
                             ad_type(value.checked_type.ret_type))
        elif kind is E.RefCreate:
            new = E.RefCreate(self.lift(value.value, out))
        elif kind is E.RefRead:
            new = E.RefRead(self.lift(value.ref, out))
        elif kind is E.RefWrite:
            new = E.RefWrite(self.lift(value.ref, out), self.lift(value.value, out))
        else:
            raise IRError(f"gradient (higher_order): no rule for {kind.__name__}")
        out.append((new_var, new))

    def _op_call(self, var, call, out):
        new_var = self.var(var)
        out_type = var.checked_type
        forward = E.Call(call.op, tuple(self.primal_arg(a) for a in call.args), call.attrs)
        fwd = E.Var(var.name_hint + "_fwd")
        out.append((fwd, forward))
        out.append((new_var, _pair(fwd, out_type, out)))
        wrt = [a for a in call.args if type(a) is E.Var and _is_float(a.checked_type)]
        if not _is_float(out_type) or not wrt:
            return
        op_def = call.op.op_def
        if op_def.grad is None:
            raise GradientError(f"gradient: operator {op_def.name!r} has no registered "
                                f"gradient (input has operators with missing gradients)")
        grads = call_grad_rule(op_def, forward, _grad_read(new_var, out_type))
        back = []
        for arg, grad in zip(call.args, grads):
            if type(arg) is not E.Var or not _is_float(arg.checked_type):
                continue
            if isinstance(grad, E.TupleWrapper):
                grad = grad.astuple()
            _accumulate(self.var(arg), arg.checked_type, substitute(grad, {forward: fwd}),
                        back)
        prev = E.Var("prev")
        out.append((prev, E.RefRead(self.bp)))
        back_fn = E.Function((), make_lets(back, E.Call(prev, ())))
        out.append((E.Var("u"), E.RefWrite(self.bp, back_fn)))


def _first_leaf(expr, ty):
    """(path expression, type) of the first tensor leaf of a transformed result."""
    while isinstance(ty, TupleType):
        if not ty.fields:
            return None, None
        expr, ty = E.TupleGetItem(expr, 0), ty.fields[0]
    return (expr, ty) if isinstance(ty, TensorType) else (None, None)


def _typed_anf(func, mod):
    from ..typeinf import infer_expr
    return infer_expr(to_a_normal_form(func.replace(ret_type=None)), mod)


def higher_order_gradient(func: E.Function, mod=None) -> E.Function:
    """The gradient function of ``func`` built with references and closures.

    Args:
        func: a closed function whose parameters are tensors.
        mod: the module of the globals ``func`` calls; their transformed copies are added
            to it (in place) as ``@<name>_grad_ho``.

    Returns:
        ``fn (params) { (result, (gradients...)) }`` (untyped).

    Raises:
        IRError: on a non-tensor parameter, polymorphism, a non-tensor result, or an op
            without a gradient rule.
    """
    typed = _typed_anf(func, mod)
    for param in typed.params:
        if not isinstance(param.checked_type, TensorType):
            raise IRError(f"gradient (higher_order): parameter %{param.name_hint} must be a "
                          f"tensor, got {param.checked_type}")
    if typed.type_params:
        raise IRError("gradient (higher_order): type polymorphism is not supported")
    globals_map: dict = {}
    bp = E.Var("bp", _BP_TYPE)
    transformer = _Transformer(bp, globals_map, mod)
    out = [(bp, E.RefCreate(E.Function((), E.Tuple(()))))]
    for param in typed.params:
        out.append((transformer.var(param), _pair(param, param.checked_type, out)))
    body = transformer.transform(typed.body)
    bindings, result = let_chain(body)
    out.extend(bindings)
    res_type = typed.body.checked_type
    leaf, leaf_type = _first_leaf(result, res_type)
    if leaf is not None:
        out.append((E.Var("u"), E.RefWrite(E.TupleGetItem(leaf, 1),
                                           _op("ones_like", E.TupleGetItem(leaf, 0)))))
    out.append((E.Var("u"), E.Call(E.RefRead(bp), ())))
    grads = E.Tuple(tuple(E.RefRead(E.TupleGetItem(transformer.var(p), 1))
                          for p in typed.params))
    body = make_lets(out, E.Tuple((_primal(result, res_type), grads)))
    _transform_globals(globals_map, mod)
    return E.Function(typed.params, body)


def _transform_globals(globals_map: dict, mod):
    """Add ``@g_grad_ho`` for every global reached (worklist: they may call others)."""
    done: dict = {}
    while len(done) < len(globals_map):
        for gvar in [g for g in globals_map if g not in done]:
            if mod is None or gvar not in mod:
                raise IRError(f"gradient: @{gvar.name_hint} needs the module that defines it")
            typed = _typed_anf(mod[gvar], mod)
            bp = E.Var("bp", _BP_TYPE)
            transformer = _Transformer(bp, globals_map, mod)
            params = (bp,) + tuple(transformer.var(p) for p in typed.params)
            body = transformer.transform(typed.body)
            done[gvar] = E.Function(params, body, ad_type(typed.body.checked_type),
                                    typed.type_params)
    for gvar, func in done.items():
        mod[globals_map[gvar]] = func


def needs_references(func: E.Function) -> bool:
    """Whether ``func`` uses closures, recursion, ``match``, references or constructors
    (what the static backward pass of :mod:`.gradient` does not handle)."""
    for node in post_order(func.body):
        kind = type(node)
        if kind in (E.Function, E.Match, E.RefCreate, E.RefRead, E.RefWrite, E.Constructor):
            return True
        if kind is E.Call and type(node.op) not in (E.Op, E.GlobalVar):
            return True
    return False
