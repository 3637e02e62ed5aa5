"""LazyGradientInit: compute over ``GradCell[T]`` so that zeros and ones stay lazy
(Relay's ``LazyGradientInit``).

``GradCell[T]`` (from ``gradient.rly``) is ``Raw(T)``, ``One(fn () -> T)`` or
``Zero(fn () -> T)``. Inside each function every tensor value becomes a GradCell:

* ``ones(...)`` / ``ones_like(x)`` become ``One(fn () { ... })``, and ``zeros(...)`` /
  ``zeros_like(x)`` become ``Zero(fn () { ... })``: nothing is allocated until needed;
* ``add`` and ``multiply`` of two operands of the same type become ``@AddGradCell`` /
  ``@MultiplyGradCell`` (given the op as a fallback function), which skip work on ``Zero``
  (and on ``One`` for multiply);
* other ops unwrap their arguments with ``@FromGradCell`` and wrap the result in ``Raw``;
* constants become ``Raw(c)``, and an ``if`` condition is unwrapped.

The function's signature does not change: tensor (and tuple) parameters are wrapped in
``Raw`` on entry and the result is unwrapped with ``@FromGradCell``. The GradCell helpers
are added to the module if ``gradient.rly`` does not define them. Only functions whose
parameters and result are tensors and tuples are rewritten (others, e.g. the Prelude's, are
left alone); inside them closures are supported, ``match``, references, constructors and
global calls are not. NOTE: Relay turns ``zeros_like`` into ``One`` (a bug that makes
``multiply(x, zeros_like(x))`` return ``x``); here it is ``Zero``.

Before/after (abbreviated)::

    fn (%x: Tensor[(2), float32]) { add(%x, zeros_like(%x)) }
    fn (%x: Tensor[(2), float32]) {
      let %x1 = Raw(%x);
      let %z = Zero(fn () { zeros_like(@FromGradCell(%x1)) });
      let %s = @AddGradCell(fn (%a, %b) { add(%a, %b) }, %x1, %z);
      @FromGradCell(%s) }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import IRError
from ..ir import expr as E
from ..ir.functor import post_order
from ..ir.rewrite import let_chain, make_lets, nested_scopes
from ..ir.module import IRModule
from ..ir.types import FuncType, TensorType, TupleType, TypeCall
from .pass_infra import ModulePass, is_skipped_function
from .to_a_normal_form import to_a_normal_form

HELPERS = ("FromGradCell", "AddGradCell", "MultiplyGradCell")

_HELPER_TEXT = """#[version = "0.0.5"]
def @FromGradCell[T](%g: GradCell[T]) -> T {
  match (%g) {
    Raw(%x) => %x,
    One(%f) => %f(),
    Zero(%f) => %f(),
  }
}
def @MultiplyGradCell[T](%multiply: fn (T, T) -> T, %l: GradCell[T], %r: GradCell[T]) -> GradCell[T] {
  match ((%l, %r)) {
    (Zero(_), _) => %l,
    (_, Zero(_)) => %r,
    (One(_), _) => %r,
    (_, One(_)) => %l,
    _ => Raw(%multiply(@FromGradCell(%l), @FromGradCell(%r))),
  }
}
def @AddGradCell[T](%add: fn (T, T) -> T, %l: GradCell[T], %r: GradCell[T]) -> GradCell[T] {
  match ((%l, %r)) {
    (Zero(_), _) => %r,
    (_, Zero(_)) => %l,
    _ => Raw(%add(@FromGradCell(%l), @FromGradCell(%r))),
  }
}
"""

_LAZY = {"ones": "One", "ones_like": "One", "zeros": "Zero", "zeros_like": "Zero"}
_SHORTCUT = {"add": "AddGradCell", "multiply": "MultiplyGradCell"}


def with_grad_cell(mod: IRModule) -> IRModule:
    """A copy of ``mod`` with ``gradient.rly`` and the GradCell helper functions.

    Args:
        mod: the module (not mutated).
    """
    mod = mod.copy()
    mod.import_from_std("gradient.rly")
    if not all(name in mod for name in HELPERS):
        from ..text.parser import parse
        mod.update(parse(_HELPER_TEXT, source_name="lazy_gradient_init", init_module=mod))
    return mod


def _plain_type(ty) -> bool:
    if isinstance(ty, TupleType):
        return all(_plain_type(f) for f in ty.fields)
    return isinstance(ty, TensorType)


class _Lazy:
    def __init__(self, mod):
        self.mod = mod
        self.gradcell = mod.get_global_type_var("GradCell")
        self.raw = mod.lookup_constructor("Raw")
        self.ctors = {"One": mod.lookup_constructor("One"),
                      "Zero": mod.lookup_constructor("Zero")}
        self.helpers = {name: mod.get_global_var(name) for name in HELPERS}
        self.vars: dict = {}

    def cell_type(self, ty):
        if isinstance(ty, TensorType):
            return TypeCall(self.gradcell, (ty,))
        if isinstance(ty, TupleType):
            return TupleType(tuple(self.cell_type(f) for f in ty.fields))
        if isinstance(ty, FuncType):
            return FuncType(tuple(self.cell_type(a) for a in ty.arg_types),
                            self.cell_type(ty.ret_type))
        raise IRError(f"LazyGradientInit: values of type {ty} are not supported")

    def var(self, old):
        new = self.vars.get(old)
        if new is None:
            new = self.vars[old] = E.Var(old.name_hint, self.cell_type(old.checked_type))
        return new

    def wrap(self, expr, ty):
        """GradCell form of a plain value."""
        if isinstance(ty, TensorType):
            return E.Call(self.raw, (expr,))
        return E.Tuple(tuple(self.wrap(E.TupleGetItem(expr, i), f)
                             for i, f in enumerate(ty.fields)))

    def unwrap(self, expr, ty):
        """Plain value of a GradCell-form value."""
        if isinstance(ty, TensorType):
            return E.Call(self.helpers["FromGradCell"], (expr,))
        return E.Tuple(tuple(self.unwrap(E.TupleGetItem(expr, i), f)
                             for i, f in enumerate(ty.fields)))

    def atom(self, node):
        if type(node) is E.Var:
            return self.var(node)
        if type(node) is E.Constant:
            return E.Call(self.raw, (node,))
        raise IRError(f"LazyGradientInit: {type(node).__name__} values are not supported")

    def plain_arg(self, node):
        if type(node) is E.Constant:
            return node
        return self.unwrap(self.var(node), node.checked_type)

    def function(self, func):
        """The rewritten function (same signature)."""
        self.done: dict = {}
        for scope in post_order(func.body, children_of=nested_scopes):
            self.done[scope] = self.scope(scope)
        entry = [(self.var(p), self.wrap(p, p.checked_type)) for p in func.params]
        inner = self.done[func.body]
        result = E.Var("result", self.cell_type(func.body.checked_type))
        body = E.Let(result, inner, self.unwrap(result, func.body.checked_type))
        body = make_lets(entry, body)
        return E.Function(func.params, body, func.ret_type, func.type_params, func.attrs)

    def scope(self, expr):
        bindings, result = let_chain(expr)
        bindings = [(self.var(var), self.value(var, value)) for var, value in bindings]
        if type(result) in (E.Var, E.Constant):
            result = self.atom(result)
        else:
            result = self.value(None, result)
        return make_lets(bindings, result)

    def value(self, var, value):
        kind = type(value)
        if kind in (E.Var, E.Constant):
            return self.atom(value)
        if kind is E.Call and type(value.op) is E.Op:
            return self.op_call(value)
        if kind is E.Call and type(value.op) is E.Var:
            return E.Call(self.var(value.op), tuple(self.atom(a) for a in value.args))
        if kind is E.Tuple:
            return E.Tuple(tuple(self.atom(f) for f in value.fields))
        if kind is E.TupleGetItem:
            return E.TupleGetItem(self.atom(value.tuple_value), value.index)
        if kind is E.If:
            return E.If(self.plain_arg(value.cond), self.done[value.true_branch],
                        self.done[value.false_branch])
        if kind is E.Function:
            return E.Function(tuple(self.var(p) for p in value.params), self.done[value.body],
                              self.cell_type(value.checked_type.ret_type))
        raise IRError(f"LazyGradientInit: {kind.__name__} is not supported "
                      f"(supported: ops, tuples, lets, if, closures)")

    def op_call(self, call):
        name = call.op.name
        plain = E.Call(call.op, tuple(self.plain_arg(a) for a in call.args), call.attrs)
        out_type = call.checked_type
        if name in _LAZY and isinstance(out_type, TensorType):
            return E.Call(self.ctors[_LAZY[name]], (E.Function((), plain),))
        if name in _SHORTCUT and len(call.args) == 2 and isinstance(out_type, TensorType) \
                and call.args[0].checked_type == call.args[1].checked_type == out_type:
            a, b = E.Var("a", out_type), E.Var("b", out_type)
            fallback = E.Function((a, b), E.Call(call.op, (a, b)))
            return E.Call(self.helpers[_SHORTCUT[name]],
                          (fallback, self.atom(call.args[0]), self.atom(call.args[1])))
        if _plain_type(out_type):
            result = E.Var("r")
            return E.Let(result, plain, self.wrap(result, out_type))
        raise IRError(f"LazyGradientInit: op {name} returns a {out_type}")


def lazy_gradient_init(func: E.Function, mod: IRModule) -> E.Function:
    """``func`` rewritten over GradCell values (see the module docstring).

    Args:
        func: a function whose parameters and result are tensors and tuples.
        mod: a module defining GradCell and the helpers (see :func:`with_grad_cell`).

    Returns:
        The rewritten function, with the same signature.

    Raises:
        IRError: on a construct outside the supported fragment.
    """
    from ..typeinf import infer_expr
    typed = infer_expr(to_a_normal_form(func), mod)
    for node in post_order(typed.body):
        if isinstance(node, (E.Match, E.RefCreate, E.RefRead, E.RefWrite, E.GlobalVar,
                             E.Constructor)):
            raise IRError(f"LazyGradientInit: {type(node).__name__} is not supported")
    return _Lazy(mod).function(typed)


def _applies(func) -> bool:
    if func.type_params:
        return False
    ty = func._checked_type
    if ty is None:
        return all(p.type_annotation is not None and _plain_type(p.type_annotation)
                   for p in func.params)
    return all(_plain_type(t) for t in ty.arg_types) and _plain_type(ty.ret_type)


@dataclass(frozen=True)
class LazyGradientInit(ModulePass):
    """Rewrite every function on tensors and tuples to compute over GradCell values."""

    name: ClassVar[str] = "LazyGradientInit"
    opt_level: ClassVar[int] = 2

    def transform_module(self, mod: IRModule, ctx=None) -> IRModule:
        """The module with GradCell helpers and rewritten functions."""
        from .infer_type import InferType
        typed = InferType()(mod)
        new_mod = with_grad_cell(typed)
        for gvar, func in typed.items():
            if gvar.name_hint in HELPERS or is_skipped_function(func) or not _applies(func):
                continue
            new_mod[gvar] = lazy_gradient_init(func, new_mod)
        return new_mod
