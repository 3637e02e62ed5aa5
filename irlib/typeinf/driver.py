"""Type inference of a whole module, one group of mutually recursive globals at a time.

Globals are checked in the order of the call graph's strongly connected components, callees
first. Within a group every global first gets a type from its annotations (holes where there
are none), so that mutually recursive calls see each other; then all bodies are checked and
the constraints solved. When a group is done its globals' types are final: later groups
that call a polymorphic global instantiate it afresh at each call.

Generalisation (a decision of irlib; Relay reports an error instead): holes left in the type
of a *top-level* function (a module global, or the root function given to
:func:`infer_expr`) after solving become fresh type parameters of that function, so
``fn (%x) { %x }`` is inferred as ``fn [A](%x: A) -> A``. Holes anywhere else (the parameter
of an unused local lambda, the element type of a ``Nil`` that is never used) cannot be
generalised and are reported: "cannot infer the type of ...; add a type annotation".
"""

from __future__ import annotations

from ..ir import expr as E
from ..analysis.scc import strongly_connected_components
from ..ir.functor import free_vars, post_order
from ..ir.module import IRModule
from ..ir.types import TypeVar
from .checker import Checker
from .resolver import Resolver


def infer_module(mod: IRModule) -> IRModule:
    """A new module whose functions are typed copies of ``mod``'s.

    GlobalVars are shared with ``mod`` (they are its keys); each gets its ``checked_type``.

    Args:
        mod: the module (not modified, except for the GlobalVars' ``checked_type``).

    Returns:
        The typed module (same type definitions and attributes).

    Raises:
        TypeInferenceError: listing every error of the first ill-typed group of globals.
    """
    inference = _Inference(mod)
    rebuilt = inference.check_globals()
    out = mod.copy()
    for gvar, func in rebuilt.items():
        out.update_func(gvar, func)
    return out


def infer_expr(expr: E.Expr, mod: IRModule | None = None) -> E.Expr:
    """A typed copy of ``expr`` (checked in the context of ``mod``, which is checked too).

    Args:
        expr: the expression; its free variables become parameters of a wrapper function.
        mod: the module whose globals and type definitions ``expr`` uses, or None.

    Returns:
        The typed function if ``expr`` is a :class:`~irlib.ir.expr.Function`; otherwise the
        typed body of the function of ``expr``'s free variables, i.e. ``expr`` itself.

    Raises:
        TypeInferenceError: if ``mod`` or ``expr`` is ill-typed.
    """
    inference = _Inference(mod if mod is not None else IRModule())
    inference.check_globals()
    is_function = isinstance(expr, E.Function)
    root = expr if is_function else E.Function(tuple(free_vars(expr)), expr)
    typed = inference.check_group([(None, root)], "the expression")[0]
    return typed if is_function else typed.body


class _Inference:
    """One inference run: a checker shared by all groups, and the globals' types."""

    def __init__(self, mod: IRModule):
        self.mod = mod
        self.global_types: dict = {}
        self._group_holes: dict = {}
        self.checker = Checker(mod.type_definitions, self.global_types)

    def check_globals(self) -> dict:
        """Check every global of the module; returns GlobalVar -> typed Function."""
        functions = self.mod.functions
        order = sorted(functions, key=lambda g: g.name_hint)
        edges = {g: _referenced_globals(functions[g], functions) for g in order}
        rebuilt: dict = {}
        for group in strongly_connected_components(order, edges):
            group.sort(key=lambda g: g.name_hint)
            where = ", ".join(f"@{g.name_hint}" for g in group)
            typed = self.check_group([(g, functions[g]) for g in group], where)
            rebuilt.update(zip(group, typed))
        for gvar, ty in self.global_types.items():
            gvar.with_type(ty)
        return rebuilt

    def check_group(self, members: list, where: str) -> list:
        """Check mutually recursive top-level functions together.

        Args:
            members: ``(GlobalVar or None, Function)`` pairs.
            where: their names, for error messages.

        Returns:
            The typed functions, in the order of ``members``.
        """
        checker = self.checker
        for gvar, func in members:
            signature = checker.signature(func)
            if gvar is not None:
                self.global_types[gvar] = signature
        for _, func in members:
            checker.check(func)
        checker.solve()
        checker.errors.raise_if_any(where)
        # Holes left in each signature become that function's new type parameters. Calls
        # between members of the group (monomorphic recursion) then pass those parameters
        # on as type arguments, so a second inference run sees the same program.
        holes = {}
        for gvar, func in members:
            found = [h for h in checker.unifier.free_holes(checker.signatures[func])
                     if not checker.unifier.is_poisoned(h)]
            holes[func] = found
            if gvar is not None and found:
                self._group_holes[gvar] = found
        typed = [self._rebuild(func, holes[func]) for _, func in members]
        self._group_holes.clear()
        checker.errors.raise_if_any(where)
        for (gvar, _), func in zip(members, typed):
            if gvar is not None:
                self.global_types[gvar] = func.checked_type
                if gvar in checker.types:
                    checker.types[gvar] = func.checked_type
        return typed

    def _rebuild(self, func: E.Function, holes: list) -> E.Function:
        taken = {p.name_hint for p in func.type_params}
        params = [TypeVar(name) for name in _fresh_names(len(holes), taken)]
        resolver = Resolver(self.checker, dict(zip(holes, params)), self._group_holes)
        typed = resolver.rebuild(func, params)
        for node in resolver.unresolved.values():
            self.checker.errors.add(
                node, f"cannot infer the type of this expression (only that it is "
                      f"{resolver.resolve(self.checker.types[node])}); add a type annotation")
        return typed


def _fresh_names(count: int, taken: set) -> list:
    names, index = [], 0
    while len(names) < count:
        letter = chr(ord("A") + index % 26)
        name = letter if index < 26 else f"{letter}{index // 26}"
        if name not in taken:
            names.append(name)
        index += 1
    return names


def _referenced_globals(func: E.Function, functions: dict) -> list:
    seen: dict = {}
    for node in post_order(func):
        if type(node) is E.GlobalVar and node in functions:
            seen[node] = None
    return list(seen)
