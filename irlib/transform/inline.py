"""Inline: replace calls of global functions marked ``Inline=1`` by their bodies (Relay's
``Inline``, pass name ``InlineGlobals``).

Globals are processed callees first (over the call graph), so an inlined body is already
inlined itself. A global is inlinable when it is marked ``Inline`` and is not recursive
(directly or mutually). ``@f(args)`` becomes a fresh copy of ``@f``'s body with the
parameters replaced by the arguments; a bare ``@f`` used as a value becomes a fresh copy of
the function. A function marked ``Compiler`` or ``Extern`` is not opened up: the call becomes
a call of the function literal. Afterwards, inlinable globals that were referenced before
and are referenced no more are removed (entry functions, never referenced, stay).

Before/after::

    def @g(%x, Inline=1) { add(%x, 1f) }   def @main(%y) { @g(%y) }
    def @main(%y) { add(%y, 1f) }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..analysis.call_graph import CallGraph
from ..ir import expr as E
from ..ir.functor import ExprFunctor, children, rebuild
from ..ir.module import IRModule
from ..ir.rewrite import fresh_copy
from .pass_infra import ModulePass, is_skipped_function


class _InlineCalls(ExprFunctor):
    def __init__(self, bodies: dict):
        super().__init__()
        self.bodies = bodies    # name -> (already inlined) Function

    def _target(self, node):
        if type(node) is E.GlobalVar:
            return self.bodies.get(node.name_hint)
        return None

    def _dispatch(self, node, results):
        if type(node) is E.Call:
            callee = self._target(node.op)
            if callee is not None:
                args = results[1:]
                if is_skipped_function(callee):
                    return E.Call(fresh_copy(callee), args, span=node.span)
                return fresh_copy(callee.body, dict(zip(callee.params, args)))
        kids = children(node)
        if not kids:
            return node
        new_results = []
        for child, result in zip(kids, results):
            callee = self._target(child)
            new_results.append(fresh_copy(callee) if callee is not None else result)
        return rebuild(node, tuple(new_results))


def inline_globals(mod: IRModule) -> IRModule:
    """A copy of ``mod`` with ``Inline=1`` globals inlined (see the module docstring).

    Args:
        mod: the module (not mutated).

    Returns:
        The new module.
    """
    graph = CallGraph(mod)
    inlinable = {g for g, f in mod.items()
                 if f.get_attr("Inline") and not graph.is_recursive(g)}
    if not inlinable:
        return mod.copy()
    done: dict = {}
    bodies: dict = {}
    for gvar in graph.bottom_up_order():
        func = mod[gvar]
        new_func = func if is_skipped_function(func) else _InlineCalls(bodies).visit(func)
        done[gvar] = new_func
        if gvar in inlinable:
            bodies[gvar.name_hint] = new_func
    new_mod = mod.copy()
    for gvar, func in done.items():
        if func is not mod[gvar]:
            new_mod[gvar] = func
    new_graph = CallGraph(new_mod)
    for gvar in inlinable:
        if graph.ref_count(gvar) > 0 and new_graph.ref_count(gvar) == 0:
            new_mod.remove(gvar)
    return new_mod


@dataclass(frozen=True)
class Inline(ModulePass):
    """Inline every non-recursive global function marked ``Inline=1``."""

    name: ClassVar[str] = "InlineGlobals"
    opt_level: ClassVar[int] = 1

    def transform_module(self, mod: IRModule, ctx=None) -> IRModule:
        """The module with inline globals inlined."""
        return inline_globals(mod)
