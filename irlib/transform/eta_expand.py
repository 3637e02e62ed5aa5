"""EtaExpand: wrap constructors and globals used as values in functions (Relay's
``EtaExpand``).

With ``expand_constructor``, a constructor used as a value (not in call position) becomes
``fn [A...](%eta_expand_param...) -> T[A...] { C(params...) }`` with fresh type variables.
With ``expand_global_var``, every reference to a global function (call position included)
becomes ``fn (%eta_expand_param...) { @g(params...) }``, keeping the definition's return type
and type parameters. At least one flag must be set.

Before/after (``expand_global_var=True``)::

    def @aux(%x: Tensor[(), float32]) { %x }   def @main() { @aux }
    def @main() { fn (%eta_expand_param: Tensor[(), float32]) { @aux(%eta_expand_param) } }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import IRError
from ..ir import expr as E
from ..ir.functor import ExprFunctor, children, rebuild
from ..ir.module import IRModule
from ..ir.type_functor import substitute_type
from ..ir.types import TypeCall, TypeVar
from ._rewrite import known_type
from .pass_infra import ModulePass, is_skipped_function


class _Expand(ExprFunctor):
    def __init__(self, mod: IRModule, constructors: bool, globals_: bool):
        super().__init__()
        self.mod = mod
        self.constructors = constructors
        self.globals = globals_

    def _dispatch(self, node, results):
        kids = children(node)
        if not kids:
            return node
        new = []
        for index, (child, result) in enumerate(zip(kids, results)):
            in_call_position = type(node) is E.Call and index == 0
            new.append(self.expand(child, in_call_position) or result)
        return rebuild(node, tuple(new))

    def expand(self, child, in_call_position: bool = False):
        """A fresh eta-expansion of ``child``, or None if it is not to be expanded."""
        if self.constructors and type(child) is E.Constructor and not in_call_position:
            return self._constructor(child)
        if self.globals and type(child) is E.GlobalVar and child in self.mod \
                and isinstance(self.mod[child], E.Function):
            return self._global(child)
        return None

    def _constructor(self, ctor):
        data = self.mod[ctor.belong_to]
        fresh = [TypeVar(tv.name_hint, tv.kind) for tv in data.type_vars]
        mapping = dict(zip(data.type_vars, fresh))
        params = tuple(E.Var("eta_expand_param", substitute_type(t, mapping))
                       for t in ctor.inputs)
        ret = TypeCall(ctor.belong_to, fresh) if fresh else ctor.belong_to
        return E.Function(params, E.Call(ctor, params), ret, tuple(fresh))

    def _global(self, gvar):
        func = self.mod[gvar]
        params = tuple(E.Var("eta_expand_param", known_type(p)) for p in func.params)
        return E.Function(params, E.Call(gvar, params), func.ret_type, func.type_params,
                          func.attrs)


def eta_expand(mod: IRModule, expand_constructor: bool = False,
               expand_global_var: bool = False) -> IRModule:
    """A copy of ``mod`` with constructors and/or globals eta-expanded.

    Args:
        mod: the module (not mutated).
        expand_constructor: expand constructors used as values.
        expand_global_var: expand references to global functions.

    Returns:
        The new module.

    Raises:
        IRError: if neither flag is set.
    """
    if not (expand_constructor or expand_global_var):
        raise IRError("EtaExpand: set expand_constructor or expand_global_var (or both)")
    new_mod = mod.copy()
    for gvar, func in mod.items():
        if is_skipped_function(func):
            continue
        new_func = _Expand(mod, expand_constructor, expand_global_var).visit(func)
        if new_func is not func:
            new_mod[gvar] = new_func
    return new_mod


@dataclass(frozen=True)
class EtaExpand(ModulePass):
    """Eta-expand constructors and/or global functions used as values.

    Args:
        expand_constructor: expand constructors.
        expand_global_var: expand global variables.
    """

    expand_constructor: bool = False
    expand_global_var: bool = False
    name: ClassVar[str] = "EtaExpand"
    opt_level: ClassVar[int] = 1

    def transform_module(self, mod: IRModule, ctx=None) -> IRModule:
        """The eta-expanded module."""
        return eta_expand(mod, self.expand_constructor, self.expand_global_var)
