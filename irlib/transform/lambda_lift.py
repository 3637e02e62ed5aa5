"""LambdaLift: turn nested functions into global functions (Relay's ``LambdaLift``).

Every function literal inside a global (except ``Primitive`` and ``Compiler`` functions)
becomes a new global ``@lifted_name<hash>``, innermost first. A function with no free
variables is replaced by the global itself. A function that captures variables becomes a
global that *takes the captured variables* and returns the function (marked ``Closure=1``),
and the literal is replaced by ``@lifted(captured...)``. A let-bound recursive function's
calls of itself are redirected to the lifted global. A structurally identical lifted global
is reused. Run InferType first so that the new parameters get types.

Before/after::

    def @main(%x) { (fn (%y) { add(%x, %y) })(%x) }
    def @lifted_name123(%x, Closure=1) { fn (%y) { add(%x, %y) } }
    def @main(%x) { @lifted_name123(%x)(%x) }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import expr as E
from ..ir.functor import ExprFunctor, free_vars, post_order, rebuild
from ..ir.module import IRModule
from ..ir.structural import structural_equal, structural_hash
from ..ir.rewrite import substitute
from ._rewrite import is_primitive, known_type
from .pass_infra import ModulePass


class _Lift(ExprFunctor):
    def __init__(self, top: E.Function, new_mod: IRModule):
        super().__init__()
        self.top = top
        self.new_mod = new_mod
        self.recursive_binder: dict = {}
        for node in post_order(top):
            if type(node) is E.Let and isinstance(node.value, E.Function):
                self.recursive_binder[node.value] = node.var

    def _dispatch(self, node, results):
        new = rebuild(node, results)
        if type(node) is not E.Function or node is self.top or is_primitive(node) \
                or node.get_attr("Compiler"):
            return new
        return self._lift(node, new)

    def _lift(self, original, func):
        self_var = self.recursive_binder.get(original)
        captured = [v for v in free_vars(func) if v is not self_var]
        name = f"lifted_name{structural_hash(func) & 0xFFFFFFFF}"
        gvar = E.GlobalVar(name)
        if captured:
            params = [E.Var(v.name_hint, known_type(v)) for v in captured]
            mapping = dict(zip(captured, params))
            if self_var is not None:
                mapping[self_var] = E.Call(gvar, tuple(params))
            lifted = E.Function(tuple(params), substitute(func, mapping),
                                attrs={"Closure": 1})
            replacement = E.Call(gvar, tuple(captured))
        else:
            lifted = substitute(func, {self_var: gvar}) if self_var is not None else func
            replacement = gvar
        if name in self.new_mod:
            existing = self.new_mod.get_global_var(name)
            if structural_equal(self.new_mod[existing], lifted):
                return E.Call(existing, tuple(captured)) if captured else existing
        self.new_mod[gvar] = lifted
        return replacement


def lambda_lift(mod: IRModule) -> IRModule:
    """A copy of ``mod`` with nested functions lifted to globals (see the module docstring).

    Args:
        mod: the module (not mutated).

    Returns:
        The new module.
    """
    new_mod = mod.copy()
    for gvar, func in mod.items():
        if func.get_attr("Compiler") or is_primitive(func):
            continue
        new_func = _Lift(func, new_mod).visit(func)
        if new_func is not func:
            new_mod[gvar] = new_func
    return new_mod


@dataclass(frozen=True)
class LambdaLift(ModulePass):
    """Lift every nested non-primitive function to a global function."""

    name: ClassVar[str] = "LambdaLift"
    opt_level: ClassVar[int] = 1

    def transform_module(self, mod: IRModule, ctx=None) -> IRModule:
        """The module with closures lifted."""
        return lambda_lift(mod)
